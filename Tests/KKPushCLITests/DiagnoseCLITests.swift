import Foundation
import KKPushCore
import KKPushMock
import Testing

/// `kkpush diagnose --probe` (the command line) against the mock server started in this process:
/// broken set-ups must get their verdict code, healthy ones none.
@Suite("kkpush diagnose against the mock")
struct DiagnoseCLITests {
    static let topic = "nl.kantinekoning.app"

    struct Setup: Sendable, CustomTestStringConvertible {
        var name: String
        var verdict: String?
        /// Arguments after the probe flags; `TOKEN` is replaced with the minted token.
        var args: [String]
        var tokenEnvironment: APNsEnvironment = .production
        var environment: [String: String] = [:]
        var key = "KKTEST0001"
        var keyID = "KKTEST0001"
        var teamID = "KKTEAM0001"
        var unregister = false
        var mockClockAhead: TimeInterval = 0
        var testDescription: String { name }
    }

    static let setups: [Setup] = [
        Setup(name: "healthy production", verdict: nil, args: ["--build-environment", "production"]),
        Setup(
            name: "healthy development", verdict: nil, args: ["--build-environment", "development"],
            tokenEnvironment: .sandbox),
        Setup(
            name: "release build reporting development", verdict: "environment-mismatch",
            args: ["--build-environment", "development"]),
        Setup(
            name: "server APNS_ENV=sandbox (process env)", verdict: "server-env-override",
            args: ["--build-environment", "production"],
            environment: ["APNS_ENV": "sandbox"]),
        Setup(
            name: "server APNS_FORCE_ENV flag", verdict: "server-env-override",
            args: ["--build-environment", "development", "--apns-force-env", "production"], tokenEnvironment: .sandbox),
        Setup(
            name: "testing build", verdict: "build-environment-unknown", args: ["--build-environment", "testing"],
            tokenEnvironment: .sandbox),
        Setup(
            name: "key and team swapped", verdict: "key-team-swapped", args: ["--build-environment", "production"],
            keyID: "KKTEAM0001", teamID: "KKTEST0001"),
        Setup(
            name: "key id of another key (the mock finds no key for it)", verdict: "key-id-mismatch",
            args: ["--build-environment", "production"], keyID: "KKTEST0002"),
        Setup(
            name: "key id of another key, and the server sends to sandbox", verdict: "key-id-mismatch",
            args: ["--build-environment", "production", "--apns-env", "sandbox"], keyID: "KKTEST0002"),
        Setup(
            name: "sandbox-only key, production device", verdict: "key-environment",
            args: ["--build-environment", "production"],
            key: "KKTEST0002", keyID: "KKTEST0002"),
        Setup(
            name: "token of another app", verdict: "token-not-for-topic",
            args: ["--build-environment", "production", "--topic", "com.example.other"]),
        Setup(
            name: "unregistered device", verdict: "token-unregistered", args: ["--build-environment", "production"],
            unregister: true),
        Setup(
            name: "clocks two hours apart", verdict: "provider-token-clock-skew",
            args: ["--build-environment", "production"],
            mockClockAhead: 7200),
    ]

    @Test("broken and healthy set-ups", arguments: setups)
    func setup(_ s: Setup) async throws {
        var config = MockServerConfiguration.forTests()
        config.strictDeviceTokens = true
        let clock = ManualWallClock(Date())
        clock.advance(by: s.mockClockAhead)
        config.clock = clock
        try await withMockServer(configuration: config) { server in
            let device = server.mintDevice(environment: s.tokenEnvironment, topic: Self.topic)
            if s.unregister { try server.unregister(token: device.token) }
            let ca = try #require(server.caFile)
            let args = [
                "diagnose", "--probe", "--json", "--token", device.token, "--topic", Self.topic,
                "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url", server.productionEndpoint.baseURL,
                "--ca-file", ca, "--key", CLI.certificates.appendingPathComponent("AuthKey_\(s.key).p8").path,
                "--key-id", s.keyID, "--team-id", s.teamID, "--timeout", "30",
            ]
            // Later flags win in ArgumentParser, so a set-up may override --topic.
            let r = try await CLI.run(args + s.args, environment: s.environment)
            let j = try r.json()
            let verdict = j["verdict"] as? [String: Any]
            #expect(verdict?["code"] as? String == s.verdict, "stdout: \(r.stdout) stderr: \(r.stderr)")
            #expect(r.status == (s.verdict == nil ? 0 : 1))
            if let verdict {
                #expect((verdict["fix"] as? String)?.isEmpty == false)
                #expect((verdict["message"] as? String)?.isEmpty == false)
            }
            for f in try #require(j["findings"] as? [[String: Any]]) {
                for key in ["severity", "code", "message", "fix"] { #expect(f[key] is String, "finding lacks \(key)") }
            }
        }
    }

    @Test("A certificate for live activity pushes: the verdict is token authentication, not the certificate's topics")
    func certificateForLiveActivity() async throws {
        let r = try await CLI.run([
            "diagnose", "--json", "--cert", CLI.certificates.appendingPathComponent("client-nopass.p12").path,
            "--push-type", "liveactivity", "--topic", "nl.kantinekoning.app.push-type.liveactivity",
            "--build-environment", "production", "--ignore-process-env",
        ])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        let j = try r.json()
        let v = try #require(j["verdict"] as? [String: Any])
        #expect(v["code"] as? String == "push-type-auth", "\(r.stdout)")
        #expect((v["why"] as? String)?.contains("token-based authentication") == true)
        #expect((v["fix"] as? String)?.contains(".p8 key") == true)
        let codes = try #require(j["findings"] as? [[String: Any]]).compactMap { $0["code"] as? String }
        #expect(codes.contains("certificate-topic"), "the certificate's topics are still listed: \(codes)")
    }

    @Test("A key id that is not the key file's: key-id-mismatch naming the file's key id, not a swap")
    func keyIDMismatch() async throws {
        let r = try await CLI.run([
            "diagnose", "--json", "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
            "--key-id", "KKTEST0002", "--team-id", "KKTEAM0001", "--build-environment", "production",
            "--ignore-process-env",
        ])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        let j = try r.json()
        let v = try #require(j["verdict"] as? [String: Any])
        #expect(v["code"] as? String == "key-id-mismatch", "\(r.stdout)")
        #expect((v["message"] as? String)?.contains("AuthKey_KKTEST0001.p8") == true)
        #expect((v["fix"] as? String)?.contains("KKTEST0001") == true)
        #expect((v["why"] as? String)?.lowercased().contains("swap") == false)
        let codes = try #require(j["findings"] as? [[String: Any]]).compactMap { $0["code"] as? String }
        #expect(!codes.contains("key-team-swapped"), "\(codes)")
    }

    @Test("No mock listening: the path could not be checked (probe-inconclusive-network)")
    func connectivity() async throws {
        let token = String(repeating: "cd", count: 32)
        let r = try await CLI.run([
            "diagnose", "--probe", "--json", "--token", token, "--build-environment", "production",
            "--sandbox-url", "https://127.0.0.1:1", "--production-url", "https://127.0.0.1:1",
            "--ca-file", CLI.certificates.appendingPathComponent("ca.crt").path,
            "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--timeout", "5",
        ])
        #expect(r.status == 1)
        #expect((try r.json()["verdict"] as? [String: Any])?["code"] as? String == "probe-inconclusive-network")
    }

    @Test("Without a probe: an enrollment file and the server's settings")
    func enrollmentFile() async throws {
        let record: [String: Any] = [
            "device_id": "dev-1", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3", "JO11-5"], "role": "manager",
            "hardware_identifier": "6F1C2A8E-0000-4000-8000-000000000001",
            "apns_token": String(repeating: "ab", count: 32),
            "build_environment": "production", "app_version": "1.4.2", "is_test_user": false, "status": "active",
            "team_manager_email": "m@example.com", "updated_at": "2026-11-20T10:00:00Z",
        ]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-enrollment-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: record).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let broken = try await CLI.run(["diagnose", "--enrollment", file.path, "--apns-env", "sandbox", "--json"])
        #expect(broken.status == 1)
        let v = try #require(try broken.json()["verdict"] as? [String: Any])
        #expect(v["code"] as? String == "server-env-override")
        #expect((v["fix"] as? String)?.contains("fly secrets unset APNS_ENV -a kantine-koning") == true)
        let healthy = try await CLI.run(["diagnose", "--enrollment", file.path, "--json"])
        #expect(healthy.status == 0)
        #expect(try healthy.json()["verdict"] is NSNull)
        let human = try await CLI.run(["diagnose", "--enrollment", file.path, "--apns-env", "sandbox"])
        #expect(human.stdout.hasPrefix("Verdict: server-env-override"))
    }

    @Test(
        "Bad flags are usage errors, not crashes",
        arguments: [
            ["diagnose", "--env", "staging"], ["diagnose", "--device-id", "x"], ["diagnose", "--port", "8443"],
        ])
    func usage(args: [String]) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == 64)
        #expect(!r.stderr.isEmpty)
    }

    @Test("A missing input file is a clear error (exit 2, the exit-code table's unusable input)")
    func missingFile() async throws {
        let r = try await CLI.run(["diagnose", "--enrollment", "/nonexistent/e.json"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("/nonexistent/e.json"))
    }
}
