import Foundation
import KKPushCore

/// ``TokenRegistrations`` on PostgreSQL: kkpush's table or the real backend's, mapped. The table is checked as a
/// read-only store checks it (only the columns the app's README names are needed); the clears run on one
/// read-write connection, in one transaction, and touch `apns_token` (and `token_updated_at` where the table has
/// it) only.
enum PostgresTokenRegistrations {
    /// The quoted names a prune uses.
    struct Columns {
        let mapping: EnrollmentTableMapping
        let hasTokenTime: Bool

        func col(_ logical: String) -> String { mapping.quoted(logical) }

        /// The registration time: `token_updated_at`, else `updated_at`.
        var registered: String {
            hasTokenTime ? "COALESCE(\(col("token_updated_at")), \(col("updated_at")))" : col("updated_at")
        }

        var registeredColumn: String {
            hasTokenTime
                ? "CASE WHEN \(col("token_updated_at")) IS NOT NULL THEN 'token_updated_at' ELSE 'updated_at' END"
                : "'updated_at'"
        }

        var setClause: String {
            hasTokenTime
                ? "\(col("apns_token")) = NULL, \(col("token_updated_at")) = NULL" : "\(col("apns_token")) = NULL"
        }

        /// The registration time as whole milliseconds since 1970, rounded down.
        var registeredMilliseconds: String { "floor(extract(epoch from \(registered)) * 1000)::int8" }
    }

    /// Connects and checks the table (as a read-only store would); `body` runs on the connection's queue.
    static func withChecked<T: Sendable>(
        url: PostgresURL, mapping: EnrollmentTableMapping, readOnly: Bool,
        _ body: @escaping @Sendable (PQConnection, EnrollmentSQL, Columns) throws -> T
    ) async throws -> T {
        let c = try await PQConnection.connectAlone(url: url, readOnly: readOnly)
        defer { c.close() }
        do {
            return try await c.run { c in
                let shape = try PostgresSchemaCheck.check(c, url: url, mapping: mapping, readOnly: true)
                let sql = EnrollmentSQL(mapping, shape: shape)
                return try body(c, sql, Columns(mapping: mapping, hasTokenTime: sql.has("token_updated_at")))
            }
        } catch {
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }

    static func forEach(
        url: PostgresURL, mapping: EnrollmentTableMapping, batchSize: Int,
        _ body: @Sendable ([RegisteredToken]) async throws -> Void
    ) async throws -> Bool {
        let size = max(1, batchSize)
        var after: (String, String)? = nil
        var has = false
        while true {
            let key = after
            let (rows, tokenTime) = try await withChecked(url: url, mapping: mapping, readOnly: true) { c, sql, cols in
                let tenant = "\(sql.text("tenant_slug")) COLLATE \"C\""
                let device = "\(sql.text("device_id")) COLLATE \"C\""
                let keyset = key == nil ? "" : " AND (\(tenant) > $1 OR (\(tenant) = $1 AND \(device) > $2))"
                let q = """
                    SELECT \(sql.text("tenant_slug")), \(sql.text("device_id")), \(sql.text("apns_token")),
                        \(sql.text("status")), \(cols.registeredMilliseconds), \(cols.registeredColumn)
                    FROM \(sql.table) WHERE \(cols.col("apns_token")) IS NOT NULL\(keyset)
                    ORDER BY \(tenant), \(device) LIMIT \(size)
                    """
                let rows = try c.exec(q, key.map { [$0.0, $0.1] } ?? []).rows
                return (rows, cols.hasTokenTime)
            }
            has = tokenTime
            if rows.isEmpty { break }
            let batch = rows.map { r in
                RegisteredToken(
                    tenantSlug: r[0] ?? "", deviceID: r[1] ?? "", token: r[2] ?? "", status: r[3] ?? "",
                    registeredAt: r[4].flatMap { Int64($0) }.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                    registeredColumn: r[5] ?? "updated_at")
            }
            try await body(batch)
            after = (batch[batch.count - 1].tenantSlug, batch[batch.count - 1].deviceID)
            if rows.count < size { break }
        }
        return has
    }

    static func clear(_ clears: [GuardedTokenClear], url: PostgresURL, mapping: EnrollmentTableMapping) async throws
        -> GuardedClearReport
    {
        try await withChecked(url: url, mapping: mapping, readOnly: false) { c, sql, cols in
            var report = GuardedClearReport()
            try c.exec("BEGIN")
            do {
                let key = "\(cols.col("tenant_slug")) = $1 AND \(cols.col("device_id")) = $2"
                for clear in clears {
                    let changed = try c.exec(
                        "UPDATE \(sql.table) SET \(cols.setClause) WHERE \(key) AND \(cols.col("apns_token")) = $3 AND \(cols.registered) < $4",
                        [clear.tenantSlug, clear.deviceID, clear.token, PostgresText.timestamp(clear.registeredBefore)]
                    ).affected
                    if changed > 0 {
                        report.cleared.append(clear)
                        continue
                    }
                    let now = try c.exec(
                        "SELECT \(sql.text("apns_token")), \(cols.registeredMilliseconds) FROM \(sql.table) WHERE \(key)",
                        [clear.tenantSlug, clear.deviceID]
                    ).rows
                    guard let row = now.first else {
                        report.skipped.append((clear, .gone))
                        continue
                    }
                    if row[0] != clear.token {
                        report.skipped.append((clear, .tokenChanged))
                    } else {
                        let at = row[1].flatMap { Int64($0) }.map { Date(timeIntervalSince1970: Double($0) / 1000) }
                        report.skipped.append((clear, .reRegistered(at)))
                    }
                }
                try c.exec("COMMIT")
            } catch {
                _ = try? c.exec("ROLLBACK")
                throw error
            }
            return report
        }
    }
}
