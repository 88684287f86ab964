import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush channel create|list|show|delete` and `kkpush send --channel` against the real mock.
@Suite("CLI: broadcast channels")
struct ChannelCLITests {
    static let bundle = "nl.kantinekoning.app"
    static let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
    static let laPayload = #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"score":"2-1"}}}"#

    static func keyFlags() -> [String] { ["--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"] }

    static func manage(_ server: MockAPNsServer, _ env: APNsEnvironment) throws -> [String] {
        [
            "--bundle-id", bundle, "--env", env.rawValue, "--url", server.channelEndpoint(env).baseURL, "--ca-file",
            try #require(server.caFile),
        ] + keyFlags()
    }

    @Test("create, show, list, delete in sandbox; the channel is not in production; exit codes and words")
    func lifecycle() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(
                ["channel", "create", "--storage-policy", "1", "--json"] + Self.manage(server, .sandbox))
            // What the mock answered goes in the message (a series run once saw exit 1 here: an error answer, not kept).
            #expect(create.status == 0, "stdout: \(create.stdout); stderr: \(create.stderr)")
            let id = try #require(try create.json()["channel_id"] as? String)
            #expect(try create.json()["http_status"] as? Int == 201)
            #expect(try create.json()["apns_request_id"] is String)

            let show = try await CLI.run(["channel", "show", "--channel", id] + Self.manage(server, .sandbox))
            #expect(show.status == 0, "\(show.stderr)")
            #expect(show.stdout.contains("1 (Most Recent Message Stored)") && show.stdout.contains("LiveActivity"))

            let list = try await CLI.run(["channel", "list", "--json"] + Self.manage(server, .sandbox))
            #expect(try list.json()["channels"] as? [String] == [id])

            let other = try await CLI.run(["channel", "show", "--channel", id] + Self.manage(server, .production))
            #expect(other.status == 1)
            #expect(other.stdout.contains("rejected: 400 ChannelNotRegistered"))
            #expect(other.stdout.contains("why:") && other.stdout.contains("fix:"))
            #expect(other.stdout.contains("other environment"))
            #expect(other.stdout.contains("kkpush channel list --env"))

            // A broadcast to it, and its apns-request-id.
            let device = server.mintDevice(environment: .sandbox, topic: Self.bundle)
            try server.subscribe(token: device.token, toChannel: id)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-ch-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = dir.appendingPathComponent("la.json")
            try Self.laPayload.write(to: payload, atomically: true, encoding: .utf8)
            let apns = [
                "--topic", Self.bundle, "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--env", "sandbox",
            ]
            let send = try await CLI.run(["send", "--channel", id, "--payload", payload.path] + apns + Self.keyFlags())
            #expect(send.status == 0, "\(send.stdout) \(send.stderr)")
            #expect(send.stdout.contains("accepted broadcast") && send.stdout.contains("apns-request-id: "))
            #expect(server.deliveries(token: device.token).count == 1)
            #expect(server.deliveries(token: device.token).first?.channelID == id)

            // A nonzero expiration on a policy-1 channel is fine; delete, then the channel is gone.
            let del = try await CLI.run(["channel", "delete", "--channel", id] + Self.manage(server, .sandbox))
            #expect(del.status == 0 && del.stdout.contains("deleted channel"))
            let again = try await CLI.run(
                ["send", "--channel", id, "--payload", payload.path, "--json"] + apns + Self.keyFlags())
            #expect(again.status == 1)
            #expect(try again.json()["reason"] as? String == "ChannelNotRegistered")
            #expect(try again.json()["apns_request_id"] is String)
        }
    }

    @Test("Refusals: BadExpirationDate on policy 0, TopicDisallowed pre-flight, usage errors")
    func refusals() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(["channel", "create", "--json"] + Self.manage(server, .sandbox))
            let id = try #require(try create.json()["channel_id"] as? String)
            let apns = [
                "--topic", Self.bundle, "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--env", "sandbox",
            ]
            let expiring = try await CLI.run(
                ["send", "--channel", id, "--title", "x", "--expiration", "1900000000"] + apns + Self.keyFlags())
            #expect(expiring.status == 1)
            #expect(expiring.stdout.contains("rejected: 400 BadExpirationDate"), "\(expiring.stdout)")
            #expect(expiring.stdout.contains("kkpush channel show --channel ID"), "\(expiring.stdout)")

            // Another push type's suffix is refused before sending (the broadcast bundle id rule, exit 1); the Live
            // Activity topic's is dropped with a warning (BroadcastRuleCLITests).
            let suffixed = try await CLI.run(
                ["send", "--channel", id, "--title", "x", "--topic", Self.bundle + ".voip"]
                    + Array(apns.dropFirst(2)) + Self.keyFlags())
            #expect(suffixed.status == 1)
            #expect(suffixed.stderr.contains("TopicDisallowed"), "\(suffixed.stderr)")

            let badPolicy = try await CLI.run(
                ["channel", "create", "--storage-policy", "2"] + Self.manage(server, .sandbox))
            #expect(badPolicy.status == 64)
            let both = try await CLI.run(
                ["send", "--channel", id, "--token", String(repeating: "a", count: 64), "--title", "x"] + apns
                    + Self.keyFlags())
            #expect(both.status == 64)
            let noBundle = try await CLI.run(
                [
                    "channel", "list", "--url", server.channelEndpoint(.sandbox).baseURL, "--ca-file",
                    try #require(server.caFile),
                ]
                    + Self.keyFlags())
            #expect(noBundle.status == 64)
            let missingCA = try await CLI.run(
                ["channel", "list", "--ca-file", "/nonexistent/ca.crt", "--url", "https://127.0.0.1:1"]
                    + ["--bundle-id", Self.bundle] + Self.keyFlags())
            #expect(missingCA.status == 2)
            let help = try await CLI.run(["channel", "--help"])
            #expect(help.status == 0 && help.stdout.contains("create") && help.stdout.contains("2195"))
        }
    }

    @Test("send-batch: channel lines broadcast in their place beside device lines; result lines, summary, --resume")
    func batchChannelLines() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(["channel", "create", "--json"] + Self.manage(server, .sandbox))
            let id = try #require(try create.json()["channel_id"] as? String)
            let topic = Self.bundle + ".push-type.liveactivity"
            let subscriber = server.mintDevice(environment: .sandbox, topic: topic)
            try server.subscribe(token: subscriber.token, toChannel: id)
            let device = server.mintDevice(environment: .sandbox, topic: topic)
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-chb-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = dir.appendingPathComponent("la.json")
            try Self.laPayload.write(to: payload, atomically: true, encoding: .utf8)
            let input = dir.appendingPathComponent("lines.txt")
            let unknown = "bm90LXRoZXJlLWF0LWFsbA=="
            try [
                device.token,
                #"{"channel": "\#(id)"}"#,
                #"{"channel": "\#(unknown)"}"#,
                #"{"channel": "\#(id)", "token": "\#(device.token)"}"#,
                #"{"channel": "not base64!"}"#,
            ].joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
            let results = dir.appendingPathComponent("results.jsonl")
            let flags = [
                "--topic", topic, "--push-type", "liveactivity", "--priority", "5", "--payload", payload.path,
                "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--env", "sandbox",
            ]
            let run = try await CLI.run(
                ["send-batch", "--tokens", input.path, "--output", results.path] + flags + Self.keyFlags())
            #expect(run.status == 1, "\(run.stderr)")
            let lines = try String(contentsOf: results, encoding: .utf8).split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            let byIndex = Dictionary(uniqueKeysWithValues: lines.map { ($0["index"] as? Int ?? 0, $0) })
            #expect(byIndex.count == 5)
            #expect(byIndex[1]?["status"] as? String == "accepted" && byIndex[1]?["token"] as? String == device.token)
            // The broadcast: accepted, token null, its channel, the apns-request-id as apns_id; one copy delivered.
            let broadcast = try #require(byIndex[2])
            #expect(broadcast["status"] as? String == "accepted" && broadcast["channel"] as? String == id)
            #expect(broadcast["token"] is NSNull)
            let requestID = try #require(broadcast["apns_id"] as? String)
            #expect(server.deliveries(token: subscriber.token).map(\.apnsID) == [requestID])
            #expect(server.deliveries(token: subscriber.token).first?.channelID == id)
            #expect(
                byIndex[3]?["reason"] as? String == "ChannelNotRegistered" && byIndex[3]?["http_status"] as? Int == 400)
            #expect(byIndex[4]?["reason"] as? String == "bad-input")
            #expect((byIndex[4]?["error"] as? String)?.contains("not both") == true)
            #expect(byIndex[5]?["reason"] as? String == "preflight")
            #expect((byIndex[5]?["error"] as? String)?.contains("BadChannelId") == true)
            #expect(run.stderr.contains("3 lines named a channel"), "\(run.stderr)")

            // --resume: the accepted device push and broadcast are not sent again, the rest are.
            let again = try await CLI.run(
                ["send-batch", "--tokens", input.path, "--resume", results.path] + flags + Self.keyFlags())
            #expect(again.stderr.contains("skipped (--resume): 2 accepted"), "\(again.stderr)")
            #expect(server.deliveries(token: subscriber.token).count == 1)
            #expect(server.deliveries(token: device.token).count == 1)
        }
    }

    @Test("diagnose --channel --probe reads the channel in both environments: the other environment, the policy")
    func diagnoseChannel() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let create = try await CLI.run(["channel", "create", "--json"] + Self.manage(server, .sandbox))
            let id = try #require(try create.json()["channel_id"] as? String)
            let probe = [
                "--probe", "--sandbox-channels-url", server.channelEndpoint(.sandbox).baseURL,
                "--production-channels-url", server.channelEndpoint(.production).baseURL, "--ca-file",
                try #require(server.caFile), "--topic", Self.bundle, "--channel", id, "--json",
            ]
            let other = try await CLI.run(["diagnose", "--env", "production"] + probe + Self.keyFlags())
            #expect(other.status == 1, "\(other.stdout) \(other.stderr)")
            let verdict = try #require(try other.json()["verdict"] as? [String: Any])
            #expect(verdict["code"] as? String == "channel-other-environment")
            #expect((verdict["fix"] as? String)?.contains("through the sandbox host (--env)") == true)
            let expiring = try await CLI.run(
                ["diagnose", "--env", "sandbox", "--expiration", "1900000000"] + probe + Self.keyFlags())
            #expect(expiring.status == 1)
            #expect(
                (try expiring.json()["verdict"] as? [String: Any])?["code"] as? String
                    == "channel-expiration-no-storage")
            let fine = try await CLI.run(["diagnose", "--env", "sandbox"] + probe + Self.keyFlags())
            #expect(fine.status == 0, "\(fine.stdout)")
            let both = try await CLI.run(
                ["diagnose", "--channel", id, "--token", String(repeating: "a", count: 64)] + Self.keyFlags())
            #expect(both.status == 64)
            let urlWithoutProbe = try await CLI.run(
                ["diagnose", "--channel", id, "--sandbox-channels-url", "https://127.0.0.1:1"] + Self.keyFlags())
            #expect(urlWithoutProbe.status == 64)
        }
    }
}
