/// The value of the `apns-push-type` header: what kind of push this is (spec §2.4).
///
/// An open set (as APNSwift's `APNSPushType`): every type Apple documents is a static member;
/// any other string is kept as it came, and ``isKnown`` is false (APNs answers `400 InvalidPushType`).
public struct PushType: Sendable, Hashable, Codable, RawRepresentable, CaseIterable, CustomStringConvertible {
    /// The header value exactly as sent, for example `alert`.
    public let rawValue: String

    /// Creates a push type from its header value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a push type from its header value, known or not.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Decodes the push type from a single string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the push type as a single string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The header value.
    public var description: String { rawValue }

    /// A notification the user sees (alert, sound or badge). Topic: the bundle id.
    public static let alert = PushType("alert")
    /// A silent background update (`content-available: 1`, priority 5). Topic: the bundle id.
    public static let background = PushType("background")
    /// A VoIP call (PushKit). Topic: `<bundle id>.voip`; payload limit 5120 bytes.
    public static let voip = PushType("voip")
    /// A watchOS complication update. Topic: `<bundle id>.complication`.
    public static let complication = PushType("complication")
    /// A File Provider update. Topic: `<bundle id>.pushkit.fileprovider`.
    public static let fileprovider = PushType("fileprovider")
    /// A device-management push. Topic: the UID of the MDM push certificate (any topic accepted here).
    public static let mdm = PushType("mdm")
    /// A Live Activity update. Topic: `<bundle id>.push-type.liveactivity`; token authentication only.
    public static let liveactivity = PushType("liveactivity")
    /// A location query. Topic: `<bundle id>.location-query`; token authentication only.
    public static let location = PushType("location")
    /// A Push to Talk update. Topic: `<bundle id>.voip-ptt`.
    public static let pushtotalk = PushType("pushtotalk")
    /// A WidgetKit reload. Topic: `<bundle id>.push-type.widgets`.
    public static let widgets = PushType("widgets")
    /// A WidgetKit controls reload. Topic: `<bundle id>.push-type.controls`.
    public static let controls = PushType("controls")

    /// Every push type Apple documents, in the order of Apple's table.
    public static let allCases: [PushType] = [
        .alert, .background, .voip, .complication, .fileprovider, .mdm, .liveactivity, .location, .pushtotalk,
        .widgets, .controls,
    ]

    /// True if Apple documents this push type.
    public var isKnown: Bool { Self.allCases.contains(self) }

    /// The `apns-priority` kkpush sends when none is given: 5 for a background push (Apple: a background push at
    /// priority 10 is an error, "Pushing background updates to your App"), 10 for every other type.
    public var defaultPriority: Int { self == .background ? 5 : 10 }

    /// The suffix the `apns-topic` must carry after the bundle id: `""` for alert and background,
    /// `.voip`, `.complication`, ...; `nil` when any topic is allowed (mdm, and unknown types).
    public var topicSuffix: String? {
        switch rawValue {
        case "alert", "background": ""
        case "voip": ".voip"
        case "complication": ".complication"
        case "fileprovider": ".pushkit.fileprovider"
        case "liveactivity": ".push-type.liveactivity"
        case "location": ".location-query"
        case "pushtotalk": ".voip-ptt"
        case "widgets": ".push-type.widgets"
        case "controls": ".push-type.controls"
        default: nil
        }
    }

    /// The largest payload APNs accepts for this push type, in bytes: 5120 for voip, 4096 otherwise.
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }

    /// True if APNs accepts this push type only with provider-token (JWT) authentication:
    /// `location` (Apple, A1) and `liveactivity` (Apple A14 says to use tokens; APNs's answer to a
    /// certificate is unconfirmed, kkpush rejects it the same way).
    public var requiresTokenAuth: Bool { self == .location || self == .liveactivity }

    /// Every non-empty topic suffix, longest first (so `.voip-ptt` is tried before `.voip`).
    public static let knownTopicSuffixes: [(suffix: String, pushType: PushType)] = allCases.compactMap { type in
        guard let suffix = type.topicSuffix, !suffix.isEmpty else { return nil }
        return (suffix, type)
    }.sorted { $0.suffix.count > $1.suffix.count }

    /// The push type a topic's suffix implies (`com.x.voip` → voip), or nil for a plain bundle id.
    public static func implied(byTopic topic: String) -> PushType? {
        for entry in knownTopicSuffixes
        where topic.hasSuffix(entry.suffix) && topic.utf8.count > entry.suffix.utf8.count {
            return entry.pushType
        }
        return nil
    }

    /// The bundle id in `topic`: the topic with this push type's suffix removed, if it has it.
    public func bundleID(fromTopic topic: String) -> String {
        guard let suffix = topicSuffix, !suffix.isEmpty, topic.hasSuffix(suffix) else { return topic }
        return String(topic.dropLast(suffix.count))
    }

    /// The topic for `bundleID` with this push type's suffix (`com.x` → `com.x.voip`).
    public func topic(forBundleID bundleID: String) -> String { bundleID + (topicSuffix ?? "") }
}

/// The value of the `apns-priority` header: 10 (now), 5 (power-considerate) or 1 (power first).
public struct APNsPriority: Sendable, Hashable, Codable, RawRepresentable, CaseIterable, CustomStringConvertible {
    /// The header value.
    public let rawValue: Int

    /// Creates a priority from its number, valid or not (see ``isValid``).
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Creates a priority from its number, valid or not (see ``isValid``).
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    /// Decodes the priority from a single number.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int.self)
    }

    /// Encodes the priority as a single number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// `10`: deliver immediately (APNs's default when the header is absent).
    public static let immediate = APNsPriority(10)
    /// `5`: deliver considering the device's power; required for background pushes.
    public static let considerate = APNsPriority(5)
    /// `1`: prioritise power over everything and do not wake the device.
    public static let low = APNsPriority(1)

    /// The three priorities APNs accepts.
    public static let allCases: [APNsPriority] = [.immediate, .considerate, .low]

    /// True for 1, 5 and 10; APNs answers anything else with `400 BadPriority`.
    public var isValid: Bool { Self.allCases.contains(self) }

    /// The number.
    public var description: String { String(rawValue) }
}
