public import Foundation
public import KKPushCore

/// A device token the mock knows: the environment it belongs to, the app (topic) it was issued
/// for, and whether it has been unregistered.
public struct MockDeviceRegistration: Sendable, Hashable, Codable {
    /// The token, lowercase hex.
    public var token: String
    /// The environment the token belongs to; sending it to the other gets `BadDeviceToken`.
    public var environment: APNsEnvironment
    /// The app's bundle id; another topic gets `DeviceTokenNotForTopic`. `nil` accepts any topic.
    public var topic: String?
    /// When the token was unregistered (the 410 answer then carries this as `timestamp`), if it was.
    public var unregisteredAt: Date?
    /// The 410 reason: `Unregistered` (default) or `ExpiredToken`.
    public var unregisteredReason: APNsReason?
    /// Whether the device reaches APNs (default online): offline, accepted pushes are stored, one per app.
    public var connectivity: MockConnectivity = .online
    /// The app's state (default foreground: the app open on a phone in hand, as the mock modelled every device
    /// before it had states, so every push runs the app's code unless a test says otherwise).
    public var app: MockAppState = .foreground
    /// True when this token is a push-to-start token the device no longer uses (the app was reinstalled, or
    /// `pushToStartTokenUpdates` gave the app a new one): APNs still answers 200 to a Live Activity push on it, and
    /// the device side discards it (`discarded: stale-push-to-start-token`).
    public var pushToStartStale: Bool = false

    /// Creates a registration.
    public init(
        token: String, environment: APNsEnvironment, topic: String? = nil, unregisteredAt: Date? = nil,
        unregisteredReason: APNsReason? = nil, connectivity: MockConnectivity = .online,
        app: MockAppState = .foreground, pushToStartStale: Bool = false
    ) {
        self.pushToStartStale = pushToStartStale
        self.token = token.lowercased()
        self.environment = environment
        self.topic = topic
        self.unregisteredAt = unregisteredAt
        self.unregisteredReason = unregisteredReason
        self.connectivity = connectivity
        self.app = app
    }

    /// The latest `unregistered_at_ms` accepted: 9999-12-31T23:59:59.999Z (later ones cannot be encoded back).
    public static let latestTimestampMilliseconds: Int64 = 253_402_300_799_999

    /// The keys of the JSON form.
    static let shape = JSONInput.Shape.fields([
        "token", "environment", "topic", "unregistered_at_ms", "unregistered_reason", "connectivity", "app",
        "push_to_start_stale",
    ])

    enum CodingKeys: String, CodingKey {
        case token, environment, topic, connectivity, app
        case unregisteredAt = "unregistered_at_ms"
        case unregisteredReason = "unregistered_reason"
        case pushToStartStale = "push_to_start_stale"
    }

    /// Decodes the snake_case JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        token = try c.decode(String.self, forKey: .token).lowercased()
        guard DeviceToken.isWellFormed(token) else {
            throw DecodingError.dataCorruptedError(
                forKey: .token, in: c,
                debugDescription: "'\(token)' is not a device token (64 to 400 hex digits, an even number)")
        }
        let environmentName = try c.decode(String.self, forKey: .environment)
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw DecodingError.dataCorruptedError(
                forKey: .environment, in: c, debugDescription: "'\(environmentName)' is neither sandbox nor production")
        }
        self.environment = environment
        topic = try c.decodeIfPresent(String.self, forKey: .topic)
        if let ms = try c.decodeIfPresent(Int64.self, forKey: .unregisteredAt) {
            guard (0...253_402_300_799_999).contains(ms) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .unregisteredAt, in: c,
                    debugDescription: "unregistered_at_ms \(ms) is not milliseconds between 1970 and 9999")
            }
            unregisteredAt = Date(timeIntervalSince1970: Double(ms) / 1000)
        } else {
            unregisteredAt = nil
        }
        unregisteredReason = try c.decodeIfPresent(APNsReason.self, forKey: .unregisteredReason)
        connectivity = try c.decodeIfPresent(MockConnectivity.self, forKey: .connectivity) ?? .online
        app = try c.decodeIfPresent(MockAppState.self, forKey: .app) ?? .foreground
        pushToStartStale = try c.decodeIfPresent(Bool.self, forKey: .pushToStartStale) ?? false
    }

    /// Encodes the snake_case JSON form.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(environment, forKey: .environment)
        try c.encodeIfPresent(topic, forKey: .topic)
        try c.encodeIfPresent(unregisteredAt.map { $0.millisecondsSince1970 }, forKey: .unregisteredAt)
        try c.encodeIfPresent(unregisteredReason, forKey: .unregisteredReason)
        try c.encode(connectivity, forKey: .connectivity)
        try c.encode(app, forKey: .app)
        if pushToStartStale { try c.encode(true, forKey: .pushToStartStale) }
    }
}

/// A device the mock simulates: a random token bound to an environment and an app, and the
/// notifications delivered to it, in order, as an `AsyncStream`.
public struct SimulatedDevice: Sendable {
    /// The device token, 64 lowercase hex characters (32 random bytes).
    public let token: String
    /// The environment the token belongs to.
    public let environment: APNsEnvironment
    /// The app's bundle id.
    public let topic: String
    /// Every notification that reaches this device, from the moment it was minted, when it reaches it: at once while
    /// the device is online (the default), on reconnect for the one stored while it was offline, when its budget frees
    /// for a deferred background push (``DeliveredNotification/state`` and ``DeliveredNotification/appCode`` say what
    /// the app did with it). A push stored, discarded or held never arrives here. One consumer; holds the newest
    /// 10,000 if nobody reads.
    public let notifications: AsyncStream<DeliveredNotification>
}

/// One notification the mock accepted (answered 200), as recorded in the delivery log, with what became of it on the
/// device side (``state``, ``history``, ``appCode``).
public struct DeliveredNotification: Sendable, Hashable, Codable {
    /// Position in the delivery log, from 1, increasing (for `after=` polling).
    public var sequence: UInt64
    /// When the mock accepted it (by the mock's clock).
    public var time: Date
    /// The environment (listener) it was sent to.
    public var environment: APNsEnvironment
    /// The device token, lowercase.
    public var token: String
    /// The `apns-topic` (or the certificate's topic if the header was absent).
    public var topic: String
    /// The `apns-push-type` header, if sent.
    public var pushType: String?
    /// The `apns-priority` header as a number (10 if absent).
    public var priority: Int
    /// The `apns-expiration` header, if sent.
    public var expiration: Int64?
    /// The `apns-collapse-id` header, if sent.
    public var collapseID: String?
    /// The `apns-id` answered.
    public var apnsID: String
    /// The `apns-unique-id` answered (sandbox only).
    public var apnsUniqueID: String?
    /// The payload exactly as received (UTF-8).
    public var payload: String
    /// The broadcast channel it came through, if it was a broadcast (its `apns-id` is the broadcast's
    /// `apns-request-id`).
    public var channelID: String? = nil
    /// Why the device would not decode this Live Activity push (the mock's ``MockServerConfiguration/activityAttributes``),
    /// one message per field at fault; nil when it would, or when no description is configured.
    public var warnings: [String]? = nil
    /// What became of it on the device side, now (``DeliveryState``; `delivered` for a record made without one).
    public var state: DeliveryState = .delivered
    /// Every state it went through, oldest first, each with its time and why (empty for a record made without one).
    public var history: [DeliveryTransition] = []
    /// The app's code it ran when it was delivered (nil until delivered, and for one discarded before).
    public var appCode: AppCodeRun? = nil
    /// For a Live Activity start the device took with `input-push-token: 1`: the update token of the activity it
    /// started (the mock registers it as a token of the same device, so updates to it are accepted).
    public var activityUpdateToken: String? = nil

    enum CodingKeys: String, CodingKey {
        case warnings, state, history
        case activityUpdateToken = "activity_update_token"
        case appCode = "app_code"
        case channelID = "channel_id"
        case sequence, time, environment, token, topic
        case pushType = "push_type"
        case priority, expiration
        case collapseID = "collapse_id"
        case apnsID = "apns_id"
        case apnsUniqueID = "apns_unique_id"
        case payload
    }

    /// Creates a record.
    public init(
        sequence: UInt64, time: Date, environment: APNsEnvironment, token: String, topic: String,
        pushType: String?, priority: Int, expiration: Int64?, collapseID: String?, apnsID: String,
        apnsUniqueID: String?, payload: String
    ) {
        self.sequence = sequence
        self.time = time
        self.environment = environment
        self.token = token
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.payload = payload
    }

    /// Decodes the snake_case JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try c.decode(UInt64.self, forKey: .sequence)
        time = Date(timeIntervalSince1970: Double(try c.decode(Int64.self, forKey: .time)) / 1000)
        environment = try c.decode(APNsEnvironment.self, forKey: .environment)
        token = try c.decode(String.self, forKey: .token)
        topic = try c.decode(String.self, forKey: .topic)
        pushType = try c.decodeIfPresent(String.self, forKey: .pushType)
        priority = try c.decode(Int.self, forKey: .priority)
        expiration = try c.decodeIfPresent(Int64.self, forKey: .expiration)
        collapseID = try c.decodeIfPresent(String.self, forKey: .collapseID)
        apnsID = try c.decode(String.self, forKey: .apnsID)
        apnsUniqueID = try c.decodeIfPresent(String.self, forKey: .apnsUniqueID)
        payload = try c.decode(String.self, forKey: .payload)
        channelID = try c.decodeIfPresent(String.self, forKey: .channelID)
        warnings = try c.decodeIfPresent([String].self, forKey: .warnings)
        state = try c.decodeIfPresent(DeliveryState.self, forKey: .state) ?? .delivered
        history = try c.decodeIfPresent([DeliveryTransition].self, forKey: .history) ?? []
        appCode = try c.decodeIfPresent(AppCodeRun.self, forKey: .appCode)
        activityUpdateToken = try c.decodeIfPresent(String.self, forKey: .activityUpdateToken)
    }

    /// Encodes with snake_case keys; `time` as milliseconds since 1970.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(time.millisecondsSince1970, forKey: .time)
        try c.encode(environment, forKey: .environment)
        try c.encode(token, forKey: .token)
        try c.encode(topic, forKey: .topic)
        try c.encodeIfPresent(pushType, forKey: .pushType)
        try c.encode(priority, forKey: .priority)
        try c.encodeIfPresent(expiration, forKey: .expiration)
        try c.encodeIfPresent(collapseID, forKey: .collapseID)
        try c.encode(apnsID, forKey: .apnsID)
        try c.encodeIfPresent(apnsUniqueID, forKey: .apnsUniqueID)
        try c.encode(payload, forKey: .payload)
        try c.encodeIfPresent(channelID, forKey: .channelID)
        try c.encodeIfPresent(warnings, forKey: .warnings)
        try c.encode(state, forKey: .state)
        try c.encode(history, forKey: .history)
        try c.encodeIfPresent(appCode, forKey: .appCode)
        try c.encodeIfPresent(activityUpdateToken, forKey: .activityUpdateToken)
    }
}

extension Date {
    /// Milliseconds since 1970, as APNs' `timestamp`.
    /// Clamped to 1970...9999 (a date from outside input never traps here).
    var millisecondsSince1970: Int64 {
        let ms = (timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite else { return 0 }
        return Int64(min(max(ms, 0), 253_402_300_799_999))
    }
}
