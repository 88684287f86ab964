import Foundation
import KKPushTestSupport
import Testing

/// `audit --tenant SLUG` of a tenant the store has no enrollment of (a misspelt slug) is an error naming the slug
/// and the nearest tenants the store has (exit 2, `tenant-unknown`), never "Audited 0 enrollments … No findings".
@Suite("audit --tenant of a tenant the store does not have")
struct AuditTenantCLITests {
    static func makeStore(_ folder: String) async throws -> String {
        let db = folder + "/backend.sqlite"
        try await BackendShapedSQLite.make(
            db,
            rows: [
                .init(
                    device: "dev-1", hardware: "6F1C2A8E-0000-4000-8000-00000000A001",
                    token: String(repeating: "1a", count: 32)),
                .init(
                    tenant: "agovv", device: "dev-2", hardware: "6F1C2A8E-0000-4000-8000-00000000A002",
                    token: String(repeating: "2b", count: 32)),
                .init(
                    tenant: "vvwilhelmina", device: "dev-3", hardware: "6F1C2A8E-0000-4000-8000-00000000A003",
                    token: String(repeating: "3c", count: 32)),
            ])
        return db
    }

    @Test("A misspelt slug: exit 2 naming it and the nearest tenants; a known one still audits")
    func misspelt() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = try await Self.makeStore(folder)
        let r = try await CLI.run(["audit", "--store", db, "--tenant", "vvwilhelmsu"])
        #expect(r.status == 2, "\(r.stdout) \(r.stderr)")
        #expect(!r.stdout.contains("Audited 0"), "\(r.stdout)")
        #expect(r.stderr.contains("'vvwilhelmsu'"), "\(r.stderr)")
        #expect(r.stderr.contains("nearest of its 3 tenants: vvwilhelmus, vvwilhelmina"), "\(r.stderr)")
        #expect(r.stderr.contains("--tenant vvwilhelmus?"), "\(r.stderr)")

        let json = try await CLI.run(["audit", "--store", db, "--tenant", "vvwilhelmsu", "--json"])
        #expect(json.status == 2)
        let error = try #require(try json.json()["error"] as? [String: Any], "\(json.stdout)")
        #expect(error["code"] as? String == "tenant-unknown")

        let known = try await CLI.run(["audit", "--store", db, "--tenant", "agovv"])
        #expect(known.status == 0, "\(known.stderr)")
        #expect(known.stdout.contains("Audited 1 enrollments of tenant agovv"), "\(known.stdout)")
    }
}
