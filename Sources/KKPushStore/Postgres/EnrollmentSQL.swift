import CKKPushSystem
import Foundation
import KKPushCore
import KantineKoning

/// The SQL of one mapped table: names quoted once, the select list, the lookups' WHERE clauses, the upsert, and
/// the decoding of a row. Every value is a bound text parameter whose type the server infers from the column it
/// meets (so a uuid, citext or enum column takes it as it is); every column is read as text.
struct EnrollmentSQL: Sendable {
    let mapping: EnrollmentTableMapping
    let table: String
    let selectList: String
    /// The logical columns the table lacks (only those of ``EnrollmentTableMapping/optionalForReading``, for a
    /// read-only store): selected as NULL (read as their defaults), never written.
    let absent: Set<String>
    /// The present columns' types (empty: kkpush's own table, all text).
    let types: [String: PostgresColumnType]

    /// The columns a row of ``selectList`` has, in order: every logical column but `token_updated_at`.
    static let selectedColumns = EnrollmentTableMapping.logicalColumns.filter { $0 != "token_updated_at" }

    init(_ mapping: EnrollmentTableMapping, shape: PostgresTableShape? = nil) {
        self.mapping = mapping
        self.table = mapping.qualifiedTable
        self.absent = shape?.absent ?? []
        let types = shape?.types ?? [:]
        self.types = types
        self.selectList = Self.selectedColumns.map { logical in
            if shape?.absent.contains(logical) == true { return "NULL" }
            let c = mapping.quoted(logical)
            switch logical {
            case "team_codes": return "array_to_json(\(c))::text"
            case "updated_at": return "(extract(epoch from \(c)) * 1000000)::int8"
            default: return types[logical].map { $0.name == "text" } ?? true ? c : "\(c)::text"
            }
        }.joined(separator: ", ")
    }

    /// Whether the table has the logical column.
    func has(_ logical: String) -> Bool { !absent.contains(logical) }

    func col(_ logical: String) -> String { mapping.quoted(logical) }

    /// The column as text (a cast where it is not text, varchar or char: uuid, an enum, citext, whose lower() and
    /// = would otherwise be citext's or need a cast).
    func text(_ logical: String) -> String {
        guard let t = types[logical], !["text", "varchar", "bpchar"].contains(t.name) else { return col(logical) }
        return "\(col(logical))::text"
    }

    var hardwareWhere: String { "lower(\(text("hardware_identifier"))) = lower($1)" }
    var emailWhere: String { "lower(\(text("team_manager_email"))) = lower($1)" }
    var fanOutWhere: String {
        let teams =
            types["team_codes"].map { $0.name == "_text" } ?? true ? col("team_codes") : "\(col("team_codes"))::text[]"
        return "\(col("tenant_slug")) = $1 AND \(text("status")) = 'active' AND \(teams) @> ARRAY[$2]::text[]"
    }

    var orderByTenantDevice: String { "\(col("tenant_slug")) COLLATE \"C\", \(col("device_id")) COLLATE \"C\"" }

    func selectQuery(where clause: String) -> String {
        "SELECT \(selectList) FROM \(table) WHERE \(clause) ORDER BY \(text("tenant_slug")) COLLATE \"C\", \(text("device_id")) COLLATE \"C\""
    }

    /// The ORDER BY of ``EnrollmentStore/forEachEnrollment(orderedBy:tenant:batchSize:_:)``.
    func orderBy(_ order: EnrollmentOrder) -> String {
        let tail = "\(text("device_id")) COLLATE \"C\", \(text("tenant_slug")) COLLATE \"C\""
        switch order {
        case .deviceID: return tail
        case .apnsToken: return "\(text("apns_token")) COLLATE \"C\" NULLS LAST, \(tail)"
        case .hardwareIdentifier: return "lower(\(text("hardware_identifier"))) COLLATE \"C\", \(tail)"
        case .teamManagerEmail: return "lower(\(text("team_manager_email"))) COLLATE \"C\" NULLS LAST, \(tail)"
        }
    }

    func select(where clause: String, _ values: [String], on c: PQConnection) throws -> [Enrollment] {
        let q: String
        if clause.hasSuffix("FOR UPDATE") {
            q = "SELECT \(selectList) FROM \(table) WHERE \(clause)"
        } else {
            q = selectQuery(where: clause)
        }
        return try c.exec(q, values).rows.map(enrollment(from:))
    }

    /// `date` as whole milliseconds since 1970, as a Date (how `token_updated_at` and 410 timestamps compare).
    static func milliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(SQLiteEnrollmentStore.milliseconds(date)) / 1000)
    }

    /// Inserts or replaces one enrollment: the generation never goes down, the token's registration time is kept
    /// if the token is unchanged.
    func write(_ e: Enrollment, on c: PQConnection) throws {
        // In the order of EnrollmentTableMapping.logicalColumns.
        let all: [String: String?] = [
            "device_id": e.deviceID, "tenant_slug": e.tenantSlug, "team_codes": PostgresText.array(e.teamCodes),
            "role": e.role.rawValue, "hardware_identifier": e.hardwareIdentifier, "apns_token": e.apnsToken,
            "build_environment": e.buildEnvironment, "app_version": e.appVersion,
            "is_test_user": e.isTestUser ? "true" : "false", "status": e.status.rawValue,
            "team_manager_email": e.teamManagerEmail, "updated_at": PostgresText.timestamp(e.updatedAt),
            "generation": String(e.generation),
            "token_updated_at": e.apnsToken == nil ? nil : PostgresText.timestamp(Self.milliseconds(e.updatedAt)),
            "aps_environment": e.apsEnvironment,
        ]
        let columns = EnrollmentTableMapping.logicalColumns.filter(has)
        let values = columns.map { all[$0] ?? nil }
        var assignments = columns.filter {
            !["device_id", "tenant_slug", "generation", "token_updated_at"].contains($0)
        }.map { "\(col($0)) = EXCLUDED.\(col($0))" }
        let token = col("apns_token")
        if has("generation") {
            let g = col("generation")
            assignments.append("\(g) = GREATEST(e.\(g), EXCLUDED.\(g))")
        }
        if has("token_updated_at") {
            let tokenTime = col("token_updated_at")
            assignments.append(
                "\(tokenTime) = CASE WHEN e.\(token) IS NOT DISTINCT FROM EXCLUDED.\(token) THEN e.\(tokenTime) ELSE EXCLUDED.\(tokenTime) END"
            )
        }
        let q = """
            INSERT INTO \(table) AS e (\(columns.map(col).joined(separator: ", ")))
            VALUES (\((1...columns.count).map { "$\($0)" }.joined(separator: ", ")))
            ON CONFLICT (\(col("tenant_slug")), \(col("device_id"))) DO UPDATE SET
                \(assignments.joined(separator: ",\n    "))
            """
        try c.exec(q, values)
    }

    /// A row of ``selectList`` as an enrollment; a row that cannot be one throws `store-row-invalid`, naming it.
    func enrollment(from r: [String?]) throws -> Enrollment { try row(from: r).get(table: mapping.tableName) }

    /// A row of ``selectList`` as an enrollment, or as an unreadable row naming what is wrong.
    func row(from r: [String?]) -> EnrollmentRow {
        StoredRow.read(tenant: r[1], deviceID: r[0], hardwareIdentifier: r[4]) { try decode(r) }
    }

    private func decode(_ r: [String?]) throws -> Enrollment {
        let (role, status) = try StoredRow.roleAndStatus(r[3], r[9])
        func required(_ i: Int, _ logical: String) throws -> String {
            guard let v = r[i] else { throw StoredRow.Problem(text: "\(mapping.column(logical)) is NULL") }
            return v
        }
        let teamsJSON = r[2] ?? "[]"
        guard let teams = try? JSONDecoder().decode([String?].self, from: Data(teamsJSON.utf8)) else {
            throw StoredRow.Problem(
                text: "\(mapping.column("team_codes")) \(StoredRow.shown(teamsJSON)) is not an array of text")
        }
        let updated = try required(11, "updated_at")
        guard let micros = Int64(updated) else {
            throw StoredRow.Problem(
                text: "\(mapping.column("updated_at")) \(StoredRow.shown(updated)) is not a timestamp")
        }
        return Enrollment(
            deviceID: try required(0, "device_id"), tenantSlug: try required(1, "tenant_slug"),
            teamCodes: teams.compactMap { $0 }, role: role,
            hardwareIdentifier: try required(4, "hardware_identifier"), apnsToken: r[5],
            buildEnvironment: r[6], apsEnvironment: r[13], appVersion: r[7],
            isTestUser: r[8] == "t" || r[8] == "true", status: status, teamManagerEmail: r[10],
            updatedAt: Date(timeIntervalSince1970: Double(micros) / 1_000_000),
            generation: r[12].flatMap { Int($0) } ?? 1)
    }
}

/// Values in PostgreSQL's text input forms, for bound parameters.
package enum PostgresText {
    /// A text[] literal: `{"a","b"}` (every element quoted, `"` and `\` escaped).
    package static func array(_ values: [String]) -> String {
        "{"
            + values.map { v in
                "\"" + v.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    + "\""
            }.joined(separator: ",") + "}"
    }

    /// A timestamptz in UTC with microseconds: `2027-01-15 08:00:00.123000+00`.
    static func timestamp(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        let fraction = micros - seconds * 1_000_000
        var parts = kk_utc_time()
        _ = kk_utc_time_of(seconds, &parts)
        func pad(_ n: Int32, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        let f = String(fraction)
        return
            "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2)) \(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2)).\(String(repeating: "0", count: 6 - f.count))\(f)+00"
    }
}
