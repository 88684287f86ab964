import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush send-batch` lines with an `idempotency_key`: a key repeated for the same token and topic within a run is
/// sent once (the repeat skipped and counted), and a resumed run reading the same file skips the same lines.
@Suite("kkpush send-batch: idempotency_key on lines (the command line)", .serialized)
struct SendBatchIdempotencyCLITests {
    typealias B = SendBatchCLITests

    @Test("A batch whose only skips are repeated idempotency_keys, every push accepted, exits 0")
    func repeatedKeyIsNoFailure() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try B.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let token = TestTokens.random()
            let line = #"{"token":"\#(token)","idempotency_key":"dienst-9-v4"}"#
            let path = dir.appendingPathComponent("tokens.jsonl").path
            try "\(line)\n\(line)\n".write(toFile: path, atomically: true, encoding: .utf8)
            let run = try await CLI.run(try B.arguments(server, tokens: path), timeout: 60)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("1 skipped as repeated idempotency_key"), "\(run.stderr)")
            #expect(!run.stderr.contains("--resume"), "\(run.stderr)")
            #expect(server.deliveries(token: token).count == 1)
        }
    }

    @Test("A repeated idempotency_key is sent once per run; another token, or no key, is sent; a bad key is bad-input")
    func repeatedKeySentOnce() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try B.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = TestTokens.random(2)
            let lines = [
                #"{"token":"\#(tokens[0])","idempotency_key":"dienst-9-v3"}"#,
                #"{"token":"\#(tokens[0])","idempotency_key":"dienst-9-v3"}"#,
                #"{"token":"\#(tokens[1])","idempotency_key":"dienst-9-v3"}"#,
                #"{"token":"\#(tokens[0])"}"#,
                #"{"token":"\#(tokens[1])","idempotency_key":""}"#,
            ]
            let path = dir.appendingPathComponent("tokens.jsonl").path
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            let results = dir.appendingPathComponent("results.jsonl").path
            let first = try await CLI.run(try B.arguments(server, tokens: path) + ["--output", results], timeout: 60)
            #expect(first.status == 1, "the bad key makes the exit 1: \(first.stderr)")
            #expect(first.stderr.contains("1 skipped as repeated idempotency_key"), "stderr: \(first.stderr)")
            let byLine = Dictionary(
                uniqueKeysWithValues: try B.results(try String(contentsOfFile: results, encoding: .utf8)).map {
                    ($0["index"] as? Int ?? 0, $0)
                })
            #expect(byLine.keys.sorted() == [1, 3, 4, 5])
            #expect([1, 3, 4].allSatisfy { byLine[$0]?["status"] as? String == "accepted" })
            #expect(byLine[5]?["reason"] as? String == "bad-input")
            #expect(server.deliveries(token: tokens[0]).count == 2 && server.deliveries(token: tokens[1]).count == 1)
            // Resumed: the accepted lines are done, the repeat is skipped again, only the bad line is tried again.
            let second = try await CLI.run(
                try B.arguments(server, tokens: path) + ["--resume", results, "--output", results], timeout: 60)
            #expect(second.stderr.contains("3 skipped as done before (--resume)"), "stderr: \(second.stderr)")
            #expect(second.stderr.contains("1 skipped as repeated idempotency_key"), "stderr: \(second.stderr)")
            #expect(server.deliveries(token: tokens[0]).count == 2)
        }
    }
}
