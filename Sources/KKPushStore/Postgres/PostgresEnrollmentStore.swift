public import Foundation
public import KKPushCore
public import KantineKoning
public import Logging
import Synchronization

/// The ``EnrollmentStore`` on PostgreSQL (the real backend's database), through libpq (``PQPool``): the same
/// semantics as ``SQLiteEnrollmentStore`` (generations never go down, the token's registration time, an import
/// in one transaction, compare-and-clear of a 410), on kkpush's table `public.device_enrollments`
/// (``PostgresEnrollmentStore/migrate(url:logger:)`` creates it) or on the real backend's table mapped by an
/// ``EnrollmentTableMapping``.
///
/// Every value is a bound parameter (`PQexecParams`); table and column names come from the mapping,
/// double-quoted. Dates are `timestamptz` (or `timestamp`, read as UTC); `token_updated_at` and a 410's timestamp
/// are compared in whole milliseconds, as in SQLite.
///
/// A read-only store (`diagnose --store`, `token verify --db`, `backend export`) opens every connection with
/// `default_transaction_read_only = on`, so the server refuses any write (`store-read-only`), whatever runs on
/// it. It also opens a table without kkpush's own columns (``EnrollmentTableMapping/optionalForReading``: the
/// real backend's table), reading `generation` as 1, `aps_environment` as nil and the token's age as unknown;
/// ``missingColumns`` says which were absent. A store that writes needs them (`backend migrate` adds them to
/// kkpush's table).
///
/// The pool reconnects by itself after the server restarts. A request waits for a pooled connection at most the
/// connection string's `connect_timeout` (5 s by default), then opens one of its own, failing with
/// `store-unreachable` naming where and libpq's reason; a read whose connection was lost in the middle is tried
/// once more on a new connection.
public final class PostgresEnrollmentStore: EnrollmentStore, Sendable {
    /// The database (its password never printed).
    public let url: PostgresURL
    /// The table and its columns.
    public let mapping: EnrollmentTableMapping
    /// Whether every transaction is read-only.
    public let readOnly: Bool
    /// kkpush's columns the table lacks, read as their defaults: only a read-only store opens without them (see
    /// ``EnrollmentTableMapping/optionalForReading``).
    public var missingColumns: Set<String> { sql.absent }
    /// The same as ``missingColumns``.
    public var absentColumns: Set<String> { sql.absent }
    private let pool: PQPool
    private let sql: EnrollmentSQL
    /// The sync throttle's times when the database has no `public.kkpush_sync_throttle` (a mapped table whose
    /// database `backend migrate` never ran on): kept in memory, as before.
    private let syncsInMemory = Mutex<[String: Date]>([:])

    /// The number of pooled connections `backend serve` holds at most.
    public static let defaultPoolSize = 8

    private init(url: PostgresURL, mapping: EnrollmentTableMapping, readOnly: Bool, pool: PQPool, sql: EnrollmentSQL) {
        self.url = url
        self.mapping = mapping
        self.readOnly = readOnly
        self.pool = pool
        self.sql = sql
    }

    /// A logger that drops everything (the default).
    public static let quiet = Logger(label: "kkpush.backend.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Connects once (so a wrong address, password or database fails at once, with its reason), checks that the
    /// table and every mapped column are there with types kkpush can read (`store-not-migrated`,
    /// `store-schema-mismatch`; read-only, the columns of ``EnrollmentTableMapping/optionalForReading`` may be
    /// missing), and keeps that connection in the pool. `poolSize`: the most connections held at once.
    public static func open(
        url: PostgresURL, mapping: EnrollmentTableMapping = .standard, readOnly: Bool = false,
        poolSize: Int = defaultPoolSize, logger: Logger = quiet
    ) async throws -> PostgresEnrollmentStore {
        let pool = PQPool(url: url, readOnly: readOnly, size: poolSize)
        do {
            let shape = try await pool.withConnection { c in
                try await c.run { c in
                    let shape = try PostgresSchemaCheck.check(c, url: url, mapping: mapping, readOnly: readOnly)
                    if readOnly {
                        let value = try c.exec("SHOW transaction_read_only").rows.first?.first ?? nil
                        guard value == "on" else {
                            throw KKPushError(
                                code: .storeQueryFailed,
                                message:
                                    "The database \(url.named) did not open read-only (transaction_read_only is \(value ?? "?")).",
                                fix: "Check that the server accepts the option -c default_transaction_read_only=on.")
                        }
                    }
                    return shape
                }
            }
            return PostgresEnrollmentStore(
                url: url, mapping: mapping, readOnly: readOnly, pool: pool, sql: EnrollmentSQL(mapping, shape: shape))
        } catch {
            await pool.close()
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }

    /// Opens the store, runs `body`, and closes the store whatever happens.
    public static func withStore<T: Sendable>(
        url: PostgresURL, mapping: EnrollmentTableMapping = .standard, readOnly: Bool = false,
        poolSize: Int = 2, logger: Logger = quiet, _ body: (PostgresEnrollmentStore) async throws -> T
    ) async throws -> T {
        let store = try await open(url: url, mapping: mapping, readOnly: readOnly, poolSize: poolSize, logger: logger)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    /// Closes the pool after the operations in flight; later operations throw `store-closed`. Idempotent.
    public func close() async { await pool.close() }

    // MARK: - EnrollmentStore

    public func upsert(_ e: Enrollment) async throws {
        try await withConnection(retryOnLostConnection: false) { [sql] c in try sql.write(e, on: c) }
    }

    public func upsert(contentsOf enrollments: [Enrollment]) async throws {
        try await transaction { [sql, url] c in
            for (i, e) in enrollments.enumerated() {
                try validateForImport(e, index: i)
                do {
                    try sql.write(e, on: c)
                } catch {
                    throw importRowFailed(i, e, PostgresErrors.map(error, url: url) ?? error)
                }
            }
        }
    }

    public func enroll(_ enrollment: Enrollment, replacing: Bool, sign: @Sendable (Enrollment) throws -> String)
        async throws -> EnrollOutcome
    {
        // `sign` runs here, between the transaction's steps on the connection's thread (it cannot go there: it
        // does not escape).
        let sql = self.sql
        return try await withConnection(retryOnLostConnection: false) { (c: PQConnection) in
            var e = enrollment
            e.status = .active
            do {
                let stored = try await c.run { [e] c in
                    try c.exec("BEGIN")
                    // Two enrollments of one new device id at once: the second waits, then sees the first.
                    try c.exec(
                        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", ["\(e.tenantSlug)/\(e.deviceID)"])
                    return try sql.select(
                        where: "\(sql.col("tenant_slug")) = $1 AND \(sql.col("device_id")) = $2 FOR UPDATE",
                        [e.tenantSlug, e.deviceID], on: c
                    ).first
                }
                if let stored {
                    guard replacing else { throw EnrollmentExistsError(existing: stored) }
                    e.generation = min(stored.generation, Int(Int32.max) - 1) + 1
                }
                let token = try sign(e)
                try await c.run { [e] c in
                    try sql.write(e, on: c)
                    try c.exec("COMMIT")
                }
                return EnrollOutcome(enrollment: e, token: token, replaced: stored)
            } catch {
                _ = try? await c.run { try $0.exec("ROLLBACK") }
                throw error
            }
        }
    }

    public func get(deviceID: String, tenant: String) async throws -> Enrollment? {
        try await select("\(sql.col("tenant_slug")) = $1 AND \(sql.col("device_id")) = $2", [tenant, deviceID]).first
    }

    public func find(hardwareIdentifier: String) async throws -> [Enrollment] {
        try await select(sql.hardwareWhere, [hardwareIdentifier])
    }

    public func find(teamManagerEmail: String) async throws -> [Enrollment] {
        try await select(sql.emailWhere, [teamManagerEmail])
    }

    public func find(apnsToken: String) async throws -> [Enrollment] {
        try await select("\(sql.col("apns_token")) = $1", [apnsToken])
    }

    public func activeEnrollments(tenant: String, team: String) async throws -> [Enrollment] {
        try await select(sql.fanOutWhere, [tenant, team])
    }

    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, apsEnvironment: String?,
        appVersion: String, at: Date
    ) async throws -> Enrollment {
        let rows = try await withConnection(retryOnLostConnection: false) { [sql] c in
            var values: [String?] = [
                token, buildEnvironment, appVersion, PostgresText.timestamp(Enrollment.wholeSeconds(at)),
                tenant, deviceID,
            ]
            // A read-only store of a table without the columns writes nothing anyway (store-read-only).
            var extra = ""
            if sql.has("token_updated_at") {
                values.append(PostgresText.timestamp(EnrollmentSQL.milliseconds(at)))
                extra += ", \(sql.col("token_updated_at")) = $\(values.count)"
            }
            if sql.has("aps_environment") {
                values.append(apsEnvironment)
                extra += ", \(sql.col("aps_environment")) = $\(values.count)"
            }
            let q = """
                UPDATE \(sql.table) SET \(sql.col("apns_token")) = $1, \(sql.col("build_environment")) = $2,
                    \(sql.col("app_version")) = $3, \(sql.col("updated_at")) = $4\(extra)
                WHERE \(sql.col("tenant_slug")) = $5 AND \(sql.col("device_id")) = $6 RETURNING \(sql.selectList)
                """
            return try c.exec(q, values).rows.map(sql.enrollment(from:))
        }
        guard let e = rows.first else { throw enrollmentNotFound(deviceID, tenant) }
        return e
    }

    @discardableResult
    public func clearToken(_ token: String, unregisteredAt: Date?, at: Date) async throws -> Int {
        try await withConnection(retryOnLostConnection: false) { [sql] c in
            let tokenTime = sql.col("token_updated_at")
            var values: [String?] = [PostgresText.timestamp(Enrollment.wholeSeconds(at)), token]
            var set = ""
            var compare = ""
            if sql.has("token_updated_at") {
                values.append(PostgresText.timestamp(EnrollmentSQL.milliseconds(unregisteredAt ?? at)))
                set = ", \(tokenTime) = NULL"
                compare = " AND (\(tokenTime) IS NULL OR \(tokenTime) <= $3)"
            }
            let q = """
                UPDATE \(sql.table) SET \(sql.col("apns_token")) = NULL\(set), \(sql.col("updated_at")) = $1
                WHERE \(sql.col("apns_token")) = $2\(compare)
                """
            return try c.exec(q, values).affected
        }
    }

    public func revoke(deviceID: String, tenant: String, at: Date) async throws {
        let count = try await withConnection(retryOnLostConnection: false) { [sql] c in
            let g = sql.col("generation")
            let bump = sql.has("generation") ? ", \(g) = LEAST(\(g), 2147483646) + 1" : ""
            let q = """
                UPDATE \(sql.table) SET \(sql.col("status")) = 'revoked'\(bump), \(sql.col("updated_at")) = $1
                WHERE \(sql.col("tenant_slug")) = $2 AND \(sql.col("device_id")) = $3
                """
            return try c.exec(q, [PostgresText.timestamp(Enrollment.wholeSeconds(at)), tenant, deviceID]).affected
        }
        if count == 0 { throw enrollmentNotFound(deviceID, tenant) }
    }

    public func all() async throws -> [Enrollment] { try await select("true", []) }

    public func lastSync(hardwareIdentifier: String) async throws -> Date? {
        let key = hardwareIdentifier.lowercased()
        do {
            let rows = try await withConnection(retryOnLostConnection: true) { c in
                try c.exec(
                    "SELECT (extract(epoch from last_sync_at) * 1000)::int8 FROM public.kkpush_sync_throttle WHERE hardware_identifier = $1",
                    [key]
                ).rows
            }
            return rows.first?.first.flatMap { $0 }.flatMap { Int64($0) }.map {
                Date(timeIntervalSince1970: Double($0) / 1000)
            }
        } catch let e as KKPushError where e.code == .storeNotMigrated {
            return syncsInMemory.withLock { $0[key] }
        }
    }

    public func recordSync(hardwareIdentifier: String, at: Date?) async throws {
        let key = hardwareIdentifier.lowercased()
        do {
            try await withConnection(retryOnLostConnection: false) { c -> Void in
                if let at {
                    try c.exec(
                        "INSERT INTO public.kkpush_sync_throttle (hardware_identifier, last_sync_at) VALUES ($1, $2) ON CONFLICT (hardware_identifier) DO UPDATE SET last_sync_at = EXCLUDED.last_sync_at",
                        [key, PostgresText.timestamp(EnrollmentSQL.milliseconds(at))])
                } else {
                    try c.exec("DELETE FROM public.kkpush_sync_throttle WHERE hardware_identifier = $1", [key])
                }
            }
        } catch let e as KKPushError where e.code == .storeNotMigrated {
            syncsInMemory.withLock { $0[key] = at }
        }
    }

    /// Reads through a server-side cursor (`DECLARE ... NO SCROLL CURSOR` in a read-only transaction, `FETCH
    /// batchSize`): the server holds the result, kkpush one batch at a time.
    public func forEachEnrollmentRow(
        orderedBy order: EnrollmentOrder, tenant: String?, batchSize: Int,
        _ body: @Sendable ([EnrollmentRow]) async throws -> Void
    ) async throws {
        let size = max(1, batchSize)
        let sql = self.sql
        let clause = tenant == nil ? "" : " WHERE \(sql.col("tenant_slug")) = $1"
        let declare =
            "DECLARE kkpush_enrollments NO SCROLL CURSOR FOR SELECT \(sql.selectList) FROM \(sql.table)\(clause) ORDER BY \(sql.orderBy(order))"
        try await withConnection(retryOnLostConnection: false) { c in
            try await c.run { c in
                try c.exec("BEGIN TRANSACTION READ ONLY")
                try c.exec(declare, tenant.map { [$0] } ?? [])
            }
            do {
                while true {
                    let batch = try await c.run { c in
                        try c.exec("FETCH FORWARD \(size) FROM kkpush_enrollments").rows.map(sql.row(from:))
                    }
                    if batch.isEmpty { break }
                    try await body(batch)
                    if batch.count < size { break }
                }
                _ = try await c.run { try $0.exec("COMMIT") }
            } catch {
                _ = try? await c.run { try $0.exec("ROLLBACK") }
                throw error
            }
        }
    }

    // MARK: - Plans

    /// A lookup whose query plan ``explain(_:analyze:)`` shows.
    public enum PlannedLookup: Sendable {
        /// ``activeEnrollments(tenant:team:)``.
        case fanOut(tenant: String, team: String)
        /// ``find(teamManagerEmail:)``.
        case email(String)
        /// ``find(hardwareIdentifier:)``.
        case hardwareIdentifier(String)
    }

    /// `EXPLAIN (FORMAT JSON)` of the query a lookup runs (with its parameters bound), as the server returns it.
    public func explain(_ lookup: PlannedLookup, analyze: Bool = false) async throws -> String {
        let (clause, values): (String, [String]) =
            switch lookup {
            case .fanOut(let tenant, let team): (sql.fanOutWhere, [tenant, team])
            case .email(let email): (sql.emailWhere, [email])
            case .hardwareIdentifier(let id): (sql.hardwareWhere, [id])
            }
        return try await withConnection(retryOnLostConnection: true) { [sql] c in
            let q = "EXPLAIN (FORMAT JSON\(analyze ? ", ANALYZE" : "")) \(sql.selectQuery(where: clause))"
            return try c.exec(q, values).rows.map { $0.first.flatMap { $0 } ?? "" }.joined(separator: "\n")
        }
    }

    // MARK: - Connections and transactions

    private func select(_ clause: String, _ values: [String]) async throws -> [Enrollment] {
        try await withConnection(retryOnLostConnection: true) { [sql] c in
            try sql.select(where: clause, values, on: c)
        }
    }

    /// Runs `body` in one transaction on the connection's thread (commits, or rolls back and rethrows).
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PQConnection) throws -> T) async throws -> T {
        try await withConnection(retryOnLostConnection: false) { c in
            try c.exec("BEGIN")
            do {
                let result = try body(c)
                try c.exec("COMMIT")
                return result
            } catch {
                _ = try? c.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs blocking `work` on a pooled connection's thread.
    private func withConnection<T: Sendable>(
        retryOnLostConnection: Bool, _ work: @escaping @Sendable (PQConnection) throws -> T
    ) async throws -> T {
        try await withConnection(retryOnLostConnection: retryOnLostConnection) { c in try await c.run(work) }
    }

    /// Leases a pooled connection, runs `body`, and maps the database's errors to KKPushError. A read
    /// (`retryOnLostConnection`) whose connection was lost is run once more: after the server restarted, the
    /// pool may still hold a connection the server closed.
    private func withConnection<T: Sendable>(
        retryOnLostConnection: Bool, _ body: (PQConnection) async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await pool.withConnection(body)
            } catch {
                if retryOnLostConnection, attempt == 1, PostgresErrors.isLostConnection(error) { continue }
                if error is EnrollmentExistsError || error is CancellationError { throw error }
                throw PostgresErrors.map(error, url: url) ?? error
            }
        }
    }

    /// A database error as KKPushError with a stable code (nil: not the database's): `store-unreachable`
    /// (where and the reason; the password masked), `store-auth-failed`, `store-database-missing`,
    /// `store-not-migrated`, `store-schema-mismatch`, `store-read-only`, `store-query-failed`.
    public static func mapError(_ error: any Error, url: PostgresURL?) -> KKPushError? {
        PostgresErrors.map(error, url: url)
    }
}
