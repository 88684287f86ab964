package import KKPushCore

// The error codes only KKPushBench throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `bench-faults-certificates` (KKPushBench)
    package static let benchFaultsCertificates = Self("bench-faults-certificates", kind: .input)
    /// `bench-faults-key` (KKPushBench)
    package static let benchFaultsKey = Self("bench-faults-key", kind: .input)
    /// `bench-faults-temp` (KKPushBench)
    package static let benchFaultsTemp = Self("bench-faults-temp", kind: .failed)
    /// `openssl-speed-failed` (KKPushBench): the signing benchmark's comparison could not run `openssl speed` or read it.
    package static let opensslSpeedFailed = Self("openssl-speed-failed", kind: .failed)
}
