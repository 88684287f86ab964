import Foundation
import KKPushActivities
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush send-batch --activity-registry`: Live Activity lines through the built command against the mock, the
/// registry an SQLite file; without the flag such a line is refused and nothing is sent.
@Suite("kkpush send-batch: Live Activity lines")
struct SendBatchActivityCLITests {
    static let start =
        #"{"aps":{"attributes-type":"DienstAttributes","content-state":{"volunteers":1},"alert":{"title":"Dienst","body":"Bardienst"}}}"#

    @Test("A start line goes to its push-to-start token once; the same key again sends nothing, said in the summary")
    func startOnce() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try SendBatchCLITests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let token = server.mintDevice(environment: .sandbox, topic: SendBatchCLITests.topic).token
            let line =
                #"{"activity_key":"dienst-9","activity_event":"start","token":"\#(token)","payload":\#(Self.start)}"#
            let tokens = dir.appendingPathComponent("activities.jsonl").path
            try (line + "\n" + line + "\n").write(toFile: tokens, atomically: true, encoding: .utf8)
            let registry = dir.appendingPathComponent("activities.sqlite").path
            let args = try SendBatchCLITests.arguments(server, tokens: tokens)

            let without = try await CLI.run(args)
            #expect(without.status == 1, "\(without.stderr)")
            #expect(without.stdout.contains("needs an activity registry"), "\(without.stdout)")
            #expect(server.deliveries(limit: 10).isEmpty)

            let with = try await CLI.run(args + ["--activity-registry", registry])
            #expect(with.status == 0, "\(with.stderr)")
            let results = try SendBatchCLITests.results(with.stdout)
            #expect(results.count == 1 && results.first?["status"] as? String == "accepted", "\(with.stdout)")
            #expect(
                with.stderr.contains("1 Live Activity start not sent: the activity of its key exists"), "\(with.stderr)"
            )
            #expect(server.deliveries(limit: 10).map(\.token) == [token])
            let opened = try await SQLiteActivityRegistry.open(path: registry)
            let activity = try #require(try await opened.activity(key: "dienst-9"))
            #expect(activity.state == .requested && activity.startAcceptedAt != nil)
            await opened.close()
        }
    }

    @Test(
        "A Live Activity line of an environment --url does not serve is refused as a plain line is, with the same hint")
    func unservedEnvironmentHint() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try SendBatchCLITests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let plain = server.mintDevice(environment: .production, topic: SendBatchCLITests.topic).token
            let pushToStart = server.mintDevice(
                environment: .production, topic: SendBatchCLITests.topic + ".push-type.liveactivity"
            ).token
            let lines = [
                #"{"token":"\#(plain)","environment":"production"}"#,
                #"{"activity_key":"dienst-10","activity_event":"start","token":"\#(pushToStart)","environment":"production","payload":\#(Self.start)}"#,
            ]
            let tokens = dir.appendingPathComponent("activities.jsonl").path
            try (lines.joined(separator: "\n") + "\n").write(toFile: tokens, atomically: true, encoding: .utf8)
            let registry = dir.appendingPathComponent("activities.sqlite").path
            let result = try await CLI.run(
                try SendBatchCLITests.arguments(server, tokens: tokens) + ["--activity-registry", registry])
            #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
            let results = try SendBatchCLITests.results(result.stdout)
            try #require(results.count == 2, "\(result.stdout)")
            // The same refusal for both lines but the line number: bad-input, the hint naming --production-url.
            let errors = results.map {
                ($0["error"] as? String)?.replacingOccurrences(
                    of: #"^Line \d+: "#, with: "", options: .regularExpression)
            }
            #expect(results.allSatisfy { $0["reason"] as? String == "bad-input" }, "\(result.stdout)")
            #expect(errors[0] != nil && errors[0] == errors[1], "\(result.stdout)")
            #expect(errors[1]?.contains("--production-url") == true, "\(result.stdout)")
            #expect(
                result.stderr.contains("2 lines named an environment --url does not stand in for"), "\(result.stderr)")
            #expect(server.deliveries(limit: 10).isEmpty)
        }
    }
}
