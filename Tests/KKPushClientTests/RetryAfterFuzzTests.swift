import Foundation
import KKPushClient
import Testing

/// Inputs the fuzz target `apns-answer` found (issue #15).
@Suite("retry-after values found by fuzzing")
struct RetryAfterFuzzTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A letter followed by a combining mark made Foundation's DateFormatter trap ("Incorrect range
    /// CFRange") on the client's loop thread: any server (or proxy) could crash a sender with one header.
    @Test(
        "a retry-after with non-ASCII text is unreadable, not a trap",
        arguments: [
            "s\u{323}\u{FFFD}\u{FFFD}\u{1}CS\u{FFFD}\u{0}",  // the fuzzer's input, as the header reader decodes it
            "s\u{323}",
            "Wed, 21 Oct 2026 07:28:00 GMT\u{323}",
            "Wed, 21 Oct 2026 07:28:00 GMTé",
        ])
    func nonASCII(value: String) {
        #expect(RetryAfter.seconds(value, now: Self.now) == nil)
    }

    @Test("an ASCII HTTP date still reads")
    func httpDate() {
        #expect(RetryAfter.seconds("Fri, 15 Jan 2027 08:01:00 GMT", now: Self.now) == 60)
    }
}
