public import KKPushCore

// The problem codes KKPushAuth reports, one per line, each with the modules that report or match it: `kkpush … --json`
// prints them as {"code": …}. A code is declared once, in the lowest module that names it (KKPushCore's, and
// those of modules that do not depend on each other, in `Problem+Codes.swift`).

extension Problem.Code {
    /// `bad-signature` (KKPushAuth)
    public static let badSignature = Self(rawValue: "bad-signature")
    /// `certificate-expired` (KKPushAuth)
    public static let certificateExpired = Self(rawValue: "certificate-expired")
    /// `certificate-expiring` (KKPushAuth)
    public static let certificateExpiring = Self(rawValue: "certificate-expiring")
    /// `certificate-not-apns` (KKPushAuth)
    public static let certificateNotApns = Self(rawValue: "certificate-not-apns")
    /// `certificate-not-yet-valid` (KKPushAuth)
    public static let certificateNotYetValid = Self(rawValue: "certificate-not-yet-valid")
    /// `expired` (KKPushAuth)
    public static let expired = Self(rawValue: "expired")
    /// `extra-claim` (KKPushAuth)
    public static let extraClaim = Self(rawValue: "extra-claim")
    /// `iat-in-future` (KKPushAuth)
    public static let iatInFuture = Self(rawValue: "iat-in-future")
    /// `iat-not-integer` (KKPushAuth)
    public static let iatNotInteger = Self(rawValue: "iat-not-integer")
    /// `iat-out-of-range` (KKPushAuth)
    public static let iatOutOfRange = Self(rawValue: "iat-out-of-range")
    /// `key-id-format` (KKPushAuth)
    public static let keyIdFormat = Self(rawValue: "key-id-format")
    /// `malformed` (KKPushAuth)
    public static let malformed = Self(rawValue: "malformed")
    /// `missing-claim` (KKPushAuth)
    public static let missingClaim = Self(rawValue: "missing-claim")
    /// `missing-kid` (KKPushAuth)
    public static let missingKid = Self(rawValue: "missing-kid")
    /// `team-id-format` (KKPushAuth)
    public static let teamIdFormat = Self(rawValue: "team-id-format")
    /// `too-young-to-refresh` (KKPushAuth)
    public static let tooYoungToRefresh = Self(rawValue: "too-young-to-refresh")
    /// `wrong-alg` (KKPushAuth)
    public static let wrongAlg = Self(rawValue: "wrong-alg")
}
