import Foundation
import KKPushTestSupport
import Testing

/// kkpush connects to PostgreSQL through libpq, so what psql honours it honours: the PG* variables, key=value
/// strings, a Unix socket, ~/.pgpass (refused when others may read it), sslmode=require and verify-full against
/// the test server's certificate from the test CA; and it reads the real backend's table as Ecto made it (only the
/// app README's columns, enum, uuid and citext types, timestamps without time zone) without writing a byte.
/// Serialized: each test runs kkpush several times, each run waiting on a Dispatch thread; five at once starved the
/// process's other tests of threads (a timing test of the store failed).
@Suite("kkpush on PostgreSQL through libpq", .serialized)
struct PostgresLibPQCLITests {
    static let secret = "0123456789abcdef0123456789abcdef"

    /// A database with kkpush's table and one enrollment (by psql).
    static func database() async throws -> (PostgresServer, String) {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(
            PostgresCLITests.ownTable + "\nGRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC;", database: database)
        return (server, database)
    }

    /// The device ids `backend export` printed.
    static func exported(_ result: CLIResult) -> [String] {
        let rows = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [[String: Any]]
        return (rows ?? []).compactMap { $0["device_id"] as? String }
    }

    @Test("PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE fill in a bare postgres:// and a key=value string")
    func variables() async throws {
        let (server, database) = try await Self.database()
        let env = [
            "PGHOST": "127.0.0.1", "PGPORT": "\(server.port)", "PGUSER": server.user, "PGDATABASE": database,
            "PGSSLMODE": "disable",
        ]
        let bare = try await CLI.run(["backend", "export", "--db", "postgres://"], environment: env)
        #expect(bare.status == 0 && Self.exported(bare) == ["dev-l2", "dev-m1"], "\(bare.stderr)")
        let pairs = try await CLI.run(
            ["backend", "export", "--db", "host=127.0.0.1 dbname=\(database) connect_timeout=30"],
            environment: ["PGPORT": "\(server.port)", "PGUSER": server.user])
        #expect(pairs.status == 0 && Self.exported(pairs) == ["dev-l2", "dev-m1"], "\(pairs.stderr)")
        // A key=value string libpq cannot read: named, exit 64.
        let bad = try await CLI.run(["backend", "export", "--db", "host=127.0.0.1 nosuchoption=1"])
        #expect(bad.status == 64 && bad.stderr.contains("invalid connection option \"nosuchoption\""), "\(bad.stderr)")
    }

    @Test("A Unix-socket host: postgres:///db?host=/dir and host=/dir")
    func socket() async throws {
        let (server, database) = try await Self.database()
        let dir = server.socketDirectory
        let url = try await CLI.run([
            "backend", "export", "--db", "postgres:///\(database)?host=\(dir)&port=\(server.port)&user=\(server.user)",
        ])
        #expect(url.status == 0 && Self.exported(url) == ["dev-l2", "dev-m1"], "\(url.stderr)")
        let pairs = try await CLI.run([
            "diagnose", "--store", "host=\(dir) port=\(server.port) user=\(server.user) dbname=\(database)",
            "--email", "manager@example.com", "--json",
        ])
        #expect(pairs.status == 0, "\(pairs.stdout) \(pairs.stderr)")
        // Nothing listens in another folder: named, with the socket's path.
        let empty = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: empty) }
        let none = try await CLI.run(["backend", "export", "--db", "postgres:///x?host=\(empty.path)"])
        #expect(none.status != 0 && none.stderr.contains("Cannot reach the database server"), "\(none.stderr)")
        #expect(none.stderr.contains("\(empty.path)/.s.PGSQL.5432"), "\(none.stderr)")
    }

    @Test(".pgpass gives the password; with mode 0644 libpq ignores it and the login is refused, saying why")
    func pgpass() async throws {
        let (server, database) = try await Self.database()
        let password = "pgpass-Secret-\(UUID().uuidString.prefix(8))"
        try await offThread { try server.createPasswordUser(password: password) }
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("pgpass")
        try Data("127.0.0.1:\(server.port):*:\(server.passwordUser):\(password)\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let url = "postgres://\(server.passwordUser)@127.0.0.1:\(server.port)/\(database)?sslmode=disable"
        let ok = try await CLI.run(["backend", "export", "--db", url], environment: ["PGPASSFILE": file.path])
        #expect(ok.status == 0 && Self.exported(ok) == ["dev-l2", "dev-m1"], "\(ok.stderr)")

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let refused = try await CLI.run(["backend", "export", "--db", url], environment: ["PGPASSFILE": file.path])
        #expect(refused.status != 0 && refused.stderr.contains("refused the login"), "\(refused.stderr)")
        #expect(refused.stderr.contains("0644") && refused.stderr.contains("chmod 600"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(password) && !refused.stdout.contains(password))

        // A wrong password in the URL, or the right one with a missing database: never printed.
        let wrong = try await CLI.run([
            "backend", "export", "--db",
            "postgres://\(server.passwordUser):Wr0ng-\(password)@127.0.0.1:\(server.port)/\(database)?sslmode=disable",
        ])
        #expect(wrong.status != 0 && wrong.stderr.contains("refused the login"), "\(wrong.stderr)")
        let missing = try await CLI.run([
            "diagnose", "--store",
            "host=127.0.0.1 port=\(server.port) user=\(server.passwordUser) password=\(password) dbname=nope sslmode=disable",
            "--email", "x@example.com",
        ])
        #expect(missing.status != 0 && missing.stderr.contains("no database 'nope'"), "\(missing.stderr)")
        for result in [ok, refused, wrong, missing] {
            #expect(!(result.stdout + result.stderr).contains(password.suffix(8)))
        }
    }

    @Test("sslmode=require and verify-full (sslrootcert = the test CA) connect; verify-full with another root fails")
    func tls() async throws {
        let (server, database) = try await Self.database()
        if let why = server.tlsUnavailable { Issue.record("the test server has no TLS: \(why)") }
        let base = "postgres://\(server.user)@localhost:\(server.port)/\(database)?connect_timeout=30"
        let require = try await CLI.run(["backend", "export", "--db", base + "&sslmode=require"])
        #expect(require.status == 0 && Self.exported(require).count == 2, "\(require.stderr)")
        let full = try await CLI.run([
            "backend", "export", "--db", base + "&sslmode=verify-full&sslrootcert=Certificates/ca.crt",
        ])
        #expect(full.status == 0 && Self.exported(full).count == 2, "\(full.stderr)")
        let ip = try await CLI.run([
            "backend", "export", "--db",
            "host=127.0.0.1 port=\(server.port) user=\(server.user) dbname=\(database) sslmode=verify-ca sslrootcert=Certificates/ca.crt",
        ])
        #expect(ip.status == 0, "\(ip.stderr)")
        let wrongRoot = try await CLI.run([
            "backend", "export", "--db", base + "&sslmode=verify-full&sslrootcert=Certificates/wwdr.crt",
        ])
        #expect(
            wrongRoot.status != 0 && wrongRoot.stderr.contains("Cannot reach the database server"),
            "\(wrongRoot.stderr)")
        #expect(wrongRoot.stderr.contains("TLS failed"), "\(wrongRoot.stderr)")
    }

    /// The real backend's table as Ecto makes it: only the app README's columns, role and status as enum types,
    /// hardware_identifier uuid, team_manager_email citext, timestamps without time zone.
    static let realTable = """
        CREATE EXTENSION IF NOT EXISTS citext;
        CREATE TYPE enrollment_role AS ENUM ('manager', 'member');
        CREATE TYPE enrollment_status AS ENUM ('active', 'revoked');
        CREATE TABLE public.device_enrollments (
            device_id character varying(255) NOT NULL,
            tenant_slug character varying(255) NOT NULL,
            team_codes text[] NOT NULL DEFAULT '{}',
            role enrollment_role NOT NULL,
            hardware_identifier uuid NOT NULL,
            apns_token character varying(255),
            build_environment character varying(255),
            app_version character varying(255),
            is_test_user boolean NOT NULL DEFAULT false,
            status enrollment_status NOT NULL DEFAULT 'active',
            team_manager_email citext,
            inserted_at timestamp(0) without time zone NOT NULL,
            updated_at timestamp(0) without time zone NOT NULL,
            PRIMARY KEY (tenant_slug, device_id));
        INSERT INTO public.device_enrollments VALUES
          ('dev-r1', 'vvwilhelmus', '{JO11-3}', 'manager', '6f1c2a8e-0000-4000-8000-00000000d001', repeat('cd', 32),
           'production', '1.4.2', false, 'active', 'Trainer@VVWilhelmus.nl', '2027-01-10 08:00:00',
           '2027-01-15 09:30:00'),
          ('dev-r2', 'vvwilhelmus', '{JO11-3,JO9-1}', 'member', '6f1c2a8e-0000-4000-8000-00000000d002', NULL, NULL,
           NULL, true, 'revoked', NULL, '2027-01-10 08:00:00', '2027-01-11 10:00:00');
        """

    /// Everything of the database a write could change, as psql prints it.
    static func dump(_ server: PostgresServer, _ database: String) async throws -> String {
        try await server.runSQL(
            """
            SELECT t.xmin::text || ' ' || t::text FROM public.device_enrollments t ORDER BY device_id;
            SELECT n.nspname::text || '.' || c.relname::text || ':' || c.relkind::text FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
              AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1;
            """, database: database)
    }

    @Test(
        "The real backend's table (README columns only; enum, uuid, citext, timestamp): read, said what is unknown, never written"
    )
    func realTable() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.realTable, database: database)
        let url = server.url(database)
        let before = try await Self.dump(server, database)

        let export = try await CLI.run(["backend", "export", "--db", url])
        #expect(export.status == 0, "\(export.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["device_id"] as? String } == ["dev-r1", "dev-r2"])
        #expect(rows[0]["hardware_identifier"] as? String == "6f1c2a8e-0000-4000-8000-00000000d001")
        #expect(rows[0]["role"] as? String == "manager" && rows[1]["status"] as? String == "revoked")
        #expect(rows[0]["updated_at"] as? String == "2027-01-15T09:30:00Z")
        #expect(rows[1]["team_codes"] as? [String] == ["JO11-3", "JO9-1"] && rows[1]["is_test_user"] as? Bool == true)
        #expect(rows.allSatisfy { $0["generation"] as? Int == 1 })
        #expect(export.stderr.contains("token age unknown: the table has no token_updated_at"), "\(export.stderr)")
        #expect(export.stderr.contains("generation unknown") && export.stderr.contains("aps_environment unknown"))

        // citext and uuid compare without case, as kkpush's own table does.
        let diagnose = try await CLI.run(["diagnose", "--store", url, "--email", "trainer@vvwilhelmus.nl", "--json"])
        #expect(diagnose.status == 0, "\(diagnose.stdout) \(diagnose.stderr)")
        #expect(try diagnose.json()["push_environment"] as? String == "production", "\(diagnose.stdout)")
        #expect(diagnose.stderr.contains("token age unknown"), "\(diagnose.stderr)")
        let byHardware = try await CLI.run([
            "diagnose", "--store", url, "--hardware-identifier", "6F1C2A8E-0000-4000-8000-00000000D002", "--json",
        ])
        // dev-r2 is revoked and has no token: a verdict (exit 1), found through the uuid compared without case.
        #expect(byHardware.status == 1, "\(byHardware.stdout) \(byHardware.stderr)")
        #expect(byHardware.stdout.contains("The enrollment vvwilhelmus/dev-r2 is revoked."), "\(byHardware.stdout)")

        // token verify --db: a device JWT of the same tenant and device id (signed by kkpush from a scratch SQLite
        // file) is checked against the real table's row.
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hw = "6f1c2a8e-0000-4000-8000-00000000d001"
        let enrolled = try await CLI.run(
            [
                "backend", "enroll", "--db", dir.appendingPathComponent("scratch.sqlite").path, "--tenant",
                "vvwilhelmus", "--teams", "JO11-3", "--device-id", "dev-r1", "--hardware-identifier", hw, "--role",
                "manager", "--json",
            ], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let jwt = try #require(try enrolled.json()["signed_device_token"] as? String)
        let body = dir.appendingPathComponent("update.json")
        try Data(
            #"{"token":"\#(String(repeating: "cd", count: 32))","build_environment":"production","app_version":"1.4.2","hardware_identifier":"\#(hw)","bundle_id":"nl.kantinekoning.app"}"#
                .utf8
        ).write(to: body)
        let verify = try await CLI.run(
            ["token", "verify", body.path, "--db", url, "--tenant", "vvwilhelmus", "--json"],
            environment: ["KKPUSH_BEARER": jwt, "KKPUSH_BACKEND_SECRET": Self.secret])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stderr.contains("generation unknown"), "\(verify.stderr)")

        // Nothing was written, created or altered.
        let after = try await Self.dump(server, database)
        #expect(before == after)
        // A command that writes says what the table lacks for it.
        let enroll = try await CLI.run(
            [
                "backend", "enroll", "--db", url, "--tenant", "vvwilhelmus", "--teams", "JO11-3", "--device-id", "x",
                "--hardware-identifier", hw,
            ], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        #expect(enroll.status != 0 && enroll.stderr.contains("generation"), "\(enroll.stderr)")
        #expect(enroll.stderr.contains("token_updated_at") && enroll.stderr.contains("aps_environment"))
        #expect(try await Self.dump(server, database) == before)
    }
}
