import Foundation
import KKPushCore
import Testing

/// `payload lint --strict`: warnings (APNs accepts the payload, the device ignores it) fail the lint, for CI.
@Suite("Payload lint --strict")
struct PayloadLintStrictTests {
    /// A Live Activity update whose timestamp is in milliseconds: APNs accepts it, the device ignores it.
    static var millisecondUpdate: String {
        let now = LiveActivityRules.currentUnixSeconds()
        return #"{"aps":{"event":"update","timestamp":\#(now * 1000),"content-state":{}}}"#
    }

    @Test("A payload with only warnings exits 0 without --strict and 1 with it, in text and JSON")
    func warningsFailStrict() async throws {
        let plain = try await CLI.run(
            ["payload", "lint", "-", "--push-type", "liveactivity"], stdin: Self.millisecondUpdate)
        #expect(plain.status == 0, "\(plain.stdout)\(plain.stderr)")
        #expect(plain.stdout.contains("liveactivity-timestamp-milliseconds"))

        let strict = try await CLI.run(
            ["payload", "lint", "-", "--push-type", "liveactivity", "--strict"], stdin: Self.millisecondUpdate)
        #expect(strict.status == 1, "\(strict.stdout)\(strict.stderr)")
        #expect(strict.stdout.contains("valid: APNs would accept it"))
        #expect(strict.stdout.contains("--strict: 1 warning(s) fail the lint."))

        let json = try await CLI.run(
            ["payload", "lint", "-", "--push-type", "liveactivity", "--strict", "--json"],
            stdin: Self.millisecondUpdate)
        #expect(json.status == 1)
        #expect(try json.json()["valid"] as? Bool == true)
    }

    @Test("A clean payload still exits 0 with --strict; a rejected one still exits 1")
    func cleanAndRejected() async throws {
        let clean = try await CLI.run(
            ["payload", "lint", "-", "--strict"], stdin: #"{"aps":{"alert":{"title":"Hoi","body":"Bier"}}}"#)
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        let rejected = try await CLI.run(["payload", "lint", "-", "--strict"], stdin: "[1]")
        #expect(rejected.status == 1)
        #expect(rejected.stdout.contains("REJECTED"))
    }

    @Test("The command's help documents --strict")
    func helpNamesStrict() async throws {
        let help = try await CLI.run(["payload", "lint", "--help"])
        #expect(help.stdout.contains("--strict"))
        #expect(help.stdout.contains("Exit 1 on warnings too"))
    }
}
