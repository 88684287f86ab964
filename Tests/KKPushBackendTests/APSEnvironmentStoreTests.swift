import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// `aps_environment` (what the app is signed for) through the stores, the export and import, the simulated
/// backend's token update and its fan-out; SQLite files and PostgreSQL tables of earlier versions, and the real
/// backend's table without the column.
@Suite("aps_environment: stores, token update, fan-out")
struct APSEnvironmentStoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func record(_ id: String, aps: String?, token: String? = BackendFixtures.token(5)) -> Enrollment {
        Enrollment(
            deviceID: id, tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, apnsToken: token, buildEnvironment: "development",
            apsEnvironment: aps, appVersion: "1.4.2", updatedAt: t0)
    }

    @Test(
        "Written, updated, cleared by an update without it, read back after a reopen; export and import carry it",
        arguments: ["sqlite", "postgres", "memory"])
    func roundTrip(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("enrollments.sqlite").path
        let memory = InMemoryEnrollmentStore()
        let location: EnrollmentStoreLocation? =
            switch kind {
            case "sqlite": EnrollmentStoreLocation(kind: .sqlite(path: path), origin: "--db")
            case "postgres":
                EnrollmentStoreLocation(
                    kind: .postgres(try await PostgresFixtures.migratedDatabase().url), origin: "--db")
            default: nil
            }
        func withStore<T: Sendable>(_ body: (any EnrollmentStore) async throws -> T) async throws -> T {
            guard let location else { return try await body(memory) }
            return try await EnrollmentStores.withStore(location) { try await body($0) }
        }

        try await withStore { store in
            try await store.upsert(Self.record("dev-signed", aps: "production"))
            try await store.upsert(Self.record("dev-old-app", aps: nil))
            let updated = try await store.updateToken(
                deviceID: "dev-old-app", tenant: "vvwilhelmus", token: BackendFixtures.token(6),
                buildEnvironment: "development", apsEnvironment: "development", appVersion: "1.5",
                at: Self.t0.addingTimeInterval(60))
            #expect(updated.apsEnvironment == "development" && updated.buildEnvironment == "development")
        }
        let reread = try await withStore { try await $0.all() }
        #expect(reread.map(\.apsEnvironment) == ["development", "production"])

        // An update without the field (an older app installed over the fixed one) clears it.
        try await withStore { store in
            let cleared = try await store.updateToken(
                deviceID: "dev-old-app", tenant: "vvwilhelmus", token: BackendFixtures.token(7),
                buildEnvironment: "production", appVersion: "1.3", at: Self.t0.addingTimeInterval(120))
            #expect(cleared.apsEnvironment == nil)
        }
        let export = try await withStore { try await $0.exportJSON() }
        let rows = try #require(try JSONSerialization.jsonObject(with: export) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows[0]["aps_environment"] is NSNull && rows[1]["aps_environment"] as? String == "production")

        // The export imports back with it (and an import of an older export, without the key, reads nil).
        let imported = InMemoryEnrollmentStore()
        #expect(try await imported.importJSON(export) == 2)
        #expect(await imported.get(deviceID: "dev-signed", tenant: "vvwilhelmus")?.apsEnvironment == "production")
        let older = Data(
            #"[{"device_id": "x", "tenant_slug": "agovv", "team_codes": [], "role": "member", "hardware_identifier": "h", "updated_at": "2027-01-01T00:00:00Z"}]"#
                .utf8)
        try await withStore { store in
            #expect(try await store.importJSON(older) == 1)
            #expect(try await store.get(deviceID: "x", tenant: "agovv")?.apsEnvironment == nil)
            // An upsert replaces it, as every field.
            var signed = try #require(try await store.get(deviceID: "dev-signed", tenant: "vvwilhelmus"))
            signed.apsEnvironment = "development"
            try await store.upsert(signed)
            #expect(try await store.get(deviceID: "dev-signed", tenant: "vvwilhelmus")?.apsEnvironment == "development")
        }
    }

    @Test("SQLite: a file of the previous version (no aps_environment) opens, gains the column, reads nil")
    func sqliteOldFile() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("previous.sqlite").path
        // The previous version's schema exactly: generation and token_updated_at, both indexes, no aps_environment.
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('''CREATE TABLE device_enrollments (tenant_slug TEXT NOT NULL, device_id TEXT NOT NULL,
                team_codes TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('manager', 'member')),
                hardware_identifier TEXT NOT NULL, apns_token TEXT, build_environment TEXT, app_version TEXT,
                is_test_user INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
                team_manager_email TEXT, updated_at TEXT NOT NULL, generation INTEGER NOT NULL DEFAULT 1,
                token_updated_at INTEGER, PRIMARY KEY (tenant_slug, device_id))''')
            db.execute("CREATE INDEX device_enrollments_hardware ON device_enrollments (hardware_identifier COLLATE NOCASE)")
            db.execute("CREATE INDEX device_enrollments_token ON device_enrollments (apns_token)")
            db.execute('''INSERT INTO device_enrollments VALUES ('vvwilhelmus', 'dev-prev', '["JO11-3"]', 'member',
                '8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C', 'abcd', 'development', '1.4', 0, 'active', NULL,
                '2027-01-15T08:00:00Z', 2, 1800000000000)''')
            db.commit()
            """
        let python = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, path], timeout: 30)
        try #require(python.status == 0, "python3 could not write the previous version's file")

        try await SQLiteEnrollmentStore.withStore(path: path) { store in
            let previous = try #require(try await store.get(deviceID: "dev-prev", tenant: "vvwilhelmus"))
            #expect(previous.apsEnvironment == nil && previous.generation == 2 && previous.apnsToken == "abcd")
            try await store.updateToken(
                deviceID: "dev-prev", tenant: "vvwilhelmus", token: "ef01", buildEnvironment: "development",
                apsEnvironment: "production", appVersion: "1.5", at: Self.t0)
        }
        let columns = try await Self.sqlite(path, "SELECT name FROM pragma_table_info('device_enrollments')")
        #expect(columns.split(separator: "\n").contains("aps_environment"))
        #expect(try await Self.sqlite(path, "SELECT aps_environment FROM device_enrollments") == "production")
        // Opened again: nothing to migrate, the value stays.
        let again = try await SQLiteEnrollmentStore.withStore(path: path) {
            try await $0.get(deviceID: "dev-prev", tenant: "vvwilhelmus")
        }
        #expect(again?.apsEnvironment == "production" && again?.generation == 2)
    }

    /// The output of one query on an SQLite file, through python3's sqlite3 (another process, as a reader would be).
    static func sqlite(_ path: String, _ query: String) async throws -> String {
        let script =
            "import sqlite3, sys\nfor row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print('|'.join(map(str, row)))"
        let output = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, path, query], timeout: 30)
        return String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: PostgreSQL

    /// kkpush's table as the previous version's `backend migrate` made it: every column but aps_environment.
    static let previousTable = """
        CREATE TABLE public.device_enrollments (
            tenant_slug text NOT NULL, device_id text NOT NULL, team_codes text[] NOT NULL DEFAULT '{}',
            role text NOT NULL CHECK (role IN ('manager', 'member')), hardware_identifier text NOT NULL,
            apns_token text, build_environment text, app_version text, is_test_user boolean NOT NULL DEFAULT false,
            status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')), team_manager_email text,
            updated_at timestamptz NOT NULL, generation integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
            token_updated_at timestamptz, PRIMARY KEY (tenant_slug, device_id));
        CREATE INDEX device_enrollments_hardware ON public.device_enrollments (lower(hardware_identifier));
        CREATE INDEX device_enrollments_email ON public.device_enrollments (lower(team_manager_email));
        CREATE INDEX device_enrollments_token ON public.device_enrollments (apns_token);
        CREATE INDEX device_enrollments_teams ON public.device_enrollments USING gin (team_codes);
        INSERT INTO public.device_enrollments (tenant_slug, device_id, team_codes, role, hardware_identifier,
            apns_token, build_environment, app_version, status, updated_at, generation)
        VALUES ('vvwilhelmus', 'dev-prev', '{JO11-3}', 'member', '8C1E0B7A-0000-4000-8000-000000000001',
            repeat('ab', 32), 'development', '1.4.2', 'active', '2027-01-15T09:30:00Z', 2);
        """

    @Test(
        "PostgreSQL: a table without aps_environment opens read-only (nil); writing needs it; migrate adds it once")
    func postgresPreviousTable() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.previousTable, database: database)
        let url = try PostgresURL(parsing: server.url(database))

        // diagnose, token verify and export open it read-only: the value reads as nil.
        try await PostgresEnrollmentStore.withStore(url: url, readOnly: true) { store in
            let e = try #require(try await store.get(deviceID: "dev-prev", tenant: "vvwilhelmus"))
            #expect(e.apsEnvironment == nil && e.generation == 2 && e.buildEnvironment == "development")
            #expect(try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11-3").count == 1)
            // Its writes are refused by the server, as every read-only store's.
            await #expect {
                try await store.updateToken(
                    deviceID: "dev-prev", tenant: "vvwilhelmus", token: "ab", buildEnvironment: "production",
                    apsEnvironment: "production", appVersion: "1.5", at: Self.t0)
            } throws: { ($0 as? KKPushError)?.code.rawValue == "store-read-only" }
        }
        // A store that writes needs the column: the fix is migrate, which adds it.
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-not-migrated" && e.message.contains("has no column aps_environment")
                && e.fix?.contains("(backendMigrateCommand) (db) ") == true
                && e.fix?.contains("adds aps_environment") == true
        }
        let first = try await PostgresEnrollmentStore.migrate(url: url)
        #expect(first.created == ["added column aps_environment text", "created table public.kkpush_sync_throttle"])
        let second = try await PostgresEnrollmentStore.migrate(url: url)
        #expect(!second.changed)
        try await PostgresEnrollmentStore.withStore(url: url) { store in
            #expect(try await store.get(deviceID: "dev-prev", tenant: "vvwilhelmus")?.apsEnvironment == nil)
            try await store.updateToken(
                deviceID: "dev-prev", tenant: "vvwilhelmus", token: String(repeating: "cd", count: 32),
                buildEnvironment: "development", apsEnvironment: "production", appVersion: "1.5", at: Self.t0)
        }
        let row = try await server.runSQL(
            "SELECT build_environment, aps_environment, generation FROM device_enrollments", database: database)
        #expect(row.trimmingCharacters(in: .whitespacesAndNewlines) == "development|production|2")
    }

    /// The real backend's table as psql makes it: its own names, kkpush's other columns, no aps_environment.
    static let realBackendTable = """
        CREATE SCHEMA app;
        CREATE TABLE app.enrollments (
            id text NOT NULL, club text NOT NULL, teams text[] NOT NULL, kind text NOT NULL,
            vendor_uuid text NOT NULL, push_token text, build_env text, version text,
            tester boolean NOT NULL DEFAULT false, state text NOT NULL, manager_email text,
            modified timestamptz NOT NULL, gen integer NOT NULL DEFAULT 1, token_at timestamptz,
            PRIMARY KEY (club, id));
        INSERT INTO app.enrollments VALUES
          ('e-1', 'agovv', ARRAY['JO10-5'], 'member', '6F1C2A8E-0000-4000-8000-00000000B001', repeat('ab', 32),
           'development', '2.0', false, 'active', NULL, '2027-02-01T12:00:00Z', 1, NULL);
        """

    @Test("PostgreSQL: the real backend's table (mapped, no aps_environment) opens read-only; writing names the column")
    func postgresRealBackendTable() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.realBackendTable, database: database)
        let url = try PostgresURL(parsing: server.url(database))
        let mapping = try EnrollmentTableMapping.parse(
            Data(PostgresSchemaFixtures.theirSchemaMap.utf8), source: "--schema-map their.json")
        try await PostgresEnrollmentStore.withStore(url: url, mapping: mapping, readOnly: true) { store in
            let e = try #require(try await store.find(hardwareIdentifier: "6f1c2a8e-0000-4000-8000-00000000b001").first)
            #expect(e.deviceID == "e-1" && e.apsEnvironment == nil && e.buildEnvironment == "development")
        }
        await #expect {
            _ = try await PostgresEnrollmentStore.open(url: url, mapping: mapping)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "store-schema-mismatch" && e.message.contains("has no column aps_environment")
                && e.fix?.contains("ADD COLUMN \"aps_environment\" text") == true
        }
        // A schema map may name the table's own column for it.
        try await server.runSQL("ALTER TABLE app.enrollments ADD COLUMN signed_env text", database: database)
        var mapped = mapping
        mapped.columns["aps_environment"] = "signed_env"
        try await PostgresEnrollmentStore.withStore(url: url, mapping: mapped) { store in
            try await store.updateToken(
                deviceID: "e-1", tenant: "agovv", token: String(repeating: "ef", count: 32),
                buildEnvironment: "development", apsEnvironment: "production", appVersion: "2.1", at: Self.t0)
            #expect(try await store.get(deviceID: "e-1", tenant: "agovv")?.apsEnvironment == "production")
        }
        let row = try await server.runSQL("SELECT build_env, signed_env FROM app.enrollments", database: database)
        #expect(row.trimmingCharacters(in: .whitespacesAndNewlines) == "development|production")
    }

    // MARK: The simulated backend

    @Test(
        "A token update with aps_environment: stored, answered with its environment, and the fan-out pushes there",
        arguments: ["sqlite", "postgres", "memory"])
    func backendTokenUpdateAndFanOut(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, close) = try await StoreDurabilityTests.makeStore(kind, in: dir)
        let clock = ManualWallClock(Self.t0)
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let sender = RecordingSender()
        let dienst = Dienst(
            id: "d-1", tenantSlug: "vvwilhelmus", teamCode: "JO11-3", startTime: Self.t0.addingTimeInterval(86_400),
            endTime: Self.t0.addingTimeInterval(90_000))
        let router = BackendRouter(
            store: store, diensten: DienstStore([dienst]), jwt: jwt, sender: sender, clock: clock)
        func enroll(_ id: String, phone: String) async throws -> String {
            let body = try JSONSerialization.data(withJSONObject: [
                "device_id": id, "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member",
                "hardware_identifier": phone,
            ])
            let r = await router.handle(BackendRequest(method: "POST", target: "/admin/enrollments", body: body))
            #expect(r.status == 201)
            let object = try #require(try JSONSerialization.jsonObject(with: r.body) as? [String: Any])
            return try #require(object["signed_device_token"] as? String)
        }
        func update(_ bearer: String, _ fields: [String: Any]) async throws -> (Int, [String: Any]) {
            let r = await router.handle(
                BackendRequest(
                    method: "POST", target: TokenUpdate.path, authorization: "Bearer \(bearer)",
                    body: try JSONSerialization.data(withJSONObject: fields)))
            return (r.status, (try? JSONSerialization.jsonObject(with: r.body) as? [String: Any]) ?? [:])
        }
        // Phone A: a Debug-configuration build on TestFlight (production tokens, reports development), fixed app.
        // Phone B: today's app, a Release Testing build run from Xcode (sandbox tokens), no aps_environment.
        let a = try await enroll("dev-a", phone: BackendFixtures.phoneA)
        let b = try await enroll("dev-b", phone: BackendFixtures.phoneB)
        let (statusA, answerA) = try await update(
            a,
            [
                "token": BackendFixtures.token(1), "build_environment": "development",
                "aps_environment": "production", "app_version": "1.6", "hardware_identifier": BackendFixtures.phoneA,
            ])
        #expect(statusA == 200, "\(answerA)")
        #expect(answerA["apns_environment"] as? String == "production")
        let problems = (answerA["problems"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
        #expect(problems == ["build-environment-contradicts-signature"])
        let (statusB, answerB) = try await update(
            b,
            [
                "token": BackendFixtures.token(2), "build_environment": "development", "app_version": "1.5",
                "hardware_identifier": BackendFixtures.phoneB,
            ])
        #expect(statusB == 200 && answerB["apns_environment"] as? String == "sandbox", "\(answerB)")
        #expect(try await store.get(deviceID: "dev-a", tenant: "vvwilhelmus")?.apsEnvironment == "production")
        #expect(try await store.get(deviceID: "dev-b", tenant: "vvwilhelmus")?.apsEnvironment == nil)

        // A value that is not the entitlement's is refused (422), naming the field; nothing changes.
        let (statusBad, answerBad) = try await update(
            a,
            [
                "token": BackendFixtures.token(3), "build_environment": "development",
                "aps_environment": "Production", "app_version": "1.6", "hardware_identifier": BackendFixtures.phoneA,
            ])
        #expect(
            statusBad == 422 && (answerBad["error"] as? [String: Any])?["code"] as? String == "aps-environment-unknown")
        #expect(try await store.get(deviceID: "dev-a", tenant: "vvwilhelmus")?.apnsToken == BackendFixtures.token(1))

        // A dienst change fans out: phone A to production (its signature), phone B to sandbox (build_environment).
        let change = await router.handle(
            BackendRequest(
                method: "POST", target: "/admin/diensten/d-1", body: Data(#"{"volunteers": ["Jan"]}"#.utf8)))
        #expect(change.status == 200, "\(String(decoding: change.body, as: UTF8.self))")
        #expect(
            Dictionary(uniqueKeysWithValues: sender.requests.map { ($0.request.deviceToken, $0.environment) }) == [
                BackendFixtures.token(1): .production, BackendFixtures.token(2): .sandbox,
            ])
        await close()
    }
}
