import Foundation
import KKPushCore
import KKPushMock
import Testing

/// Issue #15 through the real binary: secrets off the command line, one exit-code table with JSON
/// errors, and `diagnose --probe` that gives no verdict without evidence.
@Suite("kkpush secrets, exit codes and inconclusive probes")
struct SecretsExitCLITests {
    static let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
    static let ca = CLI.certificates.appendingPathComponent("ca.crt").path
    static let token = String(repeating: "cd", count: 32)

    /// A file in a fresh temporary directory with `contents` and POSIX `mode`.
    static func file(_ contents: String, mode: Int = 0o600, name: String = "secret") throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent(name)
        try Data(contents.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url
    }

    static func errorObject(_ r: CLIResult) throws -> [String: Any] {
        try #require(try r.json()["error"] as? [String: Any], "stdout: \(r.stdout) stderr: \(r.stderr)")
    }

    // MARK: 1. Secrets

    @Test("A flag and its file flag together: usage error naming both")
    func flagAndFileFlag() async throws {
        let pass = try Self.file("kkpush\n")
        let r = try await CLI.run([
            "send", "--token", Self.token, "--topic", "t", "--title", "x", "--cert", "c.p12",
            "--cert-password", "kkpush", "--cert-password-file", pass.path,
        ])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--cert-password") && r.stderr.contains("--cert-password-file"), "\(r.stderr)")
        let json = try await CLI.run([
            "cert", "inspect", "x.p12", "--password", "a", "--password-file", pass.path, "--json",
        ])
        #expect(json.status == 64)
        let e = try Self.errorObject(json)
        #expect(e["code"] as? String == "usage")
        #expect((e["message"] as? String)?.contains("--password-file") == true)
    }

    @Test("cert inspect: the password from a file, from stdin and from APNS_CERT_PASSWORD; never printed")
    func certPasswordSources() async throws {
        let p12 = CLI.certificates.appendingPathComponent("client-production.p12").path
        let pass = try Self.file("kkpush\n")
        let fromFile = try await CLI.run(["cert", "inspect", p12, "--password-file", pass.path, "--json"])
        #expect(fromFile.status == 0, "\(fromFile.stdout) \(fromFile.stderr)")
        let fromStdin = try await CLI.run(
            ["cert", "inspect", p12, "--password-file", "-", "--json"], stdin: "kkpush\n")
        #expect(fromStdin.status == 0, "\(fromStdin.stderr)")
        let fromEnv = try await CLI.run(
            ["cert", "inspect", p12, "--json"], environment: ["APNS_CERT_PASSWORD": "kkpush"])
        #expect(fromEnv.status == 0, "\(fromEnv.stderr)")
        // The flag wins over the environment.
        let flagWins = try await CLI.run(
            ["cert", "inspect", p12, "--password", "wrong-one", "--json"],
            environment: ["APNS_CERT_PASSWORD": "kkpush"])
        #expect(flagWins.status == 2, "a wrong password is an unreadable input: \(flagWins.stdout)")
        #expect(try Self.errorObject(flagWins)["code"] as? String != nil)
        for r in [fromFile, fromStdin, fromEnv, flagWins] { #expect(!(r.stdout + r.stderr).contains("kkpush\"")) }
        #expect(!(flagWins.stdout + flagWins.stderr).contains("wrong-one"))
        // A missing password file: exit 2, JSON error on stdout.
        let missing = try await CLI.run([
            "cert", "inspect", p12, "--password-file", "/nonexistent/kkpush-pass", "--json",
        ])
        #expect(missing.status == 2)
        #expect(try Self.errorObject(missing)["code"] as? String == "secret-file-unreadable")
    }

    @Test("APNS_KEY holds the PEM; APNS_KEY with APNS_KEY_PATH is a usage error naming both")
    func keyFromEnvironment() async throws {
        let pem = try String(contentsOfFile: Self.key, encoding: .utf8)
        let ids = ["APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001"]
        let signed = try await CLI.run(["jwt", "sign"], environment: ids.merging(["APNS_KEY": pem]) { $1 })
        #expect(signed.status == 0, "\(signed.stderr)")
        let jwt = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try await CLI.run(["jwt", "verify", jwt, "--key", Self.key])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        #expect(!signed.stderr.contains("PRIVATE KEY"))
        let verifiedFromEnv = try await CLI.run(["jwt", "verify", jwt], environment: ["APNS_KEY": pem])
        #expect(verifiedFromEnv.status == 0, "\(verifiedFromEnv.stdout) \(verifiedFromEnv.stderr)")
        let both = try await CLI.run(
            ["jwt", "sign"], environment: ids.merging(["APNS_KEY": pem, "APNS_KEY_PATH": Self.key]) { $1 })
        #expect(both.status == 64)
        #expect(both.stderr.contains("APNS_KEY_PATH") && both.stderr.contains("APNS_KEY "), "\(both.stderr)")
    }

    @Test("A key file readable by group or others: a warning on stderr, not an error")
    func keyPermissions() async throws {
        let pem = try String(contentsOfFile: Self.key, encoding: .utf8)
        let open = try Self.file(pem, mode: 0o644, name: "AuthKey_KKTEST0001.p8")
        let closed = try Self.file(pem, mode: 0o600, name: "AuthKey_KKTEST0001.p8")
        let args = ["jwt", "sign", "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--key"]
        let warned = try await CLI.run(args + [open.path])
        #expect(warned.status == 0)
        #expect(
            warned.stderr.contains("secret-file-permissions") && warned.stderr.contains("chmod 600"), "\(warned.stderr)"
        )
        let quiet = try await CLI.run(args + [closed.path])
        #expect(quiet.status == 0)
        #expect(!quiet.stderr.contains("secret-file-permissions"), "\(quiet.stderr)")
    }

    @Test("send through the mock with APNS_KEY, APNS_TOPIC and the ids from the environment")
    func sendFromEnvironment() async throws {
        let pem = try String(contentsOfFile: Self.key, encoding: .utf8)
        try await withMockServer(configuration: MockServerConfiguration.forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: "nl.kantinekoning.app")
            let r = try await CLI.run(
                [
                    "send", "--token", device.token, "--title", "Hi", "--url", server.sandboxEndpoint.baseURL, "--env",
                    "sandbox",
                    "--ca-file", try #require(server.caFile), "--json",
                ],
                environment: [
                    "APNS_KEY": pem, "APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001",
                    "APNS_TOPIC": "nl.kantinekoning.app",
                ])
            #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
            #expect(try r.json()["status"] as? String == "accepted", "\(r.stdout)")
        }
    }

    @Test("backend enroll: --secret-file and $KKPUSH_BACKEND_SECRET; the secret is never printed")
    func backendSecret() async throws {
        let secret = "0123456789abcdef0123456789abcdef"
        let file = try Self.file(secret + "\n")
        let db = file.deletingLastPathComponent().appendingPathComponent("e.sqlite").path
        let base = [
            "backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
            "--hardware-identifier", "6F1C2A8E-0000-4000-8000-000000000001", "--json",
        ]
        let fromFile = try await CLI.run(base + ["--secret-file", file.path])
        #expect(fromFile.status == 0, "\(fromFile.stdout) \(fromFile.stderr)")
        #expect(!(fromFile.stdout + fromFile.stderr).contains(secret))
        let fromEnv = try await CLI.run(base, environment: ["KKPUSH_BACKEND_SECRET": secret])
        #expect(fromEnv.status == 0, "\(fromEnv.stderr)")
        let both = try await CLI.run(base + ["--secret", secret, "--secret-file", file.path])
        #expect(both.status == 64)
        #expect(!(both.stdout + both.stderr).contains(secret))
    }

    @Test(
        "token verify: the bearer from $KKPUSH_BEARER or --bearer-file -, the secret from --secret-file; a wrong secret is a verdict"
    )
    func bearerSources() async throws {
        let secret = "0123456789abcdef0123456789abcdef"
        let secretFile = try Self.file(secret)
        let dir = secretFile.deletingLastPathComponent()
        let db = dir.appendingPathComponent("e.sqlite").path
        let hw = "6F1C2A8E-0000-4000-8000-000000000001"
        let enrolled = try await CLI.run([
            "backend", "enroll", "--db", db, "--secret-file", secretFile.path, "--tenant", "vvwilhelmus",
            "--teams", "JO11-3", "--hardware-identifier", hw, "--json",
        ])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let jwt = try #require(try enrolled.json()["signed_device_token"] as? String)
        let body = dir.appendingPathComponent("update.json")
        try Data(
            #"{"token":"\#(Self.token)","build_environment":"production","app_version":"1.4.2","hardware_identifier":"\#(hw)","bundle_id":"nl.kantinekoning.app"}"#
                .utf8
        )
        .write(to: body)
        let args = ["token", "verify", body.path, "--db", db, "--tenant", "vvwilhelmus", "--json"]
        let fromEnv = try await CLI.run(args + ["--secret-file", secretFile.path], environment: ["KKPUSH_BEARER": jwt])
        #expect(fromEnv.status == 0, "\(fromEnv.stdout) \(fromEnv.stderr)")
        let fromStdin = try await CLI.run(
            args + ["--bearer-file", "-"], stdin: jwt + "\n", environment: ["KKPUSH_BACKEND_SECRET": secret])
        #expect(fromStdin.status == 0, "\(fromStdin.stdout) \(fromStdin.stderr)")
        let wrong = try await CLI.run(
            args + ["--secret", "another-secret-0123456789abcdef"], environment: ["KKPUSH_BEARER": jwt])
        #expect(wrong.status == 1, "\(wrong.stdout)")
        for r in [fromEnv, fromStdin, wrong] { #expect(!(r.stdout + r.stderr).contains(jwt)) }
        let twoStdins = try await CLI.run(args + ["--bearer-file", "-", "--secret-file", "-"])
        #expect(twoStdins.status == 64)
    }

    @Test("send-batch: APNS_TOPIC stands in for --topic; neither is a usage error")
    func batchTopic() async throws {
        let base = [
            "send-batch", "--tokens", "/nonexistent/tokens.txt", "--title", "x", "--key", Self.key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--url", "https://127.0.0.1:1", "--ca-file", Self.ca,
        ]
        let none = try await CLI.run(base)
        #expect(none.status == 64)
        #expect(none.stderr.contains("APNS_TOPIC"), "\(none.stderr)")
        let fromEnv = try await CLI.run(base, environment: ["APNS_TOPIC": "nl.kantinekoning.app"])
        #expect(fromEnv.status == 2, "past the topic, the missing token file: \(fromEnv.stderr)")
    }

    // MARK: 2. Exit codes

    @Test("kkpush --help shows the exit-code table and the secrets' names")
    func helpTable() async throws {
        let r = try await CLI.run(["--help"])
        #expect(r.status == 0)
        for word in [
            "Exit codes", "64 usage", "2 an input is unusable", "APNS_CERT_PASSWORD", "KKPUSH_BEARER", "APNS_KEY",
        ] {
            #expect(r.stdout.contains(word), "\(word) missing")
        }
    }

    @Test("diagnose --probe without a credential: 64, JSON error with a code and a fix")
    func probeWithoutCredential() async throws {
        let r = try await CLI.run(["diagnose", "--probe", "--token", Self.token])
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("--probe needs a credential"))
        let j = try await CLI.run(["diagnose", "--probe", "--token", Self.token, "--json"])
        #expect(j.status == 64)
        let e = try Self.errorObject(j)
        #expect(e["code"] as? String == "probe-no-credential")
        #expect((e["fix"] as? String)?.contains("--key") == true)
        #expect(j.stderr.isEmpty, "\(j.stderr)")
    }

    @Test("An input that cannot be read: exit 2 (text on stderr, JSON on stdout)")
    func unreadableInputs() async throws {
        let send = [
            "send", "--token", Self.token, "--topic", "t", "--payload", "/nonexistent/p.json",
            "--url", "https://127.0.0.1:1", "--ca-file", Self.ca, "--key", Self.key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ]
        let text = try await CLI.run(send)
        #expect(text.status == 2)
        #expect(
            text.stderr.contains("error: The payload file --payload /nonexistent/p.json does not exist."),
            "\(text.stderr)")
        let json = try await CLI.run(send + ["--json"])
        #expect(json.status == 2)
        let e = try Self.errorObject(json)
        #expect(e["code"] as? String == "file-missing")
        #expect(e["message"] is String && e["fix"] is String)
        let key = try await CLI.run([
            "jwt", "sign", "--key", "/nonexistent/AuthKey.p8", "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        #expect(key.status == 2, "\(key.stderr)")
        let diagnose = try await CLI.run(["diagnose", "--enrollment", "/nonexistent/e.json", "--json"])
        #expect(diagnose.status == 2)
        #expect(try Self.errorObject(diagnose)["code"] as? String == "file-missing")
    }

    @Test("A flag the parser rejects under --json: 64 and the JSON error on stdout")
    func usageUnderJSON() async throws {
        let r = try await CLI.run([
            "send", "--json", "--token", Self.token, "--topic", "t", "--title", "x", "--key", Self.key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--port", "5",
        ])
        #expect(r.status == 64)
        let e = try Self.errorObject(r)
        #expect(e["code"] as? String == "usage")
        #expect((e["message"] as? String)?.contains("--port") == true)
    }

    // MARK: 3. A verdict only from evidence

    static func probe(
        _ server: MockAPNsServer, token: String, extra: [String] = [], production: String? = nil, json: Bool = true,
        timeout: Int = 30
    )
        async throws -> CLIResult
    {
        try await CLI.run(
            [
                "diagnose", "--probe", "--token", token, "--topic", "nl.kantinekoning.app", "--build-environment",
                "production",
                "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                production ?? server.productionEndpoint.baseURL,
                "--ca-file", try #require(server.caFile), "--key", key, "--key-id", "KKTEST0001", "--team-id",
                "KKTEAM0001",
                // 30 s unless a test is about the timeout: a loaded machine makes an answer slow, not absent.
                "--timeout", String(timeout),
            ] + (json ? ["--json"] : []) + extra)
    }

    @Test("APNs answers 503 in both environments: probe-inconclusive-apns, exit 1, never 'nothing found'")
    func unavailable() async throws {
        var config = MockServerConfiguration.forTests()
        config.strictDeviceTokens = true
        try await withMockServer(configuration: config) { server in
            let device = server.mintDevice(environment: .production, topic: "nl.kantinekoning.app")
            _ = try server.addFault(MockFault(kind: .respond(status: 503, reason: .serviceUnavailable)))
            let r = try await Self.probe(server, token: device.token)
            #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
            let j = try r.json()
            let v = try #require(j["verdict"] as? [String: Any])
            #expect(v["code"] as? String == "probe-inconclusive-apns")
            #expect((v["message"] as? String)?.contains("could not be checked") == true)
            #expect(j["inconclusive"] as? Bool == true)
            #expect(j["blocks_delivery"] as? Bool == false)
            let human = try await Self.probe(server, token: device.token, json: false)
            #expect(human.status == 1)
            #expect(human.stdout.contains("Verdict: the path could not be checked"), "\(human.stdout)")
            #expect(!human.stdout.contains("nothing found that blocks delivery"))
        }
    }

    @Test("The mock stalls: probe-inconclusive-network, exit 1")
    func stall() async throws {
        try await withMockServer(configuration: MockServerConfiguration.forTests()) { server in
            let device = server.mintDevice(environment: .production, topic: "nl.kantinekoning.app")
            _ = try server.addFault(MockFault(kind: .stall))
            let r = try await Self.probe(server, token: device.token, timeout: 2)
            #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
            let v = try #require(try r.json()["verdict"] as? [String: Any])
            #expect(v["code"] as? String == "probe-inconclusive-network")
        }
    }

    @Test("One environment unreachable: inconclusive only when the other does not show it knows the token")
    func oneEnvironment() async throws {
        var config = MockServerConfiguration.forTests()
        config.strictDeviceTokens = true
        try await withMockServer(configuration: config) { server in
            // The token is a sandbox token; pushes go to production, which cannot be reached.
            let sandboxDevice = server.mintDevice(environment: .sandbox, topic: "nl.kantinekoning.app")
            let r = try await Self.probe(server, token: sandboxDevice.token, production: "https://127.0.0.1:1")
            #expect(r.status == 1)
            let j = try r.json()
            #expect((j["verdict"] as? [String: Any])?["code"] as? String == "probe-inconclusive-network", "\(r.stdout)")
            // A production token, pushes to production, the sandbox unreachable: the path was checked.
            let productionDevice = server.mintDevice(environment: .production, topic: "nl.kantinekoning.app")
            let sandboxDown = try await CLI.run(
                [
                    "diagnose", "--probe", "--json", "--token", productionDevice.token, "--topic",
                    "nl.kantinekoning.app",
                    "--build-environment", "production", "--sandbox-url", "https://127.0.0.1:1",
                    "--production-url", server.productionEndpoint.baseURL, "--ca-file", try #require(server.caFile),
                    "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--timeout", "30",
                ])
            #expect(sandboxDown.status == 0, "\(sandboxDown.stdout)")
            #expect(try sandboxDown.json()["verdict"] is NSNull)
        }
    }
}
