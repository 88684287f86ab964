package import KKPushCore

// The error codes only KKPushSimulator throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `diensten-unreadable` (KKPushSimulator)
    package static let dienstenUnreadable = Self("diensten-unreadable", kind: .input)
    /// `simulate-backend-answer` (KKPushSimulator)
    package static let simulateBackendAnswer = Self("simulate-backend-answer", kind: .failed)
    /// `simulate-backend-host` (KKPushSimulator)
    package static let simulateBackendHost = Self("simulate-backend-host", kind: .usage)
    /// `simulate-backend-refused` (KKPushSimulator)
    package static let simulateBackendRefused = Self("simulate-backend-refused", kind: .failed)
    /// `simulate-backend-timeout` (KKPushSimulator)
    package static let simulateBackendTimeout = Self("simulate-backend-timeout", kind: .failed)
    /// `simulate-backend-unreachable` (KKPushSimulator)
    package static let simulateBackendUnreachable = Self("simulate-backend-unreachable", kind: .unavailable)
    /// `simulate-backend-url` (KKPushSimulator)
    package static let simulateBackendUrl = Self("simulate-backend-url", kind: .usage)
    /// `simulate-certificates-missing` (KKPushSimulator)
    package static let simulateCertificatesMissing = Self("simulate-certificates-missing", kind: .input)
    /// `simulate-channel-create-failed` (KKPushSimulator)
    package static let simulateChannelCreateFailed = Self("simulate-channel-create-failed", kind: .failed)
    /// `simulate-devices` (KKPushSimulator)
    package static let simulateDevices = Self("simulate-devices", kind: .usage)
    /// `simulate-no-dienst` (KKPushSimulator)
    package static let simulateNoDienst = Self("simulate-no-dienst", kind: .input)
    /// `simulate-no-push-sender` (KKPushSimulator)
    package static let simulateNoPushSender = Self("simulate-no-push-sender", kind: .failed)
    /// `simulate-request-failed` (KKPushSimulator)
    package static let simulateRequestFailed = Self("simulate-request-failed", kind: .failed)
    /// `simulate-token-update-failed` (KKPushSimulator)
    package static let simulateTokenUpdateFailed = Self("simulate-token-update-failed", kind: .failed)
}
