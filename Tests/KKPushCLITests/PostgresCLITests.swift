import Foundation
import KKPushTestSupport
import Testing

/// The real `kkpush` binary against a real PostgreSQL server whose tables and rows are written by psql, not by
/// kkpush: `backend migrate`, `diagnose --store postgres://...`, `backend export --db postgres://...` (also through
/// DATABASE_URL), a table with other column names mapped by `--schema-map`, and `backend serve` surviving a
/// restart of the database.
@Suite("kkpush with a PostgreSQL enrollment store")
struct PostgresCLITests {
    static let secret = "0123456789abcdef0123456789abcdef"

    /// kkpush's table made by psql (the same DDL the README documents), with two rows.
    static let ownTable = """
        CREATE TABLE public.device_enrollments (
            tenant_slug text NOT NULL, device_id text NOT NULL, team_codes text[] NOT NULL DEFAULT '{}',
            role text NOT NULL, hardware_identifier text NOT NULL, apns_token text, build_environment text,
            app_version text, is_test_user boolean NOT NULL DEFAULT false, status text NOT NULL DEFAULT 'active',
            team_manager_email text, updated_at timestamptz NOT NULL, generation integer NOT NULL DEFAULT 1,
            token_updated_at timestamptz, PRIMARY KEY (tenant_slug, device_id));
        INSERT INTO public.device_enrollments VALUES
          ('vvwilhelmus', 'dev-m1', '{JO11-3,JO11-5}', 'manager', '6F1C2A8E-0000-4000-8000-00000000A001',
           repeat('0f', 32), 'production', '1.4.2', false, 'active', 'manager@example.com',
           '2027-01-15T09:30:00Z', 1, '2027-01-15T09:30:00Z'),
          ('agovv', 'dev-l2', '{JO10-5}', 'member', '6F1C2A8E-0000-4000-8000-00000000A001',
           repeat('0f', 32), 'production', '1.4.2', false, 'active', NULL, '2027-01-15T09:30:00Z', 1, NULL);
        """

    /// The real backend's table, other names, written by psql.
    static let theirTable =
        PostgresSchemaFixtures.theirTable + """
            INSERT INTO app.enrollments VALUES
              ('e-1', 'agovv', ARRAY['JO10-5'], 'manager', '6F1C2A8E-0000-4000-8000-00000000B001', repeat('ab', 32),
               'development', '2.0', false, 'active', 'Piet@AGOVV.nl', '2027-02-01T12:00:00Z', 4, NULL);
            """

    static let theirMap = PostgresSchemaFixtures.theirSchemaMap

    @Test("Rows written by psql: diagnose --store URL --email and backend export --db URL (and DATABASE_URL) read them")
    func psqlRows() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.ownTable, database: database)
        let url = server.url(database)

        let diagnose = try await CLI.run(["diagnose", "--store", url, "--email", "MANAGER@example.com", "--json"])
        #expect(diagnose.status == 0, "\(diagnose.stdout) \(diagnose.stderr)")
        #expect(try diagnose.json()["verdict"] is NSNull)
        #expect(try diagnose.json()["push_environment"] as? String == "production")
        let byHardware = try await CLI.run([
            "diagnose", "--store", url, "--hardware-identifier", "6f1c2a8e-0000-4000-8000-00000000a001", "--json",
        ])
        #expect(byHardware.status == 0, "\(byHardware.stderr)")
        #expect((try byHardware.json()["enrollments"] as? [[String: Any]])?.count == 2)

        let export = try await CLI.run(["backend", "export", "--db", url])
        #expect(export.status == 0, "\(export.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["device_id"] as? String } == ["dev-l2", "dev-m1"])
        #expect(rows[1]["team_codes"] as? [String] == ["JO11-3", "JO11-5"])
        #expect(rows[1]["updated_at"] as? String == "2027-01-15T09:30:00Z")
        // The table has no aps_environment (an earlier version's, like the real backend's): read-only, it reads nil.
        #expect(rows.allSatisfy { $0["aps_environment"] is NSNull })

        // Without --db: DATABASE_URL, and diagnose without --store too.
        let env = try await CLI.run(["backend", "export"], environment: ["DATABASE_URL": url])
        #expect(env.status == 0 && env.stdout == export.stdout, "\(env.stderr)")
        let envDiagnose = try await CLI.run(
            ["diagnose", "--email", "manager@example.com", "--json"], environment: ["DATABASE_URL": url])
        #expect(envDiagnose.status == 0, "\(envDiagnose.stdout) \(envDiagnose.stderr)")
        #expect(try envDiagnose.json()["verdict"] is NSNull)

        // A wrong database is named with the server's reason; a password never shows.
        let missing = try await CLI.run([
            "backend", "export", "--db",
            "postgres://kkpush:pa55word-secret@127.0.0.1:\(server.port)/nope?sslmode=disable",
        ])
        #expect(missing.status != 0 && missing.stderr.contains("no database 'nope'"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("pa55word"))
        let badURL = try await CLI.run(["backend", "export", "--db", "postgres://kkpush@127.0.0.1:99999/x"])
        #expect(badURL.status == 64 && badURL.stderr.contains("the port '99999'"), "\(badURL.stderr)")
    }

    @Test("A table with other column names, mapped by --schema-map: diagnose and export read it; migrate leaves it")
    func mappedTable() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.theirTable, database: database)
        let url = server.url(database)
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let map = dir.appendingPathComponent("their.json").path
        try Data(Self.theirMap.utf8).write(to: URL(fileURLWithPath: map))

        let diagnose = try await CLI.run([
            "diagnose", "--store", url, "--schema-map", map, "--email", "piet@agovv.nl", "--json",
        ])
        // e-1's build_env (mapped from build_environment) is development: its pushes go to sandbox.
        #expect(
            try diagnose.json()["push_environment"] as? String == "sandbox", "\(diagnose.stdout) \(diagnose.stderr)")
        #expect(try diagnose.json()["error"] == nil)
        let export = try await CLI.run(["backend", "export", "--db", url, "--schema-map", map])
        #expect(export.status == 0, "\(export.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows[0]["generation"] as? Int == 4 && rows[0]["role"] as? String == "manager")
        #expect(rows[0]["build_environment"] as? String == "development")

        // Without the map, kkpush's table is not there: the fix says to migrate (or map).
        let unmapped = try await CLI.run(["backend", "export", "--db", url])
        #expect(
            unmapped.status == 2 && unmapped.stderr.contains("(kkpush backend migrate) (--db) "), "\(unmapped.stderr)")
        // migrate does not touch the real backend's table.
        let migrate = try await CLI.run(["backend", "migrate", "--db", url, "--schema-map", map])
        #expect(migrate.status == 64 && migrate.stderr.contains("does not change a table"), "\(migrate.stderr)")
        // It names what the table lacks for writing, and the statement that adds it.
        #expect(migrate.stderr.contains("lacks aps_environment"), "\(migrate.stderr)")
        #expect(migrate.stderr.contains(#"ADD COLUMN "aps_environment" text"#), "\(migrate.stderr)")
        // A map naming a column the table lacks is named.
        let broken = dir.appendingPathComponent("broken.json").path
        try Data(#"{"table": "app.enrollments", "columns": {"device_id": "enrollment_id"}}"#.utf8).write(
            to: URL(fileURLWithPath: broken))
        let bad = try await CLI.run(["backend", "export", "--db", url, "--schema-map", broken])
        #expect(bad.status == 2 && bad.stderr.contains("device_id (as enrollment_id)"), "\(bad.stderr)")
        let unknownKey = dir.appendingPathComponent("unknown.json").path
        try Data(#"{"table": "app.enrollments", "colums": {}}"#.utf8).write(to: URL(fileURLWithPath: unknownKey))
        let typo = try await CLI.run(["backend", "export", "--db", url, "--schema-map", unknownKey])
        #expect(typo.status == 2 && typo.stderr.contains("unknown key(s) colums"), "\(typo.stderr)")
    }

    @Test("backend migrate creates the table once (a second run says nothing changed); enroll and export use it")
    func migrate() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let url = server.url(database)
        let first = try await CLI.run(["backend", "migrate", "--db", url])
        #expect(
            first.status == 0 && first.stdout.contains("created table public.device_enrollments"), "\(first.stderr)")
        let second = try await CLI.run(["backend", "migrate", "--db", url, "--json"])
        #expect(second.status == 0)
        #expect(try second.json()["changed"] as? Bool == false)
        let enroll = try await CLI.run(
            [
                "backend", "enroll", "--db", url, "--tenant", "vvwilhelmus", "--teams", "JO11-3", "--device-id",
                "dev-x",
                "--hardware-identifier", "6F1C2A8E-0000-4000-8000-00000000C001",
            ], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        #expect(enroll.status == 0, "\(enroll.stderr)")
        let count = try await server.runSQL(
            "SELECT count(*), max(generation) FROM device_enrollments WHERE device_id = 'dev-x'", database: database)
        #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) == "1|1")
    }

    @Test("token verify --db postgres:// looks the bearer's enrollment up; a revoke by psql makes it a verdict")
    func tokenVerify() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let url = server.url(database)
        #expect(try await CLI.run(["backend", "migrate", "--db", url]).status == 0)
        let hw = "6F1C2A8E-0000-4000-8000-00000000E001"
        let enrolled = try await CLI.run(
            [
                "backend", "enroll", "--db", url, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
                "--hardware-identifier", hw, "--json",
            ], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let jwt = try #require(try enrolled.json()["signed_device_token"] as? String)
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let body = dir.appendingPathComponent("update.json")
        try Data(
            #"{"token":"\#(String(repeating: "ab", count: 32))","build_environment":"production","app_version":"1.4.2","hardware_identifier":"\#(hw)","bundle_id":"nl.kantinekoning.app"}"#
                .utf8
        ).write(to: body)
        let args = ["token", "verify", body.path, "--db", url, "--tenant", "vvwilhelmus", "--json"]
        let env = ["KKPUSH_BEARER": jwt, "KKPUSH_BACKEND_SECRET": Self.secret]
        let ok = try await CLI.run(args, environment: env)
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        try await server.runSQL("UPDATE device_enrollments SET status = 'revoked'", database: database)
        let revoked = try await CLI.run(args, environment: env)
        #expect(revoked.status == 1 && revoked.stdout.contains("enrollment-revoked"), "\(revoked.stdout)")
    }

    /// GET base/admin/enrollments with curl (bounded): status and body.
    static func get(_ url: String) async throws -> (Int, String) {
        let (status, text) = try await StoreConcurrencyCLITests.curl(["--max-time", "15", url])
        return (status, text)
    }

    @Test(
        "backend serve --db postgres:// keeps serving across a database restart: 503 store-unreachable while it is down, then answers again",
        .timeSensitive  // the answer while the database is down must come within 10 s
    )
    func serveSurvivesRestart() async throws {
        let server = try await PostgresServer.startOwn()
        defer { server.destroy() }
        let database = try await server.newDatabase()
        let url = server.url(database, connectTimeout: 2)
        #expect(try await CLI.run(["backend", "migrate", "--db", url]).status == 0)

        let (serve, base, line) = try await CLI.startBackend(
            ["--db", url], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        defer { serve.send(SIGKILL) }
        #expect(line.contains("postgres://kkpush@127.0.0.1:\(server.port)/\(database)"))

        let body =
            #"{"device_id": "dev-1", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "6F1C2A8E-0000-4000-8000-00000000D001"}"#
        let (created, createdText) = try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "--data", body, base + "/admin/enrollments",
        ])
        #expect(created == 201, "\(createdText)")
        #expect(try await Self.get(base + "/admin/enrollments").0 == 200)

        // The database goes away: a request fails with a clear error within the connect timeout, not a hang.
        try await server.stopServer()
        let clock = ContinuousClock()
        var down: (Int, String) = (0, "")
        let downTime = try await clock.measure { down = try await Self.get(base + "/admin/enrollments") }
        #expect(down.0 == 503, "\(down.1)")
        #expect(down.1.contains("store-unreachable") && down.1.contains("127.0.0.1:\(server.port)"), "\(down.1)")
        #expect(downTime < .seconds(10), "a request while the database was down took \(downTime)")

        // It comes back: the pool reconnects by itself (bounded: 30 tries, 0.5 s apart).
        try await server.startAgain()
        var after: (Int, String) = (0, "")
        for _ in 0..<30 {
            after = try await Self.get(base + "/admin/enrollments")
            if after.0 == 200 { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(after.0 == 200, "\(after.1)")
        #expect(after.1.contains("dev-1"))
        #expect(serve.isRunning)
        print("backend serve on PostgreSQL: a request while the database was down answered in \(downTime)")
        await serve.stop()
    }
}
