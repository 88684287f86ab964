/// A top-level key of a payload besides `aps`, with any JSON value.
public struct JSONMember: Sendable, Hashable {
    /// The key.
    public var key: String
    /// The value.
    public var value: JSONValue

    /// Creates a member.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A notification payload: the `aps` dictionary and custom top-level keys (spec §3).
///
/// Encoded compactly and deterministically: `aps` first, then the custom keys in insertion order
/// (objects inside values with sorted keys; see ``JSONValue``). ``size`` is the length of exactly
/// the bytes ``encoded()`` returns, which are the bytes to send.
public struct Payload: Sendable, Equatable {
    /// The `aps` dictionary; nil leaves it out (MDM pushes have none).
    public var aps: APS?
    /// The custom top-level keys, in the order they are encoded. Keys are unique (see ``setCustom(_:_:)``).
    public private(set) var custom: [JSONMember]

    /// Creates a payload.
    public init(aps: APS? = APS(), custom: [JSONMember] = []) {
        self.aps = aps
        self.custom = []
        for member in custom { setCustom(member.key, member.value) }
    }

    /// The custom value of `key`, if set.
    public func custom(_ key: String) -> JSONValue? { custom.first { $0.key == key }?.value }

    /// Sets a custom top-level key (replacing its value in place, or appending it). `aps` is not a
    /// custom key: setting it is ignored; use ``aps``.
    public mutating func setCustom(_ key: String, _ value: JSONValue) {
        guard key != "aps" else { return }
        if let index = custom.firstIndex(where: { $0.key == key }) {
            custom[index].value = value
        } else {
            custom.append(JSONMember(key, value))
        }
    }

    /// Removes a custom top-level key; returns its value.
    @discardableResult
    public mutating func removeCustom(_ key: String) -> JSONValue? {
        guard let index = custom.firstIndex(where: { $0.key == key }) else { return nil }
        return custom.remove(at: index).value
    }

    /// The exact bytes to send: compact JSON, `aps` first, then the custom keys in order.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        if let aps {
            JSONValue.writeString("aps", to: &out)
            out.append(UInt8(ascii: ":"))
            aps.write(to: &out)
            first = false
        }
        for member in custom {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            member.value.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The encoded payload as a string.
    public var jsonString: String { String(decoding: encoded(), as: UTF8.self) }

    /// The size in bytes of exactly what ``encoded()`` returns.
    public var size: Int { encoded().count }

    /// The push type this payload reads as: background when `aps` has only `content-available`
    /// (APNs's definition of a background push), liveactivity when it has an `event`, widgets when it
    /// has only `content-changed`, otherwise alert.
    public var suggestedPushType: PushType {
        guard let aps else { return .alert }
        if aps.event != nil { return .liveactivity }
        if aps.contentChanged == true, aps.alert == nil, aps.sound == nil, aps.badge == nil { return .widgets }
        if aps.contentAvailable, aps.alert == nil, aps.sound == nil, aps.badge == nil { return .background }
        return .alert
    }

    /// Reads a payload from JSON bytes: a JSON object, `aps` (if present) read into ``APS``.
    ///
    /// Lossless except for formatting: values of unexpected types are kept in ``APS/extra`` (or
    /// ``APSAlert/Fields/extra``) and custom keys keep their order. Throws `payload-not-json`,
    /// `payload-not-object`, or `payload-aps-not-object` when `aps` is not a dictionary.
    public init(parsing bytes: [UInt8]) throws(KKPushError) {
        var parser = JSONParser(bytes)
        let root = try parser.parseDocument()
        guard case .object(let members) = root else {
            throw KKPushError(
                code: .payloadNotObject, message: "The payload is \(root.jsonTypePhrase), not an object.",
                fix: "Send a JSON object with an aps dictionary, e.g. {\"aps\":{\"alert\":\"Hallo\"}}.")
        }
        if let apsValue = members["aps"] {
            guard case .object(let apsMembers) = apsValue else {
                throw KKPushError(
                    code: .payloadApsNotObject, message: "'aps' is \(apsValue.typeNameWithArticle), not a dictionary.",
                    fix: "Make aps a dictionary: {\"aps\":{\"alert\":\"Hallo\"}}.")
            }
            aps = APS(members: apsMembers)
        } else {
            aps = nil
        }
        custom = []
        for key in parser.rootKeyOrder where key != "aps" {
            if let value = members[key], custom(key) == nil { custom.append(JSONMember(key, value)) }
        }
    }

    /// Reads a payload from a JSON string.
    public init(parsing text: String) throws(KKPushError) {
        try self.init(parsing: Array(text.utf8))
    }

    // MARK: Builders

    /// A visible alert: title and body (either may be nil).
    public static func alert(title: String? = nil, subtitle: String? = nil, body: String?) -> Payload {
        var aps = APS()
        aps.alert = .fields(APSAlert.Fields(title: title, subtitle: subtitle, body: body))
        return Payload(aps: aps)
    }

    /// A silent background push: `aps` has only `content-available: 1`; data goes in custom keys.
    public static func background(custom: [JSONMember] = []) -> Payload {
        var aps = APS()
        aps.contentAvailable = true
        return Payload(aps: aps, custom: custom)
    }
}

/// The `aps` dictionary (spec §3.3). Encoded in this order: alert, badge, sound, thread-id, category,
/// content-available, mutable-content, target-content-id, interruption-level, relevance-score,
/// filter-criteria, stale-date, content-state, timestamp, event, dismissal-date, attributes-type,
/// attributes, input-push-token, input-push-channel, content-changed, then ``extra`` (sorted).
public struct APS: Sendable, Equatable {
    /// `alert`: a string (the body) or a dictionary.
    public var alert: APSAlert?
    /// `badge`: the number on the app icon; 0 clears it.
    public var badge: Int?
    /// `sound`: a sound name or a critical-alert sound.
    public var sound: APSSound?
    /// `thread-id`: groups notifications.
    public var threadID: String?
    /// `category`: the notification category (actions).
    public var category: String?
    /// `content-available: 1` when true: wake the app in the background.
    public var contentAvailable: Bool = false
    /// `mutable-content: 1` when true: run the notification service extension.
    public var mutableContent: Bool = false
    /// `target-content-id`: the window or content to bring forward.
    public var targetContentID: String?
    /// `interruption-level`: passive, active, time-sensitive or critical.
    public var interruptionLevel: InterruptionLevel?
    /// `relevance-score`: 0...1 (any number for Live Activities).
    public var relevanceScore: Double?
    /// `filter-criteria`: the Focus filter.
    public var filterCriteria: String?
    /// `stale-date` (Live Activity): UNIX seconds.
    public var staleDate: Int?
    /// `content-state` (Live Activity): the ContentState dictionary.
    public var contentState: JSONValue?
    /// `timestamp` (Live Activity): UNIX seconds of this update.
    public var timestamp: Int?
    /// `event` (Live Activity): start, update or end.
    public var event: LiveActivityEvent?
    /// `dismissal-date` (Live Activity): UNIX seconds.
    public var dismissalDate: Int?
    /// `attributes-type` (Live Activity start).
    public var attributesType: String?
    /// `attributes` (Live Activity start).
    public var attributes: JSONValue?
    /// `input-push-token: 1` when true (Live Activity start, iOS 18+).
    public var inputPushToken: Bool = false
    /// `input-push-channel` (Live Activity start, iOS 18+).
    public var inputPushChannel: String?
    /// `content-changed` (WidgetKit pushes).
    public var contentChanged: Bool?
    /// Any other key, or a known key whose value has an unexpected type (kept as it came).
    public var extra: [String: JSONValue] = [:]

    /// Creates an empty `aps`; set the fields you need.
    public init() {}

    /// The compact encoding.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    /// The fields in encoding order (known keys first, then ``extra`` sorted).
    public var members: [JSONMember] {
        var list: [JSONMember] = []
        if let alert { list.append(JSONMember("alert", alert.jsonValue)) }
        if let badge { list.append(JSONMember("badge", .int(badge))) }
        if let sound { list.append(JSONMember("sound", sound.jsonValue)) }
        if let threadID { list.append(JSONMember("thread-id", .string(threadID))) }
        if let category { list.append(JSONMember("category", .string(category))) }
        if contentAvailable { list.append(JSONMember("content-available", .int(1))) }
        if mutableContent { list.append(JSONMember("mutable-content", .int(1))) }
        if let targetContentID { list.append(JSONMember("target-content-id", .string(targetContentID))) }
        if let interruptionLevel { list.append(JSONMember("interruption-level", .string(interruptionLevel.rawValue))) }
        if let relevanceScore { list.append(JSONMember("relevance-score", .double(relevanceScore))) }
        if let filterCriteria { list.append(JSONMember("filter-criteria", .string(filterCriteria))) }
        if let staleDate { list.append(JSONMember("stale-date", .int(staleDate))) }
        if let contentState { list.append(JSONMember("content-state", contentState)) }
        if let timestamp { list.append(JSONMember("timestamp", .int(timestamp))) }
        if let event { list.append(JSONMember("event", .string(event.rawValue))) }
        if let dismissalDate { list.append(JSONMember("dismissal-date", .int(dismissalDate))) }
        if let attributesType { list.append(JSONMember("attributes-type", .string(attributesType))) }
        if let attributes { list.append(JSONMember("attributes", attributes)) }
        if inputPushToken { list.append(JSONMember("input-push-token", .int(1))) }
        if let inputPushChannel { list.append(JSONMember("input-push-channel", .string(inputPushChannel))) }
        if let contentChanged { list.append(JSONMember("content-changed", .bool(contentChanged))) }
        let known = Set(list.map(\.key))
        for key in extra.keys.sorted() where !known.contains(key) { list.append(JSONMember(key, extra[key]!)) }
        return list
    }

    /// Appends the compact encoding to `out`.
    public func write(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            if member.key == "alert", let alert {
                alert.write(to: &out)  // in the documented field order, not sorted
            } else {
                member.value.write(to: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Reads `aps` from its members; a known key whose value has another type goes to ``extra``.
    public init(members: [String: JSONValue]) {
        for (key, value) in members {
            var taken = true
            switch key {
            case "alert":
                if let alert = APSAlert(value) { self.alert = alert } else { taken = false }
            case "badge":
                if case .int(let number) = value { badge = number } else { taken = false }
            case "sound":
                if let sound = APSSound(value) { self.sound = sound } else { taken = false }
            case "thread-id":
                if let text = value.stringValue { threadID = text } else { taken = false }
            case "category":
                if let text = value.stringValue { category = text } else { taken = false }
            case "content-available":
                if value == .int(1) { contentAvailable = true } else { taken = false }
            case "mutable-content":
                if value == .int(1) { mutableContent = true } else { taken = false }
            case "target-content-id":
                if let text = value.stringValue { targetContentID = text } else { taken = false }
            case "interruption-level":
                if let text = value.stringValue {
                    interruptionLevel = InterruptionLevel(rawValue: text)
                } else {
                    taken = false
                }
            case "relevance-score":
                if let number = value.doubleValue { relevanceScore = number } else { taken = false }
            case "filter-criteria":
                if let text = value.stringValue { filterCriteria = text } else { taken = false }
            case "stale-date":
                if case .int(let number) = value { staleDate = number } else { taken = false }
            case "content-state":
                contentState = value
            case "timestamp":
                if case .int(let number) = value { timestamp = number } else { taken = false }
            case "event":
                if let text = value.stringValue { event = LiveActivityEvent(rawValue: text) } else { taken = false }
            case "dismissal-date":
                if case .int(let number) = value { dismissalDate = number } else { taken = false }
            case "attributes-type":
                if let text = value.stringValue { attributesType = text } else { taken = false }
            case "attributes":
                attributes = value
            case "input-push-token":
                if value == .int(1) { inputPushToken = true } else { taken = false }
            case "input-push-channel":
                if let text = value.stringValue { inputPushChannel = text } else { taken = false }
            case "content-changed":
                if let flag = value.boolValue { contentChanged = flag } else { taken = false }
            default:
                taken = false
            }
            if !taken { extra[key] = value }
        }
    }
}

/// `aps.alert`: a plain string (shown as the body) or a dictionary of fields.
public enum APSAlert: Sendable, Equatable {
    /// A string: the body.
    case text(String)
    /// The dictionary form.
    case fields(Fields)

    /// The alert dictionary (spec §3.4). Encoded in this order: title, subtitle, body, launch-image,
    /// title-loc-key, title-loc-args, subtitle-loc-key, subtitle-loc-args, loc-key, loc-args, then
    /// ``extra`` sorted.
    public struct Fields: Sendable, Equatable {
        /// `title`.
        public var title: String?
        /// `subtitle`.
        public var subtitle: String?
        /// `body`.
        public var body: String?
        /// `launch-image`.
        public var launchImage: String?
        /// `title-loc-key`.
        public var titleLocKey: String?
        /// `title-loc-args`.
        public var titleLocArgs: [String]?
        /// `subtitle-loc-key`.
        public var subtitleLocKey: String?
        /// `subtitle-loc-args`.
        public var subtitleLocArgs: [String]?
        /// `loc-key`.
        public var locKey: String?
        /// `loc-args`.
        public var locArgs: [String]?
        /// Other keys, or known keys with values of another type, kept as they came.
        public var extra: [String: JSONValue] = [:]

        /// Creates alert fields.
        public init(
            title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
            titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
            subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil
        ) {
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.launchImage = launchImage
            self.titleLocKey = titleLocKey
            self.titleLocArgs = titleLocArgs
            self.subtitleLocKey = subtitleLocKey
            self.subtitleLocArgs = subtitleLocArgs
            self.locKey = locKey
            self.locArgs = locArgs
        }

        /// The fields in encoding order.
        public var members: [JSONMember] {
            var list: [JSONMember] = []
            func add(_ key: String, _ value: String?) { if let value { list.append(JSONMember(key, .string(value))) } }
            func add(_ key: String, _ value: [String]?) {
                if let value { list.append(JSONMember(key, .array(value.map(JSONValue.string)))) }
            }
            add("title", title)
            add("subtitle", subtitle)
            add("body", body)
            add("launch-image", launchImage)
            add("title-loc-key", titleLocKey)
            add("title-loc-args", titleLocArgs)
            add("subtitle-loc-key", subtitleLocKey)
            add("subtitle-loc-args", subtitleLocArgs)
            add("loc-key", locKey)
            add("loc-args", locArgs)
            let known = Set(list.map(\.key))
            for key in extra.keys.sorted() where !known.contains(key) { list.append(JSONMember(key, extra[key]!)) }
            return list
        }
    }

    /// Reads an alert: a string, or a dictionary (keys of unexpected types go to `extra`).
    public init?(_ value: JSONValue) {
        switch value {
        case .string(let text): self = .text(text)
        case .object(let members):
            var fields = Fields()
            for (key, value) in members {
                let strings = value.arrayValue.flatMap { array -> [String]? in
                    let texts = array.compactMap(\.stringValue)
                    return texts.count == array.count ? texts : nil
                }
                switch (key, value.stringValue, strings) {
                case ("title", let text?, _): fields.title = text
                case ("subtitle", let text?, _): fields.subtitle = text
                case ("body", let text?, _): fields.body = text
                case ("launch-image", let text?, _): fields.launchImage = text
                case ("title-loc-key", let text?, _): fields.titleLocKey = text
                case ("title-loc-args", _, let list?): fields.titleLocArgs = list
                case ("subtitle-loc-key", let text?, _): fields.subtitleLocKey = text
                case ("subtitle-loc-args", _, let list?): fields.subtitleLocArgs = list
                case ("loc-key", let text?, _): fields.locKey = text
                case ("loc-args", _, let list?): fields.locArgs = list
                default: fields.extra[key] = value
                }
            }
            self = .fields(fields)
        default: return nil
        }
    }

    /// The JSON form.
    public var jsonValue: JSONValue {
        switch self {
        case .text(let text): .string(text)
        case .fields(let fields): .object(Dictionary(uniqueKeysWithValues: fields.members.map { ($0.key, $0.value) }))
        }
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .text(let text): JSONValue.writeString(text, to: &out)
        case .fields(let fields): writeObject(fields.members, to: &out)
        }
    }
}

/// `aps.sound`: a sound file name (or `default`), or the critical-alert dictionary.
public enum APSSound: Sendable, Equatable {
    /// A sound name: `default` or a file in the app bundle or `Library/Sounds`.
    case named(String)
    /// A critical alert sound: `{"critical":1,"name":...,"volume":...}` (needs Apple's entitlement).
    case critical(name: String, volume: Double?)

    /// The default sound.
    public static let `default` = APSSound.named("default")

    /// Reads a sound: a string, or a dictionary with `critical: 1`, a string `name` and an optional
    /// numeric `volume` (anything else is not read).
    public init?(_ value: JSONValue) {
        switch value {
        case .string(let name): self = .named(name)
        case .object(let members):
            guard let name = members["name"]?.stringValue, members["critical"] == .int(1) else { return nil }
            let allowed: Set<String> = ["critical", "name", "volume"]
            guard members.keys.allSatisfy(allowed.contains) else { return nil }
            if let volume = members["volume"] {
                guard let number = volume.doubleValue else { return nil }
                self = .critical(name: name, volume: number)
            } else {
                self = .critical(name: name, volume: nil)
            }
        default: return nil
        }
    }

    /// The JSON form (the dictionary's keys in the order critical, name, volume).
    public var jsonValue: JSONValue {
        switch self {
        case .named(let name): return .string(name)
        case .critical(let name, let volume):
            var members: [String: JSONValue] = ["critical": .int(1), "name": .string(name)]
            if let volume { members["volume"] = .double(volume) }
            return .object(members)
        }
    }
}

/// `aps.interruption-level`: an open set; Apple documents four values.
public struct InterruptionLevel: Sendable, Hashable, RawRepresentable, CaseIterable {
    /// The value as sent.
    public let rawValue: String
    /// Creates a level from its value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `passive`: no sound, no screen wake.
    public static let passive = InterruptionLevel(rawValue: "passive")
    /// `active`: the default.
    public static let active = InterruptionLevel(rawValue: "active")
    /// `time-sensitive`: breaks through Focus (needs the capability).
    public static let timeSensitive = InterruptionLevel(rawValue: "time-sensitive")
    /// `critical`: breaks through mute (needs Apple's entitlement).
    public static let critical = InterruptionLevel(rawValue: "critical")
    /// The four documented levels.
    public static let allCases: [InterruptionLevel] = [.passive, .active, .timeSensitive, .critical]
    /// True for a documented level.
    public var isKnown: Bool { Self.allCases.contains(self) }
}

/// `aps.event` of a Live Activity push: an open set of start, update and end.
public struct LiveActivityEvent: Sendable, Hashable, RawRepresentable, CaseIterable {
    /// The value as sent.
    public let rawValue: String
    /// Creates an event from its value, known or not.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// `start` (push-to-start).
    public static let start = LiveActivityEvent(rawValue: "start")
    /// `update`.
    public static let update = LiveActivityEvent(rawValue: "update")
    /// `end`.
    public static let end = LiveActivityEvent(rawValue: "end")
    /// The three documented events.
    public static let allCases: [LiveActivityEvent] = [.start, .update, .end]
    /// True for a documented event.
    public var isKnown: Bool { Self.allCases.contains(self) }
}

/// Writes `{"k":v,...}` with the members in the given order.
func writeObject(_ members: [JSONMember], to out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    for (index, member) in members.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        JSONValue.writeString(member.key, to: &out)
        out.append(UInt8(ascii: ":"))
        member.value.write(to: &out)
    }
    out.append(UInt8(ascii: "}"))
}
