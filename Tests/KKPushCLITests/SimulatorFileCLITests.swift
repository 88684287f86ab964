import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The device loop: `send --apns-file`, `payload build --apns-file` and the mock's `GET /deliveries/{sequence}/apns`
/// write a push as an Xcode Simulator `.apns` file, which kkpush's own reader (`payload lint`, `send --payload`)
/// reads back, within `simctl push`'s documented keys and 4096 bytes.
@Suite("Simulator .apns files: send, payload build, the mock's deliveries", .serialized)
struct SimulatorFileCLITests {
    static let topic = "nl.kantinekoning.app"

    static func credential(_ server: MockAPNsServer) throws -> [String] {
        [
            "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
            "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id", "KKTEST0001",
            "--team-id", "KKTEAM0001",
        ]
    }

    static func simctlKeys(_ data: Data) throws -> [String: Any] {
        #expect(data.count <= 4096)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["aps"] is [String: Any], "no aps object: \(String(decoding: data, as: UTF8.self))")
        return object
    }

    @Test("payload build --apns-file: the bundle id without the suffix, and payload lint reads it back")
    func payloadBuild() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-apns")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("dienst.apns").path
        let built = try await CLI.run([
            "payload", "build", "--title", "Dienst gewijzigd", "--body", "Bardienst om 19:00", "--topic", Self.topic,
            "--apns-file", file,
        ])
        #expect(built.status == 0, "\(built.stderr)")
        let object = try Self.simctlKeys(try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(object["Simulator Target Bundle"] as? String == Self.topic)
        let lint = try await CLI.run(["payload", "lint", file, "--json"])
        #expect(lint.status == 0, "\(lint.stdout) \(lint.stderr)")
        let judged = try lint.json()
        #expect(judged["topic"] as? String == Self.topic)
        #expect(judged["valid"] as? Bool == true)
        // What lint judges is what was built: the file holds the printed payload and the target bundle only.
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(built.stdout.utf8)) as? [String: Any])
        #expect(NSDictionary(dictionary: object.filter { $0.key != "Simulator Target Bundle" }).isEqual(to: printed))

        // A Live Activity update to its suffixed topic: the plain bundle id, and a warning that simctl push
        // does not deliver it.
        let live = dir.appendingPathComponent("live.apns").path
        let update = try await CLI.run([
            "payload", "build", "--live-activity", "update", "--content-state", #"{"score":2}"#, "--timestamp",
            "1700000000",
            "--topic", Self.topic + ".push-type.liveactivity", "--apns-file", live,
        ])
        #expect(update.status == 0, "\(update.stderr)")
        #expect(update.stderr.contains("simulator-push-type"), "\(update.stderr)")
        let liveObject = try Self.simctlKeys(try Data(contentsOf: URL(fileURLWithPath: live)))
        #expect(liveObject["Simulator Target Bundle"] as? String == Self.topic)

        // Without a topic there is no target bundle to write: refused, nothing written.
        let none = dir.appendingPathComponent("none.apns").path
        let refused = try await CLI.run(
            ["payload", "build", "--title", "x", "--apns-file", none], environment: ["APNS_TOPIC": ""])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--topic"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: none))
    }

    /// One push of each kind as kkpush sends it, its keys in an order of the sender's own (a custom key before `aps`,
    /// `aps`'s keys not in kkpush's order), so that a reader or writer that re-encodes shows.
    static let kinds: [(type: PushType, payload: String)] = [
        (
            .alert,
            #"{"dienst_id":"4711","aps":{"sound":"default","alert":{"body":"Bardienst om 19:00","title":"Dienst"}}}"#
        ),
        (.background, #"{"type":"dienst_update","aps":{"content-available":1}}"#),
        (
            .liveactivity,
            #"{"match":7,"aps":{"content-state":{"score":2},"event":"update","timestamp":1700000000}}"#
        ),
        (.voip, #"{"call_id":"c-1","aps":{},"caller":"Kantine"}"#),
    ]

    @Test(
        "kkpush reads back its own .apns files, alert, background, Live Activity and VoIP: the payload byte for byte, the topic with its suffix"
    )
    func roundTripEveryKind() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let dir = try makeTemporaryDirectory(prefix: "kkpush-apns")
            defer { try? FileManager.default.removeItem(at: dir) }
            for (type, payload) in Self.kinds {
                let topic = type.topic(forBundleID: Self.topic)
                let json = dir.appendingPathComponent("\(type).json").path
                try Data(payload.utf8).write(to: URL(fileURLWithPath: json))
                let file = dir.appendingPathComponent("\(type).apns").path
                let sent = try await CLI.run(
                    [
                        "send", "--token", device.token, "--topic", topic, "--push-type", type.rawValue, "--payload",
                        json, "--apns-file", file,
                    ] + Self.credential(server))
                #expect(sent.status == 0, "\(type): \(sent.stdout) \(sent.stderr)")
                // Written: the target bundle (the app's bundle id, as simctl push wants it), then the payload's own
                // bytes, in the sender's key order.
                let written = String(decoding: try Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self)
                #expect(
                    written == #"{"Simulator Target Bundle":"nl.kantinekoning.app","# + payload.dropFirst() + "\n",
                    "\(type): \(written)")
                _ = try Self.simctlKeys(Data(written.utf8))

                // Read back: sent again with no --topic (the push type given only where the payload cannot tell it).
                let again = try await CLI.run(
                    ["send", "--token", device.token, "--payload", file, "--json"]
                        + (type == .voip || type == .background ? ["--push-type", type.rawValue] : [])
                        + Self.credential(server))
                #expect(again.status == 0, "\(type): \(again.stdout) \(again.stderr)")
                #expect(!again.stdout.contains("--topic"), "\(type): \(again.stdout)")
                let deliveries = server.deliveries(token: device.token)
                let first = try #require(deliveries.dropLast().last)
                let second = try #require(deliveries.last)
                #expect(first.payload == payload, "\(type): \(first.payload)")
                #expect(second.payload == payload, "\(type): the payload read back differs: \(second.payload)")
                #expect(second.topic == topic, "\(type): \(second.topic)")
                #expect(second.pushType == type.rawValue, "\(type): \(second.pushType ?? "-")")

                // payload lint judges the same: valid, its topic the one the file was written from.
                let lint = try await CLI.run(
                    ["payload", "lint", file, "--json"] + (type == .voip ? ["--push-type", "voip"] : []))
                #expect(lint.status == 0, "\(type): \(lint.stdout) \(lint.stderr)")
                let judged = try lint.json()
                #expect(judged["valid"] as? Bool == true, "\(type): \(lint.stdout)")
                #expect(judged["topic"] as? String == topic, "\(type): \(lint.stdout)")
                #expect(judged["size"] as? Int == payload.utf8.count, "\(type): \(lint.stdout)")
            }
        }
    }

    @Test("send --apns-file writes what the mock delivered; GET /deliveries/{sequence}/apns serves the same file")
    func sendAndMockDelivery() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let dir = try makeTemporaryDirectory(prefix: "kkpush-apns")
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("sent.apns").path
            let send = try await CLI.run(
                [
                    "send", "--token", device.token, "--topic", Self.topic, "--title", "Dienst", "--data",
                    "dienst_id=4711", "--apns-file", file, "--json",
                ] + Self.credential(server))
            #expect(send.status == 0, "\(send.stderr)")
            let written = try Data(contentsOf: URL(fileURLWithPath: file))
            let object = try Self.simctlKeys(written)
            #expect(object["Simulator Target Bundle"] as? String == Self.topic)
            let delivery = try #require(server.deliveries().last)
            // The file's payload is the payload the mock received.
            let read = PayloadFile.read(Array(written), fileName: "sent.apns")
            #expect(String(decoding: read.payload, as: UTF8.self) == delivery.payload)

            let admin = try #require(server.adminURL)
            let answer = try await MetricsScrape.get(admin + "/deliveries/\(delivery.sequence)/apns")
            #expect(answer.status == 200, "\(answer.body)")
            #expect(answer.body == String(decoding: written, as: UTF8.self))
            let missing = try await MetricsScrape.get(admin + "/deliveries/999999/apns")
            #expect(missing.status == 404)
            #expect(missing.body.contains("admin-delivery-unknown"), "\(missing.body)")
            let bad = try await MetricsScrape.get(admin + "/deliveries/x/apns")
            #expect(bad.status == 400)
        }
    }
}
