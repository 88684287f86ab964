public import Foundation
import KKPushCore

/// The token update the Kantine Koning app sends to its backend, once per enrollment, as kkpush defines it.
///
/// ```
/// POST /api/mobile/v1/device/apns-token HTTP/1.1
/// Authorization: Bearer <that enrollment's signed device JWT>
/// Content-Type: application/json
///
/// {
///   "token": "3f0a…e1",                     // required: the APNs device token, lowercase hex, 64-400 digits,
///                                            //   no spaces or < > (never deviceToken.description)
///   "build_environment": "development",     // required: "development" (Release Testing / Debug builds,
///                                            //   APNs sandbox) or "production" (Release builds); exact, lowercase
///   "aps_environment": "production",        // optional: the aps-environment entitlement the app is signed
///                                            //   with, read from its embedded profile: "development" or
///                                            //   "production", exact; where sent, the backend prefers it
///   "app_version": "1.4.2",                 // required: CFBundleShortVersionString, digits and dots
///                                            //   (1 to 3 parts), optionally a build: "1.4.2 (57)" or "1.4.2+57"
///   "hardware_identifier": "8C1E0B7A-…",    // required: identifierForVendor UUID, nothing concatenated
///   "bundle_id": "nl.kantinekoning.app",    // optional: the app's bundle id (the APNs topic)
///   "platform": "ios",                      // optional: "ios" (the only value)
///   "is_new_token": true,                   // optional: true if the token differs from the last one sent
///   "live_activity": {…}                    // optional: the Live Activity tokens (``LiveActivityTokens``):
///                                            //   push_to_start_tokens, activity_tokens, activity_states
/// }
/// ```
///
/// Responses: `200 {"status": "ok", "device_id", "tenant_slug", "apns_environment", "replaced_token"}`;
/// `401` (missing, malformed, badly signed or expired JWT), `403` (JWT of another tenant, or another
/// enrollment), `422` (the body breaks the rules: `{"error": {...}, "problems": [...]}`), all errors as
/// `{"error": {"code", "message", "fix"}}`.
///
/// **When** the app sends it (``TokenUpdatePolicy``): when the token is new, or the last update of that
/// enrollment is older than 24 hours; **to every enrollment**, each with its own JWT, never once with a
/// "primary" token. The backend replaces that enrollment's `apns_token`, `build_environment`,
/// `aps_environment` and `app_version` (an update without `aps_environment` leaves the enrollment's empty).
///
/// **`build_environment` and `aps_environment`**: the app reports `build_environment` from `#if DEBUG`, its
/// build configuration; but the token's environment follows the provisioning profile the build is signed with
/// (development profiles: sandbox; ad hoc, enterprise, TestFlight and App Store: production). A Debug
/// configuration build on TestFlight reports "development" and has production tokens. `aps_environment`, the
/// entitlement's value, says what the build is signed for; see ``EnvironmentResolver`` for how it is used.
///
/// **`live_activity`** (``LiveActivityTokens``): the phone's push-to-start tokens per `ActivityAttributes` type
/// (a `null` token is a rotation iOS reported without one: legal, and it never replaces the stored token), the update
/// token of each running activity by the server's activity key (`attributes.kk_activity_key`), and the ends the app
/// saw (`ended`, `dismissed`). Each token is checked like `token`; the backend feeds them to kkpush's activity
/// registry. The app sends them with its token update whenever one changes, besides the device token's own rules.
public struct TokenUpdate: Sendable, Hashable, Codable {
    /// The APNs device token, lowercase hex.
    public var token: String
    /// `development` or `production`: the build configuration (`#if DEBUG`).
    public var buildEnvironment: String
    /// The app's version, for example `1.4.2`.
    public var appVersion: String
    /// The phone's vendor UUID.
    public var hardwareIdentifier: String
    /// The app's bundle id, if sent.
    public var bundleID: String?
    /// `ios`, if sent.
    public var platform: String?
    /// Whether the app saw a new token, if sent.
    public var isNewToken: Bool?
    /// The `aps-environment` entitlement the app is signed with (`development` or `production`), if sent.
    public var apsEnvironment: String?
    /// The Live Activity tokens, if sent.
    public var liveActivity: LiveActivityTokens?

    /// Creates a token update.
    public init(
        token: String, buildEnvironment: String, appVersion: String, hardwareIdentifier: String,
        bundleID: String? = TokenUpdate.defaultBundleID, platform: String? = "ios", isNewToken: Bool? = nil,
        apsEnvironment: String? = nil, liveActivity: LiveActivityTokens? = nil
    ) {
        self.token = token
        self.buildEnvironment = buildEnvironment
        self.appVersion = appVersion
        self.hardwareIdentifier = hardwareIdentifier
        self.bundleID = bundleID
        self.platform = platform
        self.isNewToken = isNewToken
        self.apsEnvironment = apsEnvironment
        self.liveActivity = liveActivity
    }

    /// The path of the endpoint.
    public static let path = "/api/mobile/v1/device/apns-token"
    /// The Kantine Koning app's bundle id as kkpush assumes it (the app README does not name it).
    public static let defaultBundleID = "nl.kantinekoning.app"

    enum CodingKeys: String, CodingKey, CaseIterable {
        case token
        case buildEnvironment = "build_environment"
        case appVersion = "app_version"
        case hardwareIdentifier = "hardware_identifier"
        case bundleID = "bundle_id"
        case platform
        case isNewToken = "is_new_token"
        case apsEnvironment = "aps_environment"
        case liveActivity = "live_activity"
    }

    /// The fields the body must have.
    public static let requiredFields = ["token", "build_environment", "app_version", "hardware_identifier"]
    /// The fields the body may have.
    public static let optionalFields = [
        "bundle_id", "platform", "is_new_token", "aps_environment", "live_activity",
    ]

    /// The body as JSON (keys sorted, absent optionals left out).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Encodes the JSON form (snake_case keys, ISO 8601 dates).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(buildEnvironment, forKey: .buildEnvironment)
        try c.encode(appVersion, forKey: .appVersion)
        try c.encode(hardwareIdentifier, forKey: .hardwareIdentifier)
        try c.encodeIfPresent(bundleID, forKey: .bundleID)
        try c.encodeIfPresent(platform, forKey: .platform)
        try c.encodeIfPresent(isNewToken, forKey: .isNewToken)
        try c.encodeIfPresent(apsEnvironment, forKey: .apsEnvironment)
        try c.encodeIfPresent(liveActivity, forKey: .liveActivity)
    }
}
