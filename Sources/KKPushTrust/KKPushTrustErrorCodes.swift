package import KKPushCore

// The error codes only KKPushTrust throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `trust-connect` (KKPushTrust): no TCP connection to the host (name not resolved, refused, timed out).
    package static let trustConnect = Self("trust-connect", kind: .unavailable)
    /// `trust-handshake` (KKPushTrust): connected, but no TLS handshake (not TLS, no common version or cipher).
    package static let trustHandshake = Self("trust-handshake", kind: .unavailable)
    /// `trust-anchors-unreadable` (KKPushTrust): the CA file or folder given holds no certificate OpenSSL reads.
    package static let trustAnchorsUnreadable = Self("trust-anchors-unreadable", kind: .input)
    /// `trust-system-bundle-missing` (KKPushTrust): no system CA bundle was found.
    package static let trustSystemBundleMissing = Self("trust-system-bundle-missing", kind: .input)
    /// `trust-pin-invalid` (KKPushTrust): a pin that is not a SHA-256 hash (64 hex digits or 44 base64 characters).
    package static let trustPinInvalid = Self("trust-pin-invalid", kind: .input)
    /// `trust-host-invalid` (KKPushTrust): a host or port the check cannot connect to as given.
    package static let trustHostInvalid = Self("trust-host-invalid", kind: .input)
    /// `trust-chain-issue-failed` (KKPushTrust): OpenSSL could not make a stand-in chain's key or certificate.
    package static let trustChainIssueFailed = Self("trust-chain-issue-failed", kind: .failed)
}
