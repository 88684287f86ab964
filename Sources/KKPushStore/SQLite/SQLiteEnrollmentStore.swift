public import Foundation
import KKPushCore
public import KantineKoning
public import Logging

/// The default ``EnrollmentStore``: an SQLite database file (the system's SQLite 3, on a thread of its own) with one
/// `device_enrollments` table, primary key `(tenant_slug, device_id)`.
///
/// Open it with ``open(path:logger:)`` and ``close()`` it, or use ``withStore(path:logger:_:)``.
/// `team_codes` is stored as a JSON array, `updated_at` as ISO 8601 text, `is_test_user` as 0/1,
/// `generation` as an integer (see ``Enrollment/generation``), `token_updated_at` (when the current
/// `apns_token` was registered) as milliseconds since 1970 (NULL: unknown), `aps_environment` as text (NULL:
/// not sent). A file of an earlier version gets the columns it lacks when opened.
///
/// Opened read-only (``open(path:readOnly:logger:)`` with `readOnly`: every reader of a user's file, such as
/// `audit`, `diagnose`, `token verify` and `backend export`), the file is never written: it is opened with
/// `mode=ro` (or `immutable=1` where its folder is read-only), its journal mode and schema are left as they are,
/// and a table without kkpush's own columns (``EnrollmentTableMapping/optionalForReading``: the real backend's
/// table) is read with their defaults, ``absentColumns`` naming them, as ``PostgresEnrollmentStore`` reads one.
///
/// Several processes may use one file at once (`backend serve` and `diagnose --store` or
/// `backend export`): every connection sets a busy timeout of ``busyTimeoutMilliseconds`` and the file
/// is in WAL journal mode, so readers never wait for the writer and writers wait for each other instead
/// of failing with SQLITE_BUSY. Changes of several rows (an import, a re-enrollment) are one
/// `BEGIN IMMEDIATE` transaction; within the process, the store's operations run one at a time, so no
/// statement of one ever lands inside another's transaction.
///
/// The connection is closed exactly once: ``close()`` waits for the operations in flight, and a second
/// `close()` does nothing (SQLite must never be handed a closed handle: release builds dereference it, without
/// SQLite's API armor, and crash). An operation after `close()` throws `store-closed`.
public actor SQLiteEnrollmentStore: EnrollmentStore {
    /// How long a connection waits for another connection's lock before SQLITE_BUSY: 5 s.
    public static let busyTimeoutMilliseconds = 5_000

    private nonisolated let connection: SQLiteConnection
    private let logger: Logger
    /// Set by the first ``close()``; no operation starts after it.
    private var isClosed = false
    /// Operations started and not yet finished (waiting for their turn or running).
    private var queriesInFlight = 0
    /// A ``close()`` waiting for the operations in flight.
    private var waitingToClose: [CheckedContinuation<Void, Never>] = []
    /// True while an operation runs; the others wait in ``waitingForTurn``.
    private var operationRunning = false
    private var waitingForTurn: [CheckedContinuation<Void, Never>] = []
    /// The database file.
    public nonisolated let path: String
    /// Whether the store was opened read-only (every write throws `store-read-only`).
    public nonisolated let readOnly: Bool
    /// kkpush's columns the table lacks, read as their defaults (only a read-only store opens without them).
    public nonisolated let absentColumns: Set<String>
    /// How a read-only store reads its file, when not directly (a note for the user), else nil: its folder is
    /// read-only, so it is read without locks, or from a private copy with its `-wal`.
    public nonisolated var readNote: String? {
        switch connection.readMode {
        case .direct: nil
        case .immutable:
            "the database's folder is read-only: read as it is on disk, without locks (a writer's later changes are not seen)"
        case .copied:
            "the database's folder is read-only and its -wal file holds changes: read from a private copy of both, taken at the start"
        }
    }
    /// The columns every read selects: ``columns``, an absent one as its default (`1 AS generation`).
    private let readColumns: String

    private init(
        connection: SQLiteConnection, path: String, logger: Logger, readOnly: Bool, absentColumns: Set<String> = []
    ) {
        self.connection = connection
        self.path = path
        self.logger = logger
        self.readOnly = readOnly
        self.absentColumns = absentColumns
        self.readColumns = Self.columns.split(separator: ", ").map { name in
            guard absentColumns.contains(String(name)) else { return String(name) }
            return "\(name == "generation" ? "1" : "NULL") AS \(name)"
        }.joined(separator: ", ")
    }

    /// Opens (creating if needed) the database at `path`: busy timeout, WAL journal mode, and the schema
    /// (new columns added to older files). Throws `store-open-failed` naming the file.
    ///
    /// `readOnly`: opens an existing file without writing it (see the type's documentation): a missing table or
    /// one without a column kkpush cannot do without is `store-not-migrated`, naming what is missing.
    public static func open(
        path: String, readOnly: Bool = false,
        logger: Logger = Logger(label: "kkpush.backend.store", factory: { _ in SwiftLogNoOpLogHandler() })
    ) async throws -> SQLiteEnrollmentStore {
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(path: path, readOnly: readOnly)
        } catch {
            throw KKPushError(
                code: .storeOpenFailed,
                message: "Cannot open the enrollment database '\(path)': \(ErrorWords.describe(error)).",
                fix: readOnly
                    ? "Check that the file exists, is readable by this user, and is an SQLite database."
                    : "Check that the directory exists and is writable, and that the file is an SQLite database.",
                underlying: error)
        }
        do {
            if readOnly {
                let absent = try await inspect(connection, path: path)
                return SQLiteEnrollmentStore(
                    connection: connection, path: path, logger: logger, readOnly: true, absentColumns: absent)
            }
            let store = SQLiteEnrollmentStore(connection: connection, path: path, logger: logger, readOnly: false)
            try await store.prepare()
            return store
        } catch let error as KKPushError where error.code == .storeNotMigrated {
            await connection.close()
            throw error
        } catch {
            await connection.close()
            throw KKPushError(
                code: .storeOpenFailed,
                message: "'\(path)' is not a usable enrollment database: \(Self.cause(of: error)).",
                fix: readOnly
                    ? "Give the enrollment database the backend writes; check that it is readable and not corrupt."
                    : "Give a new file name, or a database kkpush created.", underlying: error)
        }
    }

    /// The read-only open's check of the table, without writing: which of kkpush's optional columns it lacks;
    /// `store-not-migrated` for no table, or a table without a column kkpush cannot do without.
    private static func inspect(_ connection: SQLiteConnection, path: String) async throws -> Set<String> {
        let present = try await columns(
            of: connection, path: path,
            required: EnrollmentTableMapping.logicalColumns.filter {
                !EnrollmentTableMapping.optionalForReading.contains($0)
            })
        return Set(EnrollmentTableMapping.logicalColumns.filter { !present.contains($0) })
    }

    /// The columns of the file's `device_enrollments` table, after checking that it has `required` (in that order
    /// in the message): `store-not-migrated` naming the missing ones, or the table if there is none. Each reader
    /// asks for the columns it uses (a prune needs fewer than a read of whole enrollments).
    static func columns(of connection: SQLiteConnection, path: String, required: [String]) async throws -> Set<String> {
        _ = try await connection.query("PRAGMA busy_timeout = \(busyTimeoutMilliseconds)")
        let present = Set(
            try await connection.query("PRAGMA table_info(device_enrollments)").compactMap {
                $0.column("name")?.string
            })
        let missing = required.filter { !present.contains($0) }
        if present.isEmpty || !missing.isEmpty {
            throw KKPushError(
                code: .storeNotMigrated,
                message: present.isEmpty
                    ? "The SQLite file '\(path)' has no device_enrollments table."
                    : "The device_enrollments table of '\(path)' has no \(missing.joined(separator: ", ")) column\(missing.count == 1 ? "" : "s").",
                fix: "Give the enrollment database the backend writes (its device_enrollments table).")
        }
        return present
    }

    /// The SQLite message of an open or query failure, without kkpush's wrapping (``ErrorWords`` words it).
    public static func cause(of error: any Error) -> String {
        if let e = error as? KKPushError, let underlying = e.underlying { return cause(of: underlying) }
        return ErrorWords.describe(error)
    }

    /// Opens the store at `path`, runs `body`, and closes the store whatever happens.
    public static func withStore<T: Sendable>(
        path: String, readOnly: Bool = false,
        logger: Logger = Logger(label: "kkpush.backend.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (SQLiteEnrollmentStore) async throws -> T
    ) async throws -> T {
        let store = try await open(path: path, readOnly: readOnly, logger: logger)
        do {
            let result = try await body(store)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Closes the database, after the operations in flight; later calls do nothing, later operations
    /// throw `store-closed`.
    public func close() async throws {
        guard !isClosed else { return }
        isClosed = true
        if queriesInFlight > 0 {
            await withCheckedContinuation { waitingToClose.append($0) }
        }
        await connection.close()
    }

    /// The journal mode of the file (`wal` once opened by this store).
    public func journalMode() async throws -> String {
        try await operation { try await run("PRAGMA journal_mode", []).first?.column("journal_mode")?.string ?? "" }
    }

    /// The connection's busy timeout in milliseconds.
    public func busyTimeout() async throws -> Int {
        try await operation { try await run("PRAGMA busy_timeout", []).first?.column("timeout")?.integer ?? 0 }
    }

    private func prepare() async throws {
        // The busy timeout first: switching to WAL and migrating take locks another process may hold (without
        // it, SQLite answers SQLITE_BUSY at once).
        _ = try await run("PRAGMA busy_timeout = \(Self.busyTimeoutMilliseconds)", [])
        // Only what is missing is changed, so that opening a database that is ready (a reader such as
        // `backend export` or `diagnose --store`) takes no write lock and never waits for a writer.
        var mode = try await run("PRAGMA journal_mode", []).first?.column("journal_mode")?.string
        if mode?.lowercased() != "wal" {
            mode = try await run("PRAGMA journal_mode = WAL", []).first?.column("journal_mode")?.string
            if mode?.lowercased() != "wal" {
                logger.warning(
                    "the enrollment database is not in WAL mode", metadata: ["journal_mode": "\(mode ?? "?")"])
            }
        }
        if try await !isMigrated() {
            try await transaction { if try await !isMigrated() { try await migrate() } }
        }
    }

    /// The table, every column and both indexes are there (read-only queries).
    private func isMigrated() async throws -> Bool {
        let present = Set(
            try await run("PRAGMA table_info(device_enrollments)", []).compactMap { $0.column("name")?.string })
        guard present.isSuperset(of: ["generation", "token_updated_at", "aps_environment", "apns_token", "updated_at"])
        else {
            return false
        }
        let indexes = try await run(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('device_enrollments_hardware', 'device_enrollments_token')",
            [])
        return indexes.count == 2
    }

    private func migrate() async throws {
        _ = try await run(
            """
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
                generation INTEGER NOT NULL DEFAULT 1,
                token_updated_at INTEGER,
                aps_environment TEXT,
                PRIMARY KEY (tenant_slug, device_id)
            )
            """, [])
        // Files of earlier versions lack the later columns: add them (existing rows: generation 1, token
        // registration time unknown, so a 410 clears their tokens as before; aps_environment not sent).
        let present = Set(
            try await run("PRAGMA table_info(device_enrollments)", []).compactMap { $0.column("name")?.string })
        if !present.contains("generation") {
            _ = try await run("ALTER TABLE device_enrollments ADD COLUMN generation INTEGER NOT NULL DEFAULT 1", [])
        }
        if !present.contains("token_updated_at") {
            _ = try await run("ALTER TABLE device_enrollments ADD COLUMN token_updated_at INTEGER", [])
        }
        if !present.contains("aps_environment") {
            _ = try await run("ALTER TABLE device_enrollments ADD COLUMN aps_environment TEXT", [])
        }
        _ = try await run(
            "CREATE INDEX IF NOT EXISTS device_enrollments_hardware ON device_enrollments (hardware_identifier COLLATE NOCASE)",
            [])
        _ = try await run("CREATE INDEX IF NOT EXISTS device_enrollments_token ON device_enrollments (apns_token)", [])
    }

    private static let columns =
        "tenant_slug, device_id, team_codes, role, hardware_identifier, apns_token, build_environment, app_version, is_test_user, status, team_manager_email, updated_at, generation, aps_environment"

    /// `date` as whole milliseconds since 1970 (how `token_updated_at` and 410 timestamps are compared).
    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard ms.isFinite else { return 0 }
        return Int64(min(max(ms, -9.2e18), 9.2e18))
    }

    /// Inserts or replaces the enrollment with the same tenant and device id; the generation never goes
    /// down, and the token's registration time is kept if the token is unchanged.
    public func upsert(_ e: Enrollment) async throws {
        try refuseIfReadOnly()
        try await operation { try await write(e) }
    }

    /// Upserts every enrollment in one transaction: all or nothing.
    public func upsert(contentsOf enrollments: [Enrollment]) async throws {
        try refuseIfReadOnly()
        try await operation {
            try await transaction {
                for (i, e) in enrollments.enumerated() {
                    try validateForImport(e, index: i)
                    do {
                        try await write(e)
                    } catch {
                        throw importRowFailed(i, e, error)
                    }
                }
            }
        }
    }

    /// Enrolls or re-enrolls in one transaction: reads the stored record, refuses it unless `replacing`,
    /// signs, writes.
    public func enroll(_ enrollment: Enrollment, replacing: Bool, sign: @Sendable (Enrollment) throws -> String)
        async throws
        -> EnrollOutcome
    {
        try refuseIfReadOnly()
        return try await operation {
            try await transaction {
                var e = enrollment
                e.status = .active
                let rows = try await run(
                    "SELECT \(readColumns) FROM device_enrollments WHERE tenant_slug = ? AND device_id = ?",
                    [.text(e.tenantSlug), .text(e.deviceID)])
                let stored = try rows.first.map { try Self.row(from: $0).get() }
                if let stored {
                    guard replacing else { throw EnrollmentExistsError(existing: stored) }
                    e.generation = min(stored.generation, Int(Int32.max) - 1) + 1
                }
                let token = try sign(e)
                try await write(e)
                return EnrollOutcome(enrollment: e, token: token, replaced: stored)
            }
        }
    }

    private func write(_ e: Enrollment) async throws {
        let teams = String(decoding: try JSONEncoder().encode(e.teamCodes), as: UTF8.self)
        let tokenTime: SQLiteValue = e.apnsToken == nil ? .null : .integer(Int(Self.milliseconds(e.updatedAt)))
        _ = try await run(
            """
            INSERT INTO device_enrollments (\(Self.columns), token_updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (tenant_slug, device_id) DO UPDATE SET
                team_codes = excluded.team_codes, role = excluded.role, hardware_identifier = excluded.hardware_identifier,
                apns_token = excluded.apns_token, build_environment = excluded.build_environment,
                app_version = excluded.app_version, aps_environment = excluded.aps_environment,
                is_test_user = excluded.is_test_user, status = excluded.status,
                team_manager_email = excluded.team_manager_email, updated_at = excluded.updated_at,
                generation = MAX(device_enrollments.generation, excluded.generation),
                token_updated_at = CASE WHEN device_enrollments.apns_token IS excluded.apns_token
                    THEN device_enrollments.token_updated_at ELSE excluded.token_updated_at END
            """,
            [
                .text(e.tenantSlug), .text(e.deviceID), .text(teams), .text(e.role.rawValue),
                .text(e.hardwareIdentifier),
                optional(e.apnsToken), optional(e.buildEnvironment), optional(e.appVersion),
                .integer(e.isTestUser ? 1 : 0),
                .text(e.status.rawValue), optional(e.teamManagerEmail), .text(Enrollment.formatDate(e.updatedAt)),
                .integer(e.generation), optional(e.apsEnvironment), tokenTime,
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

    /// Replaces the enrollment's token, build environment, aps environment and app version (one statement).
    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, apsEnvironment: String?,
        appVersion: String, at: Date
    ) async throws -> Enrollment {
        try refuseIfReadOnly()
        let rows = try await operation {
            try await run(
                "UPDATE device_enrollments SET apns_token = ?, build_environment = ?, aps_environment = ?, app_version = ?, updated_at = ?, token_updated_at = ? WHERE tenant_slug = ? AND device_id = ? RETURNING \(Self.columns)",
                [
                    .text(token), .text(buildEnvironment), optional(apsEnvironment), .text(appVersion),
                    .text(Enrollment.formatDate(at)),
                    .integer(Int(Self.milliseconds(at))), .text(tenant), .text(deviceID),
                ])
        }
        guard let row = rows.first else { throw enrollmentNotFound(deviceID, tenant) }
        return try Self.row(from: row).get()
    }

    /// Clears `token` where it was registered at or before `unregisteredAt` (nil: `at`): compare and
    /// clear in one statement. Returns how many changed.
    @discardableResult
    public func clearToken(_ token: String, unregisteredAt: Date?, at: Date) async throws -> Int {
        try refuseIfReadOnly()
        let cutoff = Int(Self.milliseconds(unregisteredAt ?? at))
        return try await operation {
            try await run(
                "UPDATE device_enrollments SET apns_token = NULL, token_updated_at = NULL, updated_at = ? WHERE apns_token = ? AND (token_updated_at IS NULL OR token_updated_at <= ?) RETURNING device_id",
                [.text(Enrollment.formatDate(at)), .text(token), .integer(cutoff)]
            ).count
        }
    }

    /// Marks the enrollment revoked and bumps its generation (one statement).
    public func revoke(deviceID: String, tenant: String, at: Date) async throws {
        try refuseIfReadOnly()
        let rows = try await operation {
            try await run(
                "UPDATE device_enrollments SET status = 'revoked', generation = generation + 1, updated_at = ? WHERE tenant_slug = ? AND device_id = ? RETURNING device_id",
                [.text(Enrollment.formatDate(at)), .text(tenant), .text(deviceID)])
        }
        if rows.isEmpty { throw enrollmentNotFound(deviceID, tenant) }
    }

    /// Every enrollment, ordered by tenant and device id.
    public func all() async throws -> [Enrollment] { try await select("", []) }

    /// The sync throttle's table (created by the first sync: a reader never needs it).
    static let syncThrottleTable = """
        CREATE TABLE IF NOT EXISTS kkpush_sync_throttle (
            hardware_identifier TEXT PRIMARY KEY,
            last_sync_ms INTEGER NOT NULL
        )
        """

    public func lastSync(hardwareIdentifier: String) async throws -> Date? {
        try await operation {
            let exists = try await run(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kkpush_sync_throttle'", [])
            if exists.isEmpty { return nil }
            let rows = try await run(
                "SELECT last_sync_ms FROM kkpush_sync_throttle WHERE hardware_identifier = ?",
                [.text(hardwareIdentifier.lowercased())])
            return rows.first?.column("last_sync_ms")?.integer.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        }
    }

    public func recordSync(hardwareIdentifier: String, at: Date?) async throws {
        try refuseIfReadOnly()
        try await operation {
            _ = try await run(Self.syncThrottleTable, [])
            if let at {
                _ = try await run(
                    "INSERT INTO kkpush_sync_throttle (hardware_identifier, last_sync_ms) VALUES (?, ?) ON CONFLICT (hardware_identifier) DO UPDATE SET last_sync_ms = excluded.last_sync_ms",
                    [.text(hardwareIdentifier.lowercased()), .integer(Int(Self.milliseconds(at)))])
            } else {
                _ = try await run(
                    "DELETE FROM kkpush_sync_throttle WHERE hardware_identifier = ?",
                    [.text(hardwareIdentifier.lowercased())])
            }
        }
    }

    /// Keyset pagination: each batch is one query (`WHERE (keys) > (the last row's keys) ORDER BY keys LIMIT n`),
    /// its own operation, so other operations run between batches and memory holds one batch.
    public func forEachEnrollmentRow(
        orderedBy order: EnrollmentOrder, tenant: String?, batchSize: Int,
        _ body: @Sendable ([EnrollmentRow]) async throws -> Void
    ) async throws {
        let keys: [String] =
            switch order {
            case .deviceID: ["device_id", "tenant_slug"]
            case .apnsToken: ["(apns_token IS NULL)", "ifnull(apns_token, '')", "device_id", "tenant_slug"]
            case .hardwareIdentifier: ["lower(hardware_identifier)", "device_id", "tenant_slug"]
            case .teamManagerEmail:
                [
                    "(team_manager_email IS NULL)", "lower(ifnull(team_manager_email, ''))", "device_id", "tenant_slug",
                ]
            }
        let size = max(1, batchSize)
        let names = keys.indices.map { "kkpush_k\($0)" }
        let selectKeys = zip(keys, names).map { "\($0) AS \($1)" }.joined(separator: ", ")
        let orderBy = keys.joined(separator: ", ")
        var last: [SQLiteValue]?
        while true {
            var conditions: [String] = []
            var binds: [SQLiteValue] = []
            if let tenant {
                conditions.append("tenant_slug = ?")
                binds.append(.text(tenant))
            }
            if let last {
                conditions.append(
                    "(\(orderBy)) > (\(Array(repeating: "?", count: keys.count).joined(separator: ", ")))")
                binds += last
            }
            binds.append(.integer(size))
            let clause = conditions.isEmpty ? "" : "WHERE \(conditions.joined(separator: " AND "))"
            let query =
                "SELECT \(readColumns), \(selectKeys) FROM device_enrollments \(clause) ORDER BY \(orderBy) LIMIT ?"
            let rows = try await operation { try await run(query, binds) }
            guard let final = rows.last else { return }
            let batch = rows.map(Self.row(from:))
            last = names.map { final.column($0) ?? .null }
            try await body(batch)
            if rows.count < size { return }
        }
    }

    // MARK: - Operations, transactions, rows

    /// Runs `body` as one operation: after the ones started before it, and before ``close()``.
    private func operation<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard !isClosed else {
            throw KKPushError(
                code: .storeClosed, message: "The enrollment database '\(path)' is already closed.",
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
        if operationRunning {
            await withCheckedContinuation { waitingForTurn.append($0) }
        } else {
            operationRunning = true
        }
        defer {
            if waitingForTurn.isEmpty { operationRunning = false } else { waitingForTurn.removeFirst().resume() }
        }
        return try await body()
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (the write lock taken at once, waiting up to the busy
    /// timeout); commits, or rolls back and rethrows. Only inside ``operation(_:)`` or ``prepare()``.
    private func transaction<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        _ = try await run("BEGIN IMMEDIATE", [])
        do {
            let result = try await body()
            _ = try await run("COMMIT", [])
            return result
        } catch {
            do {
                _ = try await connection.query("ROLLBACK", [])
            } catch {
                logger.warning("rollback failed", metadata: ["error": "\(error)"])
            }
            throw error
        }
    }

    private func select(_ clause: String, _ binds: [SQLiteValue]) async throws -> [Enrollment] {
        let rows = try await operation {
            try await run(
                "SELECT \(readColumns) FROM device_enrollments \(clause) ORDER BY tenant_slug, device_id", binds)
        }
        return try rows.map { try Self.row(from: $0).get() }
    }

    /// `store-read-only` before any write of a read-only store.
    private func refuseIfReadOnly() throws {
        guard readOnly else { return }
        throw KKPushError(
            code: .storeReadOnly, message: "The enrollment database '\(path)' was opened read-only.",
            fix: "Open the store without readOnly to change it.")
    }

    private func run(_ sql: String, _ binds: [SQLiteValue]) async throws -> [SQLiteRow] {
        do {
            return try await connection.query(sql, binds)
        } catch {
            throw KKPushError(
                code: .storeQueryFailed, message: "The enrollment database '\(path)' failed a query.",
                fix:
                    "Check that the file is not corrupt, and that no other process holds a write lock on it for more than \(Self.busyTimeoutMilliseconds / 1000) s.",
                underlying: error)
        }
    }

    private func optional(_ s: String?) -> SQLiteValue { s.map(SQLiteValue.text) ?? .null }

    /// One row as an enrollment, or as an unreadable row naming what is wrong.
    private static func row(from row: SQLiteRow) -> EnrollmentRow {
        StoredRow.read(
            tenant: row.column("tenant_slug")?.string, deviceID: row.column("device_id")?.string,
            hardwareIdentifier: row.column("hardware_identifier")?.string
        ) {
            try enrollment(from: row)
        }
    }

    private static func enrollment(from row: SQLiteRow) throws -> Enrollment {
        func text(_ name: String) throws -> String {
            guard let v = row.column(name)?.string else { throw StoredRow.Problem(text: "\(name) is NULL") }
            return v
        }
        func optionalText(_ name: String) -> String? {
            guard let d = row.column(name), !d.isNull else { return nil }
            return d.string
        }
        let (role, status) = try StoredRow.roleAndStatus(row.column("role")?.string, row.column("status")?.string)
        let teamsText = try text("team_codes")
        guard let teams = try? JSONDecoder().decode([String].self, from: Data(teamsText.utf8)) else {
            throw StoredRow.Problem(
                text: "team_codes \(StoredRow.shown(teamsText)) is not a JSON array of text")
        }
        let updatedText = try text("updated_at")
        guard let updated = Enrollment.parseDate(updatedText) else {
            throw StoredRow.Problem(text: "updated_at \(StoredRow.shown(updatedText)) is not an ISO 8601 time")
        }
        return Enrollment(
            deviceID: try text("device_id"), tenantSlug: try text("tenant_slug"), teamCodes: teams, role: role,
            hardwareIdentifier: try text("hardware_identifier"), apnsToken: optionalText("apns_token"),
            buildEnvironment: optionalText("build_environment"), apsEnvironment: optionalText("aps_environment"),
            appVersion: optionalText("app_version"),
            isTestUser: row.column("is_test_user")?.bool ?? false, status: status,
            teamManagerEmail: optionalText("team_manager_email"), updatedAt: updated,
            generation: row.column("generation")?.integer ?? 1)
    }
}
