import KKPushCore
import Testing

/// The activity key rule in its one place (`ActivityKey.flaw`): 1-200 printable ASCII, what the activity registry
/// (`activity-key-invalid`) and the app's token update checks (`live-activity-key-invalid`) both apply.
@Suite("ActivityKey: 1-200 printable ASCII")
struct ActivityKeyTests {
    @Test("Lengths at the edges: 0 is empty, 1 and 200 are keys, 201 is too long (its byte count named)")
    func lengths() {
        #expect(ActivityKey.flaw("") == .empty)
        #expect(ActivityKey.flaw("k") == nil)
        #expect(ActivityKey.flaw(String(repeating: "k", count: ActivityKey.maximumLength)) == nil)
        #expect(ActivityKey.flaw(String(repeating: "k", count: 201)) == .tooLong(bytes: 201))
        #expect(ActivityKey.maximumLength == 200)
    }

    @Test("Space and tilde are printable; a control character, DEL and a non-ASCII character are not, by byte")
    func characters() {
        #expect(ActivityKey.flaw(" ") == nil)
        #expect(ActivityKey.flaw("dienst-~1") == nil)
        #expect(ActivityKey.flaw("dienst\n1") == .notPrintable(byteOffset: 6))
        #expect(ActivityKey.flaw("\u{1F}") == .notPrintable(byteOffset: 0))
        #expect(ActivityKey.flaw("a\u{7F}") == .notPrintable(byteOffset: 1))
        // "ü" is two UTF-8 bytes: the first is the flaw; 100 of them are 200 bytes, not 100 characters.
        #expect(ActivityKey.flaw("dienst-ü") == .notPrintable(byteOffset: 7))
        #expect(ActivityKey.flaw(String(repeating: "ü", count: 100)) == .notPrintable(byteOffset: 0))
        #expect(ActivityKey.flaw(String(repeating: "ü", count: 101)) == .tooLong(bytes: 202))
    }
}
