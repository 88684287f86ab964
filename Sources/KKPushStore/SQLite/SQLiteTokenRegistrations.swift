import Foundation
import KKPushCore

/// ``TokenRegistrations`` on an SQLite file: kkpush's `device_enrollments` (`token_updated_at` in milliseconds,
/// `updated_at` ISO 8601 text).
enum SQLiteTokenRegistrations {
    /// The registration time in milliseconds: `token_updated_at`, else `updated_at`'s whole seconds (NULL when
    /// neither holds a time SQLite can read: such a row is never cleared).
    static func registered(_ hasTokenTime: Bool) -> String {
        let updated = "CAST(strftime('%s', updated_at) AS INTEGER) * 1000"
        return hasTokenTime ? "COALESCE(token_updated_at, \(updated))" : updated
    }

    static func setClause(_ hasTokenTime: Bool) -> String {
        hasTokenTime ? "apns_token = NULL, token_updated_at = NULL" : "apns_token = NULL"
    }

    static func milliseconds(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Whether the table has `token_updated_at`; `store-not-migrated` when there is no table with the columns a
    /// prune needs.
    static func hasTokenTime(_ c: SQLiteConnection, path: String) async throws -> Bool {
        let present = try await SQLiteEnrollmentStore.columns(
            of: c, path: path, required: ["tenant_slug", "device_id", "apns_token", "status", "updated_at"])
        return present.contains("token_updated_at")
    }

    static func open(_ path: String, readOnly: Bool) async throws -> SQLiteConnection {
        do {
            return try await SQLiteConnection.open(path: path, readOnly: readOnly)
        } catch {
            throw KKPushError(
                code: .storeOpenFailed,
                message: "Cannot open the enrollment database '\(path)': \(ErrorWords.describe(error)).",
                fix:
                    "Check that the file exists, is readable (and, to clear tokens, writable) by this user, and is an SQLite database.",
                underlying: error)
        }
    }

    static func forEach(
        path: String, batchSize: Int, _ body: @Sendable ([RegisteredToken]) async throws -> Void
    ) async throws -> Bool {
        let c = try await open(path, readOnly: true)
        do {
            let has = try await hasTokenTime(c, path: path)
            let column =
                has
                ? "CASE WHEN token_updated_at IS NOT NULL THEN 'token_updated_at' ELSE 'updated_at' END"
                : "'updated_at'"
            var after: (String, String)? = nil
            while true {
                // A row value: the primary key's index serves it.
                let keyset = after == nil ? "" : "AND (tenant_slug, device_id) > (?, ?)"
                let binds: [SQLiteValue] = after.map { [.text($0.0), .text($0.1)] } ?? []
                let rows = try await c.query(
                    """
                    SELECT tenant_slug, device_id, apns_token, status, \(registered(has)) AS registered, \(column) AS registered_column
                    FROM device_enrollments WHERE apns_token IS NOT NULL \(keyset)
                    ORDER BY tenant_slug, device_id LIMIT \(max(1, batchSize))
                    """, binds)
                if rows.isEmpty { break }
                let batch = rows.map { r in
                    RegisteredToken(
                        tenantSlug: r.column("tenant_slug")?.string ?? "",
                        deviceID: r.column("device_id")?.string ?? "",
                        token: r.column("apns_token")?.string ?? "", status: r.column("status")?.string ?? "",
                        registeredAt: r.column("registered")?.integer.map {
                            Date(timeIntervalSince1970: Double($0) / 1000)
                        },
                        registeredColumn: r.column("registered_column")?.string ?? "updated_at")
                }
                try await body(batch)
                after = (batch[batch.count - 1].tenantSlug, batch[batch.count - 1].deviceID)
                if rows.count < max(1, batchSize) { break }
            }
            await c.close()
            return has
        } catch {
            await c.close()
            throw error
        }
    }

    static func clear(_ clears: [GuardedTokenClear], path: String) async throws -> GuardedClearReport {
        // Never created here: a missing file is an error, not an empty store.
        guard FileManager.default.fileExists(atPath: path) else {
            throw KKPushError(
                code: .storeOpenFailed,
                message: "Cannot open the enrollment database '\(path)': there is no such file.",
                fix: "Give the enrollment database the backend writes.")
        }
        let c = try await open(path, readOnly: false)
        var report = GuardedClearReport()
        do {
            let has = try await hasTokenTime(c, path: path)
            _ = try await c.query("BEGIN IMMEDIATE")
            do {
                for clear in clears {
                    let cutoff = milliseconds(clear.registeredBefore)
                    let changed = try await c.query(
                        "UPDATE device_enrollments SET \(setClause(has)) WHERE tenant_slug = ? AND device_id = ? AND apns_token = ? AND \(registered(has)) < ? RETURNING device_id",
                        [.text(clear.tenantSlug), .text(clear.deviceID), .text(clear.token), .integer(cutoff)])
                    if !changed.isEmpty {
                        report.cleared.append(clear)
                        continue
                    }
                    let now = try await c.query(
                        "SELECT apns_token, \(registered(has)) AS registered FROM device_enrollments WHERE tenant_slug = ? AND device_id = ?",
                        [.text(clear.tenantSlug), .text(clear.deviceID)])
                    guard let row = now.first else {
                        report.skipped.append((clear, .gone))
                        continue
                    }
                    if row.column("apns_token")?.string != clear.token {
                        report.skipped.append((clear, .tokenChanged))
                    } else {
                        let at = row.column("registered")?.integer.map {
                            Date(timeIntervalSince1970: Double($0) / 1000)
                        }
                        report.skipped.append((clear, .reRegistered(at)))
                    }
                }
                _ = try await c.query("COMMIT")
            } catch {
                _ = try? await c.query("ROLLBACK")
                throw error
            }
            await c.close()
            return report
        } catch let error as KKPushError {
            await c.close()
            throw error
        } catch {
            await c.close()
            throw KKPushError(
                code: .storeQueryFailed,
                message: "Clearing tokens in '\(path)' failed: \(ErrorWords.describe(error)). Nothing was changed.",
                fix: "Check that the file is writable and not locked by another writer for long, then run it again.",
                underlying: error)
        }
    }
}
