import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// Issue #15: the store under concurrency and partial failure. Every test runs against the SQLite store
/// (a real file in a temporary directory) and, where the semantics are the store's, the in-memory one.
@Suite("Enrollment store: transactions, 410 compare-and-clear, generations")
struct StoreDurabilityTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// A store of `kind` ("sqlite", "postgres" or "memory"), closed by the caller through `close`.
    static func makeStore(_ kind: String, in dir: URL) async throws -> (
        any EnrollmentStore, close: @Sendable () async -> Void
    ) {
        if kind == "sqlite" {
            let s = try await SQLiteEnrollmentStore.open(path: dir.appendingPathComponent("enrollments.sqlite").path)
            return (s, { try? await s.close() })
        }
        if kind == "postgres" { return try await PostgresFixtures.store() }
        return (InMemoryEnrollmentStore(), {})
    }

    static func record(_ id: String, token: String? = nil, at: Date = t0, generation: Int = 1) -> Enrollment {
        Enrollment(
            deviceID: id, tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, apnsToken: token,
            buildEnvironment: token == nil ? nil : "production",
            appVersion: token == nil ? nil : "1.4.2", updatedAt: at, generation: generation)
    }

    @Test(
        "An import is all or nothing: a bad entry leaves the store as it was and is named",
        arguments: ["sqlite", "postgres", "memory"])
    func importAtomicity(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, close) = try await Self.makeStore(kind, in: dir)
        try await store.upsert(Self.record("dev-1", token: BackendFixtures.token(1)))
        let before = try await store.all()

        var changed = Self.record("dev-1", token: BackendFixtures.token(9))
        changed.teamCodes = ["JO13-1"]
        let batch = [Self.record("dev-2"), changed, Self.record("dev-3"), Self.record("  "), Self.record("dev-4")]
        let data = try EnrollmentJSON.encode(batch)
        await #expect {
            try await store.importJSON(data)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "enrollment-invalid" && e.message.contains("[3]")
                && e.message.contains("device_id")
                && e.message.contains("Nothing was imported")
        }
        #expect(try await store.all() == before)

        // The same batch without the bad entry goes in whole.
        let good = try EnrollmentJSON.encode(batch.filter { !$0.deviceID.trimmingWhitespace().isEmpty })
        #expect(try await store.importJSON(good) == 4)
        #expect(try await store.all().map(\.deviceID) == ["dev-1", "dev-2", "dev-3", "dev-4"])
        #expect(try await store.get(deviceID: "dev-1", tenant: "vvwilhelmus")?.teamCodes == ["JO13-1"])
        await close()
    }

    @Test(
        "An import with a generation out of 1...2^31-1 is refused, naming the entry",
        arguments: ["0", "-3", "9223372036854775807"])
    func generationRange(_ value: String) async throws {
        let store: any EnrollmentStore = InMemoryEnrollmentStore()
        let data = Data(
            #"[{"device_id": "x", "tenant_slug": "agovv", "team_codes": [], "role": "member", "hardware_identifier": "h", "updated_at": "2027-01-01T00:00:00Z", "generation": \#(value)}]"#
                .utf8)
        await #expect { try await store.importJSON(data) } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "enrollments-json-invalid" && e.message.contains("[0]")
                && e.message.contains("generation")
        }
    }

    @Test(
        "A 410 clears a token registered at or before its timestamp; one registered again after it stays",
        arguments: ["sqlite", "postgres", "memory"])
    func compareAndClear(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, close) = try await Self.makeStore(kind, in: dir)
        let token = BackendFixtures.token(3)
        try await store.upsert(Self.record("dev-old"))
        try await store.upsert(Self.record("dev-new"))
        // dev-old registered the token at t0; APNs says it became invalid at t0 + 10.5 s; dev-new registered
        // the same token (the phone re-registered) at t0 + 10.7 s, after the 410's timestamp.
        try await store.updateToken(
            deviceID: "dev-old", tenant: "vvwilhelmus", token: token,
            buildEnvironment: "production", appVersion: "1.4.2", at: Self.t0)
        try await store.updateToken(
            deviceID: "dev-new", tenant: "vvwilhelmus", token: token,
            buildEnvironment: "production", appVersion: "1.4.2", at: Self.t0.addingTimeInterval(10.7))
        let gone = Self.t0.addingTimeInterval(10.5)
        let cleared = try await store.clearToken(token, unregisteredAt: gone, at: Self.t0.addingTimeInterval(20))
        #expect(cleared == 1)
        #expect(try await store.get(deviceID: "dev-old", tenant: "vvwilhelmus")?.apnsToken == nil)
        #expect(try await store.get(deviceID: "dev-new", tenant: "vvwilhelmus")?.apnsToken == token)
        // A second, later 410 (a timestamp after the re-registration) clears it too.
        #expect(
            try await store.clearToken(
                token, unregisteredAt: Self.t0.addingTimeInterval(11), at: Self.t0.addingTimeInterval(30)) == 1)
        #expect(try await store.find(apnsToken: token).isEmpty)
        // A token whose registration time is unknown (imported) is cleared by any 410.
        try await store.upsert(contentsOf: [
            Self.record("dev-imported", token: token, at: Self.t0.addingTimeInterval(100))
        ])
        #expect(
            try await store.clearToken(
                token, unregisteredAt: Self.t0.addingTimeInterval(50), at: Self.t0.addingTimeInterval(200)) == 0)
        #expect(
            try await store.clearToken(
                token, unregisteredAt: Self.t0.addingTimeInterval(100), at: Self.t0.addingTimeInterval(200)) == 1)
        await close()
    }

    @Test(
        "Revoke and re-enroll bump the generation; an import never lowers it",
        arguments: ["sqlite", "postgres", "memory"])
    func generations(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, close) = try await Self.makeStore(kind, in: dir)
        let (first, firstToken) = try await store.enroll(Self.record("dev-x")) { "jwt-\($0.generation)" }
        #expect(first.generation == 1 && firstToken == "jwt-1")
        let oldExport = try await store.exportJSON()
        try await store.revoke(deviceID: "dev-x", tenant: "vvwilhelmus", at: Self.t0.addingTimeInterval(60))
        let revoked = try #require(try await store.get(deviceID: "dev-x", tenant: "vvwilhelmus"))
        #expect(revoked.status == .revoked && revoked.generation == 2)
        let (again, _) = try await store.enroll(Self.record("dev-x", at: Self.t0.addingTimeInterval(120))) {
            "jwt-\($0.generation)"
        }
        #expect(again.generation == 3 && again.status == .active)
        #expect(try await store.get(deviceID: "dev-x", tenant: "vvwilhelmus")?.generation == 3)
        // Importing the old export (generation 1) does not bring generation 1 back.
        try await store.importJSON(oldExport)
        #expect(try await store.get(deviceID: "dev-x", tenant: "vvwilhelmus")?.generation == 3)
        // A signer that fails writes nothing.
        struct SignFailed: Error {}
        await #expect(throws: SignFailed.self) {
            _ = try await store.enroll(Self.record("dev-x")) { _ in throw SignFailed() }
        }
        await #expect(throws: SignFailed.self) {
            _ = try await store.enroll(Self.record("dev-never")) { _ in throw SignFailed() }
        }
        #expect(try await store.get(deviceID: "dev-x", tenant: "vvwilhelmus")?.generation == 3)
        #expect(try await store.get(deviceID: "dev-never", tenant: "vvwilhelmus") == nil)
        await close()
    }

    @Test(
        "A device JWT issued before a revoke and re-enrollment is refused (jwt-superseded); the new one works",
        arguments: ["sqlite", "postgres", "memory"])
    func oldJWTRefused(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (store, close) = try await Self.makeStore(kind, in: dir)
        let clock = ManualWallClock(Self.t0)
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let router = BackendRouter(store: store, diensten: DienstStore([]), jwt: jwt, sender: nil, clock: clock)
        func enroll() async throws -> String {
            let body = try JSONSerialization.data(withJSONObject: [
                "device_id": "dev-x", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member",
                "hardware_identifier": BackendFixtures.phoneA, "replace": true,
            ])
            let r = await router.handle(BackendRequest(method: "POST", target: "/admin/enrollments", body: body))
            #expect(r.status == 201)
            let object = try #require(try JSONSerialization.jsonObject(with: r.body) as? [String: Any])
            return try #require(object["signed_device_token"] as? String)
        }
        func update(_ bearer: String) async -> (Int, String?) {
            let body = TokenUpdateCase.named("valid-development").data()
            let r = await router.handle(
                BackendRequest(
                    method: "POST", target: "/api/mobile/v1/device/apns-token",
                    authorization: "Bearer \(bearer)", body: body))
            let object = (try? JSONSerialization.jsonObject(with: r.body) as? [String: Any]) ?? [:]
            return (r.status, (object["error"] as? [String: Any])?["code"] as? String)
        }
        let old = try await enroll()
        #expect(try DeviceJWT.decodeUnverified(old).generation == 1)
        #expect(await update(old).0 == 200)
        let revoke = await router.handle(
            BackendRequest(method: "POST", target: "/admin/enrollments/vvwilhelmus/dev-x/revoke"))
        #expect(revoke.status == 200)
        #expect(await update(old) == (403, "enrollment-revoked"))
        let new = try await enroll()
        #expect(try DeviceJWT.decodeUnverified(new).generation == 3)
        #expect(await update(old) == (401, "jwt-superseded"))
        #expect(await update(new).0 == 200)

        // kkpush token verify's path (TokenUpdateVerifier with a store lookup) reports it too.
        let verifier = TokenUpdateVerifier(jwt: jwt)
        let body = TokenUpdateCase.named("valid-development").data()
        let report = await verifier.verify(
            body: body, bearer: old,
            lookup: { key in
                try await store.get(deviceID: key.deviceID, tenant: key.tenantSlug)
            })
        #expect(report.problems.contains { $0.code.rawValue == "jwt-superseded" })
        #expect(!report.valid)
        let fresh = await verifier.verify(
            body: body, bearer: new,
            lookup: { key in
                try await store.get(deviceID: key.deviceID, tenant: key.tenantSlug)
            })
        #expect(!fresh.problems.contains { $0.code.rawValue == "jwt-superseded" })
        await close()
    }

    @Test("SQLite: WAL journal mode and a 5 s busy timeout on every connection")
    func walAndBusyTimeout() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("wal.sqlite").path
        let a = try await SQLiteEnrollmentStore.open(path: path)
        let b = try await SQLiteEnrollmentStore.open(path: path)
        #expect(try await a.journalMode() == "wal")
        #expect(try await b.journalMode() == "wal")
        #expect(try await a.busyTimeout() == 5_000)
        #expect(try await b.busyTimeout() == 5_000)
        // Two connections writing at once: every write lands.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, store) in [("a", a), ("b", b)] {
                group.addTask {
                    for i in 0..<50 {
                        try await store.upsert(contentsOf: [
                            Self.record("dev-\(name)-\(i)"), Self.record("dev-\(name)-\(i)-bis"),
                        ])
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await a.all().count == 200)
        try await a.close()
        try await b.close()
        try await b.close()
    }

    @Test("SQLite: a file of the earlier schema gets the new columns; its rows are generation 1")
    func migration() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("old.sqlite").path
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('''CREATE TABLE device_enrollments (tenant_slug TEXT NOT NULL, device_id TEXT NOT NULL,
                team_codes TEXT NOT NULL, role TEXT NOT NULL CHECK (role IN ('manager', 'member')),
                hardware_identifier TEXT NOT NULL, apns_token TEXT, build_environment TEXT, app_version TEXT,
                is_test_user INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
                team_manager_email TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (tenant_slug, device_id))''')
            db.execute('''INSERT INTO device_enrollments VALUES ('vvwilhelmus', 'dev-old', '["JO11-3"]', 'member',
                '8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C', 'abcd', 'production', '1.0', 0, 'active', NULL, '2027-01-15T08:00:00Z')''')
            db.commit()
            """
        let python = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, path], timeout: 30)
        try #require(python.status == 0, "python3 could not write the old-schema file")

        let store = try await SQLiteEnrollmentStore.open(path: path)
        let old = try #require(try await store.get(deviceID: "dev-old", tenant: "vvwilhelmus"))
        #expect(old.generation == 1 && old.apnsToken == "abcd")
        // Registration time unknown: a 410 of any time clears it.
        #expect(try await store.clearToken("abcd", unregisteredAt: Date(timeIntervalSince1970: 0), at: Self.t0) == 1)
        try await store.revoke(deviceID: "dev-old", tenant: "vvwilhelmus", at: Self.t0)
        #expect(try await store.get(deviceID: "dev-old", tenant: "vvwilhelmus")?.generation == 2)
        try await store.close()
        // Opening it again migrates nothing twice.
        let again = try await SQLiteEnrollmentStore.open(path: path)
        #expect(try await again.get(deviceID: "dev-old", tenant: "vvwilhelmus")?.generation == 2)
        try await again.close()
    }
}
