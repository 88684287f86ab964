import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `kkpush` binary (a test fails when the build has none).
enum Binary {
    static var path: String {
        get throws { try Repository.builtProduct("kkpush").path }
    }
}

@Suite("kkpush mock serve (the built binary)")
struct MockServeCommandTests {
    /// Starts `kkpush mock serve --json ...`, returns the process and its first stdout line (awaited 30 s at most).
    static func start(_ extra: [String]) async throws -> (BackgroundProcess, [String: Any]) {
        let process = try BackgroundProcess(
            URL(fileURLWithPath: try Binary.path),
            ["mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json"] + extra,
            currentDirectory: URL(fileURLWithPath: Fixtures.certificates).deletingLastPathComponent())
        guard let line = await process.firstLine(timeout: 30) else {
            await process.stop()
            throw KKPushError(
                code: KKPushError.Code(rawValue: "test-timeout"),
                message: "kkpush mock serve printed nothing in 30 s: \(process.output.stderr)")
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
        return (process, object)
    }

    @Test(
        "Prints where it listens, serves both environments, exits 0 on SIGINT and SIGTERM",
        arguments: [SIGINT, SIGTERM])
    func serve(signal sig: Int32) async throws {
        let (process, info) = try await Self.start([])
        let sandbox = try #require(info["sandbox_port"] as? Int)
        let production = try #require(info["production_port"] as? Int)
        let ca = try #require(info["ca_file"] as? String)
        #expect(ca.hasSuffix("Certificates/ca.crt"))
        #expect((info["admin_url"] as? String)?.hasPrefix("http://127.0.0.1:") == true)
        let keys = try #require(info["keys"] as? [[String: Any]])
        #expect(keys.contains { $0["key_id"] as? String == Fixtures.bothKeyID })

        let jwt = try Fixtures.token(issuedAt: Date())
        for (port, env) in [(sandbox, APNsEnvironment.sandbox), (production, .production)] {
            let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, caFile: ca, environment: env)
            let r = try await Curl.one(Curl.push(endpoint, token: Fixtures.randomToken(), authorization: jwt))
            #expect(r.status == 200)
            #expect((r.header("apns-unique-id") != nil) == (env == .sandbox))
        }
        #expect(await process.exitStatus(after: sig) == 0)
    }

    @Test("--strict, --max-concurrent-streams and extra keys from flags; a config file")
    func flags() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kkpush-mock-\(UUID().uuidString).json")
        let known = Fixtures.randomToken()
        try Data(
            #"{"devices":[{"token":"\#(known)","environment":"production","topic":"nl.kantinekoning.app"}],"faults":[{"kind":"respond","status":503,"token":"\#(known)","count":1}]}"#
                .utf8
        ).write(to: config)
        defer { try? FileManager.default.removeItem(at: config) }
        let (process, info) = try await Self.start([
            "--strict", "--no-default-keys", "--key-file", Fixtures.path("AuthKey_KKTEST0002.p8"), "--key-id",
            "KKTEST0002",
            "--team-id", Fixtures.teamID, "--key-environment", "production", "--config", config.path,
        ])
        defer { process.send(SIGKILL) }
        let port = try #require(info["production_port"] as? Int)
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, caFile: Fixtures.path("ca.crt"))
        let keys = try #require(info["keys"] as? [[String: Any]])
        #expect(keys.count == 1)
        let jwt = try Fixtures.token(keyID: Fixtures.sandboxOnlyKeyID, issuedAt: Date())
        #expect(
            try await Curl.one(Curl.push(endpoint, token: Fixtures.randomToken(), authorization: jwt)).reason
                == "BadDeviceToken")
        #expect(try await Curl.one(Curl.push(endpoint, token: known, authorization: jwt)).status == 503)
        #expect(try await Curl.one(Curl.push(endpoint, token: known, authorization: jwt)).status == 200)
    }

    @Test("The banner, --json and GET /keys show each key's topics, and the logs' capacities")
    func keyTopicsAndCapacities() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kkpush-mock-\(UUID().uuidString).json")
        let keyFile = Fixtures.path("AuthKey_KKTEST0002.p8")
        try Data(
            #"{"keys":[{"key_id":"KKSCOPE001","team_id":"KKTEAM0001","file":"\#(keyFile)","environments":["sandbox"],"topics":["nl.kantinekoning.app","nl.kantinekoning.beheer"]}]}"#
                .utf8
        ).write(to: config)
        defer { try? FileManager.default.removeItem(at: config) }
        let flags = ["--config", config.path, "--log-capacity", "250000", "--rejection-capacity", "5000"]

        let (process, info) = try await Self.start(flags)
        defer { process.send(SIGKILL) }
        let keys = try #require(info["keys"] as? [[String: Any]])
        let scoped = try #require(keys.first { $0["key_id"] as? String == "KKSCOPE001" })
        #expect(scoped["topics"] as? [String] == ["nl.kantinekoning.app", "nl.kantinekoning.beheer"])
        #expect(keys.first { $0["key_id"] as? String == Fixtures.bothKeyID }?["topics"] as? [String] == [])
        #expect(info["delivery_log_capacity"] as? Int == 250_000)
        #expect(info["rejection_log_capacity"] as? Int == 5000)
        let admin = Admin(base: try #require(info["admin_url"] as? String))
        let listed = try #require(try await admin.call("GET", "/keys").body["keys"] as? [[String: Any]])
        #expect(
            listed.first { $0["key_id"] as? String == "KKSCOPE001" }?["topics"] as? [String] == [
                "nl.kantinekoning.app", "nl.kantinekoning.beheer",
            ])
        #expect(listed.first { $0["key_id"] as? String == Fixtures.bothKeyID }?["topics"] as? [String] == [])
        let log = try await admin.call("GET", "/log")
        #expect(log.body["capacity"] as? Int == 250_000)
        #expect(try await admin.call("GET", "/rejections").body["capacity"] as? Int == 5000)
        #expect(await process.exitStatus(after: SIGTERM) == 0)

        // The text banner: the same, in words.
        let text = try BackgroundProcess(
            URL(fileURLWithPath: try Binary.path),
            ["mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0"] + flags,
            currentDirectory: URL(fileURLWithPath: Fixtures.certificates).deletingLastPathComponent())
        defer { text.send(SIGKILL) }
        var banner = ""
        for _ in 0..<300 where !banner.contains("Stop with Ctrl-C") {
            try await Task.sleep(for: .milliseconds(50))
            banner = text.output.stdout
        }
        #expect(
            banner.contains(
                "key:        KKSCOPE001 (team KKTEAM0001, sandbox, topics nl.kantinekoning.app, nl.kantinekoning.beheer)"
            ), "\(banner)")
        #expect(banner.contains("key:        KKTEST0001 (team KKTEAM0001, sandbox+production, any topic)"), "\(banner)")
        #expect(
            banner.contains(
                "logs:       the newest 250000 deliveries (--log-capacity), 5000 rejections (--rejection-capacity)"),
            "\(banner)")
        #expect(await text.exitStatus(after: SIGTERM) == 0)
    }

    @Test(
        "--admin-token: required by the admin API, shown as a 4-character prefix only; beyond loopback, refused without one"
    )
    func adminToken() async throws {
        let token = "s3cret-admin-token-\(UUID().uuidString)"
        let (process, info) = try await Self.start([
            "--admin-token", token, "--max-connections", "8", "--body-timeout", "5",
        ])
        defer { process.send(SIGKILL) }
        #expect(info["admin_token"] as? String == "s3cr… (\(token.count) characters)")
        let admin = Admin(base: try #require(info["admin_url"] as? String))
        #expect(try await admin.call("GET", "/health").status == 401)
        #expect(try await admin.call("GET", "/health", headers: ["Authorization: Bearer \(token)"]).status == 200)
        #expect(await process.exitStatus(after: SIGTERM) == 0)
        #expect(!process.output.stderr.contains(token))

        // Beyond loopback without a token: exit 64 (usage), naming the fix; nothing is bound.
        let open = try await Curl.run(
            try Binary.path,
            [
                "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--admin-host",
                "0.0.0.0",
            ])
        #expect(open.status == 64, "a listener beyond loopback without a token is a usage error")
        #expect(open.stderr.contains("--admin-token"))
        #expect(open.stderr.contains("KKPUSH_ADMIN_TOKEN"))
    }

    @Test("Bad flags: usage errors; an unusable certificate: exit 2 (an unusable input) with the reason on stderr")
    func badFlags() async throws {
        let usage = try await Curl.run(try Binary.path, ["mock", "serve", "--key-file", "x.p8"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--key-id"))
        let cert = try await Curl.run(
            try Binary.path,
            [
                "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--cert", "/nonexistent.crt", "--key",
                "/nonexistent.key",
            ])
        // A certificate file that cannot be used is checked before the server starts: exit 2, naming --cert.
        #expect(cert.status == 2)
        #expect(cert.stderr.contains("--cert /nonexistent.crt does not exist"))
    }
}
