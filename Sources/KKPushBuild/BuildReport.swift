public import Foundation
public import KKPushCore

/// What `kkpush build inspect` read from a build: the `aps-environment` it is signed for and where that came from,
/// its distribution, its profile and signatures, and what is wrong with them. Nothing here is guessed: a value that
/// could not be read is nil, and a ``Problem`` says why where it matters.
public struct BuildReport: Sendable {
    /// What kind of input it was.
    public enum Kind: String, Sendable, Codable {
        case ipa
        case xcarchive
        case app
        case profile
        case executable
        case entitlements
        case distributionSummary = "distribution-summary"
    }

    /// The executable's part: one entry per architecture slice.
    public struct Executable: Sendable {
        /// The file's path inside the build, or on disk.
        public var path: String
        /// Whether it is a universal (fat) file.
        public var isUniversal: Bool
        /// The slices.
        public var slices: [MachOSlice]
    }

    /// The path given.
    public var path: String
    /// What it was.
    public var kind: Kind
    /// The bundle id: the Info.plist's CFBundleIdentifier, else the signature's identifier, else the profile's app id.
    public var bundleID: String?
    /// The team id: the code signature's, else the profile's, else the summary's.
    public var teamID: String?
    /// CFBundleShortVersionString.
    public var version: String?
    /// CFBundleVersion.
    public var buildNumber: String?
    /// The `aps-environment` the build is signed for (`development` or `production`), nil when it has none.
    public var apsEnvironment: String?
    /// Where ``apsEnvironment`` came from, for people: "the executable's code signature (DER entitlements)", ...
    public var apsEnvironmentSource: String?
    /// The distribution, if it could be told.
    public var distribution: ProfileDistribution?
    /// How the distribution was told.
    public var distributionSource: String?
    /// The embedded (or given) provisioning profile.
    public var profile: ProvisioningProfile?
    /// The executable, if one was read.
    public var executable: Executable?
    /// The entitlements that decided (the executable's effective ones, else the profile's, else the file's).
    public var entitlements: [String: PropertyListValue]
    /// The scheme the archive was made with (`.xcarchive` Info.plist `SchemeName`), when known.
    public var schemeName: String?
    /// The export method (ExportOptions.plist `method`), when known.
    public var exportMethod: String?
    /// App extensions (`PlugIns/*.appex`), each read the same way.
    public var extensions: [BuildReport]
    /// What is wrong, or worth knowing.
    public var problems: [Problem]

    /// The APNs environment that accepts this build's tokens, from ``apsEnvironment``.
    public var tokenEnvironment: APNsEnvironment? { apsEnvironment.flatMap(APNsEnvironment.init(entitlementValue:)) }

    /// The profile's expiry.
    public var expires: Date? { profile?.expirationDate }

    /// The bundle id the build is signed as: its `application-identifier` without the team prefix (the signature's,
    /// else the profile's; a wildcard ends in `*`), else ``bundleID``. What a topic must name for this build's tokens.
    public var signedBundleID: String? {
        let appID =
            (entitlements["application-identifier"] ?? entitlements["com.apple.application-identifier"])?.stringValue
            ?? profile?.applicationIdentifier
        guard let appID, let dot = appID.firstIndex(of: ".") else { return profile?.bundleID ?? bundleID }
        let prefix = appID[..<dot]
        let isTeamPrefix =
            String(prefix) == teamID
            || (prefix.count == 10 && prefix.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) })
        return isTeamPrefix ? String(appID[appID.index(after: dot)...]) : appID
    }

    init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
        entitlements = [:]
        extensions = []
        problems = []
    }
}
