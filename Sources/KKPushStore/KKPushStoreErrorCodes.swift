public import KKPushCore

// The error codes only KKPushStore throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `enrollment-invalid` (KKPushStore)
    public static let enrollmentInvalid: Self = "enrollment-invalid"
    /// `enrollments-json-invalid` (KKPushStore)
    public static let enrollmentsJsonInvalid: Self = "enrollments-json-invalid"
    /// `schema-map-invalid` (KKPushStore)
    public static let schemaMapInvalid: Self = "schema-map-invalid"
    /// `schema-map-sqlite` (KKPushStore): a table mapping given with an SQLite store.
    public static let schemaMapSQLite: Self = "schema-map-sqlite"
    /// `schema-map-unreadable` (KKPushStore)
    public static let schemaMapUnreadable: Self = "schema-map-unreadable"
    /// `store-auth-failed` (KKPushStore)
    public static let storeAuthFailed: Self = "store-auth-failed"
    /// `store-closed` (KKPushStore)
    public static let storeClosed: Self = "store-closed"
    /// `store-database-missing` (KKPushStore)
    public static let storeDatabaseMissing: Self = "store-database-missing"
    /// `store-not-migrated` (KKPushStore)
    public static let storeNotMigrated: Self = "store-not-migrated"
    /// `store-open-failed` (KKPushStore)
    public static let storeOpenFailed: Self = "store-open-failed"
    /// `store-query-failed` (KKPushStore)
    public static let storeQueryFailed: Self = "store-query-failed"
    /// `store-read-only` (KKPushStore)
    public static let storeReadOnly: Self = "store-read-only"
    /// `store-row-invalid` (KKPushStore)
    public static let storeRowInvalid: Self = "store-row-invalid"
    /// `store-schema-mismatch` (KKPushStore)
    public static let storeSchemaMismatch: Self = "store-schema-mismatch"
    /// `store-unreachable` (KKPushStore)
    public static let storeUnreachable: Self = "store-unreachable"
    /// `store-url-invalid` (KKPushStore)
    public static let storeUrlInvalid: Self = "store-url-invalid"
}
