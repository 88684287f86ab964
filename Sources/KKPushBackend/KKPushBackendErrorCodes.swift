public import KKPushCore

// The error codes only KKPushBackend throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `backend-bind-failed` (KKPushBackend)
    public static let backendBindFailed = Self("backend-bind-failed", kind: .unavailable)
    /// `backend-not-loopback` (KKPushBackend)
    public static let backendNotLoopback = Self("backend-not-loopback", kind: .usage)
    /// `backend-port` (KKPushBackend)
    public static let backendPort = Self("backend-port", kind: .usage)
    /// `jwt-bad-signature` (KKPushBackend)
    public static let jwtBadSignature = Self("jwt-bad-signature", kind: .verdict)
    /// `jwt-expired` (KKPushBackend)
    public static let jwtExpired = Self("jwt-expired", kind: .verdict)
    /// `jwt-lifetime` (KKPushBackend)
    public static let jwtLifetime = Self("jwt-lifetime", kind: .verdict)
    /// `jwt-malformed` (KKPushBackend)
    public static let jwtMalformed = Self("jwt-malformed", kind: .input)
    /// `jwt-not-yet-valid` (KKPushBackend)
    public static let jwtNotYetValid = Self("jwt-not-yet-valid", kind: .verdict)
    /// `jwt-secret-empty` (KKPushBackend)
    public static let jwtSecretEmpty = Self("jwt-secret-empty", kind: .usage)
    /// `jwt-secret-short` (KKPushBackend)
    public static let jwtSecretShort = Self("jwt-secret-short", kind: .usage)
    /// `jwt-unsupported-alg` (KKPushBackend)
    public static let jwtUnsupportedAlg = Self("jwt-unsupported-alg", kind: .verdict)
    /// `jwt-wrong-tenant` (KKPushBackend)
    public static let jwtWrongTenant = Self("jwt-wrong-tenant", kind: .verdict)
}
