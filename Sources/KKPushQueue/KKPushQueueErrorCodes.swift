package import KKPushCore

// The error codes only KKPushQueue throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `queue-not-migrated` (KKPushQueue): the queue table is missing.
    package static let queueNotMigrated = Self("queue-not-migrated", kind: .input)
    /// `queue-row-invalid` (KKPushQueue): a row the worker cannot read.
    package static let queueRowInvalid = Self("queue-row-invalid", kind: .input)
    /// `queue-schema-newer` (KKPushQueue): the database's queue schema is newer than this kkpush.
    package static let queueSchemaNewer = Self("queue-schema-newer", kind: .input)
    /// `queue-table-foreign` (KKPushQueue): a table named kkpush_push_queue that the queue's migration did not make.
    package static let queueTableForeign = Self("queue-table-foreign", kind: .input)
    /// `queue-permission-denied` (KKPushQueue): the database user lacks a privilege on the queue's tables.
    package static let queuePermissionDenied = Self("queue-permission-denied", kind: .refused)
    /// `queue-credential-refused` (KKPushQueue): APNs refused the worker's credential for pushes in a row (exit 77).
    package static let queueCredentialRefused = Self("queue-credential-refused", kind: .refused)
    /// `queue-push-invalid` (KKPushQueue, thrown by its command line): a push to enqueue that APNs would reject.
    package static let queuePushInvalid = Self("queue-push-invalid", kind: .input)
    /// `queue-token-invalid` (KKPushQueue): a line of a token file to enqueue that is not a hex token.
    package static let queueTokenInvalid = Self("queue-token-invalid", kind: .input)
    /// `queue-receipt-invalid` (KKPushQueue): a receipt to record that names no push, or a push id without its token.
    package static let queueReceiptInvalid = Self("queue-receipt-invalid", kind: .input)
    /// `ledger-invalid` (KKPushQueue): a line of a send-batch ledger (its result lines) that cannot be read.
    package static let ledgerInvalid = Self("ledger-invalid", kind: .input)
    /// `queue-time-invalid` (KKPushQueue): a send time or time zone to schedule a push that cannot be read.
    package static let queueTimeInvalid = Self("queue-time-invalid", kind: .input)
    /// `queue-quiet-hours-invalid` (KKPushQueue): a quiet window that is not ZONE=HH:MM-HH:MM.
    package static let queueQuietHoursInvalid = Self("queue-quiet-hours-invalid", kind: .input)
    /// `queue-rate-invalid` (KKPushQueue): a send rate or device cap that cannot be read.
    package static let queueRateInvalid = Self("queue-rate-invalid", kind: .input)
}
