public import KKPushCore

// The error codes only KKPushSimulator throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `diensten-unreadable` (KKPushSimulator)
    public static let dienstenUnreadable: Self = "diensten-unreadable"
    /// `simulate-backend-answer` (KKPushSimulator)
    public static let simulateBackendAnswer: Self = "simulate-backend-answer"
    /// `simulate-backend-host` (KKPushSimulator)
    public static let simulateBackendHost: Self = "simulate-backend-host"
    /// `simulate-backend-refused` (KKPushSimulator)
    public static let simulateBackendRefused: Self = "simulate-backend-refused"
    /// `simulate-backend-timeout` (KKPushSimulator)
    public static let simulateBackendTimeout: Self = "simulate-backend-timeout"
    /// `simulate-backend-unreachable` (KKPushSimulator)
    public static let simulateBackendUnreachable: Self = "simulate-backend-unreachable"
    /// `simulate-backend-url` (KKPushSimulator)
    public static let simulateBackendUrl: Self = "simulate-backend-url"
    /// `simulate-certificates-missing` (KKPushSimulator)
    public static let simulateCertificatesMissing: Self = "simulate-certificates-missing"
    /// `simulate-channel-create-failed` (KKPushSimulator)
    public static let simulateChannelCreateFailed: Self = "simulate-channel-create-failed"
    /// `simulate-devices` (KKPushSimulator)
    public static let simulateDevices: Self = "simulate-devices"
    /// `simulate-no-dienst` (KKPushSimulator)
    public static let simulateNoDienst: Self = "simulate-no-dienst"
    /// `simulate-no-push-sender` (KKPushSimulator)
    public static let simulateNoPushSender: Self = "simulate-no-push-sender"
    /// `simulate-request-failed` (KKPushSimulator)
    public static let simulateRequestFailed: Self = "simulate-request-failed"
    /// `simulate-token-update-failed` (KKPushSimulator)
    public static let simulateTokenUpdateFailed: Self = "simulate-token-update-failed"
}
