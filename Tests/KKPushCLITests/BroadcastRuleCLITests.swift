import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// One broadcast rule across `channel`, `send --channel` and `send-batch`'s channel lines: the bundle id a topic
/// stands for (a Live Activity suffix dropped with a warning, another suffix refused with exit 1), the warnings
/// `payload lint --broadcast` gives, and channel lines that bring their own payload.
@Suite("CLI: one broadcast rule")
struct BroadcastRuleCLITests {
    static let bundle = ChannelCLITests.bundle

    static func apns(_ server: MockAPNsServer, topic: String) throws -> [String] {
        [
            "--topic", topic, "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
            "--env", "sandbox",
        ] + ChannelCLITests.keyFlags()
    }

    static func manage(_ server: MockAPNsServer, bundleID: String) throws -> [String] {
        [
            "--bundle-id", bundleID, "--env", "sandbox", "--url", server.channelEndpoint(.sandbox).baseURL,
            "--ca-file", try #require(server.caFile),
        ] + ChannelCLITests.keyFlags()
    }

    static func temporary(_ files: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-bcr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return dir
    }

    /// `send --channel` and `send-batch` (one channel line with its payload) of one broadcast to `topic`.
    static func sendAndBatch(
        _ server: MockAPNsServer, channel id: String, topic: String, json: Bool = false
    ) async throws -> (send: CLIResult, batch: CLIResult) {
        let dir = try temporary([
            "la.json": ChannelCLITests.laPayload,
            "lines.txt": #"{"channel": "\#(id)", "payload": \#(ChannelCLITests.laPayload)}"#,
        ])
        defer { try? FileManager.default.removeItem(at: dir) }
        let send = try await CLI.run(
            ["send", "--channel", id, "--payload", dir.appendingPathComponent("la.json").path]
                + (json ? ["--json"] : [])
                + apns(server, topic: topic))
        let batch = try await CLI.run(
            ["send-batch", "--tokens", dir.appendingPathComponent("lines.txt").path] + apns(server, topic: topic))
        return (send, batch)
    }

    @Test("send --channel gives the Live Activity warnings payload lint --broadcast gives for the same payload")
    func sendWarnsAsLintDoes() async throws {
        let now = LiveActivityRules.currentUnixSeconds()
        let payloads = [
            #"{"aps":{"timestamp":\#(now * 1000),"event":"update","content-state":{"s":1}}}"#,
            #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"s":1}}}"#,
            #"{"aps":{"timestamp":\#(now),"content-state":{"s":1}}}"#,
        ]
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(
                ["channel", "create", "--json"] + Self.manage(server, bundleID: Self.bundle))
            let id = try #require(try create.json()["channel_id"] as? String)
            for payload in payloads {
                let dir = try Self.temporary(["p.json": payload])
                defer { try? FileManager.default.removeItem(at: dir) }
                let file = dir.appendingPathComponent("p.json").path
                let lint = try await CLI.run(["payload", "lint", file, "--broadcast", "--json"])
                let warnings = try #require(try lint.json()["problems"] as? [[String: Any]]).filter {
                    $0["severity"] as? String == "warning"
                }.compactMap { $0["code"] as? String }
                #expect(!warnings.isEmpty, "\(payload): \(lint.stdout)")
                let send = try await CLI.run(
                    ["send", "--channel", id, "--payload", file] + Self.apns(server, topic: Self.bundle))
                for code in warnings {
                    #expect(send.stderr.contains("warning \(code)"), "\(payload): \(code) missing: \(send.stderr)")
                }
            }
        }
    }

    @Test("The Live Activity topic: all three drop the suffix with the same warning and send to the bundle id")
    func liveActivitySuffixDroppedEverywhere() async throws {
        let topic = Self.bundle + ".push-type.liveactivity"
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(["channel", "create", "--json"] + Self.manage(server, bundleID: topic))
            #expect(create.status == 0, "\(create.stdout)\(create.stderr)")
            #expect(create.stderr.contains("warning broadcast-topic-suffix-dropped"), "\(create.stderr)")
            let id = try #require(try create.json()["channel_id"] as? String)

            let (send, batch) = try await Self.sendAndBatch(server, channel: id, topic: topic)
            #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
            #expect(send.stderr.contains("warning broadcast-topic-suffix-dropped"), "\(send.stderr)")
            #expect(batch.status == 0, "\(batch.stdout)\(batch.stderr)")
            #expect(batch.stderr.contains("warning broadcast-topic-suffix-dropped"), "\(batch.stderr)")
        }
    }

    @Test("Another push type's suffix: all three refuse it with TopicDisallowed and exit 1")
    func otherSuffixRefusedEverywhere() async throws {
        let topic = Self.bundle + ".voip"
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(
                ["channel", "create", "--json"] + Self.manage(server, bundleID: Self.bundle))
            let id = try #require(try create.json()["channel_id"] as? String)
            let channel = try await CLI.run(["channel", "list", "--json"] + Self.manage(server, bundleID: topic))
            #expect(channel.status == 1, "\(channel.stdout)\(channel.stderr)")
            #expect(
                try channel.json()["error"].flatMap { $0 as? [String: Any] }?["code"] as? String
                    == "broadcast-topic-disallowed")

            let (send, batch) = try await Self.sendAndBatch(server, channel: id, topic: topic, json: true)
            #expect(send.status == 1, "\(send.stdout)\(send.stderr)")
            #expect(
                try send.json()["error"].flatMap { $0 as? [String: Any] }?["code"] as? String
                    == "broadcast-topic-disallowed")
            #expect(batch.status == 1, "\(batch.stdout)\(batch.stderr)")
            #expect(batch.stdout.contains("TopicDisallowed"), "\(batch.stdout)")
        }
    }

    @Test("send-batch: channel lines each with a payload need no --payload; a line without one is bad-input")
    func channelLinesBringTheirPayload() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(
                ["channel", "create", "--json"] + Self.manage(server, bundleID: Self.bundle))
            let id = try #require(try create.json()["channel_id"] as? String)
            let dir = try Self.temporary([
                "lines.txt": #"{"channel": "\#(id)", "payload": \#(ChannelCLITests.laPayload)}"# + "\n"
                    + #"{"channel": "\#(id)", "payload": \#(ChannelCLITests.laPayload)}"#,
                "bare.txt": #"{"channel": "\#(id)"}"#,
            ])
            defer { try? FileManager.default.removeItem(at: dir) }
            let batch = try await CLI.run(
                ["send-batch", "--tokens", dir.appendingPathComponent("lines.txt").path]
                    + Self.apns(server, topic: Self.bundle))
            #expect(batch.status == 0, "\(batch.stdout)\(batch.stderr)")
            #expect(batch.stdout.components(separatedBy: #""status":"accepted""#).count == 3, "\(batch.stdout)")

            let bare = try await CLI.run(
                ["send-batch", "--tokens", dir.appendingPathComponent("bare.txt").path]
                    + Self.apns(server, topic: Self.bundle))
            #expect(bare.status == 1)
            #expect(bare.stdout.contains("bad-input") && bare.stdout.contains("no payload"), "\(bare.stdout)")
        }
    }
}
