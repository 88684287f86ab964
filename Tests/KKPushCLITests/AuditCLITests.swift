import Foundation
import KKPushTestSupport
import Testing

/// `kkpush audit`: a planted fleet in an SQLite store written by `kkpush backend import`, and in a PostgreSQL
/// table shaped like the real backend's (its columns only, some of other types) written by psql.
@Suite("kkpush audit")
struct AuditCLITests {
    struct Row {
        var tenant: String
        var device: String
        var teams: [String]
        var hardware: String
        var token: String?
        var build: String?
        var testUser = false
        var status = "active"
    }

    static func token(_ n: Int) -> String { String(format: "%064x", n) }
    static func hw(_ n: Int) -> String { String(format: "6F1C2A8E-0000-4000-8000-%012X", n) }

    /// 40 healthy rows (one phone in two tenants, development and production builds, revoked ones without a
    /// token), then one or two of each finding. `expected`: code → device ids.
    static let fleet: (rows: [Row], expected: [String: Set<String>]) = {
        var rows: [Row] = []
        for i in 0..<40 {
            let tenant = i % 2 == 0 ? "vvwilhelmus" : "agovv"
            rows.append(
                Row(
                    tenant: tenant, device: "ok-\(i)", teams: ["JO11-\(i % 4)"], hardware: hw(100 + i / 2 * 2),
                    token: i % 10 == 9 ? nil : token(100 + i / 2 * 2), build: i % 3 == 0 ? "development" : "production",
                    status: i % 10 == 9 ? "revoked" : "active"))
        }
        // i / 2 * 2: rows 2k and 2k+1 are one phone in both tenants, one token (same build for both? no: fix below)
        for k in stride(from: 0, to: 40, by: 2) { rows[k + 1].build = rows[k].build }
        let planted: [(Row, String)] = [
            (
                Row(
                    tenant: "vvwilhelmus", device: "shared-1", teams: ["A"], hardware: hw(1), token: token(1),
                    build: "production"), "token-shared"
            ),
            (
                Row(
                    tenant: "agovv", device: "shared-2", teams: ["A"], hardware: hw(2), token: token(1),
                    build: "production"), "token-shared"
            ),
            (
                Row(
                    tenant: "agovv", device: "revoked-tok", teams: ["A"], hardware: hw(3), token: token(3),
                    build: "production", status: "revoked"), "revoked-with-token"
            ),
            (
                Row(tenant: "agovv", device: "no-token", teams: ["A"], hardware: hw(4), token: nil, build: nil),
                "token-missing"
            ),
            (
                Row(
                    tenant: "agovv", device: "tester", teams: ["A"], hardware: hw(5), token: token(5),
                    build: "production", testUser: true), "test-user-production-build"
            ),
            (
                Row(
                    tenant: "agovv", device: "testing", teams: ["A"], hardware: hw(6), token: token(6), build: "testing"
                ), "build-environment-testing"
            ),
            (
                Row(
                    tenant: "agovv", device: "staging", teams: ["A"], hardware: hw(7), token: token(7), build: "staging"
                ), "build-environment-unknown"
            ),
            (
                Row(
                    tenant: "vvwilhelmus", device: "switch-1", teams: ["A"], hardware: hw(8), token: token(8),
                    build: "development"), "build-environment-disagree"
            ),
            (
                Row(
                    tenant: "agovv", device: "switch-2", teams: ["B"], hardware: hw(8), token: token(8),
                    build: "production"), "build-environment-disagree"
            ),
            (
                Row(
                    tenant: "vvwilhelmus", device: "teams-1", teams: ["A", "B", "C"], hardware: hw(9), token: token(9),
                    build: "production"), "too-many-teams"
            ),
            (
                Row(
                    tenant: "agovv", device: "teams-2", teams: ["A", "D", "E"], hardware: hw(9), token: token(9),
                    build: "production"), "too-many-teams"
            ),
        ]
        var expected: [String: Set<String>] = [:]
        for (row, code) in planted {
            rows.append(row)
            expected[code, default: []].insert(row.device)
        }
        return (rows, expected)
    }()

    static func exportJSON(_ rows: [Row]) throws -> Data {
        let objects: [[String: Any]] = rows.map { r in
            [
                "device_id": r.device, "tenant_slug": r.tenant, "team_codes": r.teams, "role": "member",
                "hardware_identifier": r.hardware, "apns_token": r.token ?? NSNull(),
                "build_environment": r.build ?? NSNull(), "app_version": "1.4.2", "is_test_user": r.testUser,
                "status": r.status, "team_manager_email": NSNull(), "updated_at": "2027-01-15T09:30:00Z",
            ]
        }
        return try JSONSerialization.data(withJSONObject: objects)
    }

    /// The finding lines of `--json` output, by code → device ids; and the summary.
    static func parse(_ stdout: String) throws -> (found: [String: Set<String>], lines: Int, summary: [String: Any]) {
        var found: [String: Set<String>] = [:]
        var summary: [String: Any] = [:]
        var count = 0
        for line in stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let s = object["summary"] as? [String: Any] {
                summary = s
                continue
            }
            count += 1
            let code = try #require(object["finding"] as? String)
            found[code, default: []].insert(try #require(object["device_id"] as? String))
            #expect(object.keys.count == 8)
        }
        return (found, count, summary)
    }

    /// An SQLite store of `rows` (default: the planted fleet), written by `kkpush backend import`.
    static func makeSQLite(_ rows: [Row] = fleet.rows) async throws -> (db: String, dir: URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-audit-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("fleet.json")
        try exportJSON(rows).write(to: file)
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let r = try await CLI.run(["backend", "import", file.path, "--db", db])
        #expect(r.status == 0, "\(r.stderr)")
        return (db, dir)
    }

    @Test("SQLite: every planted finding counted on the enrollments it names, nothing on healthy rows; exit 1")
    func sqliteFleet() async throws {
        let (db, dir) = try await Self.makeSQLite()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try await CLI.run(["audit", "--store", db, "--json", "--ignore-process-env", "--batch-size", "7"])
        #expect(r.status == 1, "\(r.stderr)")
        let (found, lines, summary) = try Self.parse(r.stdout)
        #expect(found == Self.fleet.expected)
        #expect(lines == Self.fleet.expected.values.map(\.count).reduce(0, +))
        #expect(summary["scanned"] as? Int == Self.fleet.rows.count)
        let byFinding = try #require(summary["by_finding"] as? [String: [String: Any]])
        #expect(byFinding["token-shared"]?["count"] as? Int == 2)
        #expect(!r.stdout.contains(Self.token(1)), "never a whole token")

        // Only warnings asked for: exit 0.
        let warnings = try await CLI.run([
            "audit", "--store", db, "--json", "--ignore-process-env", "--finding", "revoked-with-token", "--finding",
            "too-many-teams",
        ])
        #expect(warnings.status == 0, "\(warnings.stderr)")
        #expect(try Self.parse(warnings.stdout).found.keys.sorted() == ["revoked-with-token", "too-many-teams"])

        // --tenant: that tenant's side of the cross-tenant findings.
        let tenant = try await CLI.run([
            "audit", "--store", db, "--json", "--ignore-process-env", "--tenant", "vvwilhelmus",
        ])
        let t = try Self.parse(tenant.stdout)
        #expect(
            t.found == [
                "token-shared": ["shared-1"], "build-environment-disagree": ["switch-1"], "too-many-teams": ["teams-1"],
            ])

        // The server's override: every development build misrouted.
        let forced = try await CLI.run([
            "audit", "--store", db, "--json", "--ignore-process-env", "--apns-force-env", "production", "--finding",
            "server-env-override",
        ])
        let f = try Self.parse(forced.stdout)
        let developmentActive = Self.fleet.rows.filter {
            $0.status == "active" && $0.token != nil && $0.build == "development"
        }
        #expect(f.found["server-env-override"] == Set(developmentActive.map(\.device)))
        let routing = try #require(f.summary["routing"] as? [[String: Any]])
        #expect(
            routing.contains { $0["misrouted"] as? Bool == true && $0["decided_by"] as? String == "APNS_FORCE_ENV" })
    }

    @Test("SQLite: the text report, and the errors: no store, a bad flag")
    func textAndErrors() async throws {
        let (db, dir) = try await Self.makeSQLite()
        defer { try? FileManager.default.removeItem(at: dir) }
        let text = try await CLI.run(["audit", "--store", db, "--ignore-process-env", "--examples", "1"])
        #expect(text.status == 1)
        #expect(text.stdout.contains("token-shared"))
        #expect(text.stdout.contains("By tenant:"))
        #expect(text.stdout.contains("Where the server sends"))
        #expect(text.stdout.contains("Audited \(Self.fleet.rows.count) enrollments"))

        let missing = try await CLI.run(["audit", "--store", dir.appendingPathComponent("nope.sqlite").path])
        #expect(missing.status == 2, "\(missing.stderr)")
        let bad = try await CLI.run(["audit", "--store", db, "--finding", "nope"])
        #expect(bad.status == 64)
        let none = try await CLI.run(["audit"])
        #expect(none.status == 64, "\(none.stderr)")
        let progress = try await CLI.run(["audit", "--store", db, "--json", "--progress", "--ignore-process-env"])
        #expect(progress.stderr.contains("rows/s"))
    }

    /// The real backend's table: its columns only (no generation, token_updated_at, aps_environment), some of
    /// other types (varchar, timestamp without time zone).
    static let realTable = """
        CREATE TABLE device_enrollments (
            device_id varchar(64) NOT NULL, tenant_slug varchar(64) NOT NULL, team_codes text[] NOT NULL DEFAULT '{}',
            role varchar(16) NOT NULL, hardware_identifier text NOT NULL, apns_token text, build_environment text,
            app_version text, is_test_user boolean NOT NULL DEFAULT false, status varchar(16) NOT NULL DEFAULT 'active',
            team_manager_email text, inserted_at timestamp(0) NOT NULL, updated_at timestamp(0) NOT NULL,
            PRIMARY KEY (tenant_slug, device_id));
        """

    static func sqlLiteral(_ s: String?) -> String {
        guard let s else { return "NULL" }
        return "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static func insertSQL(_ rows: [Row]) -> String {
        let values = rows.map { r in
            "(\(sqlLiteral(r.device)), \(sqlLiteral(r.tenant)), ARRAY[\(r.teams.map { sqlLiteral($0) }.joined(separator: ","))]::text[], 'member', \(sqlLiteral(r.hardware)), \(sqlLiteral(r.token)), \(sqlLiteral(r.build)), '1.4.2', \(r.testUser), \(sqlLiteral(r.status)), NULL, '2027-01-01 10:00:00', '2027-01-15 09:30:00')"
        }
        return "INSERT INTO device_enrollments VALUES\n" + values.joined(separator: ",\n") + ";"
    }

    static let checksum =
        "SELECT md5(string_agg(t::text, ',' ORDER BY device_id)) FROM device_enrollments t;"

    @Test("PostgreSQL: a real-shaped table written by psql; every finding counted, nothing written")
    func postgresFleet() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase()
        try await server.runSQL(Self.realTable + Self.insertSQL(Self.fleet.rows), database: database)
        let before = try await server.runSQL(Self.checksum, database: database)
        let url = server.url(database)
        let r = try await CLI.run(["audit", "--store", url, "--json", "--ignore-process-env", "--batch-size", "5"])
        #expect(r.status == 1, "\(r.stdout.suffix(2000)) \(r.stderr)")
        let (found, _, summary) = try Self.parse(r.stdout)
        #expect(found == Self.fleet.expected)
        #expect(summary["scanned"] as? Int == Self.fleet.rows.count)
        // Through DATABASE_URL, text.
        let text = try await CLI.run(["audit", "--ignore-process-env"], environment: ["DATABASE_URL": url])
        #expect(text.status == 1, "\(text.stderr)")
        #expect(text.stdout.contains("too-many-teams"))
        let after = try await server.runSQL(Self.checksum, database: database)
        #expect(before == after, "nothing written")
    }
}
