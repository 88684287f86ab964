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
        try await withMockServer { server in
            let create = try await CLI.run(
                ["channel", "create", "--storage-policy", "1", "--json"] + Self.manage(server, .sandbox))
            #expect(create.status == 0, "\(create.stderr)")
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
        try await withMockServer { server in
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

            let suffixed = try await CLI.run(
                ["send", "--channel", id, "--title", "x", "--topic", Self.bundle + ".push-type.liveactivity"]
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
}
