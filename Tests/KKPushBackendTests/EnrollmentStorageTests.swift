import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

@Suite("Enrollment store")
struct EnrollmentStorageTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func sample() -> [Enrollment] {
        [
            Enrollment(
                deviceID: "dev-a-manager", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3", "JO11-5"], role: .manager,
                hardwareIdentifier: BackendFixtures.phoneA, apnsToken: BackendFixtures.token(1),
                buildEnvironment: "production",
                appVersion: "1.4.2", teamManagerEmail: "jan@example.nl", updatedAt: t0),
            Enrollment(
                deviceID: "dev-a-member", tenantSlug: "vvwilhelmus", teamCodes: ["JO13-1"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneA, apnsToken: BackendFixtures.token(1),
                buildEnvironment: "production",
                appVersion: "1.4.2", updatedAt: t0.addingTimeInterval(0.75)),
            Enrollment(
                deviceID: "dev-a-agovv", tenantSlug: "agovv", teamCodes: ["JO10-5"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneA.lowercased(), isTestUser: true, updatedAt: t0),
            Enrollment(
                deviceID: "dev-b", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneB, apnsToken: BackendFixtures.token(2),
                buildEnvironment: "development",
                appVersion: "1.5", status: .revoked, updatedAt: t0),
        ]
    }

    @Test(
        "Write, close, reopen, read: the same records, and every operation persists",
        arguments: ["sqlite", "postgres"])
    func roundTripAcrossRestarts(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("enrollments.sqlite").path
        let location =
            kind == "sqlite"
            ? EnrollmentStoreLocation(kind: .sqlite(path: path), origin: "--db")
            : EnrollmentStoreLocation(
                kind: .postgres(try await PostgresFixtures.migratedDatabase().url), origin: "--db")
        let records = Self.sample()

        try await EnrollmentStores.withStore(location) { store in
            for e in records { try await store.upsert(e) }
        }
        #expect(FileManager.default.fileExists(atPath: path) == (kind == "sqlite"))

        let reread = try await EnrollmentStores.withStore(location) { try await $0.all() }
        #expect(reread == records.sorted { ($0.tenantSlug, $0.deviceID) < ($1.tenantSlug, $1.deviceID) })

        // Change things, restart, and read again.
        let newToken = BackendFixtures.token(7)
        try await EnrollmentStores.withStore(location) { store in
            try await store.updateToken(
                deviceID: "dev-a-agovv", tenant: "agovv", token: newToken,
                buildEnvironment: "development", appVersion: "1.4.3", at: Self.t0.addingTimeInterval(60))
            #expect(try await store.clearToken(BackendFixtures.token(1), at: Self.t0.addingTimeInterval(120)) == 2)
            try await store.revoke(deviceID: "dev-a-member", tenant: "vvwilhelmus", at: Self.t0.addingTimeInterval(180))
        }
        try await EnrollmentStores.withStore(location) { store in
            let agovv = try #require(try await store.get(deviceID: "dev-a-agovv", tenant: "agovv"))
            #expect(
                agovv.apnsToken == newToken && agovv.buildEnvironment == "development" && agovv.appVersion == "1.4.3")
            #expect(agovv.updatedAt == Self.t0.addingTimeInterval(60))
            #expect(agovv.isTestUser)
            #expect(try await store.find(apnsToken: BackendFixtures.token(1)).isEmpty)
            let member = try #require(try await store.get(deviceID: "dev-a-member", tenant: "vvwilhelmus"))
            #expect(member.status == .revoked && member.apnsToken == nil)
            #expect(try await store.find(hardwareIdentifier: BackendFixtures.phoneA.lowercased()).count == 3)
            #expect(try await store.find(teamManagerEmail: "JAN@example.nl").map(\.deviceID) == ["dev-a-manager"])
            #expect(
                try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11-3").map(\.deviceID) == [
                    "dev-a-manager"
                ])
            #expect(try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11").isEmpty)
            #expect(try await store.get(deviceID: "dev-a-manager", tenant: "agovv") == nil)
        }
    }

    @Test("Every store behaves alike", arguments: ["sqlite", "postgres", "memory"])
    func sameBehaviour(_ kind: String) async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sqlite =
            kind == "sqlite" ? try await SQLiteEnrollmentStore.open(path: dir.appendingPathComponent("db").path) : nil
        let postgres = kind == "postgres" ? try await PostgresFixtures.store() : nil
        let store: any EnrollmentStore = sqlite ?? postgres?.0 ?? InMemoryEnrollmentStore()
        for e in Self.sample() { try await store.upsert(e) }
        #expect(try await store.all().count == 4)
        #expect(
            try await store.activeEnrollments(tenant: "vvwilhelmus", team: "JO11-3").map(\.deviceID) == [
                "dev-a-manager"
            ])
        // device_id is unique per tenant: an upsert replaces.
        var replaced = Self.sample()[0]
        replaced.teamCodes = ["JO11-3"]
        try await store.upsert(replaced)
        #expect(try await store.all().count == 4)
        #expect(try await store.get(deviceID: "dev-a-manager", tenant: "vvwilhelmus")?.teamCodes == ["JO11-3"])
        await #expect { try await store.revoke(deviceID: "nope", tenant: "agovv", at: Self.t0) } throws: {
            ($0 as? KKPushError)?.code.rawValue == "enrollment-not-found"
        }
        await #expect {
            try await store.updateToken(
                deviceID: "nope", tenant: "agovv", token: "ab", buildEnvironment: "x", appVersion: "1", at: Self.t0)
        } throws: { ($0 as? KKPushError)?.code.rawValue == "enrollment-not-found" }
        try await sqlite?.close()
        await postgres?.close()
    }

    @Test("JSON export uses exactly the documented field names and imports back into SQLite")
    func jsonExportImport() async throws {
        let memory: any EnrollmentStore = InMemoryEnrollmentStore(Self.sample())
        let data = try await memory.exportJSON()
        let array = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(array.count == 4)
        for object in array {
            #expect(Set(object.keys) == Set(Enrollment.fieldNames))
        }
        #expect(
            Set(Enrollment.fieldNames) == [
                "device_id", "tenant_slug", "team_codes", "role", "hardware_identifier", "apns_token",
                "build_environment", "aps_environment",
                "app_version", "is_test_user", "status", "team_manager_email", "updated_at", "generation",
            ])
        #expect(array.contains { ($0["updated_at"] as? String) == "2027-01-15T08:00:00Z" })

        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("imported.sqlite").path
        let count = try await SQLiteEnrollmentStore.withStore(path: path) { try await $0.importJSON(data) }
        #expect(count == 4)
        let back = try await SQLiteEnrollmentStore.withStore(path: path) { try await $0.exportJSON() }
        #expect(back == data)
    }

    @Test("Invalid JSON imports name the entry and field")
    func invalidImport() async throws {
        let store: any EnrollmentStore = InMemoryEnrollmentStore()
        let bad = Data(
            #"[{"device_id": "x", "tenant_slug": "agovv", "team_codes": [], "role": "boss", "hardware_identifier": "h", "updated_at": "2027-01-01T00:00:00Z"}]"#
                .utf8)
        await #expect { try await store.importJSON(bad) } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "enrollments-json-invalid" && e.message.contains("[0]")
        }
        let noDate = Data(
            #"[{"device_id": "x", "tenant_slug": "agovv", "team_codes": [], "role": "member", "hardware_identifier": "h"}]"#
                .utf8)
        await #expect { try await store.importJSON(noDate) } throws: { error in
            (error as? KKPushError)?.message.contains("updated_at") == true
        }
    }

    @Test("A file that is not a database is refused with a clear code")
    func notADatabase() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("not.sqlite").path
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        await #expect { try await SQLiteEnrollmentStore.open(path: path) } throws: {
            ($0 as? KKPushError)?.code.rawValue == "store-open-failed"
        }
    }
}
