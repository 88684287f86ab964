import Foundation
import KKPushCore
import KKPushMock
import Testing

/// `kkpush audit --probe` (the command line) against the mock started in this process: each finding on the
/// token the mock knows it for, nothing delivered, and a rerun with --state asks the mock nothing.
@Suite("kkpush audit --probe")
struct AuditProbeCLITests {
    static func requests(_ server: MockAPNsServer) -> Double {
        let text = String(decoding: server.metrics.exposition(), as: UTF8.self)
        return text.split(separator: "\n").filter { $0.hasPrefix("kkpush_mock_requests_total") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }

    @Test("findings on the right tokens, nothing delivered, --state resumes without asking again")
    func probeFleet() async throws {
        var config = MockServerConfiguration.forTests()
        config.strictDeviceTokens = true
        try await withMockServer(configuration: config) { server in
            let topic = "nl.kantinekoning.app"
            let sandbox = server.mintDevice(environment: .sandbox, topic: topic)
            let production = server.mintDevice(environment: .production, topic: topic)
            let wrong = server.mintDevice(environment: .sandbox, topic: topic)
            let gone = server.mintDevice(environment: .production, topic: topic)
            try server.unregister(token: gone.token)
            let foreign = String(repeating: "ab", count: 32)
            typealias Row = AuditCLITests.Row
            let rows = [
                Row(
                    tenant: "agovv", device: "dev", teams: ["A"], hardware: AuditCLITests.hw(1), token: sandbox.token,
                    build: "development"),
                Row(
                    tenant: "agovv", device: "prod", teams: ["A"], hardware: AuditCLITests.hw(2),
                    token: production.token, build: "production"),
                Row(
                    tenant: "agovv", device: "wrong", teams: ["A"], hardware: AuditCLITests.hw(3), token: wrong.token,
                    build: "production"),
                Row(
                    tenant: "agovv", device: "gone", teams: ["A"], hardware: AuditCLITests.hw(4), token: gone.token,
                    build: "production"),
                Row(
                    tenant: "agovv", device: "foreign", teams: ["A"], hardware: AuditCLITests.hw(5), token: foreign,
                    build: "production"),
            ]
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-audit-probe-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("fleet.json")
            try AuditCLITests.exportJSON(rows).write(to: file)
            let db = dir.appendingPathComponent("enrollments.sqlite").path
            let imported = try await CLI.run(["backend", "import", file.path, "--db", db])
            #expect(imported.status == 0, "\(imported.stderr)")
            let stateFile = dir.appendingPathComponent("probe.state").path
            let args = [
                "audit", "--store", db, "--probe", "--json", "--ignore-process-env",
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url", server.productionEndpoint.baseURL,
                "--ca-file", try #require(server.caFile), "--topic", topic, "--state", stateFile,
            ]
            let r = try await CLI.run(args)
            #expect(r.status == 1, "\(r.stderr)")
            let expected: [String: Set<String>] = [
                "token-wrong-environment": ["wrong"], "token-unregistered": ["gone"], "token-unknown": ["foreign"],
            ]
            let (found, _, summary) = try AuditCLITests.parse(r.stdout)
            #expect(found == expected, "\(r.stdout)")
            #expect((summary["probe"] as? [String: Any])?["probed"] as? Int == 5)
            #expect(!r.stdout.contains(wrong.token), "never a whole token")
            #expect(server.deliveries().isEmpty, "nothing delivered")
            let state = try String(contentsOfFile: stateFile, encoding: .utf8)
            #expect(state.split(separator: "\n").count == 5)
            #expect(!state.contains(sandbox.token))
            let mode = try FileManager.default.attributesOfItem(atPath: stateFile)[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let before = Self.requests(server)
            #expect(before == 10)
            let again = try await CLI.run(args)
            #expect(again.status == 1, "\(again.stderr)")
            #expect(try AuditCLITests.parse(again.stdout).found == expected)
            let probe = try AuditCLITests.parse(again.stdout).summary["probe"] as? [String: Any]
            #expect(probe?["probed"] as? Int == 0)
            #expect(probe?["reused"] as? Int == 5)
            #expect(Self.requests(server) == before, "the rerun asks the mock nothing")

            let bad = try await CLI.run(args + ["--max-rate", "0"])
            #expect(bad.status == 64)
            let notProbe = try await CLI.run(["audit", "--store", db, "--state", stateFile])
            #expect(notProbe.status == 64)
        }
    }
}
