import Foundation
import KKPushCore
import KKPushMock
import Testing

/// The sending, simulation and checking commands, run as the command line.
@Suite("kkpush send, simulate, payload and token (the command line)")
struct PushPathCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    @Test("send: credentials from APNS_KEY_*; accepted in its environment, BadDeviceToken in the other")
    func send() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let ca = try #require(server.caFile)
            let env = ["APNS_KEY_PATH": Self.key, "APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001"]
            let ok = try await CLI.run(
                [
                    "send", "--token", device.token, "--topic", Self.topic, "--url", server.sandboxEndpoint.baseURL,
                    "--ca-file", ca, "--env", "sandbox", "--title", "Dienst", "--json",
                ], environment: env)
            #expect(ok.status == 0, "\(ok.stderr)")
            let j = try ok.json()
            #expect(j["status"] as? String == "accepted")
            #expect(j["environment"] as? String == "sandbox")
            #expect((j["apns_unique_id"] as? String)?.isEmpty == false)
            #expect(j["duration_ms"] is Double)

            let wrong = try await CLI.run(
                [
                    "send", "--token", device.token, "--topic", Self.topic, "--url", server.productionEndpoint.baseURL,
                    "--ca-file", ca, "--title", "Dienst",
                ], environment: env)
            #expect(wrong.status == 1)
            #expect(wrong.stdout.contains("BadDeviceToken"))
            #expect(wrong.stdout.contains("diagnose --probe") || wrong.stdout.lowercased().contains("fix"))
        }
    }

    @Test("send: an .apns file's Simulator Target Bundle is the topic and is not sent")
    func simulatorFile() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-\(UUID()).apns")
            try Data(#"{"Simulator Target Bundle":"nl.kantinekoning.app","aps":{"alert":{"title":"Sim"}}}"#.utf8).write(
                to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let r = try await CLI.run([
                "send", "--token", device.token, "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--payload", file.path,
            ])
            #expect(r.status == 0, "\(r.stderr)")
            let delivered = try #require(server.deliveries(token: device.token, limit: 1).first)
            #expect(delivered.topic == Self.topic)
            #expect(!delivered.payload.contains("Simulator Target Bundle"))
        }
    }

    @Test("simulate, as a new user runs it")
    func simulate() async throws {
        let r = try await CLI.run(["simulate", "--json"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.isEmpty)
    }

    @Test("simulate --scenario all reproduces every failure")
    func scenarios() async throws {
        let r = try await CLI.run(["simulate", "--scenario", "all"], timeout: 180)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        for name in [
            "server-apns-env-override", "primary-token", "expired-provider-token", "unregistered-device",
            "wrong-build-scheme", "vendor-id-change", "testflight-debug-build", "xcode-release-build",
        ] {
            #expect(r.stdout.contains(name))
        }
    }

    @Test("payload build | payload lint")
    func payload() async throws {
        let built = try await CLI.run([
            "payload", "build", "--dienst-update", "--tenant", "vvwilhelmus", "--dienst-id", "42",
        ])
        #expect(built.status == 0)
        let lint = try await CLI.run(
            ["payload", "lint", "-", "--push-type", "background", "--topic", Self.topic, "--json"], stdin: built.stdout)
        #expect(lint.status == 0)
        #expect(try lint.json()["valid"] as? Bool == true)
        let big = "{\"aps\":{\"alert\":\"" + String(repeating: "x", count: 5000) + "\"}}"
        let tooLarge = try await CLI.run(["payload", "lint", "-", "--json"], stdin: big)
        #expect(tooLarge.status == 1)
        let codes = (try tooLarge.json()["problems"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? []
        #expect(codes.contains("PayloadTooLarge"))
    }

    @Test("token verify: a description-form token is invalid, with the resolved environment")
    func tokenVerify() async throws {
        let body =
            #"{"token":"<abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789 abcd ef01 2345 6789>","build_environment":"development","app_version":"1.4.2","hardware_identifier":"6F1C2A8E-0000-4000-8000-000000000001"}"#
        let r = try await CLI.run(["token", "verify", "-", "--json"], stdin: body)
        #expect(r.status == 1)
        let j = try r.json()
        #expect(j["valid"] as? Bool == false)
        #expect(j["resolved_environment"] as? String == "sandbox")
        let codes = (j["problems"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? []
        #expect(codes.contains("token-description-form"))
    }
}
