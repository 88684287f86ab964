import Foundation
import KKPushCore
import Logging
import SQLiteNIO

/// The default ``EnrollmentStore``: an SQLite database file (sqlite-nio's vendored SQLite) with one
/// `device_enrollments` table, primary key `(tenant_slug, device_id)`.
///
/// Open it with ``open(path:logger:)`` and ``close()`` it, or use ``withStore(path:logger:_:)``.
/// `team_codes` is stored as a JSON array, `updated_at` as ISO 8601 text, `is_test_user` as 0/1.
///
/// The connection is closed exactly once: ``close()`` waits for the queries in flight, and a second
/// `close()` does nothing. (sqlite-nio's `SQLiteConnection.close()` is not idempotent: a second call
/// hands SQLite the connection's cleared handle, which release builds dereference, without SQLite's API
/// armor, and crash on.) A query after `close()` throws `store-closed`.
public actor SQLiteEnrollmentStore: EnrollmentStore {
    private let connection: SQLiteConnection
    private let logger: Logger
    /// Set by the first ``close()``; no query starts after it.
    private var isClosed = false
    /// Queries started and not yet finished.
    private var queriesInFlight = 0
    /// A ``close()`` waiting for the queries in flight.
    private var waitingToClose: [CheckedContinuation<Void, Never>] = []
    /// The database file.
    public nonisolated let path: String

    private init(connection: SQLiteConnection, path: String, logger: Logger) {
        self.connection = connection
        self.path = path
        self.logger = logger
    }

    /// Opens (creating if needed) the database at `path`. Throws `store-open-failed` naming the file.
    public static func open(
        path: String, logger: Logger = Logger(label: "kkpush.backend.store", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> SQLiteEnrollmentStore {
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        } catch {
            throw KKPushError(code: "store-open-failed", message: "Cannot open the enrollment database '\(path)'.",
                fix: "Check that the directory exists and is writable, and that the file is an SQLite database.",
                underlying: "\(error)")
        }
        let store = SQLiteEnrollmentStore(connection: connection, path: path, logger: logger)
        do {
            try await store.migrate()
        } catch {
            try? await connection.close()
            throw KKPushError(code: "store-open-failed",
                message: "'\(path)' is not a usable enrollment database.",
                fix: "Give a new file name, or a database kkpush created.", underlying: "\(error)")
        }
        return store
    }

    /// Opens the store at `path`, runs `body`, and closes the store whatever happens.
    public static func withStore<T: Sendable>(
        path: String, logger: Logger = Logger(label: "kkpush.backend.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (SQLiteEnrollmentStore) async throws -> T
    ) async throws -> T {
        let store = try await open(path: path, logger: logger)
        do {
            let result = try await body(store)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Closes the database, after the queries in flight; later calls do nothing, later queries throw
    /// `store-closed`.
    public func close() async throws {
        guard !isClosed else { return }
        isClosed = true
        if queriesInFlight > 0 {
            await withCheckedContinuation { waitingToClose.append($0) }
        }
        try await connection.close()
    }

    private func migrate() async throws {
        _ = try await connection.query("""
            CREATE TABLE IF NOT EXISTS device_enrollments (
                tenant_slug TEXT NOT NULL,
                device_id TEXT NOT NULL,
                team_codes TEXT NOT NULL,
                role TEXT NOT NULL CHECK (role IN ('manager', 'member')),
                hardware_identifier TEXT NOT NULL,
                apns_token TEXT,
                build_environment TEXT,
                app_version TEXT,
                is_test_user INTEGER NOT NULL DEFAULT 0,
                status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
                team_manager_email TEXT,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (tenant_slug, device_id)
            )
            """)
        _ = try await connection.query(
            "CREATE INDEX IF NOT EXISTS device_enrollments_hardware ON device_enrollments (hardware_identifier COLLATE NOCASE)")
        _ = try await connection.query(
            "CREATE INDEX IF NOT EXISTS device_enrollments_token ON device_enrollments (apns_token)")
    }

    private static let columns =
        "tenant_slug, device_id, team_codes, role, hardware_identifier, apns_token, build_environment, app_version, is_test_user, status, team_manager_email, updated_at"

    /// Inserts or replaces the enrollment with the same tenant and device id.
    public func upsert(_ e: Enrollment) async throws {
        let teams = String(decoding: try JSONEncoder().encode(e.teamCodes), as: UTF8.self)
        _ = try await run(
            "INSERT OR REPLACE INTO device_enrollments (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(e.tenantSlug), .text(e.deviceID), .text(teams), .text(e.role.rawValue), .text(e.hardwareIdentifier),
                optional(e.apnsToken), optional(e.buildEnvironment), optional(e.appVersion), .integer(e.isTestUser ? 1 : 0),
                .text(e.status.rawValue), optional(e.teamManagerEmail), .text(Enrollment.formatDate(e.updatedAt)),
            ])
    }

    /// The enrollment `deviceID` of `tenant`, if any.
    public func get(deviceID: String, tenant: String) async throws -> Enrollment? {
        try await select("WHERE tenant_slug = ? AND device_id = ?", [.text(tenant), .text(deviceID)]).first
    }

    /// Every enrollment of the phone with this vendor UUID (any case).
    public func find(hardwareIdentifier: String) async throws -> [Enrollment] {
        try await select("WHERE hardware_identifier = ? COLLATE NOCASE", [.text(hardwareIdentifier)])
    }

    /// Every enrollment with this manager e-mail (any case).
    public func find(teamManagerEmail: String) async throws -> [Enrollment] {
        try await select("WHERE team_manager_email = ? COLLATE NOCASE", [.text(teamManagerEmail)])
    }

    /// Every enrollment holding this APNs token.
    public func find(apnsToken: String) async throws -> [Enrollment] {
        try await select("WHERE apns_token = ?", [.text(apnsToken)])
    }

    /// The active enrollments of `tenant` that follow `team`.
    public func activeEnrollments(tenant: String, team: String) async throws -> [Enrollment] {
        try await select(
            "WHERE status = 'active' AND tenant_slug = ? AND EXISTS (SELECT 1 FROM json_each(device_enrollments.team_codes) WHERE json_each.value = ?)",
            [.text(tenant), .text(team)])
    }

    /// Replaces the enrollment's token, build environment and app version.
    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, appVersion: String, at: Date
    ) async throws -> Enrollment {
        _ = try await run(
            "UPDATE device_enrollments SET apns_token = ?, build_environment = ?, app_version = ?, updated_at = ? WHERE tenant_slug = ? AND device_id = ?",
            [.text(token), .text(buildEnvironment), .text(appVersion), .text(Enrollment.formatDate(at)), .text(tenant), .text(deviceID)])
        guard let updated = try await get(deviceID: deviceID, tenant: tenant) else {
            throw enrollmentNotFound(deviceID, tenant)
        }
        return updated
    }

    /// Clears `token` from every enrollment holding it; returns how many changed.
    @discardableResult
    public func clearToken(_ token: String, at: Date) async throws -> Int {
        let holders = try await find(apnsToken: token)
        _ = try await run(
            "UPDATE device_enrollments SET apns_token = NULL, updated_at = ? WHERE apns_token = ?",
            [.text(Enrollment.formatDate(at)), .text(token)])
        return holders.count
    }

    /// Marks the enrollment revoked.
    public func revoke(deviceID: String, tenant: String, at: Date) async throws {
        guard try await get(deviceID: deviceID, tenant: tenant) != nil else { throw enrollmentNotFound(deviceID, tenant) }
        _ = try await run(
            "UPDATE device_enrollments SET status = 'revoked', updated_at = ? WHERE tenant_slug = ? AND device_id = ?",
            [.text(Enrollment.formatDate(at)), .text(tenant), .text(deviceID)])
    }

    /// Every enrollment, ordered by tenant and device id.
    public func all() async throws -> [Enrollment] { try await select("", []) }

    // MARK: - Rows

    private func select(_ clause: String, _ binds: [SQLiteData]) async throws -> [Enrollment] {
        let rows = try await run(
            "SELECT \(Self.columns) FROM device_enrollments \(clause) ORDER BY tenant_slug, device_id", binds)
        return try rows.map(Self.enrollment(from:))
    }

    private func run(_ sql: String, _ binds: [SQLiteData]) async throws -> [SQLiteRow] {
        guard !isClosed else {
            throw KKPushError(code: "store-closed", message: "The enrollment database '\(path)' is already closed.",
                fix: "Open the store again (SQLiteEnrollmentStore.open) for more queries.")
        }
        queriesInFlight += 1
        defer {
            queriesInFlight -= 1
            if queriesInFlight == 0 {
                for waiting in waitingToClose { waiting.resume() }
                waitingToClose.removeAll()
            }
        }
        do {
            return try await connection.query(sql, binds)
        } catch {
            throw KKPushError(code: "store-query-failed", message: "The enrollment database '\(path)' failed a query.",
                fix: "Check that the file is not corrupt or locked by another process.", underlying: "\(error)")
        }
    }

    private func optional(_ s: String?) -> SQLiteData { s.map(SQLiteData.text) ?? .null }

    private static func enrollment(from row: SQLiteRow) throws -> Enrollment {
        func text(_ name: String) throws -> String {
            guard let v = row.column(name)?.string else {
                throw KKPushError(code: "store-row-invalid", message: "A device_enrollments row has no \(name).")
            }
            return v
        }
        func optionalText(_ name: String) -> String? {
            guard let d = row.column(name), !d.isNull else { return nil }
            return d.string
        }
        let teams = try JSONDecoder().decode([String].self, from: Data(try text("team_codes").utf8))
        guard let role = EnrollmentRole(rawValue: try text("role")),
            let status = EnrollmentStatus(rawValue: try text("status")),
            let updated = Enrollment.parseDate(try text("updated_at"))
        else {
            throw KKPushError(code: "store-row-invalid", message: "A device_enrollments row has an invalid role, status or updated_at.")
        }
        return Enrollment(
            deviceID: try text("device_id"), tenantSlug: try text("tenant_slug"), teamCodes: teams, role: role,
            hardwareIdentifier: try text("hardware_identifier"), apnsToken: optionalText("apns_token"),
            buildEnvironment: optionalText("build_environment"), appVersion: optionalText("app_version"),
            isTestUser: row.column("is_test_user")?.bool ?? false, status: status,
            teamManagerEmail: optionalText("team_manager_email"), updatedAt: updated)
    }
}
