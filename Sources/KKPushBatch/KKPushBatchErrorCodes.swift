package import KKPushCore

// The error codes only KKPushBatch throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `batch-resume-inconsistent` (KKPushBatch)
    package static let batchResumeInconsistent = Self("batch-resume-inconsistent", kind: .input)
    /// `batch-resume-input-changed` (KKPushBatch)
    package static let batchResumeInputChanged = Self("batch-resume-input-changed", kind: .input)
    /// `batch-resume-malformed` (KKPushBatch)
    package static let batchResumeMalformed = Self("batch-resume-malformed", kind: .input)
    /// `batch-shard-malformed` (KKPushBatch)
    package static let batchShardMalformed = Self("batch-shard-malformed", kind: .input)
    /// `batch-line-malformed` (KKPushBatch)
    package static let batchLineMalformed = Self("batch-line-malformed", kind: .input)
}
