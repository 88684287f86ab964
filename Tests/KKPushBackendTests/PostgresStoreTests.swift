import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// The PostgreSQL store against a real server (the test process's shared one, each test in its own database):
/// migration, rows written by psql, a mapped schema, read-only opening, the plans of the fan-out and e-mail
/// lookups at 10,000 devices. URL and schema-map parsing need no server.
@Suite("PostgreSQL enrollment store")
struct PostgresStoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: URLs and schema maps (no server)

    @Test("A connection string (URL or key=value): read by libpq; the password never shown; a bad part is named")
    func urls() throws {
        let url = try PostgresURL(
            parsing:
                "postgresql://app%40kk:s3cr%3Aet@db.example.nl:6543/enrollments?sslmode=verify-full&connect_timeout=7"
        )
        #expect(url.user == "app@kk" && url.password == "s3cr:et" && url.host == "db.example.nl")
        #expect(url.port == 6543 && url.database == "enrollments" && url.sslMode == .verifyFull)
        #expect(url.connectTimeout == .seconds(7))
        #expect(!url.redacted.contains("s3cr") && url.redacted.contains("•••"))
        let defaults = try PostgresURL(parsing: "postgres://kk@[::1]")
        #expect(defaults.port == 5432 && defaults.database == "kk" && defaults.sslMode == .prefer)
        #expect(defaults.endpoint == "[::1]:5432")
        let cases: [(String, String)] = [
            ("postgres://u:hunter2hunter2@h:70000/d", "the port '70000'"),
            ("postgres://u:hunter2hunter2@h/d?sslmode=maybe", "sslmode 'maybe'"),
            ("postgres://u:hunter2hunter2@h/d?nosuch=1", "invalid URI query parameter: \"nosuch\""),
            ("host=h password=hunter2hunter2 bogus=1", "invalid connection option \"bogus\""),
            ("host=h password='hunter2hunter2", "unterminated quoted string"),
            ("host=h port=0 password=hunter2hunter2", "the port '0'"),
            ("postgres://u:hunter2hunter2@h/d?connect_timeout=0", "connect_timeout '0'"),
        ]
        for (text, part) in cases {
            #expect {
                _ = try PostgresURL(parsing: text, origin: "--db")
            } throws: { error in
                guard let e = error as? KKPushError else { return false }
                return e.code.rawValue == "store-url-invalid" && e.message.contains(part)
                    && !e.message.contains("hunter2")
                    && e.message.contains("--db")
            }
        }
        // Whatever libpq accepts: a Unix socket's directory, no user (libpq's default), key=value pairs, every
        // sslmode and libpq parameter.
        let socket = try PostgresURL(parsing: "postgres:///kk?host=/var/run/postgresql&port=5433", environment: [:])
        #expect(socket.isSocket && socket.host == "/var/run/postgresql" && socket.database == "kk")
        #expect(socket.endpoint == "/var/run/postgresql/.s.PGSQL.5433")
        let pairs = try PostgresURL(
            parsing:
                "host=db.example.nl port=6543 dbname=kk user=app password='s3cr et' sslmode=verify-ca sslrootcert=/etc/kk/ca.crt"
        )
        #expect(pairs.password == "s3cr et" && pairs.sslMode == .verifyCA && pairs.endpoint == "db.example.nl:6543")
        #expect(!pairs.redacted.contains("s3cr") && pairs.redacted.contains("password=•••"))
        #expect(try EnrollmentStoreLocation.parse("host=db dbname=kk", origin: "--db").sqlitePath == nil)
        let query = try PostgresURL(
            parsing:
                "postgres://app@db/kk?sslmode=verify-full&sslrootcert=ca.crt&application_name=x&options=-c%20statement_timeout%3D5000&password=qu3ry-secret"
        )
        #expect(query.parameters["sslrootcert"] == "ca.crt" && !query.redacted.contains("qu3ry"))
        // libpq reads the credentials up to the first `@` before any `/`, a `?` included (found by fuzzing: the
        // mask stopped at the `?` and showed the password).
        let question = try PostgresURL(parsing: "postgresql://app%40?kk:p%3Aw-s3cret@[::1]/db?sslmode=verify-full")
        #expect(question.password == "p:w-s3cret")
        #expect(!question.redacted.contains("s3cret") && question.redacted.contains("•••"))
        // The PG* variables stand in for what the string leaves out (libpq reads them; kkpush shows them).
        let fromEnv = try PostgresURL(
            parsing: "postgres://", environment: ["PGHOST": "pg.example.nl", "PGPORT": "6000", "PGDATABASE": "kk"])
        #expect(fromEnv.endpoint == "pg.example.nl:6000" && fromEnv.database == "kk")
        // A value that is not a URL is an SQLite path; DATABASE_URL is used without the flag, and says so.
        #expect(try EnrollmentStoreLocation.parse("kk.sqlite", origin: "--db").sqlitePath == "kk.sqlite")
        let fromDatabaseURL = try #require(
            try EnrollmentStoreLocation.resolve(
                given: nil, origin: "--db", environment: ["DATABASE_URL": "postgres://kk@127.0.0.1/x"],
                defaultPath: "d.sqlite"))
        #expect(fromDatabaseURL.origin == "DATABASE_URL" && fromDatabaseURL.sqlitePath == nil)
        let flagWins = try #require(
            try EnrollmentStoreLocation.resolve(
                given: "f.sqlite", origin: "--db", environment: ["DATABASE_URL": "postgres://kk@127.0.0.1/x"]))
        #expect(flagWins.sqlitePath == "f.sqlite" && flagWins.origin == "--db")
    }

    @Test("A schema map: table and columns read; unknown keys and column names refused, naming them")
    func schemaMaps() throws {
        let map = try EnrollmentTableMapping.parse(
            Data(#"{"table": "app.enrollments", "columns": {"device_id": "id", "team_codes": "teams"}}"#.utf8),
            source: "m.json")
        #expect(map.schema == "app" && map.table == "enrollments" && map.column("device_id") == "id")
        #expect(map.column("status") == "status" && !map.isStandard)
        #expect(map.qualifiedTable == #""app"."enrollments""#)
        #expect(EnrollmentTableMapping.quote(#"we"ird"#) == #""we""ird""#)
        let bad: [(String, String)] = [
            (#"{"tabel": "x"}"#, "unknown key(s) tabel"),
            (#"{"columns": {"device": "id"}}"#, "unknown kkpush column(s) device"),
            (#"{"columns": {"device_id": "x", "tenant_slug": "x"}}"#, "both map to the column 'x'"),
            (#"{"table": "a.b.c"}"#, "is not TABLE or SCHEMA.TABLE"),
            (#"{"columns": {"device_id": ""}}"#, "the name is empty"),
            (#"[1]"#, "not a JSON object"),
        ]
        for (json, why) in bad {
            #expect {
                _ = try EnrollmentTableMapping.parse(Data(json.utf8), source: "--schema-map m.json")
            } throws: { error in
                guard let e = error as? KKPushError else { return false }
                return e.code.rawValue == "schema-map-invalid" && e.message.contains(why)
                    && e.message.contains("m.json")
            }
        }
    }

    // MARK: Against the server

    @Test("migrate creates the table and indexes once; a second run changes nothing")
    func migrateIdempotent() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let url = try PostgresURL(parsing: server.url(database))
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-not-migrated" && e.fix?.contains("(backendMigrateCommand) (db) ") == true
        }
        let first = try await PostgresEnrollmentStore.migrate(url: url)
        #expect(first.created.count == 6 && first.created[0] == "created table public.device_enrollments")
        #expect(first.created.last == "created table public.kkpush_sync_throttle")
        let second = try await PostgresEnrollmentStore.migrate(url: url)
        #expect(!second.changed)
        let columns = try await server.runSQL(
            "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'device_enrollments' ORDER BY ordinal_position",
            database: database)
        #expect(
            columns.split(separator: "\n") == [
                "tenant_slug text", "device_id text", "team_codes ARRAY", "role text", "hardware_identifier text",
                "apns_token text", "build_environment text", "app_version text", "is_test_user boolean", "status text",
                "team_manager_email text", "updated_at timestamp with time zone", "generation integer",
                "token_updated_at timestamp with time zone", "aps_environment text",
            ])
        let indexes = try await server.runSQL(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'device_enrollments' ORDER BY indexname",
            database: database)
        #expect(
            indexes.split(separator: "\n") == [
                "device_enrollments_email", "device_enrollments_hardware", "device_enrollments_pkey",
                "device_enrollments_teams", "device_enrollments_token",
            ])
    }

    @Test("Rows written by psql are read back whole: text[] teams, timestamptz, case-insensitive lookups")
    func rowsFromPSQL() async throws {
        let (server, database, url) = try await PostgresFixtures.migratedDatabase()
        try await server.runSQL(
            """
            INSERT INTO public.device_enrollments (tenant_slug, device_id, team_codes, role, hardware_identifier,
                apns_token, build_environment, app_version, is_test_user, status, team_manager_email, updated_at, generation)
            VALUES
              ('vvwilhelmus', 'dev-m', ARRAY['JO11-3','JO11-5'], 'manager', '8C1E0B7A-0000-4000-8000-000000000001',
               'aa11', 'production', '1.4.2', false, 'active', 'Jan@Example.nl', '2027-01-15 09:30:00+01', 3),
              ('vvwilhelmus', 'dev-l', '{JO13-1}', 'member', '8c1e0b7a-0000-4000-8000-000000000001',
               NULL, NULL, NULL, true, 'revoked', NULL, '2027-01-16T10:00:00Z', 1);
            """, database: database)
        try await PostgresEnrollmentStore.withStore(url: url) { store in
            let manager = try #require(try await store.get(deviceID: "dev-m", tenant: "vvwilhelmus"))
            #expect(manager.teamCodes == ["JO11-3", "JO11-5"] && manager.role == .manager && manager.generation == 3)
            #expect(Enrollment.formatDate(manager.updatedAt) == "2027-01-15T08:30:00Z")
            #expect(manager.apnsToken == "aa11" && !manager.isTestUser)
            #expect(try await store.find(teamManagerEmail: "jan@example.NL").map(\.deviceID) == ["dev-m"])
            #expect(
                try await store.find(hardwareIdentifier: "8C1E0B7A-0000-4000-8000-000000000001").map(\.deviceID) == [
                    "dev-l", "dev-m",
                ])
            #expect(
                try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11-5").map(\.deviceID) == ["dev-m"])
            #expect(try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO13-1").isEmpty)
            let member = try #require(try await store.get(deviceID: "dev-l", tenant: "vvwilhelmus"))
            #expect(member.status == .revoked && member.isTestUser && member.apnsToken == nil)
            // A token update by kkpush, read back by psql.
            try await store.updateToken(
                deviceID: "dev-m", tenant: "vvwilhelmus", token: "bb22", buildEnvironment: "development",
                appVersion: "1.5", at: Self.t0)
        }
        let row = try await server.runSQL(
            "SELECT apns_token, build_environment, extract(epoch from updated_at)::bigint, extract(epoch from token_updated_at)::bigint FROM device_enrollments WHERE device_id = 'dev-m'",
            database: database)
        #expect(row.trimmingCharacters(in: .whitespacesAndNewlines) == "bb22|development|1800000000|1800000000")
    }

    /// The real backend's table: other names, written by psql, mapped by a schema map.
    static let theirTable = """
        CREATE SCHEMA app;
        CREATE TABLE app.enrollments (
            id text NOT NULL, club text NOT NULL, teams text[] NOT NULL, kind text NOT NULL,
            vendor_uuid text NOT NULL, push_token text, build_env text, version text,
            tester boolean NOT NULL DEFAULT false, state text NOT NULL, manager_email text,
            modified timestamptz NOT NULL, gen integer NOT NULL DEFAULT 1, token_at timestamptz,
            extra_column text DEFAULT 'theirs', signed_env text,
            PRIMARY KEY (club, id));
        INSERT INTO app.enrollments (id, club, teams, kind, vendor_uuid, push_token, build_env, version, tester, state,
            manager_email, modified, gen)
        VALUES ('e-1', 'agovv', ARRAY['JO10-5'], 'manager', '6F1C2A8E-0000-4000-8000-00000000A001', 'cc33',
            'production', '2.0', false, 'active', 'piet@agovv.nl', '2027-02-01T12:00:00Z', 2),
          ('e-2', 'agovv', ARRAY['JO10-5','JO12-1'], 'member', '6F1C2A8E-0000-4000-8000-00000000A002', NULL,
            NULL, NULL, false, 'active', NULL, '2027-02-02T12:00:00Z', 1);
        """

    static let theirMap = PostgresSchemaFixtures.theirSchemaMap

    @Test("Another schema mapped by a config: read, written and cleared through its own column names")
    func mappedSchema() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.theirTable, database: database)
        let url = try PostgresURL(parsing: server.url(database))
        var mapping = try EnrollmentTableMapping.parse(Data(Self.theirMap.utf8), source: "--schema-map their.json")
        // Writing needs aps_environment too: this table has it under its own name.
        mapping.columns["aps_environment"] = "signed_env"
        try await PostgresEnrollmentStore.withStore(url: url, mapping: mapping) { store in
            #expect(try await store.all().map(\.deviceID) == ["e-1", "e-2"])
            #expect(try await store.activeEnrollments(tenant: "agovv", team: "JO10-5").count == 2)
            #expect(try await store.find(teamManagerEmail: "PIET@agovv.nl").first?.generation == 2)
            try await store.revoke(deviceID: "e-2", tenant: "agovv", at: Self.t0)
            #expect(try await store.activeEnrollments(tenant: "agovv", team: "JO10-5").map(\.deviceID) == ["e-1"])
            var imported = try #require(try await store.get(deviceID: "e-1", tenant: "agovv"))
            imported.generation = 1
            try await store.upsert(imported)  // the generation never goes down
            #expect(try await store.get(deviceID: "e-1", tenant: "agovv")?.generation == 2)
            #expect(try await store.clearToken("cc33", at: Self.t0) == 1)
        }
        let rows = try await server.runSQL(
            "SELECT id, state, gen, coalesce(push_token, '-'), extra_column FROM app.enrollments ORDER BY id",
            database: database)
        #expect(rows.split(separator: "\n") == ["e-1|active|2|-|theirs", "e-2|revoked|2|-|theirs"])

        // A column the map names that the table does not have is named; so is a missing table.
        var wrong = mapping
        wrong.columns["app_version"] = "app_ver"
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url, mapping: wrong)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-schema-mismatch" && e.message.contains("app_version (as app_ver)")
                && e.message.contains("app.enrollments")
        }
        // A mapped column of a type kkpush cannot use is named, with the type it has and the one expected.
        try await server.runSQL("ALTER TABLE app.enrollments ADD COLUMN teams_json jsonb", database: database)
        var jsonTeams = mapping
        jsonTeams.columns["team_codes"] = "teams_json"
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url, mapping: jsonTeams)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-schema-mismatch"
                && e.message.contains("teams_json is jsonb, expected text[]")
        }
        var noTable = mapping
        noTable.table = "nope"
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url, mapping: noTable)
        } throws: { ($0 as? KKPushError)?.message.contains("no table app.nope") == true }
    }

    @Test("A read-only store reads, and the server refuses its writes (store-read-only); nothing changes")
    func readOnly() async throws {
        let (server, database, url) = try await PostgresFixtures.migratedDatabase()
        try await PostgresEnrollmentStore.withStore(url: url) { store in
            try await store.upsert(StoreDurabilityTests.record("dev-1", token: BackendFixtures.token(1)))
        }
        try await PostgresEnrollmentStore.withStore(url: url, readOnly: true) { store in
            let count = try await store.all().count
            #expect(count == 1)
            await #expect {
                try await store.upsert(StoreDurabilityTests.record("dev-2"))
            } throws: { ($0 as? KKPushError)?.code.rawValue == "store-read-only" }
            await #expect {
                try await store.clearToken(BackendFixtures.token(1), at: Self.t0)
            } throws: { ($0 as? KKPushError)?.code.rawValue == "store-read-only" }
            await #expect {
                try await store.revoke(deviceID: "dev-1", tenant: "vvwilhelmus", at: Self.t0)
            } throws: { ($0 as? KKPushError)?.code.rawValue == "store-read-only" }
        }
        let rows = try await server.runSQL(
            "SELECT device_id, status, apns_token IS NOT NULL FROM device_enrollments", database: database)
        #expect(rows.trimmingCharacters(in: .whitespacesAndNewlines) == "dev-1|active|t")
    }

    @Test("Nothing listening: store-unreachable at once, naming host:port, the password masked", .timeSensitive)
    func unreachable() async throws {
        let port = try freeLoopbackPort()
        // A 60 s connect timeout: "at once" (a refused port) is then far from a wait for the timeout, however loaded
        // the machine is.
        let url = try PostgresURL(
            parsing: "postgres://kk:topsecretpassword@127.0.0.1:\(port)/x?sslmode=disable&connect_timeout=60")
        let started = ContinuousClock.now
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-unreachable" && e.message.contains("127.0.0.1:\(port)")
                && e.message.contains("connection refused") && !"\(e)".contains("topsecret")
        }
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test("10,000 devices of one team: the fan-out and the e-mail lookup use indexes (EXPLAIN), not a table scan")
    func plansAtScale() async throws {
        let (server, database, url) = try await PostgresFixtures.migratedDatabase()
        // 10,000 enrollments of team JO11-3 through the store (one transaction); by SQL, 90,000 of other teams:
        // 40,000 in the same tenant (so that the tenant alone does not find the team), 50,000 in other tenants.
        let team = (0..<10_000).map { i in
            Enrollment(
                deviceID: "dev-\(i)", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: UUID().uuidString, apnsToken: String(format: "%064x", i),
                buildEnvironment: "production", appVersion: "1.4.2", updatedAt: Self.t0)
        }
        let clock = ContinuousClock()
        let insertTime = try await clock.measure {
            try await PostgresEnrollmentStore.withStore(url: url) { try await $0.upsert(contentsOf: team) }
        }
        try await server.runSQL(
            """
            INSERT INTO device_enrollments (tenant_slug, device_id, team_codes, role, hardware_identifier, status,
                team_manager_email, updated_at)
            SELECT CASE WHEN i <= 40000 THEN 'vvwilhelmus' ELSE 'club-' || (i % 50) END, 'other-' || i, ARRAY['OT' || (i % 40) || '-' || (i % 7)], 'manager',
                md5(i::text), 'active', 'm' || i || '@example.nl', now()
            FROM generate_series(1, 90000) AS i;
            ANALYZE device_enrollments;
            """, database: database)
        try await PostgresEnrollmentStore.withStore(url: url) { store in
            var fanOutCount = 0
            let fanOutTime = try await clock.measure {
                fanOutCount = try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11-3").count
            }
            #expect(fanOutCount == 10_000)
            let fanOut = try await store.explain(.fanOut(tenant: "vvwilhelmus", team: "JO11-3"))
            let email = try await store.explain(.email("M4242@Example.NL"))
            let hardware = try await store.explain(.hardwareIdentifier(team[5].hardwareIdentifier))
            print("EXPLAIN fan-out (10,000 of 100,000 rows, 50,000 in the tenant):\n\(fanOut)")
            print("EXPLAIN e-mail:\n\(email)")
            print(
                "EXPLAIN ANALYZE fan-out:\n\(try await store.explain(.fanOut(tenant: "vvwilhelmus", team: "JO11-3"), analyze: true))"
            )
            print("10,000 upserts in one transaction: \(insertTime); fan-out of 10,000: \(fanOutTime)")
            for (name, plan) in [("fan-out", fanOut), ("email", email), ("hardware", hardware)] {
                #expect(!plan.contains("\"Seq Scan\""), "\(name) scans the table: \(plan)")
            }
            #expect(fanOut.contains("\"Index Name\": \"device_enrollments_teams\""), "\(fanOut)")
            #expect(email.contains("device_enrollments_email"), "\(email)")
            #expect(hardware.contains("device_enrollments_hardware"), "\(hardware)")
            #expect(try await store.find(teamManagerEmail: "M4242@Example.NL").map(\.deviceID) == ["other-4242"])
        }
    }
}

@Suite("Schema-map identifiers are quoted byte for byte")
struct SchemaMapQuotingTests {
    /// Found by fuzzing: `"` followed by a combining mark is one Swift Character, which a Character-based
    /// replace left single, so the name ended the quoted identifier and the rest became SQL.
    @Test("a double quote followed by a combining mark is doubled too, and a NUL is refused")
    func combiningMark() throws {
        let name = "a\"\u{065A}; DROP TABLE x; --"
        let quoted = EnrollmentTableMapping.quote(name)
        #expect(Array(quoted.utf8).filter { $0 == UInt8(ascii: "\"") }.count == 4)
        #expect(quoted.unicodeScalars.first == "\"" && quoted.unicodeScalars.last == "\"")
        #expect(EnrollmentTableMapping.quote("plain") == "\"plain\"")
        let map = #"{"columns": {"device_id": "a\u0000\u065Ab"}}"#
        #expect(throws: KKPushError.self) { try EnrollmentTableMapping.parse(Data(map.utf8), source: "map.json") }
    }
}
