import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// "Every answer true", round two: the mistakes a sweep of the newer commands, variables and pages found,
/// each through the command line with its exit code and the words a user reads.
@Suite("Every answer true, round two (the command line)")
struct AnswersRoundTwoCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }
    static var certificates: URL { CLI.certificates }

    /// Nothing a user reads is a Swift value dump.
    static func expectNoDump(_ r: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for marker in ["CLIError(", "KKPushError(", "exitCode:", "Optional(", "(errno:"] {
            #expect(
                !r.stdout.contains(marker) && !r.stderr.contains(marker), "\(marker) in \(r.stdout) \(r.stderr)",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: 1. A secret conflict is a usage error in every command

    @Test(
        "APNS_KEY and APNS_KEY_PATH both set: 64 and the conflict named, in send and send-batch, text and --json",
        arguments: [["send", "--token", String(repeating: "ab", count: 32)], ["send-batch", "--tokens", "-"]])
    func secretConflict(_ command: [String]) async throws {
        let pem = try String(contentsOfFile: Self.key, encoding: .utf8)
        let env = [
            "APNS_KEY": pem, "APNS_KEY_PATH": Self.key, "APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001",
        ]
        let base = command + ["--topic", Self.topic, "--title", "x", "--url", "https://127.0.0.1:9"]
        let text = try await CLI.run(base, stdin: "", environment: env)
        #expect(text.status == 64, "\(text.stderr)")
        #expect(text.stderr.contains("Both APNS_KEY_PATH and APNS_KEY are set"), "\(text.stderr)")
        Self.expectNoDump(text)
        guard command[0] == "send" else { return }  // send-batch prints JSON lines always, and has no --json
        let json = try await CLI.run(base + ["--json"], stdin: "", environment: env)
        #expect(json.status == 64)
        let error = try #require(try json.json()["error"] as? [String: Any], "\(json.stdout)")
        #expect(error["code"] as? String == "secret-conflict")
        #expect((error["fix"] as? String)?.contains("APNS_KEY_PATH") == true)
        Self.expectNoDump(json)
    }

    // MARK: 2. One problem, one exit code

    @Test("A database without the enrollment table: exit 2 for diagnose, export and token verify alike")
    func notMigratedIsInput() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let url = server.url(database, connectTimeout: 30)
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let body = dir.appendingPathComponent("body.json").path
        let token = String(repeating: "ab", count: 32)
        try Data(
            #"{"token":"\#(token)","build_environment":"production","app_version":"1.0","hardware_identifier":"iPhone15,2"}"#
                .utf8
        ).write(to: URL(fileURLWithPath: body))
        for arguments in [
            ["diagnose", "--store", url, "--email", "piet@agovv.nl"],
            ["backend", "export", "--db", url],
            ["token", "verify", body, "--db", url, "--bearer", "a.b.c", "--secret", String(repeating: "s", count: 32)],
        ] {
            let r = try await CLI.run(arguments)
            #expect(r.status == 2, "\(arguments[0]): \(r.stderr)")
            #expect(r.stderr.contains("has no table public.device_enrollments"), "\(r.stderr)")
            // The URL holds no password, so the fix shows it whole: it can be copied as it is.
            #expect(r.stderr.contains("kkpush backend migrate --db '\(url)'"), "\(r.stderr)")
            #expect(!r.stderr.contains("•••"), "\(r.stderr)")
        }
    }

    @Test("--schema-map with an SQLite --db is a usage error (64) in every backend command")
    func schemaMapWithSQLite() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let map = dir.appendingPathComponent("map.json").path
        try Data(PostgresSchemaFixtures.theirSchemaMap.utf8).write(to: URL(fileURLWithPath: map))
        let db = dir.appendingPathComponent("be.sqlite").path
        #expect(try await CLI.run(["backend", "migrate", "--db", db]).status == 0)
        for arguments in [
            ["backend", "export", "--db", db, "--schema-map", map],
            ["backend", "migrate", "--db", db, "--schema-map", map],
            ["diagnose", "--store", db, "--schema-map", map, "--email", "x@example.com"],
        ] {
            let r = try await CLI.run(arguments)
            #expect(r.status == 64, "\(arguments.prefix(2)): \(r.stderr)")
            #expect(r.stderr.contains("maps a PostgreSQL table") && r.stderr.contains("SQLite"), "\(r.stderr)")
        }
    }

    @Test("Refused login 77, unreachable database 69, port in use 69, admin beyond loopback without a token 64")
    func serviceExitCodes() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let refused = try await CLI.run([
            "backend", "export", "--db",
            "postgres://\(server.passwordUser):wrong@127.0.0.1:\(server.port)/\(database)?sslmode=disable&connect_timeout=30",
        ])
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("refused the login of user '\(server.passwordUser)'"), "\(refused.stderr)")
        // libpq's words once, not twice.
        #expect(refused.stderr.components(separatedBy: "connection to server at").count <= 1, "\(refused.stderr)")

        let port = try freeLoopbackPort()
        let unreachable = try await CLI.run(
            ["backend", "export"],
            environment: ["DATABASE_URL": "postgres://kkpush@127.0.0.1:\(port)/x?sslmode=disable&connect_timeout=30"])
        #expect(unreachable.status == 69, "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("from DATABASE_URL"), "\(unreachable.stderr)")
        #expect(!unreachable.stderr.contains("reconnects by itself"), "\(unreachable.stderr)")

        try await withMockServer(configuration: .forTests()) { mock in
            let taken = try await CLI.run(
                [
                    "mock", "serve", "--sandbox-port", "\(mock.sandboxEndpoint.port)", "--production-port", "0",
                    "--admin-port", "0",
                ], timeout: 30)
            #expect(taken.status == 69, "\(taken.stderr)")
            #expect(taken.stderr.contains("the port is in use"), "\(taken.stderr)")
            Self.expectNoDump(taken)
        }
        let open = try await CLI.run(
            [
                "mock", "serve", "--admin-host", "0.0.0.0", "--sandbox-port", "0", "--production-port", "0",
                "--admin-port", "0",
            ], timeout: 30)
        #expect(open.status == 64, "\(open.stderr)")
        #expect(open.stderr.contains("without an admin token") && open.stderr.contains("--admin-token"))
    }

    // MARK: The sweep's own finds

    @Test("A bad PGPORT, PGSSLMODE or PGCONNECT_TIMEOUT is named as the variable (64), not as an unreachable server")
    func badPGVariables() async throws {
        for (name, value) in [("PGPORT", "abc"), ("PGSSLMODE", "bogus"), ("PGCONNECT_TIMEOUT", "0")] {
            let r = try await CLI.run(["backend", "export", "--db", "postgres://"], environment: [name: value])
            #expect(r.status == 64, "\(name): \(r.stderr)")
            #expect(
                r.stderr.contains("The environment variable \(name)") && r.stderr.contains("'\(value)'"), "\(r.stderr)")
            #expect(!r.stderr.contains("Cannot reach"), "\(r.stderr)")
        }
    }

    @Test("mock serve's admin token: KKPUSH_ADMIN_TOKEN too short is a usage error naming it; --admin-token-file works")
    func mockAdminTokenSources() async throws {
        let short = try await CLI.run(
            ["mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0"],
            environment: ["KKPUSH_ADMIN_TOKEN": "short"], timeout: 30)
        #expect(short.status == 64, "\(short.stderr)")
        #expect(
            short.stderr.contains("(KKPUSH_ADMIN_TOKEN)") && short.stderr.contains("at least 16"), "\(short.stderr)")
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("admin.token").path
        try Data("kkpush-admin-token-from-a-file\n".utf8).write(to: URL(fileURLWithPath: file))
        let (mock, line) = try await CLI.start([
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json",
            "--admin-token-file", file,
        ])
        defer { mock.send(SIGKILL) }
        #expect(line.contains(#""admin_token":"kkpu"#), "\(line)")
        #expect(!line.contains("kkpush-admin-token-from-a-file"), "the whole token is never printed: \(line)")
    }

    // MARK: 4. The environment label says what chose it

    @Test("send --url to the sandbox listener with --env production: the label says --env chose the word, not the host")
    func urlWithEnvLabel() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let arguments = [
                "send", "--token", device.token, "--title", "x", "--topic", Self.topic, "--url",
                server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key", Self.key,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--env", "production",
            ]
            let text = try await CLI.run(arguments)
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("production as --env says; --url chose the host"), "\(text.stdout)")
            let json = try await CLI.run(arguments + ["--json"])
            #expect(try json.json()["environment_source"] as? String == "--env", "\(json.stdout)")
        }
    }

    // MARK: 5. Typos named before anything else

    @Test(
        "A misspelt option or command is named, with the nearest real one (64)",
        arguments: [
            (
                ["diagnose", "--store", "be.sqlite", "--e-mail", "x"],
                "Unknown option '--e-mail'. Did you mean '--email'?"
            ),
            (["send", "--tokn", "abc"], "Unknown option '--tokn'. Did you mean '--token'?"),
            (["sned", "--token", "x"], "'kkpush' has no command 'sned'. Did you mean 'send'?"),
            (["channl", "--help"], "'kkpush' has no command 'channl'"),
            (["help", "sned"], "'kkpush' has no command 'sned'. Did you mean 'send'?"),
            (["mock", "srve"], "'kkpush mock' has no command 'srve'. Did you mean 'serve'?"),
        ])
    func typos(_ arguments: [String], _ expected: String) async throws {
        let r = try await CLI.run(arguments)
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(expected), "\(r.stderr)")
        let json = try await CLI.run(arguments + ["--json"])
        #expect(json.status == 64)
        #expect(json.stdout.contains(expected.replacingOccurrences(of: "'", with: "'")), "\(json.stdout)")
    }

    @Test("Correct spellings still work: help, a subcommand's --help, an option value starting with --")
    func spellingsThatAreRight() async throws {
        #expect(try await CLI.run(["help", "send"]).status == 0)
        #expect(try await CLI.run(["mock", "serve", "--help"]).status == 0)
        let decoded = try await CLI.run(["payload", "build", "--body=--not-an-option"])
        #expect(decoded.status == 0 && decoded.stdout.contains("--not-an-option"), "\(decoded.stderr)")
    }

    // MARK: 6, 7. mock serve's ports and banner

    @Test("Two listeners on one port: 64, naming both flags (not 'something else')")
    func portsClash() async throws {
        let given = try await CLI.run(
            ["mock", "serve", "--sandbox-port", "45001", "--production-port", "45001", "--admin-port", "0"])
        #expect(given.status == 64, "\(given.stderr)")
        #expect(given.stderr.contains("--sandbox-port and --production-port are both 45001"), "\(given.stderr)")
        let byDefault = try await CLI.run(["mock", "serve", "--production-port", "2197", "--admin-port", "0"])
        #expect(byDefault.status == 64, "\(byDefault.stderr)")
        #expect(byDefault.stderr.contains("--sandbox-port (by default or --config)"), "\(byDefault.stderr)")
    }

    @Test("mock serve --host 0.0.0.0: the banner says every interface, and shows the web console")
    func bannerOnEveryInterface() async throws {
        let (mock, _) = try await CLI.start([
            "mock", "serve", "--host", "0.0.0.0", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0",
            "--admin-token", String(repeating: "t", count: 20),
        ])
        defer { mock.send(SIGKILL) }
        var output = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !output.contains("Stop with Ctrl-C") {
            try await Task.sleep(for: .milliseconds(100))
            output = mock.output.stdout
        }
        #expect(output.contains("every interface"), "\(output)")
        #expect(output.contains("console:    http://127.0.0.1:"), "\(output)")
    }

    // MARK: 9, 10, 11, 13. Files and tokens that are not what the flag takes

    @Test("cert inspect of a CA certificate: exit 1, named as a certificate authority's")
    func caCertificate() async throws {
        let r = try await CLI.run(["cert", "inspect", Self.certificates.appendingPathComponent("ca.crt").path])
        #expect(r.status == 1, "\(r.stdout)")
        #expect(r.stdout.contains("error certificate-not-apns"), "\(r.stdout)")
        #expect(r.stdout.contains("certificate authority"), "\(r.stdout)")
    }

    @Test("jwt decode of an HS256 device JWT: an HMAC, not an APNs token; points at token verify --bearer")
    func hmacToken() async throws {
        func b64(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        }
        let signature = Data(repeating: 7, count: 32).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let jwt =
            b64(#"{"alg":"HS256","typ":"JWT"}"#) + "." + b64(#"{"device_id":"d1","tenant":"vvw","iat":1}"#)
            + "." + signature
        let r = try await CLI.run(["jwt", "decode", jwt])
        #expect(r.stdout.contains("32 bytes (an HMAC"), "\(r.stdout)")
        #expect(!r.stdout.contains("DER?"), "\(r.stdout)")
        #expect(r.stdout.contains("kkpush token verify BODY --bearer"), "\(r.stdout)")
    }

    @Test(
        "JSON given to a file flag: 64, saying the flag takes a path or -",
        arguments: [
            (["payload", "lint", #"{"aps":{"alert":"x"}}"#], "The argument takes the path"),
            (
                [
                    "send", "--payload", #"{"aps":{"alert":"x"}}"#, "--token", "ab", "--topic", "t", "--url",
                    "https://127.0.0.1:9",
                    "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
                    "KKTEST0001",
                    "--team-id", "KKTEAM0001",
                ], "--payload takes the path"
            ),
        ])
    func inlineJSON(_ arguments: [String], _ expected: String) async throws {
        let r = try await CLI.run(arguments)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(expected) && r.stderr.contains("JSON itself"), "\(r.stderr)")
        #expect(r.stderr.contains("give - and pipe it in"), "\(r.stderr)")
    }

    @Test("A key that belongs to another certificate: both files named, each in its role")
    func keyOfAnotherCertificate() async throws {
        let crt = Self.certificates.appendingPathComponent("client-production.crt").path
        let key = Self.certificates.appendingPathComponent("client-development.key").path
        let r = try await CLI.run(["cert", "inspect", crt, "--key", key])
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        #expect(
            r.stdout.contains("The private key in '\(key)' does not belong to the certificate in '\(crt)'."),
            "\(r.stdout)")
    }

    // MARK: 12. The repository's keys are not world-readable after set-up

    @Test("After .ci/setup the repository's test keys are the owner's alone: README examples print no warning")
    func testKeysPrivate() async throws {
        let sign = try await CLI.run([
            "jwt", "sign", "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ])
        #expect(sign.status == 0)
        #expect(
            !sign.stderr.contains("secret-file-permissions"),
            "run bash .ci/setup (it makes Certificates/*.p8, *.key, *.p12 mode 600): \(sign.stderr)")
    }
}
