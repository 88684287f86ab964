public import KKPushCore

// The error codes only KKPushStore throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `enrollment-invalid` (KKPushStore)
    public static let enrollmentInvalid = Self("enrollment-invalid", kind: .input)
    /// `enrollments-json-invalid` (KKPushStore)
    public static let enrollmentsJsonInvalid = Self("enrollments-json-invalid", kind: .input)
    /// `schema-map-invalid` (KKPushStore)
    public static let schemaMapInvalid = Self("schema-map-invalid", kind: .input)
    /// `schema-map-sqlite` (KKPushStore): a table mapping given with an SQLite store.
    public static let schemaMapSQLite = Self("schema-map-sqlite", kind: .usage)
    /// `schema-map-unreadable` (KKPushStore)
    public static let schemaMapUnreadable = Self("schema-map-unreadable", kind: .input)
    /// `store-auth-failed` (KKPushStore)
    public static let storeAuthFailed = Self("store-auth-failed", kind: .refused)
    /// `store-closed` (KKPushStore)
    public static let storeClosed = Self("store-closed", kind: .failed)
    /// `store-database-missing` (KKPushStore)
    public static let storeDatabaseMissing = Self("store-database-missing", kind: .input)
    /// `store-not-migrated` (KKPushStore)
    public static let storeNotMigrated = Self("store-not-migrated", kind: .input)
    /// `store-open-failed` (KKPushStore)
    public static let storeOpenFailed = Self("store-open-failed", kind: .input)
    /// `store-query-failed` (KKPushStore)
    public static let storeQueryFailed = Self("store-query-failed", kind: .input)
    /// `store-read-only` (KKPushStore)
    public static let storeReadOnly = Self("store-read-only", kind: .input)
    /// `store-row-invalid` (KKPushStore)
    public static let storeRowInvalid = Self("store-row-invalid", kind: .input)
    /// `store-schema-mismatch` (KKPushStore)
    public static let storeSchemaMismatch = Self("store-schema-mismatch", kind: .input)
    /// `store-unreachable` (KKPushStore)
    public static let storeUnreachable = Self("store-unreachable", kind: .unavailable)
    /// `store-url-invalid` (KKPushStore)
    public static let storeUrlInvalid = Self("store-url-invalid", kind: .usage)
}
