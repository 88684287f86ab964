import Foundation
import KKPushBatch
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush send-batch --shard K/N`: N machines split one token file without a database. Every part runs as the real
/// binary against the mock started in this process; between them, each line is sent or reported exactly once. Which
/// part owns a token (`BatchShard`) is tested in KKPushBatchTests (BatchShardTests).
@Suite("kkpush send-batch --shard K/N: N machines split one token file", .serialized)
struct SendBatchShardCLITests {
    @Test("Four parts of one file: every line sent or reported by exactly one part, each token delivered once")
    func fourPartsCoverTheFileOnce() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try SendBatchCLITests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = SendBatchCLITests.randomTokens(400)
            var (text, lineOf) = SendBatchCLITests.tokenFile(tokens)
            // Two lines no part can send: each must be reported (bad-input) by exactly one part.
            text += "not-json-{\n{\"token\": 12}\n"
            let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
            let badLines = [lineCount - 1, lineCount]
            let path = dir.appendingPathComponent("tokens.txt").path
            try text.write(toFile: path, atomically: true, encoding: .utf8)

            var indexes: [Int] = []
            var perPart: [Int] = []
            for part in 1...4 {
                let r = try await CLI.run(
                    try SendBatchCLITests.arguments(server, tokens: path) + ["--shard", "\(part)/4"], timeout: 120)
                let results = try SendBatchCLITests.results(r.stdout)
                let allAccepted = results.allSatisfy { $0["status"] as? String == "accepted" }
                #expect(r.status == (allAccepted ? 0 : 1), "part \(part): \(r.stderr)")
                indexes += try results.map { try #require($0["index"] as? Int) }
                let accepted = results.filter { $0["status"] as? String == "accepted" }
                perPart.append(accepted.count)
                for result in accepted {
                    let token = try #require(result["token"] as? String)
                    let shard = try BatchShard(parsing: "\(part)/4")
                    #expect(shard.owns(key: token, line: 0), "part \(part) sent a token of another part")
                }
                #expect(r.stderr.contains("lines left to the other parts (--shard)"), "\(r.stderr)")
            }
            #expect(indexes.count == Set(indexes).count, "a line was handled by two parts")
            #expect(Set(indexes) == Set(lineOf.values).union(badLines))
            #expect(perPart.reduce(0, +) == 400)
            // FNV-1a over random tokens: each part near 100 (binomial, sd ≈ 8.7).
            #expect(perPart.allSatisfy { (55...145).contains($0) }, "parts: \(perPart)")
            for token in tokens { #expect(server.deliveries(token: token).count == 1) }
        }
    }

    @Test("A part with no lines of its own ends 0 with a sentence, sending nothing")
    func emptyPart() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try SendBatchCLITests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let token = TestTokens.random(1)[0]
            let part = try (1...8).first { try !BatchShard(parsing: "\($0)/8").owns(key: token, line: 0) }
            let path = dir.appendingPathComponent("one.txt").path
            try (token + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            let r = try await CLI.run(
                try SendBatchCLITests.arguments(server, tokens: path) + ["--shard", "\(try #require(part))/8"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.contains("every line belongs to another part"), "\(r.stderr)")
            #expect(server.deliveries(token: token).isEmpty)
        }
    }

    @Test(
        "--shard that is not K/N with 1 ≤ K ≤ N is a usage error naming the flag",
        arguments: ["0/4", "5/4", "1-4", "x/y", "1/0", "1/10001", "-1/3", "1/-3", "-2/-5"])
    func malformed(_ value: String) async throws {
        let r = try await CLI.run([
            "send-batch", "--tokens", "-", "--topic", SendBatchCLITests.topic, "--url", "https://127.0.0.1:9",
            "--title", "x", "--key", SendBatchCLITests.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--shard", value,
        ])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("(--shard)") && r.stderr.contains(value), "\(r.stderr)")
        // A negative part is the shard's value, malformed, never "Missing value" (the parser taking it for a flag).
        #expect(!r.stderr.contains("Missing value"), "\(r.stderr)")
        if value.contains("-") && value.contains("/") {
            #expect(r.stderr.contains("is malformed") && r.stderr.contains("is negative"), "\(r.stderr)")
        }
    }
}
