import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Each kind of problem exits with the code the exit-code table gives it, whatever the command: a secret given twice,
/// a database without its table, a refused login, an unreachable server, a taken port, a bad PG* variable.
@Suite("Exit codes: one problem, one code, in every command")
struct AnswersExitCodesCLITests {
    // MARK: 1. A secret conflict is a usage error in every command

    @Test(
        "APNS_KEY and APNS_KEY_PATH both set: 64 and the conflict named, in send and send-batch, text and --json",
        arguments: [["send", "--token", String(repeating: "ab", count: 32)], ["send-batch", "--tokens", "-"]])
    func secretConflict(_ command: [String]) async throws {
        let pem = try String(contentsOfFile: Answers.key, encoding: .utf8)
        let env = [
            "APNS_KEY": pem, "APNS_KEY_PATH": Answers.key, "APNS_KEY_ID": "KKTEST0001", "APNS_TEAM_ID": "KKTEAM0001",
        ]
        let base = command + ["--topic", Answers.topic, "--title", "x", "--url", "https://127.0.0.1:9"]
        let text = try await CLI.run(base, stdin: "", environment: env)
        #expect(text.status == 64, "\(text.stderr)")
        #expect(text.stderr.contains("Both APNS_KEY_PATH and APNS_KEY are set"), "\(text.stderr)")
        Answers.expectNoDump(text)
        guard command[0] == "send" else { return }  // send-batch prints JSON lines always, and has no --json
        let json = try await CLI.run(base + ["--json"], stdin: "", environment: env)
        #expect(json.status == 64)
        let error = try #require(try json.json()["error"] as? [String: Any], "\(json.stdout)")
        #expect(error["code"] as? String == "secret-conflict")
        #expect((error["fix"] as? String)?.contains("APNS_KEY_PATH") == true)
        Answers.expectNoDump(json)
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
            #expect(r.stderr.contains("(kkpush backend migrate) (--db) '\(url)'"), "\(r.stderr)")
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
            Answers.expectNoDump(taken)
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
}
