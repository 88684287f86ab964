import Foundation
import KKPushCore
import KantineKoning
import Logging
import PostgresNIO

/// The ``EnrollmentStore`` on PostgreSQL (the real backend's database), through postgres-nio's pooled
/// `PostgresClient`: the same semantics as ``SQLiteEnrollmentStore`` (generations never go down, the token's
/// registration time, an import in one transaction, compare-and-clear of a 410), on kkpush's table
/// `public.device_enrollments` (``PostgresEnrollmentStore/migrate(url:logger:)`` creates it) or on the real
/// backend's table mapped by an ``EnrollmentTableMapping``.
///
/// Every value is a bound parameter; table and column names come from the mapping, double-quoted. Dates are
/// `timestamptz`; `token_updated_at` and a 410's timestamp are compared in whole milliseconds, as in SQLite.
///
/// A read-only store (`diagnose --store`) opens every connection with `default_transaction_read_only = on`, so
/// the server refuses any write (`store-read-only`), whatever runs on it. It also opens a table without
/// `aps_environment` (the real backend's, until it adopts the `aps_environment` rule), reading the value as nil;
/// a store that writes needs the column (`backend migrate` adds it to kkpush's table).
///
/// The pool reconnects by itself after the server restarts. A request waits for a pooled connection at most the
/// URL's `connect_timeout` (5 s by default), then fails with `store-unreachable` naming host:port and the reason;
/// a read whose connection was lost in the middle is tried once more on a new connection.
public final class PostgresEnrollmentStore: EnrollmentStore, Sendable {
    /// The database (its password never printed).
    public let url: PostgresURL
    /// The table and its columns.
    public let mapping: EnrollmentTableMapping
    /// Whether every transaction is read-only.
    public let readOnly: Bool
    /// kkpush's columns the table lacks, read as nil: only a read-only store opens without them (see
    /// ``EnrollmentTableMapping/optionalForReading``).
    public var missingColumns: Set<String> { sql.absent }
    private let client: PostgresClient
    private let runTask: Task<Void, Never>
    private let gate = OperationGate()
    private let logger: Logger
    private let sql: EnrollmentSQL

    /// The number of pooled connections `backend serve` holds at most.
    public static let defaultPoolSize = 8

    private init(
        url: PostgresURL, mapping: EnrollmentTableMapping, readOnly: Bool, absentColumns: Set<String>, poolSize: Int,
        logger: Logger
    ) {
        self.url = url
        self.mapping = mapping
        self.readOnly = readOnly
        self.logger = logger
        self.sql = EnrollmentSQL(mapping, absent: absentColumns)
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: Self.clientTLS(url))
        configuration.options.connectTimeout = url.connectTimeout
        configuration.options.maximumConnections = max(1, poolSize)
        configuration.options.minimumConnections = 0
        configuration.options.additionalStartupParameters = Self.startupParameters(readOnly: readOnly)
        if url.sslMode == .verifyFull { configuration.options.tlsServerName = url.host }
        let client = PostgresClient(configuration: configuration, backgroundLogger: Self.quiet)
        self.client = client
        self.runTask = Task { await client.run() }
    }

    /// A logger that drops everything (the default).
    public static let quiet = Logger(label: "kkpush.backend.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Connects once (so a wrong address, password or database fails at once, with its reason), checks that the
    /// table and every mapped column are there (`store-not-migrated`, `store-schema-mismatch`; read-only, the
    /// columns of ``EnrollmentTableMapping/optionalForReading`` may be missing: read as nil), and starts the
    /// pool. `poolSize`: the most connections held at once.
    public static func open(
        url: PostgresURL, mapping: EnrollmentTableMapping = .standard, readOnly: Bool = false,
        poolSize: Int = defaultPoolSize, logger: Logger = quiet
    ) async throws -> PostgresEnrollmentStore {
        let absent = try await withDirectConnection(url: url, readOnly: readOnly, logger: logger) { connection in
            let absent = try await checkSchema(
                connection, url: url, mapping: mapping, readOnly: readOnly, logger: logger)
            if readOnly {
                let rows = try await collect(connection.query("SHOW transaction_read_only", logger: logger))
                let value = try rows.first?.makeRandomAccess()[0].decode(String.self)
                guard value == "on" else {
                    throw KKPushError(
                        code: .storeQueryFailed,
                        message:
                            "The database \(url.redacted) did not open read-only (transaction_read_only is \(value ?? "?")).",
                        fix: "Check that the server accepts the startup parameter default_transaction_read_only.")
                }
            }
            return absent
        }
        return PostgresEnrollmentStore(
            url: url, mapping: mapping, readOnly: readOnly, absentColumns: absent, poolSize: poolSize, logger: logger)
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
    public func close() async {
        await gate.close()
        runTask.cancel()
        await runTask.value
    }

    // MARK: - Migration

    /// What ``migrate(url:logger:)`` did.
    public struct MigrationResult: Sendable {
        /// The statements' effects, one line each ("created table public.device_enrollments", ...).
        public var created: [String]
        /// Whether anything changed (false on a second run).
        public var changed: Bool { !created.isEmpty }
    }

    /// The index names `migrate` creates, and what each serves.
    public static let indexes: [(name: String, definition: String, serves: String)] = [
        (
            "device_enrollments_hardware", "(lower(hardware_identifier))",
            "find(hardwareIdentifier:), compared without case"
        ),
        (
            "device_enrollments_email", "(lower(team_manager_email))",
            "find(teamManagerEmail:) / diagnose --email, compared without case"
        ),
        ("device_enrollments_token", "(apns_token)", "find(apnsToken:) and the 410 compare-and-clear"),
        ("device_enrollments_teams", "USING gin (team_codes)", "the team fan-out: team_codes @> ARRAY[team]"),
    ]

    /// Creates `public.device_enrollments` and its indexes where missing, and adds `aps_environment` to a table of
    /// an earlier version (`ADD COLUMN IF NOT EXISTS`), in one transaction (idempotent: a second run changes
    /// nothing and says so). Only kkpush's own table: a mapped table is the real backend's.
    public static func migrate(url: PostgresURL, logger: Logger = quiet) async throws -> MigrationResult {
        try await withDirectConnection(url: url, readOnly: false, logger: logger) { connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                // One migration at a time (two `backend migrate` runs at once would both see the table missing).
                try await connection.query("SELECT pg_advisory_xact_lock(7306587)", logger: logger)
                var created: [String] = []
                let table = try await collect(
                    connection.query("SELECT to_regclass('public.device_enrollments') IS NOT NULL", logger: logger))
                if try table.first?.makeRandomAccess()[0].decode(Bool.self) != true {
                    try await connection.query(PostgresQuery(unsafeSQL: createTableSQL), logger: logger)
                    created.append("created table public.device_enrollments")
                }
                for (column, type) in addedColumns {
                    let exists = try await collect(
                        connection.query(
                            "SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'device_enrollments' AND column_name = \(column)",
                            logger: logger))
                    if exists.isEmpty {
                        try await connection.query(
                            PostgresQuery(
                                unsafeSQL:
                                    "ALTER TABLE public.device_enrollments ADD COLUMN IF NOT EXISTS \(column) \(type)"),
                            logger: logger)
                        created.append("added column \(column) \(type)")
                    }
                }
                for index in indexes {
                    let exists = try await collect(
                        connection.query(
                            "SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = \(index.name)",
                            logger: logger))
                    if exists.isEmpty {
                        try await connection.query(
                            PostgresQuery(
                                unsafeSQL:
                                    "CREATE INDEX IF NOT EXISTS \(index.name) ON public.device_enrollments \(index.definition)"
                            ), logger: logger)
                        created.append("created index \(index.name) \(index.definition)")
                    }
                }
                try await connection.query("COMMIT", logger: logger)
                return MigrationResult(created: created)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// The columns later versions added, with their types: `migrate` adds them to an existing table.
    public static let addedColumns: [(name: String, type: String)] = [("aps_environment", "text")]

    /// kkpush's table (README "PostgreSQL": every column and why its type).
    public static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS public.device_enrollments (
            tenant_slug text NOT NULL,
            device_id text NOT NULL,
            team_codes text[] NOT NULL DEFAULT '{}',
            role text NOT NULL CHECK (role IN ('manager', 'member')),
            hardware_identifier text NOT NULL,
            apns_token text,
            build_environment text,
            app_version text,
            is_test_user boolean NOT NULL DEFAULT false,
            status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
            team_manager_email text,
            updated_at timestamptz NOT NULL,
            generation integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
            token_updated_at timestamptz,
            aps_environment text,
            PRIMARY KEY (tenant_slug, device_id)
        )
        """

    // MARK: - EnrollmentStore

    public func upsert(_ e: Enrollment) async throws {
        try await withConnection(retryOnLostConnection: false) { [sql, logger] c in
            try await sql.write(e, on: c, logger: logger)
        }
    }

    public func upsert(contentsOf enrollments: [Enrollment]) async throws {
        try await transaction { [sql, logger, url] c in
            for (i, e) in enrollments.enumerated() {
                try validateForImport(e, index: i)
                do {
                    try await sql.write(e, on: c, logger: logger)
                } catch {
                    throw importRowFailed(i, e, PostgresEnrollmentStore.mapError(error, url: url) ?? error)
                }
            }
        }
    }

    public func enroll(_ enrollment: Enrollment, replacing: Bool, sign: @Sendable (Enrollment) throws -> String)
        async throws -> EnrollOutcome
    {
        try await withoutActuallyEscaping(sign) { sign in
            try await transaction { [sql, logger] c in
                var e = enrollment
                e.status = .active
                // Two enrollments of one new device id at once: the second waits, then sees the first.
                var lockBinds = PostgresBindings()
                lockBinds.append("\(e.tenantSlug)/\(e.deviceID)")
                try await c.query(
                    PostgresQuery(unsafeSQL: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", binds: lockBinds),
                    logger: logger)
                let stored = try await sql.select(
                    where: "\(sql.col("tenant_slug")) = $1 AND \(sql.col("device_id")) = $2 FOR UPDATE",
                    [e.tenantSlug, e.deviceID], on: c, logger: logger
                ).first
                if let stored {
                    guard replacing else { throw EnrollmentExistsError(existing: stored) }
                    e.generation = min(stored.generation, Int(Int32.max) - 1) + 1
                }
                let token = try sign(e)
                try await sql.write(e, on: c, logger: logger)
                return EnrollOutcome(enrollment: e, token: token, replaced: stored)
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
        let rows = try await withConnection(retryOnLostConnection: false) { [sql, logger] c in
            var binds = PostgresBindings()
            binds.append(token)
            binds.append(buildEnvironment)
            binds.append(appVersion)
            binds.append(Enrollment.wholeSeconds(at))
            binds.append(EnrollmentSQL.milliseconds(at))
            binds.append(tenant)
            binds.append(deviceID)
            // A read-only store of a table without the column writes nothing anyway (store-read-only).
            var aps = ""
            if sql.has("aps_environment") {
                binds.append(apsEnvironment)
                aps = ", \(sql.col("aps_environment")) = $8"
            }
            let q = """
                UPDATE \(sql.table) SET \(sql.col("apns_token")) = $1, \(sql.col("build_environment")) = $2,
                    \(sql.col("app_version")) = $3, \(sql.col("updated_at")) = $4, \(sql.col("token_updated_at")) = $5\(aps)
                WHERE \(sql.col("tenant_slug")) = $6 AND \(sql.col("device_id")) = $7 RETURNING \(sql.selectList)
                """
            return try await collect(c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger)).map(
                sql.enrollment(from:))
        }
        guard let e = rows.first else { throw enrollmentNotFound(deviceID, tenant) }
        return e
    }

    @discardableResult
    public func clearToken(_ token: String, unregisteredAt: Date?, at: Date) async throws -> Int {
        try await withConnection(retryOnLostConnection: false) { [sql, logger] c in
            var binds = PostgresBindings()
            binds.append(Enrollment.wholeSeconds(at))
            binds.append(token)
            binds.append(EnrollmentSQL.milliseconds(unregisteredAt ?? at))
            let q = """
                UPDATE \(sql.table) SET \(sql.col("apns_token")) = NULL, \(sql.col("token_updated_at")) = NULL,
                    \(sql.col("updated_at")) = $1
                WHERE \(sql.col("apns_token")) = $2
                    AND (\(sql.col("token_updated_at")) IS NULL OR \(sql.col("token_updated_at")) <= $3)
                RETURNING 1
                """
            return try await collect(c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger)).count
        }
    }

    public func revoke(deviceID: String, tenant: String, at: Date) async throws {
        let count = try await withConnection(retryOnLostConnection: false) { [sql, logger] c in
            var binds = PostgresBindings()
            binds.append(Enrollment.wholeSeconds(at))
            binds.append(tenant)
            binds.append(deviceID)
            let g = sql.col("generation")
            let q = """
                UPDATE \(sql.table) SET \(sql.col("status")) = 'revoked', \(g) = LEAST(\(g), 2147483646) + 1,
                    \(sql.col("updated_at")) = $1
                WHERE \(sql.col("tenant_slug")) = $2 AND \(sql.col("device_id")) = $3 RETURNING 1
                """
            return try await collect(c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger)).count
        }
        if count == 0 { throw enrollmentNotFound(deviceID, tenant) }
    }

    public func all() async throws -> [Enrollment] { try await select("true", []) }

    // MARK: - Plans

    /// A lookup whose query plan ``explain(_:)`` shows.
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
        return try await withConnection(retryOnLostConnection: true) { [sql, logger] c in
            var binds = PostgresBindings()
            for v in values { binds.append(v) }
            let q = "EXPLAIN (FORMAT JSON\(analyze ? ", ANALYZE" : "")) \(sql.selectQuery(where: clause))"
            let rows = try await collect(c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger))
            return try rows.map { try $0.makeRandomAccess()[0].decode(String.self) }.joined(separator: "\n")
        }
    }

    // MARK: - Connections, transactions, errors

    private func select(_ clause: String, _ values: [String]) async throws -> [Enrollment] {
        try await withConnection(retryOnLostConnection: true) { [sql, logger] c in
            try await sql.select(where: clause, values, on: c, logger: logger)
        }
    }

    /// Runs `body` in one transaction (commits, or rolls back and rethrows).
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        try await withConnection(retryOnLostConnection: false) { [logger] c in
            try await c.query("BEGIN", logger: logger)
            do {
                let result = try await body(c)
                try await c.query("COMMIT", logger: logger)
                return result
            } catch {
                _ = try? await c.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// Leases a pooled connection (waiting at most the URL's connect_timeout), runs `body`, and maps the
    /// database's errors to KKPushError. A read (`retryOnLostConnection`) whose connection was lost is run once
    /// more: after the server restarted, the pool may still hand out a connection the server closed.
    private func withConnection<T: Sendable>(
        retryOnLostConnection: Bool, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try gate.enter(url: url)
        defer { gate.leave() }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await leaseWithDeadline(body)
            } catch {
                if retryOnLostConnection, attempt == 1, Self.isLostConnection(error) { continue }
                if error is EnrollmentExistsError || error is CancellationError { throw error }
                throw Self.mapError(error, url: url) ?? error
            }
        }
    }

    /// Runs `body` on a pooled connection; if none is leased within connect_timeout (the server was down and the
    /// pool is waiting before its next attempt, or every connection is busy), on a connection of its own, opened
    /// directly: its error (connection refused, ...) is the request's. `body` runs once, on whichever comes
    /// first.
    private func leaseWithDeadline<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let claimed = Flag()
        let client = self.client
        let url = self.url
        let logger = self.logger
        let readOnly = self.readOnly
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                var ran = false
                do {
                    return try await client.withConnection { c in
                        guard claimed.claim() else { throw CancellationError() }
                        ran = true
                        return try await body(c)
                    }
                } catch  where !ran && !(error is CancellationError) {
                    // The pool gave up at once (its circuit breaker is open after a long outage): a connection of
                    // our own, which succeeds as soon as the server is back.
                    guard claimed.claim() else { return nil }
                    return try await Self.withDirectConnection(url: url, readOnly: readOnly, logger: logger) { c in
                        try await body(c)
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: url.connectTimeout)
                guard claimed.claim() else { return nil }
                return try await Self.withDirectConnection(url: url, readOnly: readOnly, logger: logger) { c in
                    try await body(c)
                }
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    /// Opens one connection outside the pool (bounded by connect_timeout), runs `body`, closes it.
    static func withDirectConnection<T: Sendable>(
        url: PostgresURL, readOnly: Bool, logger: Logger, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: try connectionTLS(url))
        configuration.options.connectTimeout = .seconds(url.connectTimeout.components.seconds)
        configuration.options.additionalStartupParameters = startupParameters(readOnly: readOnly)
        if url.sslMode == .verifyFull { configuration.options.tlsServerName = url.host }
        let connection: PostgresConnection
        let fixed = configuration
        do {
            connection = try await withDeadline(url.connectTimeout, url: url) {
                try await PostgresConnection.connect(configuration: fixed, id: 1, logger: quiet)
            }
        } catch let e as KKPushError {
            throw e
        } catch {
            throw mapError(error, url: url) ?? error
        }
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            if error is KKPushError { throw error }
            throw mapError(error, url: url) ?? error
        }
    }

    /// `body`, or `store-unreachable` if it takes longer than `limit` (a server that accepts TCP and never
    /// answers).
    static func withDeadline<T: Sendable>(
        _ limit: Duration, url: PostgresURL, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit + .milliseconds(500))
                throw KKPushError(
                    code: .storeUnreachable,
                    message:
                        "The database server \(url.endpoint) (\(url.redacted)) did not complete a connection within \(limit.components.seconds) s.",
                    fix: "Check that PostgreSQL runs there and that sslmode=\(url.sslMode.rawValue) suits it.")
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw CancellationError()
        }
    }

    static func startupParameters(readOnly: Bool) -> [(String, String)] {
        var parameters = [("TimeZone", "UTC"), ("application_name", "kkpush")]
        if readOnly { parameters.append(("default_transaction_read_only", "on")) }
        return parameters
    }

    static func tlsConfiguration(_ url: PostgresURL) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if url.sslMode != .verifyFull { tls.certificateVerification = .none }
        return tls
    }

    static func clientTLS(_ url: PostgresURL) -> PostgresClient.Configuration.TLS {
        switch url.sslMode {
        case .disable: .disable
        case .prefer: .prefer(tlsConfiguration(url))
        case .require, .verifyFull: .require(tlsConfiguration(url))
        }
    }

    static func connectionTLS(_ url: PostgresURL) throws -> PostgresConnection.Configuration.TLS {
        if url.sslMode == .disable { return .disable }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tlsConfiguration(url))
        } catch {
            throw KKPushError(
                code: .storeUnreachable, message: "Cannot set up TLS for \(url.redacted).",
                underlying: KKPushError.Cause(String(describing: error)))
        }
        return url.sslMode == .prefer ? .prefer(context) : .require(context)
    }

    /// Whether `error` means the connection went away under the query (worth one more try for a read).
    static func isLostConnection(_ error: any Error) -> Bool {
        guard let e = error as? PSQLError else { return false }
        if [.serverClosedConnection, .uncleanShutdown, .connectionError].contains(e.code) { return true }
        // 57P01 admin_shutdown: the server terminated the session (a restart).
        return e.serverInfo?[.sqlState] == "57P01"
    }

    /// A database error as KKPushError with a stable code (nil: not the database's): `store-unreachable`
    /// (host:port and the reason; the password masked), `store-auth-failed`, `store-database-missing`,
    /// `store-not-migrated`, `store-schema-mismatch`, `store-read-only`, `store-query-failed`.
    public static func mapError(_ error: any Error, url: PostgresURL?) -> KKPushError? {
        let name = url?.redacted ?? "the PostgreSQL database"
        let endpoint = url?.endpoint ?? "the server"
        let migrate = "kkpush backend migrate --db '\(url?.redacted ?? "postgres://...")'"
        if let e = error as? KKPushError { return e }
        // postgres-nio's pool throws its ConnectionPoolError (of an underscored module) as it is.
        let poolError = String(reflecting: error)
        if String(describing: type(of: error)) == "ConnectionPoolError" {
            if poolError.contains("connectionCreationCircuitBreakerTripped") {
                return KKPushError(
                    code: .storeUnreachable,
                    message: "The database server \(endpoint) has refused new connections for a while (\(name)).",
                    fix: "Check that PostgreSQL runs at \(endpoint); kkpush reconnects by itself once it is back.")
            }
            if poolError.contains("poolShutdown") {
                return KKPushError(
                    code: .storeClosed, message: "The enrollment database \(name) is already closed.",
                    fix: "Open the store again.")
            }
            return nil
        }
        if let e = error as? PostgresDecodingError {
            return KKPushError(
                code: .storeRowInvalid,
                message:
                    "A row of \(name) has a column '\(e.columnName)' of type \(e.postgresType) that kkpush cannot read (\(e.code)).",
                fix: "Check the column's type (README: PostgreSQL columns), or map another column with --schema-map.")
        }
        guard let e = error as? PSQLError else { return nil }
        switch e.code {
        case .server:
            let state = e.serverInfo?[.sqlState] ?? "?"
            let text = e.serverInfo?[.message] ?? "error"
            let detail = e.serverInfo?[.detail].map { " \($0)" } ?? ""
            let cause = KKPushError.Cause("SQLSTATE \(state): \(text)\(detail)")
            switch state {
            case "25006":
                return KKPushError(
                    code: .storeReadOnly,
                    message: "The database \(name) is open read-only here; a write was refused (\(text)).",
                    fix: "Reads only: diagnose never writes. Write with kkpush backend import/enroll instead.",
                    underlying: cause)
            case "28P01", "28000":
                return KKPushError(
                    code: .storeAuthFailed,
                    message:
                        "The database server \(endpoint) refused the login of user '\(url?.user ?? "?")': \(text).",
                    fix: "Check the user and password in the URL (and the server's pg_hba.conf).", underlying: cause)
            case "3D000":
                return KKPushError(
                    code: .storeDatabaseMissing,
                    message: "The database server \(endpoint) has no database '\(url?.database ?? "?")': \(text).",
                    fix: "Create it (createdb \(url?.database ?? "NAME")), or check the path of the URL.",
                    underlying: cause)
            case "42P01":
                return KKPushError(
                    code: .storeNotMigrated, message: "The enrollment table is missing in \(name): \(text).",
                    fix: "Run \(migrate) first (it creates public.device_enrollments).", underlying: cause)
            case "42703", "42P10", "42804", "42883":
                return KKPushError(
                    code: .storeSchemaMismatch,
                    message:
                        "The enrollment table in \(name) does not have the columns or constraints kkpush needs: \(text).",
                    fix:
                        "Run \(migrate) for kkpush's table; for another table, map its columns with --schema-map (README: PostgreSQL).",
                    underlying: cause)
            case let s where s.hasPrefix("57P") || s.hasPrefix("08"):
                return KKPushError(
                    code: .storeUnreachable,
                    message: "The database server \(endpoint) is not available (\(name)): \(text).",
                    fix: "Wait until PostgreSQL has started; kkpush reconnects by itself.", underlying: cause)
            default:
                return KKPushError(
                    code: .storeQueryFailed,
                    message: "The database \(name) failed a query: \(text) (SQLSTATE \(state)).",
                    fix: "Check the server's log for the statement; README: PostgreSQL lists the table kkpush expects.",
                    underlying: cause)
            }
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection:
            let reason = e.underlying.map { describeConnectionError($0) } ?? "\(e.code)"
            return KKPushError(
                code: .storeUnreachable,
                message: "Cannot reach the database server \(endpoint) (\(name)): \(reason).",
                fix:
                    "Check that PostgreSQL runs at \(endpoint) and accepts TCP connections; kkpush reconnects by itself once it is back.",
                underlying: KKPushError.Cause(String(describing: e.code)))
        case .sslUnsupported:
            return KKPushError(
                code: .storeUnreachable,
                message: "The database server \(endpoint) does not offer TLS, and the URL asks for it (\(name)).",
                fix: "Use sslmode=disable for a server on this machine, or enable ssl on the server.")
        case .poolClosed:
            return KKPushError(
                code: .storeClosed, message: "The enrollment database \(name) is already closed.",
                fix: "Open the store again.")
        case .authMechanismRequiresPassword:
            return KKPushError(
                code: .storeAuthFailed,
                message: "The database server \(endpoint) asks for a password and the URL has none (\(name)).",
                fix: "Put the password in the URL: postgres://USER:PASSWORD@HOST/DB (percent-encoded).")
        default:
            return KKPushError(
                code: .storeQueryFailed, message: "The database \(name) failed: \(e.code).",
                fix: "Check the server's log.")
        }
    }

    /// "connection refused", "host not found", ... for a connect error.
    static func describeConnectionError(_ error: any Error) -> String {
        let text = String(describing: error)
        let lower = text.lowercased()
        if lower.contains("refused") { return "connection refused (nothing listens there)" }
        if lower.contains("timeout") || lower.contains("timed out") { return "the connection timed out" }
        if lower.contains("resolve") || lower.contains("unknown host") || lower.contains("no address") {
            return "the host name cannot be resolved"
        }
        if lower.contains("reset") || lower.contains("eof") || lower.contains("closed") {
            return "the server closed the connection"
        }
        return text
    }

    /// Checks that the mapped table and every mapped column exist (information_schema), naming what is missing;
    /// `readOnly`, the columns of ``EnrollmentTableMapping/optionalForReading`` may be missing. Returns the
    /// logical columns the table lacks (read as NULL).
    @discardableResult
    static func checkSchema(
        _ connection: PostgresConnection, url: PostgresURL, mapping: EnrollmentTableMapping, readOnly: Bool = false,
        logger: Logger
    ) async throws -> Set<String> {
        var binds = PostgresBindings()
        binds.append(mapping.schema)
        binds.append(mapping.table)
        let rows = try await collect(
            connection.query(
                PostgresQuery(
                    unsafeSQL:
                        "SELECT column_name::text, data_type::text, udt_name::text FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
                    binds: binds), logger: logger))
        let via = mapping.source.map { " (mapped by \($0))" } ?? ""
        if rows.isEmpty {
            if mapping.isStandard {
                throw KKPushError(
                    code: .storeNotMigrated,
                    message: "The database \(url.redacted) has no table public.device_enrollments.",
                    fix:
                        "Run kkpush backend migrate --db '\(url.redacted)' first (it creates the table and its indexes)."
                )
            }
            throw KKPushError(
                code: .storeSchemaMismatch,
                message:
                    "The database \(url.redacted) has no table \(mapping.tableName)\(via), or this user cannot see it.",
                fix: "Check the \"table\" of the schema map (SCHEMA.TABLE) and the user's privileges.")
        }
        var types: [String: (String, String)] = [:]
        for row in rows {
            let r = row.makeRandomAccess()
            types[try r[0].decode(String.self)] = (try r[1].decode(String.self), try r[2].decode(String.self))
        }
        let absent = EnrollmentTableMapping.logicalColumns.filter { types[mapping.column($0)] == nil }
        let missing = absent.filter { !readOnly || !EnrollmentTableMapping.optionalForReading.contains($0) }
        if !missing.isEmpty {
            let names = missing.map { mapping.column($0) == $0 ? $0 : "\($0) (as \(mapping.column($0)))" }
            let onlyAdded = Set(missing).isSubset(of: addedColumns.map(\.name))
            let aps =
                missing.contains("aps_environment")
                ? " aps_environment holds what the app is signed for (README: token update); a table without it can only be read (diagnose, token verify, export): add it (ALTER TABLE \(mapping.qualifiedTable) ADD COLUMN \(mapping.quoted("aps_environment")) text) to write."
                : ""
            throw KKPushError(
                code: mapping.isStandard ? "store-not-migrated" : "store-schema-mismatch",
                message:
                    "The table \(mapping.tableName) in \(url.redacted)\(via) has no column \(names.joined(separator: ", ")).",
                fix: mapping.isStandard
                    ? (onlyAdded
                        ? "Run kkpush backend migrate --db '\(url.redacted)': it adds \(missing.joined(separator: ", ")) to the table."
                        : "Run kkpush backend migrate --db '\(url.redacted)' (an older table gets no new columns by itself: add them, README: PostgreSQL).")
                    : "Map each to the table's column in the schema map's \"columns\" (kkpush name: their name).\(aps)")
        }
        var wrong: [String] = []
        for logical in EnrollmentTableMapping.logicalColumns {
            guard let (dataType, udt) = types[mapping.column(logical)] else { continue }
            let expected = EnrollmentSQL.expectedTypes[logical] ?? []
            if !expected.contains(udt) {
                wrong.append(
                    "\(mapping.column(logical)) is \(dataType == "ARRAY" ? udt : dataType), expected \(EnrollmentSQL.expectedDescription[logical] ?? "?")"
                )
            }
        }
        if !wrong.isEmpty {
            throw KKPushError(
                code: .storeSchemaMismatch,
                message:
                    "The table \(mapping.tableName) in \(url.redacted)\(via) has columns of other types: \(wrong.joined(separator: "; ")).",
                fix: "Change the column types (README: PostgreSQL columns), or map other columns.")
        }
        return Set(absent)
    }
}

/// The rows of a query.
func collect(_ sequence: PostgresRowSequence) async throws -> [PostgresRow] {
    var rows: [PostgresRow] = []
    for try await row in sequence { rows.append(row) }
    return rows
}

/// The SQL of one mapping: names quoted once, the select list, the lookups' WHERE clauses.
struct EnrollmentSQL: Sendable {
    let mapping: EnrollmentTableMapping
    let table: String
    let selectList: String
    /// The logical columns the table lacks (only those of ``EnrollmentTableMapping/optionalForReading``, for a
    /// read-only store): selected as NULL, never written.
    let absent: Set<String>

    /// The columns a row of ``selectList`` has, in order: every logical column but `token_updated_at`.
    static let selectedColumns = EnrollmentTableMapping.logicalColumns.filter { $0 != "token_updated_at" }

    init(_ mapping: EnrollmentTableMapping, absent: Set<String> = []) {
        self.mapping = mapping
        self.table = mapping.qualifiedTable
        self.absent = absent
        self.selectList = Self.selectedColumns.map { logical in
            if absent.contains(logical) { return "NULL::text" }
            let c = mapping.quoted(logical)
            return ["role", "status"].contains(logical) ? "\(c)::text" : c
        }.joined(separator: ", ")
    }

    /// Whether the table has the logical column.
    func has(_ logical: String) -> Bool { !absent.contains(logical) }

    /// The PostgreSQL types (udt_name) each column may have.
    static let expectedTypes: [String: Set<String>] = {
        // Types whose values bind from text and decode to String (and lower() takes); not uuid, citext or an
        // enum type: a text parameter does not convert to them.
        let text: Set<String> = ["text", "varchar", "bpchar"]
        var t: [String: Set<String>] = [:]
        for c in EnrollmentTableMapping.logicalColumns { t[c] = text }
        t["role"] = text
        t["team_codes"] = ["_text"]
        t["is_test_user"] = ["bool"]
        t["updated_at"] = ["timestamptz", "timestamp"]
        t["token_updated_at"] = ["timestamptz", "timestamp"]
        t["generation"] = ["int4", "int8", "int2"]
        return t
    }()

    static let expectedDescription: [String: String] = {
        var d: [String: String] = [:]
        for c in EnrollmentTableMapping.logicalColumns { d[c] = "text (or varchar, char)" }
        d["team_codes"] = "text[]"
        d["is_test_user"] = "boolean"
        d["updated_at"] = "timestamptz (or timestamp)"
        d["token_updated_at"] = "timestamptz (or timestamp)"
        d["generation"] = "integer (or bigint, smallint)"
        return d
    }()

    func col(_ logical: String) -> String { mapping.quoted(logical) }

    var hardwareWhere: String { "lower(\(col("hardware_identifier"))) = lower($1)" }
    var emailWhere: String { "lower(\(col("team_manager_email"))) = lower($1)" }
    var fanOutWhere: String {
        "\(col("tenant_slug")) = $1 AND \(col("status")) = 'active' AND \(col("team_codes")) @> ARRAY[$2]::text[]"
    }

    func selectQuery(where clause: String) -> String {
        "SELECT \(selectList) FROM \(table) WHERE \(clause) ORDER BY \(col("tenant_slug")) COLLATE \"C\", \(col("device_id")) COLLATE \"C\""
    }

    func select(where clause: String, _ values: [String], on c: PostgresConnection, logger: Logger) async throws
        -> [Enrollment]
    {
        var binds = PostgresBindings()
        for v in values { binds.append(v) }
        let q: String
        if clause.hasSuffix("FOR UPDATE") {
            q = "SELECT \(selectList) FROM \(table) WHERE \(clause)"
        } else {
            q = selectQuery(where: clause)
        }
        return try await collect(c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger)).map(
            enrollment(from:))
    }

    /// `date` as whole milliseconds since 1970, as a Date (how `token_updated_at` and 410 timestamps compare).
    static func milliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(SQLiteEnrollmentStore.milliseconds(date)) / 1000)
    }

    /// Inserts or replaces one enrollment: the generation never goes down, the token's registration time is kept
    /// if the token is unchanged.
    func write(_ e: Enrollment, on c: PostgresConnection, logger: Logger) async throws {
        // In the order of EnrollmentTableMapping.logicalColumns.
        var binds = PostgresBindings()
        binds.append(e.deviceID)
        binds.append(e.tenantSlug)
        binds.append(e.teamCodes)
        binds.append(e.role.rawValue)
        binds.append(e.hardwareIdentifier)
        binds.append(e.apnsToken)
        binds.append(e.buildEnvironment)
        binds.append(e.appVersion)
        binds.append(e.isTestUser)
        binds.append(e.status.rawValue)
        binds.append(e.teamManagerEmail)
        binds.append(e.updatedAt)
        binds.append(e.generation)
        binds.append(e.apnsToken == nil ? nil : Self.milliseconds(e.updatedAt))
        if has("aps_environment") { binds.append(e.apsEnvironment) }
        let columns = EnrollmentTableMapping.logicalColumns.filter(has)
        let updated = columns.filter { !["device_id", "tenant_slug", "generation", "token_updated_at"].contains($0) }
            .map { "\(col($0)) = EXCLUDED.\(col($0))" }
        let g = col("generation")
        let token = col("apns_token")
        let tokenTime = col("token_updated_at")
        let q = """
            INSERT INTO \(table) AS e (\(columns.map(col).joined(separator: ", ")))
            VALUES (\((1...columns.count).map { "$\($0)" }.joined(separator: ", ")))
            ON CONFLICT (\(col("tenant_slug")), \(col("device_id"))) DO UPDATE SET
                \(updated.joined(separator: ", ")),
                \(g) = GREATEST(e.\(g), EXCLUDED.\(g)),
                \(tokenTime) = CASE WHEN e.\(token) IS NOT DISTINCT FROM EXCLUDED.\(token)
                    THEN e.\(tokenTime) ELSE EXCLUDED.\(tokenTime) END
            """
        try await c.query(PostgresQuery(unsafeSQL: q, binds: binds), logger: logger)
    }

    /// A row of ``selectList`` as an enrollment.
    func enrollment(from row: PostgresRow) throws -> Enrollment {
        let r = row.makeRandomAccess()
        guard let role = EnrollmentRole(rawValue: try r[3].decode(String.self)),
            let status = EnrollmentStatus(rawValue: try r[9].decode(String.self))
        else {
            throw KKPushError(
                code: .storeRowInvalid,
                message:
                    "A \(mapping.tableName) row has a role or status kkpush does not know (role: \((try? r[3].decode(String.self)) ?? "?"), status: \((try? r[9].decode(String.self)) ?? "?")).",
                fix: "role is manager or member; status is active or revoked.")
        }
        return Enrollment(
            deviceID: try r[0].decode(String.self), tenantSlug: try r[1].decode(String.self),
            teamCodes: try r[2].decode([String].self), role: role,
            hardwareIdentifier: try r[4].decode(String.self), apnsToken: try r[5].decode(String?.self),
            buildEnvironment: try r[6].decode(String?.self), apsEnvironment: try r[13].decode(String?.self),
            appVersion: try r[7].decode(String?.self), isTestUser: try r[8].decode(Bool?.self) ?? false,
            status: status, teamManagerEmail: try r[10].decode(String?.self), updatedAt: try r[11].decode(Date.self),
            generation: try r[12].decode(Int?.self) ?? 1)
    }
}

/// A flag claimed once, by the first of several tasks.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// True for the first caller only.
    func claim() -> Bool {
        lock.withLock {
            if value { return false }
            value = true
            return true
        }
    }
}

/// Counts operations in flight so that `close()` waits for them, and refuses new ones after it.
final class OperationGate: @unchecked Sendable {
    private let lock = NSLock()
    private var closed = false
    private var inFlight = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter(url: PostgresURL) throws {
        let ok = lock.withLock { () -> Bool in
            if closed { return false }
            inFlight += 1
            return true
        }
        if !ok {
            throw KKPushError(
                code: .storeClosed, message: "The enrollment database \(url.redacted) is already closed.",
                fix: "Open the store again (PostgresEnrollmentStore.open) for more queries.")
        }
    }

    func leave() {
        let resume = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            inFlight -= 1
            guard inFlight == 0 else { return [] }
            defer { waiting.removeAll() }
            return waiting
        }
        for c in resume { c.resume() }
    }

    func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                closed = true
                if inFlight == 0 { return true }
                waiting.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}
