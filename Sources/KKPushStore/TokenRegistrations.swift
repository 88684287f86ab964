public import Foundation
import KKPushCore

/// One stored enrollment's APNs token and when it was registered, as `token prune` reads it.
public struct RegisteredToken: Sendable, Hashable {
    /// The tenant (club).
    public var tenantSlug: String
    /// The enrollment's device id (unique per tenant).
    public var deviceID: String
    /// The APNs token as stored.
    public var token: String
    /// The enrollment's status as stored (`active`, `revoked`, or what the table holds).
    public var status: String
    /// When the token was registered, to the millisecond (rounded down); nil when the row holds no time for it.
    public var registeredAt: Date?
    /// The column that time came from: `token_updated_at`, or `updated_at` (a table without `token_updated_at`,
    /// or a row where it is NULL).
    public var registeredColumn: String

    /// Creates a row.
    public init(
        tenantSlug: String, deviceID: String, token: String, status: String, registeredAt: Date?,
        registeredColumn: String
    ) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
        self.token = token
        self.status = status
        self.registeredAt = registeredAt
        self.registeredColumn = registeredColumn
    }
}

/// One guarded clear: the row (tenant and device id), the token it must still hold, and the time its token must
/// have been registered before (whole seconds: the evidence's time rounded down).
public struct GuardedTokenClear: Sendable, Hashable {
    /// The tenant (club).
    public var tenantSlug: String
    /// The enrollment's device id.
    public var deviceID: String
    /// The token the row must still hold.
    public var token: String
    /// The row is cleared only if its token was registered strictly before this time.
    public var registeredBefore: Date
    /// One line said above the statement in the SQL script (the evidence); never holds the whole token.
    public var comment: String

    /// Creates a clear; `registeredBefore` is rounded down to whole seconds.
    public init(tenantSlug: String, deviceID: String, token: String, registeredBefore: Date, comment: String) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
        self.token = token
        self.registeredBefore = TokenRegistrations.wholeSeconds(registeredBefore)
        self.comment = comment
    }
}

/// What ``TokenRegistrations/clear(_:in:mapping:)`` did with each clear.
public struct GuardedClearReport: Sendable {
    /// Why a clear changed nothing.
    public enum Skip: Sendable, Hashable {
        /// No row with this tenant and device id any more.
        case gone
        /// The row holds another token now, or none (cleared already).
        case tokenChanged
        /// The row holds the same token, registered again at or after the evidence's time (nil: unknown time).
        case reRegistered(Date?)
    }

    /// The clears that changed their row.
    public var cleared: [GuardedTokenClear] = []
    /// The clears that changed nothing, with why.
    public var skipped: [(clear: GuardedTokenClear, why: Skip)] = []

    /// An empty report.
    public init() {}
}

/// What the table a prune works on offers.
public struct TokenTable: Sendable {
    /// The store.
    public var location: EnrollmentStoreLocation
    /// The table and its columns (SQLite: kkpush's own names).
    public var mapping: EnrollmentTableMapping
    /// Whether the table has `token_updated_at` (else `updated_at` is the registration time).
    public var hasTokenTime: Bool
}

/// The rows `token prune` reads and the guarded clears it writes, on SQLite and PostgreSQL: a token is cleared
/// (`apns_token` and, where the table has it, `token_updated_at` set to NULL; every other column, `updated_at`
/// among them, left as it is) only where the row still holds that token and the token was registered before the
/// evidence's time, compared in one statement, so a token registered again after Apple's answer is never cleared.
///
/// The registration time is `token_updated_at` where the table has it and the row holds one, else `updated_at`
/// (the real backend's table has no `token_updated_at`; its `updated_at` changes with every change of the row, so
/// the guard is then stricter than Apple's rule, never looser).
public enum TokenRegistrations {
    /// `date` rounded down to whole seconds.
    public static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970).rounded(.down))
    }

    /// Reads every row holding a token, `batchSize` at a time in tenant and device id order (the store opened
    /// read-only: nothing is written), handing each batch to `body`. Returns what the table offers.
    public static func forEach(
        _ location: EnrollmentStoreLocation, mapping: EnrollmentTableMapping?, batchSize: Int,
        _ body: @Sendable ([RegisteredToken]) async throws -> Void
    ) async throws -> TokenTable {
        switch location.kind {
        case .sqlite(let path):
            try EnrollmentStores.refuseMapping(mapping, sqlite: path, location)
            let has = try await SQLiteTokenRegistrations.forEach(path: path, batchSize: batchSize, body)
            return TokenTable(location: location, mapping: .standard, hasTokenTime: has)
        case .postgres(let url):
            let mapping = mapping ?? .standard
            let has = try await PostgresTokenRegistrations.forEach(
                url: url, mapping: mapping, batchSize: batchSize, body)
            return TokenTable(location: location, mapping: mapping, hasTokenTime: has)
        }
    }

    /// Runs every clear in one transaction (a row changes only if it still holds the token, registered before
    /// the clear's time; else the report says why not). Nothing else of the table changes.
    public static func clear(
        _ clears: [GuardedTokenClear], in location: EnrollmentStoreLocation, mapping: EnrollmentTableMapping?
    ) async throws -> GuardedClearReport {
        switch location.kind {
        case .sqlite(let path):
            try EnrollmentStores.refuseMapping(mapping, sqlite: path, location)
            return try await SQLiteTokenRegistrations.clear(clears, path: path)
        case .postgres(let url):
            return try await PostgresTokenRegistrations.clear(clears, url: url, mapping: mapping ?? .standard)
        }
    }

    /// The clears as one SQL script for the table's database (psql or sqlite3), in one transaction, each
    /// statement after its comment: what a reviewer reads, and what ``clear(_:in:mapping:)`` runs.
    public static func script(_ clears: [GuardedTokenClear], table: TokenTable) -> String {
        var out =
            "-- Dead APNs tokens: \(clears.count) guarded clear\(clears.count == 1 ? "" : "s") of \(table.location.display)\n"
        out += "-- Each clears a token only if the row still holds it and it was registered before Apple's answer.\n"
        out += "BEGIN;\n"
        for c in clears {
            out += "\n-- \(oneLine(c.comment))\n"
            switch table.location.kind {
            case .sqlite:
                out +=
                    "UPDATE device_enrollments SET \(SQLiteTokenRegistrations.setClause(table.hasTokenTime)) WHERE tenant_slug = \(literal(c.tenantSlug)) AND device_id = \(literal(c.deviceID)) AND apns_token = \(literal(c.token)) AND \(SQLiteTokenRegistrations.registered(table.hasTokenTime)) < \(SQLiteTokenRegistrations.milliseconds(c.registeredBefore));\n"
            case .postgres:
                let sql = PostgresTokenRegistrations.Columns(mapping: table.mapping, hasTokenTime: table.hasTokenTime)
                out +=
                    "UPDATE \(table.mapping.qualifiedTable) SET \(sql.setClause) WHERE \(sql.col("tenant_slug")) = \(literal(c.tenantSlug)) AND \(sql.col("device_id")) = \(literal(c.deviceID)) AND \(sql.col("apns_token")) = \(literal(c.token)) AND \(sql.registered) < \(literal(PostgresText.timestamp(c.registeredBefore)));\n"
            }
        }
        out += "\nCOMMIT;\n"
        return out
    }

    /// A string as an SQL literal (`'` doubled; a NUL, which neither database stores in text, dropped).
    static func literal(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "''").replacingOccurrences(of: "\u{0}", with: "") + "'"
    }

    /// A comment's text on one line (line breaks and other control characters as spaces).
    static func oneLine(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
    }
}
