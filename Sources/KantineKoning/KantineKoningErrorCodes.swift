public import KKPushCore

// The error codes only KantineKoning throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `kk-bad-cta-token` (KantineKoning)
    public static let kkBadCtaToken = Self("kk-bad-cta-token", kind: .usage)
    /// `kk-bad-dienst-id` (KantineKoning)
    public static let kkBadDienstId = Self("kk-bad-dienst-id", kind: .usage)
    /// `kk-bad-tenant` (KantineKoning)
    public static let kkBadTenant = Self("kk-bad-tenant", kind: .usage)
    /// `link-empty` (KantineKoning)
    public static let linkEmpty = Self("link-empty", kind: .usage)
    /// `link-malformed` (KantineKoning)
    public static let linkMalformed = Self("link-malformed", kind: .input)
    /// `link-missing-parameter` (KantineKoning)
    public static let linkMissingParameter = Self("link-missing-parameter", kind: .input)
    /// `link-nested-too-deep` (KantineKoning)
    public static let linkNestedTooDeep = Self("link-nested-too-deep", kind: .usage)
    /// `link-not-https` (KantineKoning)
    public static let linkNotHttps = Self("link-not-https", kind: .usage)
    /// `link-unknown` (KantineKoning)
    public static let linkUnknown = Self("link-unknown", kind: .usage)
    /// `link-unknown-scheme` (KantineKoning)
    public static let linkUnknownScheme = Self("link-unknown-scheme", kind: .usage)
    /// `link-wrong-host` (KantineKoning)
    public static let linkWrongHost = Self("link-wrong-host", kind: .usage)
    /// `token-update-malformed` (KantineKoning)
    public static let tokenUpdateMalformed = Self("token-update-malformed", kind: .input)
    /// `receipt-invalid` (KantineKoning): a push receipt the app posted that breaks the receipt contract.
    public static let receiptInvalid = Self("receipt-invalid", kind: .input)
}
