public import KKPushCore

// The error codes only KKPushBackend throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `backend-bind-failed` (KKPushBackend)
    public static let backendBindFailed: Self = "backend-bind-failed"
    /// `backend-not-loopback` (KKPushBackend)
    public static let backendNotLoopback: Self = "backend-not-loopback"
    /// `backend-port` (KKPushBackend)
    public static let backendPort: Self = "backend-port"
    /// `enrollment-invalid` (KKPushBackend)
    public static let enrollmentInvalid: Self = "enrollment-invalid"
    /// `enrollments-json-invalid` (KKPushBackend)
    public static let enrollmentsJsonInvalid: Self = "enrollments-json-invalid"
    /// `jwt-bad-signature` (KKPushBackend)
    public static let jwtBadSignature: Self = "jwt-bad-signature"
    /// `jwt-expired` (KKPushBackend)
    public static let jwtExpired: Self = "jwt-expired"
    /// `jwt-lifetime` (KKPushBackend)
    public static let jwtLifetime: Self = "jwt-lifetime"
    /// `jwt-malformed` (KKPushBackend)
    public static let jwtMalformed: Self = "jwt-malformed"
    /// `jwt-not-yet-valid` (KKPushBackend)
    public static let jwtNotYetValid: Self = "jwt-not-yet-valid"
    /// `jwt-secret-empty` (KKPushBackend)
    public static let jwtSecretEmpty: Self = "jwt-secret-empty"
    /// `jwt-secret-short` (KKPushBackend)
    public static let jwtSecretShort: Self = "jwt-secret-short"
    /// `jwt-unsupported-alg` (KKPushBackend)
    public static let jwtUnsupportedAlg: Self = "jwt-unsupported-alg"
    /// `jwt-wrong-tenant` (KKPushBackend)
    public static let jwtWrongTenant: Self = "jwt-wrong-tenant"
    /// `schema-map-invalid` (KKPushBackend)
    public static let schemaMapInvalid: Self = "schema-map-invalid"
    /// `schema-map-sqlite` (KKPushBackend): a table mapping given with an SQLite store.
    public static let schemaMapSQLite: Self = "schema-map-sqlite"
    /// `schema-map-unreadable` (KKPushBackend)
    public static let schemaMapUnreadable: Self = "schema-map-unreadable"
    /// `store-auth-failed` (KKPushBackend)
    public static let storeAuthFailed: Self = "store-auth-failed"
    /// `store-closed` (KKPushBackend)
    public static let storeClosed: Self = "store-closed"
    /// `store-database-missing` (KKPushBackend)
    public static let storeDatabaseMissing: Self = "store-database-missing"
    /// `store-not-migrated` (KKPushBackend)
    public static let storeNotMigrated: Self = "store-not-migrated"
    /// `store-open-failed` (KKPushBackend)
    public static let storeOpenFailed: Self = "store-open-failed"
    /// `store-query-failed` (KKPushBackend)
    public static let storeQueryFailed: Self = "store-query-failed"
    /// `store-read-only` (KKPushBackend)
    public static let storeReadOnly: Self = "store-read-only"
    /// `store-row-invalid` (KKPushBackend)
    public static let storeRowInvalid: Self = "store-row-invalid"
    /// `store-schema-mismatch` (KKPushBackend)
    public static let storeSchemaMismatch: Self = "store-schema-mismatch"
    /// `store-unreachable` (KKPushBackend)
    public static let storeUnreachable: Self = "store-unreachable"
    /// `store-url-invalid` (KKPushBackend)
    public static let storeUrlInvalid: Self = "store-url-invalid"
}
