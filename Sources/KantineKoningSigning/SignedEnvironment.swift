import Foundation

/// An Apple Push Notification service environment, named as the `aps-environment` entitlement names it.
///
/// `development` is the environment Apple's documentation also calls *sandbox*
/// (`api.sandbox.push.apple.com`); `production` is `api.push.apple.com`. A device token belongs to exactly one of
/// them: the one the app's signature was entitled to when it registered.
public enum APSEnvironment: String, Sendable, Codable, CaseIterable {
    /// The APNs sandbox: Xcode-run builds signed with a development profile, and the Simulator.
    case development
    /// APNs production: App Store, TestFlight, ad hoc and enterprise builds.
    case production
}

/// The APNs environment a running app's device tokens belong to, as its signature says, and where that answer
/// came from.
///
/// Made by ``SignedEnvironmentReader``. Send ``tokenUpdateValue`` as the token update's `aps_environment`.
public struct SignedEnvironment: Sendable, Equatable, CustomStringConvertible {
    /// Where the answer came from.
    public enum Source: String, Sendable, Codable, CaseIterable {
        /// The app's embedded provisioning profile (`embedded.mobileprovision`, or
        /// `Contents/embedded.provisionprofile` on macOS) was read.
        case embeddedProfile = "embedded-profile"
        /// The app has no embedded profile: an App Store or TestFlight install, which Apple re-signed for
        /// production.
        case noEmbeddedProfile = "no-embedded-profile"
        /// A Simulator build: its tokens are APNs sandbox tokens.
        case simulator
        /// An embedded profile is there but could not be read or parsed; the environment is unknown.
        case unreadableProfile = "unreadable-profile"
    }

    /// The environment the app's tokens belong to. `nil` when it is not known: the profile grants no
    /// `aps-environment` (push is not enabled for the App ID, and the app gets no device token at all), or the
    /// profile could not be read. Never a guess.
    public var apsEnvironment: APSEnvironment?
    /// Where ``apsEnvironment`` came from.
    public var source: Source
    /// The profile's `Name`, when a profile was read.
    public var profileName: String?
    /// One sentence for logs: what was read and what it means.
    public var detail: String

    /// Creates a signed environment.
    public init(apsEnvironment: APSEnvironment?, source: Source, profileName: String? = nil, detail: String) {
        self.apsEnvironment = apsEnvironment
        self.source = source
        self.profileName = profileName
        self.detail = detail
    }

    /// The value for the token update's optional `aps_environment` field (`"development"` or `"production"`),
    /// `nil` when the environment is unknown (then leave the field out and the backend falls back to
    /// `build_environment`).
    public var tokenUpdateValue: String? { apsEnvironment?.rawValue }

    /// `aps-environment=<value or none> (<source>): <detail>`.
    public var description: String {
        "aps-environment=\(apsEnvironment?.rawValue ?? "none") (\(source.rawValue)): \(detail)"
    }
}

/// Why a provisioning profile's bytes gave no answer.
public enum SignedEnvironmentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file or data is empty.
    case empty
    /// The profile is larger than the reader accepts (``SignedEnvironmentReader/maximumProfileSize``).
    case tooLarge(byteCount: Int, limit: Int)
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// No `<?xml`…`</plist>` or `<plist`…`</plist>` in the bytes: not a provisioning profile.
    case noPropertyList
    /// The embedded property list does not parse, or is not a dictionary.
    case invalidPropertyList(reason: String)
    /// The property list has no `Entitlements` dictionary: not a provisioning profile.
    case missingEntitlements
    /// The profile's `aps-environment` is neither `development` nor `production`.
    case unknownAPSEnvironment(String)

    public var description: String {
        switch self {
        case .empty:
            return "the profile is empty"
        case .tooLarge(let byteCount, let limit):
            return "the profile is \(byteCount) bytes, more than the \(limit) bytes a provisioning profile can be"
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .noPropertyList:
            return "no property list (<?xml ... </plist>) in the profile's bytes: not a provisioning profile"
        case .invalidPropertyList(let reason):
            return "the profile's property list does not parse: \(reason)"
        case .missingEntitlements:
            return "the profile's property list has no Entitlements dictionary: not a provisioning profile"
        case .unknownAPSEnvironment(let value):
            return "the profile's aps-environment is \"\(value)\", neither \"development\" nor \"production\""
        }
    }
}
