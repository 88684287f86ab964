public import Foundation
import KKPushCore
public import KKPushStore
import Synchronization

/// The activity registry in an SQLite file (the system's libsqlite3, one connection on a thread of its own): every
/// operation is one `BEGIN IMMEDIATE` transaction run as one job on that thread, so two processes on the same file
/// take turns (waiting up to 5 s for the lock) and no statement of another caller lands inside it.
public final class SQLiteActivityRegistry: ActivityRegistry, EngineRegistry {
    /// The settings it plans by.
    public let settings: ActivityRegistrySettings
    /// The file.
    public let path: String
    private let connection: SQLiteConnection
    let engine: ActivityEngine
    private let closed = Mutex(false)

    /// How long a statement waits for another process's lock (5 s, the enrollment store's).
    public static let busyTimeoutMilliseconds = 5_000

    private init(path: String, connection: SQLiteConnection, settings: ActivityRegistrySettings) {
        self.path = path
        self.connection = connection
        self.settings = settings
        self.engine = ActivityEngine(settings: settings)
    }

    /// Opens (creating if needed) the registry file at `path`, in WAL mode, and migrates it (the file is kkpush's
    /// own: its tables are created or brought up to date on open).
    public static func open(path: String, settings: ActivityRegistrySettings = .defaults) async throws
        -> SQLiteActivityRegistry
    {
        let settings = try settings.validated()
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(path: path)
            _ = try await connection.query("PRAGMA busy_timeout = \(busyTimeoutMilliseconds)")
            _ = try await connection.query("PRAGMA journal_mode = WAL")
        } catch {
            throw KKPushError(
                code: .activityRegistryFailed, message: "The activity registry '\(path)' cannot be opened.",
                fix: "Check that the file's folder exists and is writable, and that the file is an SQLite database.",
                underlying: KKPushError.Cause("\(error)"))
        }
        let registry = SQLiteActivityRegistry(path: path, connection: connection, settings: settings)
        do {
            _ = try await registry.migrate()
        } catch {
            await registry.close()
            throw error
        }
        return registry
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the connection's thread.
    /// `rollback`: rolled back instead of committed (a dry run).
    func transaction<T: Sendable>(
        rollback: Bool, _ body: @escaping @Sendable (ActivitySQL) throws -> T
    ) async throws -> T {
        if closed.withLock({ $0 }) {
            throw KKPushError(
                code: .activityRegistryClosed, message: "The activity registry '\(path)' is closed.",
                fix: "Open it again for more calls.")
        }
        let path = self.path
        do {
            return try await connection.run { c in
                let sql = ActivitySQL(dialect: .sqlite) { text, binds in
                    try c.queryOnThread(Self.sqliteSQL(text), binds.map(Self.value)).map { row in
                        row.values.map(\.string)
                    }
                }
                _ = try c.queryOnThread("BEGIN IMMEDIATE")
                do {
                    let result = try body(sql)
                    _ = try c.queryOnThread(rollback ? "ROLLBACK" : "COMMIT")
                    return result
                } catch {
                    _ = try? c.queryOnThread("ROLLBACK")
                    throw error
                }
            }
        } catch let error as KKPushError {
            throw error
        } catch {
            throw KKPushError(
                code: .activityRegistryFailed, message: "The activity registry '\(path)' failed a query: \(error).",
                fix:
                    "Check that the file is not corrupt, and that no other process holds a write lock on it for more than \(Self.busyTimeoutMilliseconds / 1000) s."
            )
        }
    }

    /// PostgreSQL's `$1` placeholders as SQLite's numbered `?1`.
    static func sqliteSQL(_ text: String) -> String {
        var out = ""
        var previous: Character = " "
        for c in text {
            if previous == "$", c.isASCII, c.isNumber {
                out.removeLast()
                out += "?"
            }
            out.append(c)
            previous = c
        }
        return out
    }

    static func value(_ v: ActivityValue) -> SQLiteValue {
        switch v {
        case .text(let s): .text(s)
        case .int(let i): .integer(Int(i))
        case .null: .null
        }
    }

    public func close() async {
        let first = closed.withLock { c -> Bool in
            defer { c = true }
            return !c
        }
        if first { await connection.close() }
    }
}

/// The activity registry in PostgreSQL: kkpush's own tables `public.kkpush_activities`,
/// `public.kkpush_push_to_start_tokens`, `public.kkpush_push_to_start_history`, `public.kkpush_activity_starts` and
/// `public.kkpush_activities_versions` (never the backend's), on KKPushStore's libpq pool. Every operation is one
/// transaction; a start takes an advisory lock on its device (the budget's count and the insert are one step), and
/// the key's primary key makes two starts of one key at once one activity.
public final class PostgresActivityRegistry: ActivityRegistry, EngineRegistry {
    /// The settings it plans by.
    public let settings: ActivityRegistrySettings
    /// The database.
    public let url: PostgresURL
    private let pool: PQPool
    let engine: ActivityEngine

    private init(url: PostgresURL, settings: ActivityRegistrySettings, connections: Int) {
        self.url = url
        self.settings = settings
        self.pool = PQPool(url: url, readOnly: false, size: connections)
        self.engine = ActivityEngine(settings: settings)
    }

    /// Opens a pool of at most `connections` connections to `url`; with `migrate` (the default) creates or brings
    /// up to date kkpush's activity tables first (idempotent, under an advisory lock).
    public static func open(
        url: PostgresURL, settings: ActivityRegistrySettings = .defaults, connections: Int = 4, migrate: Bool = true
    ) async throws -> PostgresActivityRegistry {
        let registry = PostgresActivityRegistry(
            url: url, settings: try settings.validated(), connections: connections)
        if migrate {
            do {
                _ = try await registry.migrate()
            } catch {
                await registry.close()
                throw error
            }
        }
        return registry
    }

    /// `rollback`: rolled back instead of committed (a dry run).
    func transaction<T: Sendable>(
        rollback: Bool, _ body: @escaping @Sendable (ActivitySQL) throws -> T
    ) async throws -> T {
        let url = self.url
        do {
            return try await pool.withConnection { c in
                try await c.run { c in
                    let sql = ActivitySQL(dialect: .postgres) { text, binds in try c.exec(text, binds.map(\.text)).rows
                    }
                    guard rollback else { return try c.transaction { try body(sql) } }
                    try c.exec("BEGIN")
                    defer { _ = try? c.exec("ROLLBACK") }
                    return try body(sql)
                }
            }
        } catch let error as KKPushError {
            throw error
        } catch {
            if case PQFailure.server(let state, let message, _) = error, state == "42P01" {
                throw KKPushError(
                    code: .activityRegistryNotMigrated,
                    message: "The activity registry's tables are missing in \(url.named): \(message).",
                    fix:
                        "Open the registry once with its migration on the same database (it creates the tables), as a user allowed to create them."
                )
            }
            throw PostgresErrors.map(error, url: url)
                ?? KKPushError(
                    code: .activityRegistryFailed, message: "The activity registry in \(url.named) failed: \(error).",
                    fix: "Check the database.")
        }
    }

    public func close() async { await pool.close() }
}

/// Opening a registry from what a user gives: a file path (SQLite) or a PostgreSQL connection string.
public enum ActivityRegistries {
    /// Opens the registry at `location`: a `postgres://`/`postgresql://` URL or libpq `key=value` string opens
    /// ``PostgresActivityRegistry``, anything else is an SQLite file (``SQLiteActivityRegistry``). Both are migrated on
    /// open. `origin` names where the location came from, for messages (e.g. `(registry)`).
    ///
    /// Migrated on open, unlike the push queue (whose backend's `INSERT` needs the table made beforehand by an
    /// explicit migration): only kkpush writes the registry's tables, so nothing depends on when they appear, and
    /// the migration is idempotent and runs under an advisory lock (kkpush's choice, so every path that opens a
    /// registry, the CLI, the worker, send-batch, the backend, works on a fresh database).
    public static func open(
        _ location: String, settings: ActivityRegistrySettings = .defaults, origin: String = "(registry)"
    ) async throws -> any ActivityRegistry {
        if PostgresURL.looksLikeURL(location) {
            let url = try PostgresURL(parsing: location, origin: origin)
            return try await PostgresActivityRegistry.open(url: url, settings: settings)
        }
        guard !location.isEmpty else {
            throw KKPushError(
                code: .activityInputInvalid, message: "The activity registry \(origin) is empty.",
                fix: "Give an SQLite file path or a postgres:// URL.")
        }
        return try await SQLiteActivityRegistry.open(path: location, settings: settings)
    }
}

/// A registry that runs ``ActivityEngine``'s statements in its own transactions: the SQLite file's and PostgreSQL's
/// differ only in how they open a transaction, so every operation is written once, here.
protocol EngineRegistry: ActivityRegistry {
    var engine: ActivityEngine { get }
    /// Runs `body` in one transaction; `rollback`: rolled back instead of committed (a dry run).
    func transaction<T: Sendable>(rollback: Bool, _ body: @escaping @Sendable (ActivitySQL) throws -> T)
        async throws -> T
}

extension EngineRegistry {
    func transaction<T: Sendable>(_ body: @escaping @Sendable (ActivitySQL) throws -> T) async throws -> T {
        try await transaction(rollback: false, body)
    }

    public func migrate() async throws -> ActivityMigrationResult {
        let engine = self.engine
        return try await transaction { try engine.migrate($0) }
    }

    public func recordReport(_ report: ActivityTokenReport, device: String, at: Date) async throws
        -> ActivityReportResult
    {
        let engine = self.engine
        return try await transaction { try engine.recordReport($0, report, device: device, at: at) }
    }

    public func planStart(_ request: ActivityStartRequest, at: Date, dryRun: Bool) async throws -> ActivityStartPlan {
        let engine = self.engine
        return try await transaction(rollback: dryRun) { try engine.planStart($0, request, at: at) }
    }

    public func planUpdate(_ request: ActivityUpdateRequest, at: Date, dryRun: Bool) async throws -> ActivityPushPlan {
        let engine = self.engine
        return try await transaction(rollback: dryRun) { try engine.planUpdate($0, request, at: at) }
    }

    public func planEnd(_ request: ActivityEndRequest, at: Date, dryRun: Bool) async throws -> ActivityPushPlan {
        let engine = self.engine
        return try await transaction(rollback: dryRun) { try engine.planEnd($0, request, at: at) }
    }

    @discardableResult
    public func recordAnswer(_ answer: ActivityAnswer) async throws -> ActivityRecord? {
        let engine = self.engine
        return try await transaction { try engine.recordAnswer($0, answer) }
    }

    public func sweepStale(at: Date) async throws -> [ActivityRecord] {
        let engine = self.engine
        return try await transaction { try engine.sweepStale($0, at: at) }
    }

    public func activity(key: String) async throws -> ActivityRecord? {
        let engine = self.engine
        return try await transaction { try engine.activity($0, key: key) }
    }

    public func activities(_ filter: ActivityFilter) async throws -> [ActivityRecord] {
        let engine = self.engine
        return try await transaction { try engine.activities($0, filter) }
    }

    public func pushToStartTokens(device: String) async throws -> [PushToStartTokenRecord] {
        let engine = self.engine
        return try await transaction { try engine.pushToStartTokens($0, device: device) }
    }

}
