package import KKPushCore

// The error codes only KKPushQueue throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `queue-not-migrated` (KKPushQueue): the queue table is missing.
    package static let queueNotMigrated: Self = "queue-not-migrated"
    /// `queue-row-invalid` (KKPushQueue): a row the worker cannot read.
    package static let queueRowInvalid: Self = "queue-row-invalid"
    /// `queue-schema-newer` (KKPushQueue): the database's queue schema is newer than this kkpush.
    package static let queueSchemaNewer: Self = "queue-schema-newer"
}
