import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush payload build --live-activity`, `payload lint` and `send` of Live Activity payloads (the command line).
@Suite("kkpush payload build/lint --live-activity (the command line)")
struct LiveActivityCLITests {
    static let bundle = "nl.kantinekoning.app"
    static let topic = bundle + ".push-type.liveactivity"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    static let startArguments = [
        "payload", "build", "--live-activity", "start", "--content-state", #"{"open":3}"#,
        "--attributes-type", "KantineAttributes", "--attributes", #"{"club":"vv-oranje"}"#, "--title", "Dienst",
        "--body", "Begint om 10:00",
    ]
    static let updateArguments = [
        "payload", "build", "--live-activity", "update", "--content-state", #"{"open":2}"#, "--relevance-score", "50",
    ]
    static let endArguments = ["payload", "build", "--live-activity", "end", "--content-state", #"{"open":0}"#]

    static func aps(_ stdout: String) throws -> [String: Any] {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        return try #require(object["aps"] as? [String: Any])
    }

    /// `payload lint -` of `payload` (as `payload build` printed it) with `--json`.
    static func lint(_ payload: String, _ extra: [String] = []) async throws -> (CLIResult, [String: Any]) {
        let result = try await CLI.run(["payload", "lint", "-", "--json"] + extra, stdin: payload)
        return (result, try result.json())
    }

    @Test("build --live-activity start: the payload, the push type and topic, the push-to-start token note")
    func buildStart() async throws {
        let before = LiveActivityRules.currentUnixSeconds()
        let result = try await CLI.run(Self.startArguments + ["--input-push-token"])
        #expect(result.status == 0, "\(result.stderr)")
        let aps = try Self.aps(result.stdout)
        #expect(aps["event"] as? String == "start")
        #expect(aps["attributes-type"] as? String == "KantineAttributes")
        #expect((aps["attributes"] as? [String: Any])?["club"] as? String == "vv-oranje")
        #expect((aps["content-state"] as? [String: Any])?["open"] as? Int == 3)
        #expect((aps["alert"] as? [String: Any])?["title"] as? String == "Dienst")
        #expect(aps["input-push-token"] as? Int == 1)
        let timestamp = try #require(aps["timestamp"] as? Int)
        #expect(timestamp >= before && timestamp <= LiveActivityRules.currentUnixSeconds())  // now, in seconds
        #expect(result.stderr.contains("--push-type liveactivity"))
        #expect(result.stderr.contains("<bundleId>.push-type.liveactivity"))
        #expect(result.stderr.contains("pushToStartTokenUpdates"))
        #expect(result.stderr.contains("a start sent to an update token does nothing"))
        #expect(!result.stderr.contains("warning"), "\(result.stderr)")
    }

    @Test(
        "build --live-activity start|update|end round-trips through payload lint with no warnings",
        arguments: [
            startArguments, startArguments + ["--input-push-channel", "dHN0LXNyY2gtY2hubA=="], updateArguments,
            endArguments, endArguments + ["--dismissal-date", "1000"],
        ])
    func roundTrip(_ arguments: [String]) async throws {
        let build = try await CLI.run(
            arguments + ["--stale-date", String(LiveActivityRules.currentUnixSeconds() + 3600)])
        #expect(build.status == 0, "\(build.stderr)")
        #expect(build.stderr.contains("liveactivity"))
        #expect(!build.stderr.contains("pushToStartTokenUpdates") || arguments.contains("start"))
        let (lint, object) = try await Self.lint(build.stdout, ["--priority", "5"])
        #expect(lint.status == 0, "\(lint.stdout)")
        #expect(object["valid"] as? Bool == true)
        #expect(object["push_type"] as? String == "liveactivity")
        let problems = try #require(object["problems"] as? [[String: Any]])
        let loud = problems.filter { ($0["severity"] as? String) != "info" }
        #expect(loud.isEmpty, "\(loud)")
        // With the topic and push type given, the same.
        let (given, _) = try await Self.lint(
            build.stdout, ["--priority", "5", "--push-type", "liveactivity", "--topic", Self.topic])
        #expect(given.status == 0, "\(given.stdout)")
    }

    @Test("build refuses what it cannot build right, naming the flag")
    func buildRefuses() async throws {
        let cases: [([String], String)] = [
            (["payload", "build", "--live-activity", "begin", "--content-state", "{}"], "start, update or end"),
            (["payload", "build", "--live-activity", "update"], "--content-state"),
            (Self.updateArguments + ["--attributes-type", "A"], "--attributes-type belongs to --live-activity start"),
            (Self.endArguments + ["--input-push-token"], "--input-push-token belongs to --live-activity start"),
            (
                Array(Self.startArguments.prefix(10)),  // no --title/--body
                "a start needs an alert"
            ),
            (Self.updateArguments + ["--timestamp", "1800000000000"], "in milliseconds; APNs wants UNIX seconds"),
            (["payload", "build", "--live-activity", "update", "--content-state", "[1]"], "not an object"),
            (
                ["payload", "build", "--live-activity", "update", "--content-state", "{open"],
                "--content-state is not JSON"
            ),
            (["payload", "build", "--title", "Hoi", "--timestamp", "1800000000"], "belongs to --live-activity"),
            (Self.updateArguments + ["--background"], "--live-activity cannot have --background"),
        ]
        for (arguments, words) in cases {
            let result = try await CLI.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("build warns on standard error about a past stale-date and still prints the payload")
    func buildWarns() async throws {
        let result = try await CLI.run(Self.updateArguments + ["--stale-date", "1000"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("warning liveactivity-stale-date-past"))
        #expect(try Self.aps(result.stdout)["stale-date"] as? Int == 1000)
    }

    @Test("lint names each mistake in a Live Activity file (exit 0: APNs accepts it, the device does not)")
    func lintMistakes() async throws {
        let now = LiveActivityRules.currentUnixSeconds()
        let cases: [(String, String, String)] = [
            (
                #"{"aps":{"event":"update","timestamp":\#(now * 1000),"content-state":{}}}"#,
                "liveactivity-timestamp-milliseconds", "timestamp is in milliseconds; APNs wants seconds"
            ),
            (#"{"aps":{"event":"update","timestamp":\#(now)}}"#, "liveactivity-missing-content-state", "content-state"),
            (
                #"{"aps":{"event":"start","timestamp":\#(now),"content-state":{}}}"#, "liveactivity-start-incomplete",
                "aps.attributes-type, aps.attributes, aps.alert"
            ),
            (
                #"{"aps":{"event":"end","timestamp":\#(now),"attributes":{}}}"#, "liveactivity-start-only-key",
                "only a start uses"
            ),
        ]
        for (payload, code, words) in cases {
            let result = try await CLI.run(["payload", "lint", "-"], stdin: payload)
            #expect(result.status == 0, "\(result.stdout)")
            #expect(result.stdout.contains("liveactivity push"), "\(result.stdout)")
            #expect(result.stdout.contains(code), "\(result.stdout)")
            #expect(result.stdout.contains(words), "\(result.stdout)")
        }
    }

    @Test("send a built start and update to the mock: accepted, delivered as liveactivity")
    func sendToMock() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.bundle)
            let dir = try makeTemporaryDirectory(prefix: "kkpush-la")
            defer { try? FileManager.default.removeItem(at: dir) }
            for (index, arguments) in [Self.startArguments, Self.updateArguments].enumerated() {
                let build = try await CLI.run(arguments)
                #expect(build.status == 0, "\(build.stderr)")
                let file = dir.appendingPathComponent("la\(index).json")
                try build.stdout.write(to: file, atomically: true, encoding: .utf8)
                let send = try await CLI.run([
                    "send", "--token", device.token, "--payload", file.path, "--push-type", "liveactivity",
                    "--priority", "5", "--topic", Self.topic, "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                    try #require(server.caFile), "--key", Self.key, "--key-id", "KKTEST0001", "--team-id",
                    "KKTEAM0001", "--json",
                ])
                #expect(send.status == 0, "\(send.stdout) \(send.stderr)")
                #expect(try send.json()["status"] as? String == "accepted")
            }
            let delivered = server.deliveries(token: device.token)
            #expect(delivered.count == 2)
            #expect(delivered.allSatisfy { $0.pushType == "liveactivity" && $0.topic == Self.topic })
        }
    }
}
