import Foundation
import KKPushActivities
import KKPushAuth
import KKPushBatch
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushSystem
import KKPushTestSupport
import Testing

/// send-batch's Live Activity lines (`activity_key`, `activity_event`) through a real activity registry (SQLite in a
/// temporary directory) and the mock over TLS: a start sent once per key, an update refused until the activity's
/// update token came back and then sent to it, an end after the end refused, APNs' answers recorded; without a
/// registry such a line is refused, never sent.
@Suite("send-batch: Live Activity lines", .serialized)
struct BatchActivityTests {
    static let topic = "nl.kantinekoning.app"
    static let start =
        #"{"aps":{"attributes-type":"DienstAttributes","attributes":{"dienst":"Bar"},"content-state":{"volunteers":1},"alert":{"title":"Dienst","body":"Bardienst"}}}"#
    static let update = #"{"aps":{"content-state":{"volunteers":2}}}"#
    static let end = #"{"aps":{"content-state":{"volunteers":3},"dismissal-date":1900000000}}"#

    static func line(_ key: String, _ event: String, payload: String, extra: String = "") -> String {
        #"{"activity_key":"\#(key)","activity_event":"\#(event)",\#(extra)"payload":\#(payload)}"#
    }

    /// Runs `input` as a batch against `server`, with `registry` (nil: none): the ledger's counts and the result lines.
    static func run(
        _ input: [String], server: MockAPNsServer, registry: (any ActivityRegistry)?, directory: URL, name: String
    ) async throws -> (counts: BatchLedger.Counts, results: [[String: Any]]) {
        let tokens = directory.appendingPathComponent("\(name).jsonl")
        let output = directory.appendingPathComponent("\(name)-results.jsonl")
        try (input.joined(separator: "\n") + "\n").write(to: tokens, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: output.path, contents: nil)
        let fd = FileDescriptors.openForWriting(output.path)
        #expect(fd >= 0)
        let key = try ES256PrivateKey(
            contentsOfFile: Repository.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path)
        var configuration = APNsClientConfiguration(
            credential: .token(ProviderTokenCache(key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001")))
        configuration.sandboxEndpoint = server.sandboxEndpoint
        configuration.productionEndpoint = server.productionEndpoint
        let client = try APNsClient(configuration: configuration)
        let run = BatchRun()
        let ledger = BatchLedger(
            writer: ResultWriter(descriptor: fd, name: output.path), progress: nil, quietAccepted: false,
            metrics: BatchMetrics(resumeOption: "--resume"), onEvent: run.send)
        let template = NotificationRequest(
            deviceToken: "", topic: topic, pushType: .alert, priority: 10, payload: Array(#"{"aps":{}}"#.utf8))
        var lines = BatchLines(
            reader: try LineReader(path: tokens.path, what: "token file", label: "--tokens", holds: "lines"),
            template: template, endpoints: [.sandbox: server.sandboxEndpoint], defaultEnvironment: .sandbox,
            explicitEnvironment: false, ledger: ledger, resume: nil, broadcaster: nil, batchHasPayload: false)
        lines.activities = registry.map { BatchActivities(registry: $0) }
        let ending = await run.run(
            client: client, lines: lines, ledger: ledger, grace: 5, progress: false, emit: { _ in },
            hardStop: { _ in })
        #expect(ending.finished && ending.inputError == nil)
        let failures = await lines.activities?.finish() ?? []
        #expect(failures.isEmpty, "\(failures)")
        close(fd)
        let text = try String(contentsOf: output, encoding: .utf8)
        let results = try text.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        return (ledger.counts, results)
    }

    @Test("Start once per key, update only after the token came back, end, and an end after the end refused")
    func lifecycle() async throws {
        let directory = try makeTemporaryDirectory(prefix: "kkpush-batch-activity")
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = try await SQLiteActivityRegistry.open(path: directory.appendingPathComponent("la.sqlite").path)
        let pushToStart = TestTokens.random()
        let updateToken = TestTokens.random()
        _ = try await registry.recordReport(
            ActivityTokenReport(pushToStartTokens: [
                PushToStartTokenReport(attributesType: "DienstAttributes", token: pushToStart)
            ]), device: "d1", at: Date())
        try await withMockServer(configuration: .forTests()) { server in
            let first = try await Self.run(
                [
                    Self.line("k1", "start", payload: Self.start, extra: #""device":"d1","#),
                    Self.line("k1", "start", payload: Self.start, extra: #""device":"d1","#),
                    Self.line("k1", "update", payload: Self.update),
                ], server: server, registry: registry, directory: directory, name: "first")
            #expect(first.counts.accepted == 1 && first.counts.activityExisting == 1, "\(first.counts)")
            #expect(first.counts.failed["bad-input"] == 1)
            let refused = try #require(first.results.first { $0["index"] as? Int == 3 })
            #expect((refused["error"] as? String)?.contains("activity-no-update-token") == true, "\(refused)")
            #expect(server.deliveries(limit: 100).map(\.token) == [pushToStart])
            let started = try #require(try await registry.activity(key: "k1"))
            #expect(started.state == .requested && started.startAcceptedAt != nil)

            _ = try await registry.recordReport(
                ActivityTokenReport(activityTokens: [
                    ActivityUpdateTokenReport(activityKey: "k1", attributesType: "DienstAttributes", token: updateToken)
                ]), device: "d1", at: Date())
            let second = try await Self.run(
                [
                    Self.line("k1", "update", payload: Self.update),
                    Self.line("k1", "end", payload: Self.end),
                ], server: server, registry: registry, directory: directory, name: "second")
            #expect(second.counts.accepted == 2, "\(second.counts)")
            #expect(second.results.allSatisfy { $0["token"] as? String == updateToken })
            #expect(try await registry.activity(key: "k1")?.state == .ended)
            let third = try await Self.run(
                [Self.line("k1", "end", payload: Self.end)], server: server, registry: registry, directory: directory,
                name: "third")
            #expect(third.counts.accepted == 0 && third.counts.failed["bad-input"] == 1)
            #expect((third.results.first?["error"] as? String)?.contains("activity-ended") == true)
            #expect(server.deliveries(limit: 100).map(\.token) == [pushToStart, updateToken, updateToken])
        }
        await registry.close()
    }

    @Test("Without a registry a Live Activity line is refused, saying it needs one, never sent")
    func withoutRegistry() async throws {
        let directory = try makeTemporaryDirectory(prefix: "kkpush-batch-activity")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withMockServer(configuration: .forTests()) { server in
            let token = TestTokens.random()
            let run = try await Self.run(
                [Self.line("k2", "start", payload: Self.start, extra: #""token":"\#(token)","#)], server: server,
                registry: nil, directory: directory, name: "none")
            #expect(run.counts.failed["bad-input"] == 1 && run.counts.accepted == 0)
            let error = run.results.first?["error"] as? String ?? ""
            #expect(error.contains("needs an activity registry") && error.contains("nothing was sent"), "\(error)")
            // A line with a key but a bad event, or a device without a key, is refused too.
            let bad = try await Self.run(
                [
                    #"{"activity_key":"k3","activity_event":"pause","payload":{"aps":{}}}"#,
                    #"{"token":"\#(token)","device":"d1","payload":{"aps":{}}}"#,
                ], server: server, registry: nil, directory: directory, name: "bad")
            #expect(bad.counts.failed["bad-input"] == 2)
            #expect(server.deliveries(limit: 100).isEmpty)
        }
    }
}
