public import KKPushCore

// The error codes only KKPushAuth throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `cert-issue-ca-key-invalid` (KKPushAuth)
    public static let certIssueCaKeyInvalid: Self = "cert-issue-ca-key-invalid"
    /// `cert-issue-ca-key-unreadable` (KKPushAuth)
    public static let certIssueCaKeyUnreadable: Self = "cert-issue-ca-key-unreadable"
    /// `cert-issue-days-range` (KKPushAuth)
    public static let certIssueDaysRange: Self = "cert-issue-days-range"
    /// `cert-issue-failed` (KKPushAuth)
    public static let certIssueFailed: Self = "cert-issue-failed"
    /// `cert-issue-host` (KKPushAuth)
    public static let certIssueHost: Self = "cert-issue-host"
    /// `cert-issue-ip` (KKPushAuth)
    public static let certIssueIp: Self = "cert-issue-ip"
    /// `cert-issue-no-names` (KKPushAuth)
    public static let certIssueNoNames: Self = "cert-issue-no-names"
    /// `certificate-encode` (KKPushAuth)
    public static let certificateEncode: Self = "certificate-encode"
    /// `certificate-key-mismatch` (KKPushAuth)
    public static let certificateKeyMismatch: Self = "certificate-key-mismatch"
    /// `certificate-missing` (KKPushAuth)
    public static let certificateMissing: Self = "certificate-missing"
    /// `certificate-unreadable` (KKPushAuth)
    public static let certificateUnreadable: Self = "certificate-unreadable"
    /// `credentials-invalid` (KKPushAuth)
    public static let credentialsInvalid: Self = "credentials-invalid"
    /// `credential-not-a-key` (KKPushAuth)
    public static let credentialNotAKey: Self = "credential-not-a-key"
    /// `credential-not-a-certificate` (KKPushAuth)
    public static let credentialNotACertificate: Self = "credential-not-a-certificate"
    /// `credential-password-missing` (KKPushAuth)
    public static let credentialPasswordMissing: Self = "credential-password-missing"
    /// `unknown-credential` (KKPushAuth): no credential of the file has the name asked for
    public static let unknownCredential: Self = "unknown-credential"
    /// `credential-environment` (KKPushAuth): the credential is not scoped for the environment
    public static let credentialEnvironment: Self = "credential-environment"
    /// `credential-topic` (KKPushAuth): the credential is not scoped for the topic
    public static let credentialTopic: Self = "credential-topic"
    /// `no-credential-serves` (KKPushAuth): no credential of the file may serve the topic in the environment
    public static let noCredentialServes: Self = "no-credential-serves"
    /// `hmac-failed` (KKPushAuth)
    public static let hmacFailed: Self = "hmac-failed"
    /// `hmac-key-empty` (KKPushAuth)
    public static let hmacKeyEmpty: Self = "hmac-key-empty"
    /// `jwt-iat-out-of-range` (KKPushAuth)
    public static let jwtIatOutOfRange: Self = "jwt-iat-out-of-range"
    /// `key-empty` (KKPushAuth)
    public static let keyEmpty: Self = "key-empty"
    /// `key-encode` (KKPushAuth)
    public static let keyEncode: Self = "key-encode"
    /// `key-encrypted` (KKPushAuth)
    public static let keyEncrypted: Self = "key-encrypted"
    /// `key-generate` (KKPushAuth)
    public static let keyGenerate: Self = "key-generate"
    /// `key-inconsistent` (KKPushAuth)
    public static let keyInconsistent: Self = "key-inconsistent"
    /// `key-is-certificate` (KKPushAuth)
    public static let keyIsCertificate: Self = "key-is-certificate"
    /// `key-is-public` (KKPushAuth)
    public static let keyIsPublic: Self = "key-is-public"
    /// `key-multiple` (KKPushAuth)
    public static let keyMultiple: Self = "key-multiple"
    /// `key-not-ec` (KKPushAuth)
    public static let keyNotEc: Self = "key-not-ec"
    /// `key-not-p256` (KKPushAuth)
    public static let keyNotP256: Self = "key-not-p256"
    /// `key-unreadable` (KKPushAuth)
    public static let keyUnreadable: Self = "key-unreadable"
    /// `openssl-alloc` (KKPushAuth)
    public static let opensslAlloc: Self = "openssl-alloc"
    /// `p12-legacy` (KKPushAuth)
    public static let p12Legacy: Self = "p12-legacy"
    /// `p12-no-certificate` (KKPushAuth)
    public static let p12NoCertificate: Self = "p12-no-certificate"
    /// `p12-no-key` (KKPushAuth)
    public static let p12NoKey: Self = "p12-no-key"
    /// `p12-password` (KKPushAuth)
    public static let p12Password: Self = "p12-password"
    /// `p12-unreadable` (KKPushAuth)
    public static let p12Unreadable: Self = "p12-unreadable"
    /// `sign-failed` (KKPushAuth)
    public static let signFailed: Self = "sign-failed"
    /// `sign-setup` (KKPushAuth)
    public static let signSetup: Self = "sign-setup"
    /// `signature-encode` (KKPushAuth)
    public static let signatureEncode: Self = "signature-encode"
    /// `signature-length` (KKPushAuth)
    public static let signatureLength: Self = "signature-length"
    /// `signature-malformed` (KKPushAuth)
    public static let signatureMalformed: Self = "signature-malformed"
}
