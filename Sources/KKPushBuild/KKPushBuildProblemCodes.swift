public import KKPushCore

// The problem codes KKPushBuild reports, one per line, each with the modules that report or match it: `kkpush … --json`
// prints them as {"code": …}. A code is declared once, in the lowest module that names it (KKPushCore's, and
// those of modules that do not depend on each other, in `Problem+Codes.swift`).

extension Problem.Code {
    /// `build-bundle-id-mismatch` (KKPushBuild)
    public static let buildBundleIdMismatch = Self(rawValue: "build-bundle-id-mismatch")
    /// `build-certificate-expired` (KKPushBuild)
    public static let buildCertificateExpired = Self(rawValue: "build-certificate-expired")
    /// `build-entitlements-forms-disagree` (KKPushBuild)
    public static let buildEntitlementsFormsDisagree = Self(rawValue: "build-entitlements-forms-disagree")
    /// `build-entitlements-request` (KKPushBuild)
    public static let buildEntitlementsRequest = Self(rawValue: "build-entitlements-request")
    /// `build-executable-missing` (KKPushBuild)
    public static let buildExecutableMissing = Self(rawValue: "build-executable-missing")
    /// `build-ipa-several-apps` (KKPushBuild)
    public static let buildIpaSeveralApps = Self(rawValue: "build-ipa-several-apps")
    /// `build-no-embedded-profile` (KKPushBuild)
    public static let buildNoEmbeddedProfile = Self(rawValue: "build-no-embedded-profile")
    /// `build-profile-expired` (KKPushBuild)
    public static let buildProfileExpired = Self(rawValue: "build-profile-expired")
    /// `build-profile-expiring` (KKPushBuild)
    public static let buildProfileExpiring = Self(rawValue: "build-profile-expiring")
    /// `build-profile-signature-disagree` (KKPushBuild)
    public static let buildProfileSignatureDisagree = Self(rawValue: "build-profile-signature-disagree")
    /// `build-profile-signature-invalid` (KKPushBuild)
    public static let buildProfileSignatureInvalid = Self(rawValue: "build-profile-signature-invalid")
    /// `build-profile-unsigned` (KKPushBuild)
    public static let buildProfileUnsigned = Self(rawValue: "build-profile-unsigned")
    /// `build-profile-untrusted` (KKPushBuild)
    public static let buildProfileUntrusted = Self(rawValue: "build-profile-untrusted")
    /// `build-slices-disagree` (KKPushBuild)
    public static let buildSlicesDisagree = Self(rawValue: "build-slices-disagree")
    /// `build-time-before-creation` (KKPushBuild)
    public static let buildTimeBeforeCreation = Self(rawValue: "build-time-before-creation")
    /// `build-unsigned` (KKPushBuild)
    public static let buildUnsigned = Self(rawValue: "build-unsigned")
}
