import Foundation
import KKPushTestSupport
import Testing

/// A row with a role or status kkpush does not know (`coach`, `pending`) is a `row-unreadable` finding naming
/// the row (tenant, device id, hardware identifier, the value), and the audit goes on with the other rows: the
/// same for an SQLite file and a PostgreSQL table.
@Suite("audit: rows with values kkpush does not know")
struct AuditUnknownValuesCLITests {
    static let rows: [BackendShapedSQLite.Row] = [
        .init(device: "dev-1", role: "manager", hardware: "6F1C2A8E-0000-4000-8000-00000000A001", email: "m@x.nl"),
        .init(device: "dev-2", role: "coach", hardware: "6F1C2A8E-0000-4000-8000-00000000A002"),
        .init(tenant: "agovv", device: "dev-3", status: "pending", hardware: "6F1C2A8E-0000-4000-8000-00000000A003"),
    ]

    /// The audit's findings as JSON lines (without the summary), and the summary.
    static func check(_ r: CLIResult) throws {
        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
        let unreadable = lines.filter { $0["finding"] as? String == "row-unreadable" }
        #expect(
            unreadable.map { "\($0["tenant"]!)/\($0["device_id"]!)" }.sorted() == ["agovv/dev-3", "vvwilhelmus/dev-2"])
        let coach = try #require(unreadable.first { $0["device_id"] as? String == "dev-2" })
        #expect(coach["hardware_identifier"] as? String == "6F1C2A8E-0000-4000-8000-00000000A002")
        #expect((coach["message"] as? String)?.contains("role 'coach'") == true)
        let pending = try #require(unreadable.first { $0["device_id"] as? String == "dev-3" })
        #expect((pending["message"] as? String)?.contains("status 'pending'") == true)
        let summary = try #require(lines.last?["summary"] as? [String: Any])
        #expect(summary["scanned"] as? Int == 3)
        #expect(summary["active"] as? Int == 1, "the readable row is audited too")
    }

    @Test("SQLite: row-unreadable for each, the other rows audited, exit 1")
    func sqlite() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await BackendShapedSQLite.make(folder + "/backend.sqlite", rows: Self.rows)
        let r = try await CLI.run(["audit", "--store", folder + "/backend.sqlite", "--json"])
        try Self.check(r)
        let text = try await CLI.run(["audit", "--store", folder + "/backend.sqlite"])
        #expect(text.stdout.contains("vvwilhelmus/dev-2 (hardware 6F1C2A8E-0000-4000-8000-00000000A002)"))
        // A reader that needs every row names the one it cannot read.
        let export = try await CLI.run(["backend", "export", "--db", folder + "/backend.sqlite"])
        #expect(export.status == 2 && export.stderr.contains("agovv/dev-3"), "\(export.stderr)")
    }

    @Test("PostgreSQL: the same rows written by psql give the same findings")
    func postgres() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        let sql =
            BackendShapedSQLite.createTable
            .replacingOccurrences(of: "updated_at TEXT NOT NULL", with: "updated_at timestamptz NOT NULL")
            .replacingOccurrences(of: "team_codes TEXT NOT NULL", with: "team_codes text[] NOT NULL")
            .replacingOccurrences(
                of: "is_test_user INTEGER NOT NULL DEFAULT 0", with: "is_test_user boolean NOT NULL DEFAULT false")
            + Self.rows.map {
                $0.sql.replacingOccurrences(of: "'[\"JO11-3\"]'", with: "ARRAY['JO11-3']")
                    .replacingOccurrences(of: ", 0, '", with: ", false, '")
            }.joined()
        try await server.runSQL(sql, database: database)
        let r = try await CLI.run(["audit", "--store", server.url(database), "--json"])
        try Self.check(r)
    }
}
