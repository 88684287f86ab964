/// A `reason` string from an APNs error response, with its HTTP status, what it means and how to fix it.
///
/// An open set (as APNSwift's `APNSError.ErrorReason`): every reason Apple documents is a static
/// member; any other string APNs sends is kept as it came (``isKnown`` is false).
public struct APNsReason: Sendable, Hashable, Codable, CustomStringConvertible, RawRepresentable {
    /// The reason string exactly as APNs sends it.
    public let rawValue: String

    /// Creates a reason from its string, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a reason from its string, known or not.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }

    public var description: String { rawValue }

    private var info: Info? { Self.table[rawValue] }

    /// True if Apple documents this reason.
    public var isKnown: Bool { info != nil }

    /// The HTTP status APNs answers with for this reason (0 if unknown).
    public var status: Int { info?.status ?? 0 }

    /// What the reason means.
    public var explanation: String { info?.explanation ?? "APNs answered with a reason this library does not know." }

    /// What to do about it.
    public var fix: String { info?.fix ?? "Look the reason up in Apple's 'Handling notification responses from APNs'." }

    /// Whether the same request may succeed if sent again later (Apple's retry guidance):
    /// 429 TooManyRequests, 500 and 503. Token-related 403s are handled separately.
    public var isRetryable: Bool { info?.retryable ?? false }

    struct Info: Sendable {
        var status: Int
        var explanation: String
        var fix: String
        var retryable: Bool = false
    }

    // MARK: The documented reasons (Apple, "Handling notification responses from APNs").

    /// 400: the `apns-collapse-id` is longer than 64 bytes.
    public static let badCollapseId = APNsReason("BadCollapseId")
    /// 400: the device token is malformed or belongs to the other environment.
    public static let badDeviceToken = APNsReason("BadDeviceToken")
    /// 400: `apns-expiration` is not a valid UNIX time.
    public static let badExpirationDate = APNsReason("BadExpirationDate")
    /// 400: `apns-id` is not a UUID.
    public static let badMessageId = APNsReason("BadMessageId")
    /// 400: `apns-priority` is not 1, 5 or 10.
    public static let badPriority = APNsReason("BadPriority")
    /// 400: `apns-topic` is invalid.
    public static let badTopic = APNsReason("BadTopic")
    /// 400: the device token is not for this topic.
    public static let deviceTokenNotForTopic = APNsReason("DeviceTokenNotForTopic")
    /// 400: a header was repeated.
    public static let duplicateHeaders = APNsReason("DuplicateHeaders")
    /// 400: the connection idled out.
    public static let idleTimeout = APNsReason("IdleTimeout")
    /// 400: `apns-push-type` is not a known push type.
    public static let invalidPushType = APNsReason("InvalidPushType")
    /// 400: no device token in the path.
    public static let missingDeviceToken = APNsReason("MissingDeviceToken")
    /// 400: `apns-topic` is missing and required.
    public static let missingTopic = APNsReason("MissingTopic")
    /// 400: the body is empty.
    public static let payloadEmpty = APNsReason("PayloadEmpty")
    /// 400: pushing to this topic is not allowed.
    public static let topicDisallowed = APNsReason("TopicDisallowed")
    /// 403: the client certificate is invalid.
    public static let badCertificate = APNsReason("BadCertificate")
    /// 403: the client certificate is for the other environment.
    public static let badCertificateEnvironment = APNsReason("BadCertificateEnvironment")
    /// 403: the provider token is older than one hour.
    public static let expiredProviderToken = APNsReason("ExpiredProviderToken")
    /// 403: the action is not allowed.
    public static let forbidden = APNsReason("Forbidden")
    /// 403: the provider token is invalid or its signature does not verify.
    public static let invalidProviderToken = APNsReason("InvalidProviderToken")
    /// 403: no certificate and no provider token.
    public static let missingProviderToken = APNsReason("MissingProviderToken")
    /// 403: the key id is unrelated to the key of the connection's first push.
    public static let unrelatedKeyIdInToken = APNsReason("UnrelatedKeyIdInToken")
    /// 403: the key is restricted to the other environment.
    public static let badEnvironmentKeyIdInToken = APNsReason("BadEnvironmentKeyIdInToken")
    /// 403 (status unconfirmed): the older spelling of ``badEnvironmentKeyIdInToken``.
    public static let badEnvironmentKeyInToken = APNsReason("BadEnvironmentKeyInToken")
    /// 404: the path is not `/3/device/<token>`.
    public static let badPath = APNsReason("BadPath")
    /// 405: the method is not POST.
    public static let methodNotAllowed = APNsReason("MethodNotAllowed")
    /// 410: the device token has expired.
    public static let expiredToken = APNsReason("ExpiredToken")
    /// 410: the device token is no longer active for the topic.
    public static let unregistered = APNsReason("Unregistered")
    /// 413: the payload is too large.
    public static let payloadTooLarge = APNsReason("PayloadTooLarge")
    /// 429: the provider token changed more often than every 20 minutes.
    public static let tooManyProviderTokenUpdates = APNsReason("TooManyProviderTokenUpdates")
    /// 429: too many requests to the same device token.
    public static let tooManyRequests = APNsReason("TooManyRequests")
    /// 500: an internal server error.
    public static let internalServerError = APNsReason("InternalServerError")
    /// 503: the service is unavailable.
    public static let serviceUnavailable = APNsReason("ServiceUnavailable")
    /// 503: the APNs server is shutting down.
    public static let shutdown = APNsReason("Shutdown")

    // MARK: Broadcast and channel reasons (Apple, "Sending broadcast push notification requests to APNs").

    /// 400: the app's broadcast capability is not enabled.
    public static let featureNotEnabled = APNsReason("FeatureNotEnabled")
    /// 400: no `apns-channel-id` header.
    public static let missingChannelId = APNsReason("MissingChannelId")
    /// 400: the `apns-channel-id` is malformed.
    public static let badChannelId = APNsReason("BadChannelId")
    /// 400: the channel does not exist in this environment (never created, or deleted).
    public static let channelNotRegistered = APNsReason("ChannelNotRegistered")
    /// 400: the request's parameters (the create body) are invalid.
    public static let badRequestParams = APNsReason("BadRequestParams")
    /// 400: the broadcast payload is not a valid Live Activity payload.
    public static let badRequestPayload = APNsReason("BadRequestPayload")
    /// 400: no `apns-push-type` header.
    public static let missingPushType = APNsReason("MissingPushType")
    /// 400: the channel cannot be created (the 10,000-channel limit).
    public static let cannotCreateChannelConfig = APNsReason("CannotCreateChannelConfig")
    /// 403: the bundle id in the path is not one the token or certificate covers.
    public static let topicMismatch = APNsReason("TopicMismatch")

    /// Every reason Apple documents for the device, broadcast and channel endpoints (plus the older
    /// key-environment spelling).
    public static var allKnown: [APNsReason] { table.keys.sorted().map(APNsReason.init(rawValue:)) }

    static let table: [String: Info] = [
        "BadCollapseId": Info(
            status: 400, explanation: "The apns-collapse-id header is longer than 64 bytes.",
            fix: "Shorten the collapse id to at most 64 bytes (UTF-8)."),
        "BadDeviceToken": Info(
            status: 400,
            explanation:
                "The device token is malformed, or it belongs to the other APNs environment (a sandbox token sent to production or the reverse).",
            fix:
                "Check the token is the app's current hex token, and send it to the environment the build is signed for (its aps-environment, from its provisioning profile): run from Xcode with a development profile → sandbox; ad hoc, enterprise, TestFlight and App Store → production, whatever the configuration."
        ),
        "BadExpirationDate": Info(
            status: 400,
            explanation:
                "The apns-expiration header is not a valid UNIX time in seconds; on a broadcast, a nonzero expiration sent to a No Message Stored (storage policy 0) channel.",
            fix:
                "Send apns-expiration as whole seconds since 1970 (UTC), or 0 to try once; a broadcast to a storage-policy-0 channel takes only 0."
        ),
        "BadMessageId": Info(
            status: 400, explanation: "The apns-id header is not a UUID.",
            fix: "Send apns-id as a canonical UUID (8-4-4-4-12 hex digits), or leave it out."),
        "BadPriority": Info(
            status: 400, explanation: "The apns-priority header is not 1, 5 or 10.",
            fix: "Use 10 (immediate), 5 (power-considerate; required for background pushes) or 1."),
        "BadTopic": Info(
            status: 400, explanation: "The apns-topic header is invalid for this credential or push type.",
            fix:
                "Use the app's bundle id, with the suffix the push type needs (.voip, .complication, .push-type.liveactivity, ...)."
        ),
        "DeviceTokenNotForTopic": Info(
            status: 400, explanation: "The device token does not belong to the app named by apns-topic.",
            fix: "Send the token with the bundle id of the app that registered it."),
        "DuplicateHeaders": Info(
            status: 400, explanation: "One or more headers were repeated.",
            fix: "Send each apns-* header once (check merged default and custom headers)."),
        "IdleTimeout": Info(
            status: 400, explanation: "The connection was idle too long.",
            fix: "Open a new connection; send a PING after an hour of inactivity."),
        "InvalidPushType": Info(
            status: 400, explanation: "The apns-push-type header is not a valid push type.",
            fix:
                "Use alert, background, voip, complication, fileprovider, mdm, liveactivity, location, pushtotalk, widgets or controls."
        ),
        "MissingDeviceToken": Info(
            status: 400, explanation: "The path has no device token.",
            fix: "Post to /3/device/<hex token>."),
        "MissingTopic": Info(
            status: 400, explanation: "The apns-topic header is missing and required.",
            fix:
                "Send apns-topic with the app's bundle id (required with provider tokens and multi-topic certificates)."
        ),
        "PayloadEmpty": Info(
            status: 400, explanation: "The request has no payload.",
            fix: "Send a JSON object, at least {\"aps\":{}}."),
        "TopicDisallowed": Info(
            status: 400,
            explanation:
                "Pushing to this topic is not allowed; on a broadcast or channel request, the bundle id in the path carries a suffix.",
            fix:
                "Check the topic is one this key or certificate may push to; broadcasts and channels take the plain bundle id (no .push-type.liveactivity)."
        ),
        "FeatureNotEnabled": Info(
            status: 400, explanation: "Broadcast push is not enabled for this app.",
            fix: "Enable the Broadcast capability for the app's Push Notifications in the Apple developer portal."),
        "MissingChannelId": Info(
            status: 400, explanation: "The request has no apns-channel-id header.",
            fix: "Send apns-channel-id with the channel's base64 id (from create or list)."),
        "BadChannelId": Info(
            status: 400, explanation: "The apns-channel-id header is not a valid channel id (base64).",
            fix: "Send the channel id exactly as create or list answered it (base64, with its = padding)."),
        "ChannelNotRegistered": Info(
            status: 400,
            explanation:
                "The channel does not exist in this environment: it was deleted, never created, or created in the other environment (sandbox and production channels are separate).",
            fix:
                "List the app's channels in this environment, or create the channel here; ids are never reissued after a delete."
        ),
        "BadRequestParams": Info(
            status: 400, explanation: "The request's parameters are invalid (the create body).",
            fix: "Create with the body {\"message-storage-policy\": 0 or 1, \"push-type\": \"LiveActivity\"}."),
        "BadRequestPayload": Info(
            status: 400, explanation: "The broadcast payload is not a JSON object with an aps dictionary.",
            fix:
                "Send a Live Activity update or end payload: {\"aps\":{\"timestamp\":…,\"event\":\"update\",\"content-state\":{…}}}."
        ),
        "MissingPushType": Info(
            status: 400, explanation: "The request has no apns-push-type header.",
            fix: "Send apns-push-type: liveactivity with every broadcast."),
        "CannotCreateChannelConfig": Info(
            status: 400,
            explanation: "The channel cannot be created: the app has reached 10,000 channels in this environment.",
            fix: "Delete channels the app no longer uses (list them first), then create again."),
        "TopicMismatch": Info(
            status: 403,
            explanation: "The bundle id in the path is not one the provider token's team or the certificate covers.",
            fix: "Use the bundle id of an app of the key's team (or one the certificate names)."),
        "BadCertificate": Info(
            status: 403, explanation: "The client certificate is invalid.",
            fix: "Create a new APNs certificate in the Apple developer portal and export it with its key."),
        "BadCertificateEnvironment": Info(
            status: 403, explanation: "The client certificate is for the other environment.",
            fix:
                "Use a certificate for this environment, or a universal (Sandbox & Production) one; inspecting the certificate shows which environments it covers (certInspectCommand)."
        ),
        "ExpiredProviderToken": Info(
            status: 403, explanation: "The provider token is more than one hour old (or the clock is off).",
            fix: "Sign a new provider token (refresh every 20 to 60 minutes) and check the sender's clock (NTP)."),
        "Forbidden": Info(
            status: 403, explanation: "The action is not allowed.",
            fix: "Check the credential's permissions in the Apple developer portal."),
        "InvalidProviderToken": Info(
            status: 403,
            explanation:
                "The provider token is invalid: the signature does not verify, or the key id or team id is wrong.",
            fix:
                "Check the key id (the 10 characters in AuthKey_<KEYID>.p8), the team id (10 characters, in the developer account) and that they are not swapped; decoding the provider token shows both (jwtDecodeCommand)."
        ),
        "MissingProviderToken": Info(
            status: 403,
            explanation: "No client certificate was used and the authorization header is missing or empty.",
            fix: "Send `authorization: bearer <provider token>` or connect with a client certificate."),
        "UnrelatedKeyIdInToken": Info(
            status: 403,
            explanation: "The key id is unrelated to the key used for the first push on this connection.",
            fix: "Use one key per connection; open a new connection for another key."),
        "BadEnvironmentKeyIdInToken": Info(
            status: 403, explanation: "The key is restricted to the other APNs environment.",
            fix: "Use a key enabled for this environment (Apple's newer keys are sandbox-only or production-only)."),
        "BadEnvironmentKeyInToken": Info(
            status: 403, explanation: "The key is restricted to the other APNs environment (older spelling).",
            fix: "Use a key enabled for this environment (Apple's newer keys are sandbox-only or production-only)."),
        "BadPath": Info(
            status: 404, explanation: "The request path is not /3/device/<token>.",
            fix: "Post to /3/device/<hex token>."),
        "MethodNotAllowed": Info(
            status: 405, explanation: "The method is not POST.", fix: "Use POST."),
        "ExpiredToken": Info(
            status: 410, explanation: "The device token has expired.",
            fix: "Stop sending to this token; wait for the app to register a new one."),
        "Unregistered": Info(
            status: 410,
            explanation:
                "The device token is no longer active for the topic (the app was removed or pushes were turned off).",
            fix:
                "Stop sending to this token and clear it from the backend's records, unless the app registers it again after the timestamp."
        ),
        "PayloadTooLarge": Info(
            status: 413, explanation: "The payload is larger than APNs allows (4096 bytes; 5120 for voip).",
            fix: "Shorten the payload: drop custom keys, shorten texts, or send an id and fetch the rest in the app."),
        "TooManyProviderTokenUpdates": Info(
            status: 429,
            explanation: "The provider token on this connection changed more often than once every 20 minutes.",
            fix:
                "Reuse one provider token for 20 to 60 minutes, shared by all connections; never sign one per request.",
            retryable: true),
        "TooManyRequests": Info(
            status: 429, explanation: "Too many requests in a row to the same device token.",
            fix: "Slow down for this device; retry after a delay.", retryable: true),
        "InternalServerError": Info(
            status: 500, explanation: "APNs had an internal error.", fix: "Retry later with back-off.",
            retryable: true),
        "ServiceUnavailable": Info(
            status: 503, explanation: "APNs is unavailable.", fix: "Retry later with back-off.", retryable: true),
        "Shutdown": Info(
            status: 503, explanation: "The APNs server is shutting down.",
            fix: "Retry on a new connection.", retryable: true),
    ]
}
