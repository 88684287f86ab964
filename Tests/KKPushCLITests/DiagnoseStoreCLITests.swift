import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

/// `kkpush diagnose --store DB ...`: the enrollment looked up in the SQLite enrollment store.
@Suite("kkpush diagnose with the enrollment store")
struct DiagnoseStoreCLITests {
    static let hardware = "6F1C2A8E-0000-4000-8000-00000000A001"

    static func makeStore() async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-diag-\(UUID()).sqlite")
        let store = try await SQLiteEnrollmentStore.open(path: file.path)
        let token = String(repeating: "0f", count: 32)
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let phone: [(String, String, [String], EnrollmentRole, String?)] = [
            ("dev-m1", "vvwilhelmus", ["JO11-3", "JO11-5"], EnrollmentRole.manager, Optional("manager@example.com")),
            ("dev-l1", "vvwilhelmus", ["JO13-1"], .member, nil),
            ("dev-l2", "agovv", ["JO10-5"], .member, nil),
        ]
        for (id, tenant, teams, role, email) in phone {
            try await store.upsert(
                Enrollment(
                    deviceID: id, tenantSlug: tenant, teamCodes: teams, role: role, hardwareIdentifier: hardware,
                    apnsToken: token, buildEnvironment: "production", appVersion: "1.4.2", isTestUser: false,
                    status: .active,
                    teamManagerEmail: email, updatedAt: now))
        }
        try await store.close()
        return file
    }

    @Test("By hardware identifier: every enrollment of the phone, one verdict on top")
    func hardwareIdentifier() async throws {
        let db = try await Self.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run([
            "diagnose", "--store", db.path, "--hardware-identifier", Self.hardware, "--apns-env", "sandbox", "--json",
        ])
        #expect(r.status == 1, "\(r.stderr)")
        let j = try r.json()
        #expect((j["verdict"] as? [String: Any])?["code"] as? String == "server-env-override")
        let each = try #require(j["enrollments"] as? [[String: Any]])
        #expect(each.count == 3)
    }

    @Test("By manager e-mail, healthy")
    func email() async throws {
        let db = try await Self.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run(["diagnose", "--store", db.path, "--email", "manager@example.com", "--json"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(try r.json()["verdict"] is NSNull)
    }

    @Test("No match is a clear error")
    func notFound() async throws {
        let db = try await Self.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run(["diagnose", "--store", db.path, "--device-id", "nope"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("No enrollment"))
    }
}
