import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `send --apns-file` with a push the Simulator's file cannot hold (over `simctl push`'s 4096 bytes): the file is an
/// output the user asked for, so a push that would go out is not sent (usage error, exit 64, naming --apns-file);
/// a push its own rules fail keeps its own verdict (exit 1), with a warning that no file was written.
@Suite("send --apns-file over the Simulator's limit: refused before sending, or the push's own verdict")
struct SendSimulatorFileLimitCLITests {
    static let topic = "nl.kantinekoning.app"

    /// A payload file of about `size` bytes: `aps` (given) and a filler key.
    static func payload(in dir: URL, size: Int, aps: String = "{}", name: String = "payload.json") throws -> String {
        let head = #"{"aps":\#(aps),"blob":""#
        let text = head + String(repeating: "x", count: size - head.utf8.count - 2) + #""}"#
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("A voip push of 4500 bytes (APNs takes 5120) with --apns-file: exit 64 naming the flag, nothing sent")
    func voipOverTheFileLimit() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-apns-limit")
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = try Self.payload(in: dir, size: 4500)
            let file = dir.appendingPathComponent("call.apns").path
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let base = [
                "send", "--token", device.token, "--topic", Self.topic + ".voip", "--push-type", "voip", "--payload",
                payload,
            ]
            let refused = try await CLI.run(base + ["--apns-file", file] + SimulatorFileCLITests.credential(server))
            #expect(refused.status == 64, "\(refused.stdout) \(refused.stderr)")
            #expect(refused.stderr.contains("--apns-file \(file)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("would be 4549 bytes; simctl push takes at most 4096"), "\(refused.stderr)")
            #expect(refused.stderr.contains("Nothing was sent"), "\(refused.stderr)")
            #expect(refused.stderr.contains("leave out --apns-file"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file))
            #expect(server.deliveries().isEmpty && server.acceptedConnections == 0)

            // --json: the same refusal as the error object on stdout.
            let json = try await CLI.run(
                base + ["--apns-file", file, "--json"] + SimulatorFileCLITests.credential(server))
            #expect(json.status == 64, "\(json.stdout) \(json.stderr)")
            let error = try #require(try json.json()["error"] as? [String: Any], "\(json.stdout)")
            #expect(error["code"] as? String == "simulator-file-too-large")

            // The same push without the flag: APNs's rules take it.
            let sent = try await CLI.run(base + SimulatorFileCLITests.credential(server))
            #expect(sent.status == 0, "\(sent.stdout) \(sent.stderr)")
            #expect(server.deliveries().count == 1)
        }
    }

    @Test("An alert over APNs's own 4096 bytes with --apns-file: the push's verdict (exit 1), no file, a warning")
    func pushFailsItsOwnRules() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-apns-limit")
            defer { try? FileManager.default.removeItem(at: dir) }
            let payload = try Self.payload(in: dir, size: 5000, aps: #"{"alert":"Dienst"}"#)
            let file = dir.appendingPathComponent("big.apns").path
            let r = try await CLI.run(
                [
                    "send", "--token", TestTokens.random(), "--topic", Self.topic, "--payload", payload, "--apns-file",
                    file, "--json",
                ] + SimulatorFileCLITests.credential(server))
            #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
            let object = try r.json()
            #expect(object["status"] as? String == "failed" && object["reason"] as? String == "preflight", "\(object)")
            let problems = try #require(object["problems"] as? [[String: Any]], "\(object)")
            #expect(
                problems.contains { $0["code"] as? String == "PayloadTooLarge" }
                    || (object["error"] as? String ?? "").contains("PayloadTooLarge"), "\(object)")
            let warning = try #require(problems.first { $0["code"] as? String == "simulator-file-too-large" })
            #expect(warning["severity"] as? String == "warning")
            #expect((warning["message"] as? String ?? "").contains("No --apns-file was written"), "\(warning)")
            #expect(!FileManager.default.fileExists(atPath: file))
            #expect(server.deliveries().isEmpty)
        }
    }

    @Test("A broadcast payload of 4500 bytes (APNs takes 5120) with --apns-file: exit 64, nothing sent")
    func broadcastOverTheFileLimit() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-apns-limit")
            defer { try? FileManager.default.removeItem(at: dir) }
            let now = Int(Date().timeIntervalSince1970)
            let payload = try Self.payload(
                in: dir, size: 4500, aps: #"{"timestamp":\#(now),"event":"update","content-state":{"score":"1-0"}}"#)
            let file = dir.appendingPathComponent("channel.apns").path
            let r = try await CLI.run(
                [
                    "send", "--channel", "dGVzdGNoYW5uZWw=", "--topic", Self.topic, "--payload", payload, "--apns-file",
                    file,
                ] + SimulatorFileCLITests.credential(server))
            #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("--apns-file \(file)") && r.stderr.contains("Nothing was sent"), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: file))
            #expect(server.acceptedConnections == 0)
        }
    }
}
