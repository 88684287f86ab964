package import KKPushCore

// The error codes only KKPushDiagnosis throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.

extension KKPushError.Code {
    /// `token-prune-input-malformed` (KKPushDiagnosis): a file of APNs' answers holds none (not send-batch's results).
    package static let tokenPruneInputMalformed = Self("token-prune-input-malformed", kind: .input)
    /// `audit-state` (KKPushDiagnosis)
    package static let auditState = Self("audit-state", kind: .input)
    /// `delivery-record-shape` (KKPushDiagnosis): a delivery record that is not the mock's delivery-log JSON.
    package static let deliveryRecordShape = Self("delivery-record-shape", kind: .input)
    /// `receipts-shape` (KKPushDiagnosis): a receipts file that is not the backend's receipt listing or receipt lines.
    package static let receiptsShape = Self("receipts-shape", kind: .input)
}
