import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `--threads` of `bench`, `send-batch` and `worker`: the client's connections driven by several threads.
@Suite("kkpush --threads: sending from several loop threads (the command line)")
struct LoopThreadsCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    @Test("bench --threads 2: every push accepted over two connections, one per thread")
    func benchTwoThreads() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-threads")
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = dir.appendingPathComponent("payload.json").path
            try #"{"aps":{"alert":"bench"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            let result = try await CLI.run([
                "bench", "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
                "--token", String(repeating: "ab", count: 32), "-n", "400", "-c", "40", "--threads", "2",
                "--payload", payload, "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--topic", Self.topic,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("400 sent, 400 accepted"), "\(result.stdout)")
            #expect(
                result.stdout.contains(
                    "on a connection (as many as the server allowed, within 20 a connection), 2 connections, 2 threads"
                ), "\(result.stdout)")
            #expect(server.acceptedConnections == 2)
            #expect(server.deliveries(limit: 1000).count == 400)
        }
    }

    @Test(
        "bench -c 3 --threads 2: never more than -c in flight (c / threads on each connection, rounded down)",
        .timeSensitive)
    func benchThreadsKeepC() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-threads")
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = dir.appendingPathComponent("payload.json").path
            try #"{"aps":{"alert":"bench"}}"#.write(toFile: payload, atomically: true, encoding: .utf8)
            // Every answer held 4 s: the mock records a push when it judges it, so the pushes it has recorded before
            // the first answer can have come back are the ones in flight at once.
            _ = try server.addFault(MockFault(kind: .delay(milliseconds: 4000)))
            async let run = CLI.run(
                [
                    "bench", "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
                    "--token", String(repeating: "ab", count: 32), "-n", "4", "-c", "3", "--threads", "2",
                    "--payload", payload, "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                    "--topic", Self.topic,
                ], timeout: 120)
            var waited = 0
            while server.deliveries(limit: 100).isEmpty && waited < 1200 {
                try await Task.sleep(for: .milliseconds(50))
                waited += 1
            }
            // Well within the first answer's 4 s: what the first wave holds.
            try await Task.sleep(for: .milliseconds(1500))
            let firstWave = server.deliveries(limit: 100).count
            let result = try await run
            #expect(result.status == 0, "\(result.stderr)")
            #expect((1...3).contains(firstWave), "\(firstWave) pushes in flight at once with -c 3")
            #expect(result.stdout.contains("4 sent, 4 accepted, 3 requested in flight"), "\(result.stdout)")
            #expect(
                result.stdout.contains(
                    "at most 1 on a connection (as many as the server allowed, within 1 a connection), 2 connections, 2 threads"
                ),
                "\(result.stdout)")
            #expect(server.deliveries(limit: 100).count == 4)
        }
    }

    /// 300 devices minted on `server`, their tokens in `dir`/tokens.txt: the tokens and the file's path.
    static func tokenFile(_ server: MockAPNsServer, in dir: URL) throws -> (tokens: [String], path: String) {
        let tokens = (0..<300).map { _ in server.mintDevice(environment: .sandbox, topic: topic).token }
        let path = dir.appendingPathComponent("tokens.txt").path
        try (tokens.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return (tokens, path)
    }

    @Test("send-batch --threads 2: one result line per token, each token delivered once")
    func sendBatchTwoThreads() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-threads")
            defer { try? FileManager.default.removeItem(at: dir) }
            let (tokens, tokenPath) = try Self.tokenFile(server, in: dir)
            let result = try await CLI.run([
                "send-batch", "--tokens", tokenPath, "--topic", Self.topic, "--url", server.sandboxEndpoint.baseURL,
                "--ca-file", try #require(server.caFile), "--env", "sandbox", "--key", Self.key, "--key-id",
                "KKTEST0001", "--team-id", "KKTEAM0001", "--title", "Dienst", "--threads", "2", "--max-in-flight",
                "10",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = try result.stdout.split(separator: "\n").map { line in
                try #require(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            }
            #expect(lines.count == tokens.count)
            #expect(Set(lines.compactMap { $0["index"] as? Int }) == Set(1...tokens.count))
            #expect(lines.allSatisfy { $0["status"] as? String == "accepted" })
            // --threads 2 without --max-connections: the default 2 connections, one per thread.
            #expect(server.acceptedConnections == 2)
            #expect(Set(server.deliveries(limit: 1000).map(\.token)) == Set(tokens))
            #expect(server.deliveries(limit: 1000).count == tokens.count)
        }
    }

    @Test(
        "send-batch without --threads: two loop threads where there are two cores, a connection each; one with --max-connections 1"
    )
    func sendBatchDefaultThreads() async throws {
        let expected = min(2, ProcessInfo.processInfo.activeProcessorCount)
        for (extra, connections) in [([String](), expected), (["--max-connections", "1"], 1)] {
            try await withMockServer(configuration: .forTests()) { server in
                let dir = try makeTemporaryDirectory(prefix: "kkpush-threads")
                defer { try? FileManager.default.removeItem(at: dir) }
                let (tokens, tokenPath) = try Self.tokenFile(server, in: dir)
                let result = try await CLI.run(
                    [
                        "send-batch", "--tokens", tokenPath, "--topic", Self.topic, "--url",
                        server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--env", "sandbox",
                        "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--title", "Dienst",
                        "--quiet-accepted",
                    ] + extra)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(server.acceptedConnections == connections, "\(extra)")
                #expect(server.deliveries(limit: 1000).count == tokens.count)
            }
        }
    }

    @Test("--threads out of range, or above --max-connections: a usage error naming the flags")
    func threadsValidated() async throws {
        let credential = ["--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"]
        let batch = ["send-batch", "--tokens", "/dev/null", "--topic", Self.topic] + credential
        let worker = ["worker", "--db", "postgres://127.0.0.1:1/none"] + credential
        let bench = ["bench", "-n", "1"]
        for (args, words) in [
            (batch + ["--threads", "3", "--max-connections", "2"], "--threads 3 is more than --max-connections 2"),
            (batch + ["--threads", "0"], "--threads 0 is out of range"),
            (worker + ["--threads", "4", "--max-connections", "1"], "--threads 4 is more than --max-connections 1"),
            (worker + ["--threads", "17"], "--threads 17 is out of range"),
            (bench + ["--threads", "17"], "--threads 17 is out of range"),
            (bench + ["-c", "1", "--threads", "2"], "-c 1 is less than --threads 2"),
            (bench + ["-c", "3", "--threads", "16"], "-c 3 is less than --threads 16"),
        ] {
            let result = try await CLI.run(args, timeout: 30)
            #expect(result.status == 64, "\(args): \(result.stderr)")
            #expect(result.stderr.contains(words), "\(args): \(result.stderr)")
        }
    }
}
