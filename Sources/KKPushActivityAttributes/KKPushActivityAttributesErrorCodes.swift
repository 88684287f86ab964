package import KKPushCore

// The error codes only KKPushActivityAttributes throws, one per line: `kkpush … --json` prints them as
// {"error": {"code": …}}. Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `activity-attributes-source` (KKPushActivityAttributes): Swift source the ActivityAttributes reader cannot read.
    package static let activityAttributesSource = Self("activity-attributes-source", kind: .input)
}
