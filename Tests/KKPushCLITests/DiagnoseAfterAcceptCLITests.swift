import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// `kkpush diagnose` on a push APNs accepted: the push as sent and the device's state as told (`--app-state`,
/// `--device-offline`, `--background-pushes-per-hour`) or the mock's record (`--delivery FILE`).
@Suite("kkpush diagnose: accepted but never arrived")
struct DiagnoseAfterAcceptCLITests {
    static let background =
        #"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vvwilhelmus","dienst_id":"7"}"#

    static func run(_ args: [String], payload: String = background) async throws -> CLIResult {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-after-accept")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("push.json")
        try Data(payload.utf8).write(to: file)
        return try await CLI.run(
            ["diagnose", "--ignore-process-env", "--topic", "nl.kantinekoning.app", "--payload", file.path, "--json"]
                + args)
    }

    static func verdict(_ r: CLIResult) throws -> String? {
        (try r.json()["verdict"] as? [String: Any])?["code"] as? String
    }

    @Test("Each told state gives its verdict (exit 1)")
    func verdicts() async throws {
        let cases: [([String], String)] = [
            (["--push-type", "background", "--priority", "5", "--app-state", "force-quit"], "app-force-quit"),
            (
                ["--push-type", "background", "--priority", "5", "--expiration", "0", "--device-offline"],
                "expiration-zero-offline"
            ),
            (
                [
                    "--push-type", "background", "--priority", "5", "--app-state", "background",
                    "--background-pushes-per-hour", "10",
                ],
                "background-budget"
            ),
        ]
        for (args, code) in cases {
            let r = try await Self.run(args)
            #expect(r.status == 1, "\(args): \(r.stdout) \(r.stderr)")
            #expect(try Self.verdict(r) == code, "\(args): \(r.stdout)")
        }
    }

    @Test("A push the device runs gets no verdict (exit 0)")
    func noFalseVerdict() async throws {
        let r = try await Self.run([
            "--push-type", "background", "--priority", "5", "--app-state", "background",
            "--background-pushes-per-hour", "2",
        ])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(try Self.verdict(r) == nil)
    }

    @Test("A bad app state is a usage error (64); a delivery file that is not the mock's log, an input error (2)")
    func badInput() async throws {
        let bad = try await Self.run(["--app-state", "sleeping"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect((bad.stdout + bad.stderr).contains("force-quit"), "\(bad.stdout)")
        let dir = try makeTemporaryDirectory(prefix: "kkpush-after-accept")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("log.json")
        try Data(#"{"notifications": []}"#.utf8).write(to: file)
        let r = try await CLI.run(["diagnose", "--ignore-process-env", "--delivery", file.path])
        #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("delivery-log entry"), "\(r.stderr)")
    }
}
