import Foundation
import Testing

/// `send` and `send-batch` share their APNs header flags (`PushHeaderOptions`): the same help, and in `send` each flag
/// still reaches the request (pre-flight names it) and the broadcast's refusals.
@Suite("send: the shared header flags")
struct SendHeaderOptionsCLITests {
    static let flags = ["--push-type", "--priority", "--expiration", "--collapse-id"]

    /// The help's lines from `--push-type`'s to the line before the next flag after `--collapse-id`'s.
    static func headerBlock(_ help: String) throws -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("  --push-type ") })
        let collapse = try #require(lines.firstIndex { $0.hasPrefix("  --collapse-id ") })
        var end = collapse + 1
        while end < lines.count, lines[end].hasPrefix("      ") { end += 1 }
        return Array(lines[start..<end])
    }

    @Test("send's help shows the four header flags exactly as send-batch's does")
    func sameHelp() async throws {
        let send = try await CLI.run(["send", "--help"])
        let batch = try await CLI.run(["send-batch", "--help"])
        #expect(send.status == 0 && batch.status == 0)
        let block = try Self.headerBlock(send.stdout)
        #expect(block == (try Self.headerBlock(batch.stdout)))
        for flag in Self.flags { #expect(block.contains { $0.hasPrefix("  \(flag) ") }, "\(flag) in \(block)") }
    }

    @Test("send: each header flag reaches the request (pre-flight names it); a broadcast refuses --collapse-id")
    func flagsReachTheRequest() async throws {
        let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
        let base = [
            "send", "--token", String(repeating: "ab", count: 32), "--topic", "nl.kantinekoning.app", "--key", key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--url", "https://127.0.0.1:9", "--ca-file",
            CLI.certificates.appendingPathComponent("ca.crt").path, "--title", "x",
        ]
        let collapse = try await CLI.run(base + ["--collapse-id", String(repeating: "c", count: 65)])
        #expect(collapse.status == 1 && collapse.stdout.contains("BadCollapseId"), "\(collapse.stdout)")
        #expect(collapse.stdout.contains("Flag at fault: --collapse-id."), "\(collapse.stdout)")
        let pushType = try await CLI.run(base + ["--push-type", "nosuchtype"])
        #expect(pushType.status == 1 && pushType.stdout.contains("Flag at fault: --push-type."), "\(pushType.stdout)")

        let broadcast = try await CLI.run([
            "send", "--channel", "dGVzdA==", "--topic", "nl.kantinekoning.app", "--collapse-id", "x", "--key", key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        #expect(broadcast.status == 64, "\(broadcast.stderr)")
        #expect(broadcast.stderr.contains("--collapse-id does not go with --channel"), "\(broadcast.stderr)")
    }
}
