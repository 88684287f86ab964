import Foundation
import Testing

/// A negative number given as a flag's value (`--expiration -3`) is a value, never "Missing value": it reaches the
/// flag's own range check (or, for request headers, the pre-flight's verdict) on every command.
@Suite("Answers: negative numbers reach each flag's check")
struct AnswersNegativeNumbersCLITests {
    static let token = String(repeating: "ab", count: 32)
    static let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path

    static let cases: [(args: [String], flag: String)] = [
        (["diagnose", "--token", token, "--expiration", "-3"], "apns-expiration"),
        (["diagnose", "--token", token, "--priority", "-1"], "apns-priority"),
        (["diagnose", "--token", token, "--token-refresh-minutes", "-5"], "--token-refresh-minutes"),
        (["diagnose", "--token", token, "--now", "-1"], "--now"),
        (
            ["jwt", "sign", "--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--issued-at", "-1"],
            "--issued-at"
        ),
        (["jwt", "verify", "a.b.c", "--key", key, "--max-age", "-5"], "--max-age"),
        (["jwt", "decode", "a.b.c", "--now", "-1"], "--now"),
        (["jwt", "bench", "--seconds", "-1"], "--seconds"),
        (["cert", "inspect", CLI.certificates.appendingPathComponent("ca.crt").path, "--now", "-1"], "--now"),
        (["payload", "build", "--title", "x", "--badge", "-1"], "--badge"),
        (["env", "resolve", "--port", "-1"], "--port"),
        (["simulate", "--devices", "-1"], "--devices"),
        (["mock", "serve", "--sandbox-port", "-1"], "--sandbox-port"),
        (["mock", "serve", "--idle-timeout", "-1"], "--idle-timeout"),
        (["backend", "serve", "--port", "-1"], "--port"),
        (
            [
                "send-batch", "--tokens", "-", "--topic", "com.example", "--title", "x", "--key", key, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--shard", "-1/3",
            ], "--shard"
        ),
        (
            [
                "send", "--token", token, "--topic", "com.example", "--title", "x", "--key", key, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--connect-timeout", "-1",
            ], "--connect-timeout"
        ),
    ]

    @Test("Each negative value is judged, naming the flag or header", arguments: cases)
    func negative(_ c: (args: [String], flag: String)) async throws {
        let r = try await CLI.run(c.args)
        #expect(!r.stderr.contains("Missing value"), "\(c.args): \(r.stderr)")
        #expect(r.status == 64 || r.status == 1, "\(c.args) exited \(r.status): \(r.stderr)")
        #expect((r.stderr + r.stdout).contains(c.flag), "\(c.args): \(r.stderr)\(r.stdout)")
    }
}
