public import Foundation
public import KKPushCore

/// The Live Activity tokens a token update may carry (`live_activity`, optional): the phone's push-to-start tokens,
/// the update tokens of its running activities, and the activities the app saw end or be dismissed.
///
/// ```
/// "live_activity": {                                   // optional, and each of its three lists too
///   "push_to_start_tokens": [                          // Activity<T>.pushToStartTokenUpdates, per attributes type
///     {"attributes_type": "DienstAttributes",          //   required: the ActivityAttributes type's Swift name
///      "token": "80f1…9c"}                             //   required key, hex like the device token; null allowed:
///   ],                                                 //   a rotation iOS reported without a token (never stored)
///   "activity_tokens": [                               // activity.pushTokenUpdates, per running activity
///     {"activity_key": "dienst-vvwilhelmus-812",       //   required: attributes.kk_activity_key, 1-200 printable ASCII
///      "activity_id": "5E1C…",                         //   optional: ActivityKit's Activity.id
///      "attributes_type": "DienstAttributes",          //   required: the ActivityAttributes type's Swift name
///      "token": "a93c…07"}                             //   required: hex like the device token (never null)
///   ],
///   "activity_states": [                               // activity.activityStateUpdates the app saw
///     {"activity_key": "dienst-vvwilhelmus-812", "state": "ended"}   // "ended" or "dismissed"
///   ]
/// }
/// ```
///
/// **A `null` push-to-start token is legal.** iOS may yield a rotation without a token (an app that maps
/// `pushToStartTokenUpdates` through an optional sends `null`, and Swift's synthesized `Encodable` leaves a `nil`
/// out, so a missing `token` is read the same way). It is not an error: the backend records it as a refused rotation
/// and keeps the stored token, because a `nil` rotation that wiped a good token would leave the server unable to start
/// any activity on that phone until the app happened to report again. `token verify` reports it as an `info`
/// finding (`push-to-start-token-null`).
///
/// **`activity_key`** is the key the server gave the activity when it started it (kkpush sends it in the start
/// push's `attributes` as `kk_activity_key`); the registry keys the activity's update token by it.
public struct LiveActivityTokens: Sendable, Hashable, Codable {
    /// One push-to-start token of one attributes type, as iOS yielded it.
    public struct PushToStartToken: Sendable, Hashable, Codable {
        /// The `ActivityAttributes` type's Swift name (`attributes-type` in a start push).
        public var attributesType: String
        /// The token in lowercase hex, or nil for a rotation iOS reported without one (never stored).
        public var token: String?

        /// Creates a push-to-start token report.
        public init(attributesType: String, token: String?) {
            self.attributesType = attributesType
            self.token = token
        }

        enum CodingKeys: String, CodingKey {
            case attributesType = "attributes_type"
            case token
        }
    }

    /// The update token of one running activity.
    public struct ActivityToken: Sendable, Hashable, Codable {
        /// The server's key of the activity (`attributes.kk_activity_key`).
        public var activityKey: String
        /// ActivityKit's `Activity.id`, if sent.
        public var activityID: String?
        /// The `ActivityAttributes` type's Swift name.
        public var attributesType: String
        /// The activity's update token, lowercase hex.
        public var token: String

        /// Creates an activity token report.
        public init(activityKey: String, activityID: String? = nil, attributesType: String, token: String) {
            self.activityKey = activityKey
            self.activityID = activityID
            self.attributesType = attributesType
            self.token = token
        }

        enum CodingKeys: String, CodingKey {
            case activityKey = "activity_key"
            case activityID = "activity_id"
            case attributesType = "attributes_type"
            case token
        }
    }

    /// An activity state the app saw (`activityStateUpdates`): only the ends the server cannot see itself.
    public struct ActivityState: Sendable, Hashable, Codable {
        /// The states the app reports.
        public enum State: String, Sendable, Hashable, Codable, CaseIterable {
            /// The activity ended (on the device, or by an end push).
            case ended
            /// The activity was removed from the Lock Screen.
            case dismissed
        }

        /// The server's key of the activity.
        public var activityKey: String
        /// What the app saw.
        public var state: State

        /// Creates an activity state report.
        public init(activityKey: String, state: State) {
            self.activityKey = activityKey
            self.state = state
        }

        enum CodingKeys: String, CodingKey {
            case activityKey = "activity_key"
            case state
        }
    }

    /// The push-to-start tokens, one per attributes type.
    public var pushToStartTokens: [PushToStartToken]
    /// The update tokens of the running activities.
    public var activityTokens: [ActivityToken]
    /// The ends the app saw.
    public var activityStates: [ActivityState]

    /// Creates the Live Activity part of a token update.
    public init(
        pushToStartTokens: [PushToStartToken] = [], activityTokens: [ActivityToken] = [],
        activityStates: [ActivityState] = []
    ) {
        self.pushToStartTokens = pushToStartTokens
        self.activityTokens = activityTokens
        self.activityStates = activityStates
    }

    /// True when it reports nothing.
    public var isEmpty: Bool { pushToStartTokens.isEmpty && activityTokens.isEmpty && activityStates.isEmpty }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case pushToStartTokens = "push_to_start_tokens"
        case activityTokens = "activity_tokens"
        case activityStates = "activity_states"
    }

    /// Decodes the JSON form; a missing list is an empty one.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pushToStartTokens = try c.decodeIfPresent([PushToStartToken].self, forKey: .pushToStartTokens) ?? []
        activityTokens = try c.decodeIfPresent([ActivityToken].self, forKey: .activityTokens) ?? []
        activityStates = try c.decodeIfPresent([ActivityState].self, forKey: .activityStates) ?? []
    }

    /// Encodes the JSON form, leaving empty lists out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if !pushToStartTokens.isEmpty { try c.encode(pushToStartTokens, forKey: .pushToStartTokens) }
        if !activityTokens.isEmpty { try c.encode(activityTokens, forKey: .activityTokens) }
        if !activityStates.isEmpty { try c.encode(activityStates, forKey: .activityStates) }
    }

    /// The longest attributes type name accepted, in characters.
    public static let maximumTypeNameLength = 200

    /// Whether `name` is a Swift type name as ActivityKit sends it in `attributes-type`: identifiers (a letter or
    /// `_`, then letters, digits or `_`, ASCII) joined by dots for a nested or module-qualified type.
    public static func isSwiftTypeName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= maximumTypeNameLength else { return false }
        return name.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            guard let first = part.utf8.first, first == UInt8(ascii: "_") || first.isASCIILetter else { return false }
            return part.utf8.allSatisfy { $0 == UInt8(ascii: "_") || $0.isASCIILetter || ($0 >= 0x30 && $0 <= 0x39) }
        }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool { (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A) }
}

// MARK: - The checks of `live_activity`

extension TokenUpdateRules {
    /// The checks of `live_activity` (codes, stable): `wrong-type` and `missing-field` (a field of the wrong JSON type,
    /// or a required one missing, named by its JSON path), `unknown-field` (info), `live-activity-token-invalid`
    /// (error: a token that is not hex of a device token's length, judged like `token`), `token-uppercase`
    /// (warning), `live-activity-type-invalid` (error: not a Swift type name), `live-activity-key-invalid` (error: not 1-200
    /// printable ASCII), `live-activity-state-invalid` (error: not `ended` or `dismissed`), `live-activity-duplicate`
    /// (warning: one attributes type or activity key twice; the last one counts), and `push-to-start-token-null`
    /// (info: a rotation without a token, which never replaces the stored one).
    static func liveActivity(_ value: JSONValue) -> (LiveActivityTokens?, [Problem]) {
        var problems: [Problem] = []
        let root = "live_activity"
        guard let object = value.objectValue else {
            problems.append(wrongType(root, value, want: "an object"))
            return (nil, problems)
        }
        unknownKeys(
            object, path: root, known: Set(LiveActivityTokens.CodingKeys.allCases.map(\.rawValue)), problems: &problems)
        var tokens = LiveActivityTokens()

        for (item, path) in entries(object, "push_to_start_tokens", root: root, problems: &problems) {
            unknownKeys(item, path: path, known: ["attributes_type", "token"], problems: &problems)
            let type = typeName(item, path: path, problems: &problems)
            var token: String?
            var tokenOK = true
            switch item["token"] {
            case nil, .null?:
                problems.append(
                    Problem(
                        .info, code: .pushToStartTokenNull,
                        message:
                            "\(path).token is null: a push-to-start token rotation without a token (iOS may yield one); the backend records it as a refused rotation and keeps the stored push-to-start token\(type.map { " of \($0)" } ?? "").",
                        fix:
                            "Nothing to do; send the token when Activity<\(type ?? "T")>.pushToStartTokenUpdates yields one (never replace a stored token with nil on the app side either)."
                    ))
            case .string(let text)?:
                token = hexToken(text, path: "\(path).token", problems: &problems)
                tokenOK = token != nil
            case let other?:
                problems.append(wrongType("\(path).token", other, want: "a hex string or null"))
                tokenOK = false
            }
            if let type, tokenOK {
                if tokens.pushToStartTokens.contains(where: { $0.attributesType == type }) {
                    problems.append(duplicate("\(path).attributes_type", "the attributes type \(type)"))
                    tokens.pushToStartTokens.removeAll { $0.attributesType == type }
                }
                tokens.pushToStartTokens.append(.init(attributesType: type, token: token))
            }
        }

        for (item, path) in entries(object, "activity_tokens", root: root, problems: &problems) {
            unknownKeys(
                item, path: path, known: ["activity_key", "activity_id", "attributes_type", "token"],
                problems: &problems)
            let key = activityKey(item, path: path, problems: &problems)
            let type = typeName(item, path: path, problems: &problems)
            var id: String?
            switch item["activity_id"] {
            case nil, .null?: break
            case .string(let text)? where !text.isEmpty && text.utf8.count <= ActivityKey.maximumLength:
                id = text
            case let other?:
                problems.append(wrongType("\(path).activity_id", other, want: "a non-empty string of at most 200"))
            }
            var token: String?
            switch item["token"] {
            case nil, .null?:
                problems.append(
                    missing(
                        "\(path).token",
                        fix:
                            "Send the activity's update token from activity.pushTokenUpdates as lowercase hex; an activity token is never null."
                    ))
            case .string(let text)?:
                token = hexToken(text, path: "\(path).token", problems: &problems)
            case let other?:
                problems.append(wrongType("\(path).token", other, want: "a hex string"))
            }
            if let key, let type, let token {
                if tokens.activityTokens.contains(where: { $0.activityKey == key }) {
                    problems.append(duplicate("\(path).activity_key", "the activity key \(key)"))
                    tokens.activityTokens.removeAll { $0.activityKey == key }
                }
                tokens.activityTokens.append(
                    .init(activityKey: key, activityID: id, attributesType: type, token: token))
            }
        }

        for (item, path) in entries(object, "activity_states", root: root, problems: &problems) {
            unknownKeys(item, path: path, known: ["activity_key", "state"], problems: &problems)
            let key = activityKey(item, path: path, problems: &problems)
            var state: LiveActivityTokens.ActivityState.State?
            switch item["state"] {
            case nil, .null?:
                problems.append(missing("\(path).state", fix: "Send state \"ended\" or \"dismissed\"."))
            case .string(let text)?:
                state = .init(rawValue: text)
                if state == nil {
                    problems.append(
                        Problem(
                            .error, code: .liveActivityStateInvalid,
                            message:
                                "\(path).state is \"\(text.prefix(40))\", not \"ended\" or \"dismissed\" (the only states the app reports; the server knows the others).",
                            fix:
                                "Send \"ended\" for ActivityState.ended and \"dismissed\" for .dismissed; leave .active and .stale out."
                        ))
                }
            case let other?:
                problems.append(wrongType("\(path).state", other, want: "a string"))
            }
            if let key, let state {
                tokens.activityStates.append(.init(activityKey: key, state: state))
            }
        }
        return (tokens, problems)
    }

    /// The objects of the list `name` in `object`, each with its index and JSON path; a list or item of the wrong type
    /// is a problem.
    private static func entries(
        _ object: [String: JSONValue], _ name: String, root: String, problems: inout [Problem]
    ) -> [(fields: [String: JSONValue], path: String)] {
        guard let value = object[name], value != .null else { return [] }
        guard let items = value.arrayValue else {
            problems.append(wrongType("\(root).\(name)", value, want: "an array"))
            return []
        }
        var out: [(fields: [String: JSONValue], path: String)] = []
        for (i, item) in items.enumerated() {
            let path = "\(root).\(name)[\(i)]"
            guard let fields = item.objectValue else {
                problems.append(wrongType(path, item, want: "an object"))
                continue
            }
            out.append((fields, path))
        }
        return out
    }

    private static func unknownKeys(
        _ item: [String: JSONValue], path: String, known: Set<String>, problems: inout [Problem]
    ) {
        for key in item.keys.sorted() where !known.contains(key) {
            problems.append(unknown("\(path).\(key)", near: snakeCase(key), known: known))
        }
    }

    private static func typeName(_ item: [String: JSONValue], path: String, problems: inout [Problem]) -> String? {
        guard let value = item["attributes_type"], value != .null else {
            problems.append(
                missing(
                    "\(path).attributes_type",
                    fix: "Send the ActivityAttributes type's Swift name, as in a start push's attributes-type."))
            return nil
        }
        guard let text = value.stringValue else {
            problems.append(wrongType("\(path).attributes_type", value, want: "a string"))
            return nil
        }
        guard LiveActivityTokens.isSwiftTypeName(text) else {
            problems.append(
                Problem(
                    .error, code: .liveActivityTypeInvalid,
                    message:
                        "\(path).attributes_type \"\(text.prefix(60))\" is not a Swift type name (a letter or _, then letters, digits or _; dots between nested names; at most \(LiveActivityTokens.maximumTypeNameLength) characters).",
                    fix:
                        "Send the ActivityAttributes type's name as written in Swift (String(describing: T.self)), for example \"DienstAttributes\"."
                ))
            return nil
        }
        return text
    }

    private static func activityKey(_ item: [String: JSONValue], path: String, problems: inout [Problem]) -> String? {
        guard let value = item["activity_key"], value != .null else {
            problems.append(
                missing(
                    "\(path).activity_key",
                    fix: "Send the activity's attributes.kk_activity_key (the key the server started it with)."))
            return nil
        }
        guard let text = value.stringValue else {
            problems.append(wrongType("\(path).activity_key", value, want: "a string"))
            return nil
        }
        if let flaw = ActivityKey.flaw(text) {
            let why =
                switch flaw {
                case .empty: "is empty"
                case .tooLong(let bytes): "is \(bytes) bytes, more than \(ActivityKey.maximumLength)"
                case .notPrintable: "has a character that is not printable ASCII"
                }
            problems.append(
                Problem(
                    .error, code: .liveActivityKeyInvalid,
                    message: "\(path).activity_key \(why); an activity key is 1-200 printable ASCII characters.",
                    fix: "Send attributes.kk_activity_key exactly as the start push carried it."))
            return nil
        }
        return text
    }

    /// A token judged like the device token (``DeviceToken/judge(_:)``): the lowercase hex to store, or nil with an
    /// error naming `path`; uppercase hex is a warning and accepted, lowercased.
    private static func hexToken(_ text: String, path: String, problems: inout [Problem]) -> String? {
        let judgement = DeviceToken.judge(text)
        switch judgement.form {
        case .clean:
            return judgement.token
        case .uppercase:
            problems.append(
                Problem(
                    .warning, code: .tokenUppercase,
                    message: "\(path) has uppercase hex digits; the backend stores it lowercased.",
                    fix: "Send the token as lowercase hex (%02x per byte)."))
            return judgement.token
        default:
            let why = judgement.problems.first { $0.severity == .error }?.message ?? "It is not a usable token."
            problems.append(
                Problem(
                    .error, code: .liveActivityTokenInvalid,
                    message: "\(path) is not a token the backend can store: \(why)",
                    fix:
                        "Send the token's bytes as lowercase hex: token.map { String(format: \"%02x\", $0) }.joined() (64-400 hex digits, no spaces, brackets or description form)."
                ))
            return nil
        }
    }

    private static func wrongType(_ path: String, _ value: JSONValue, want: String) -> Problem {
        Problem(
            .error, code: .wrongType, message: "The field '\(path)' is \(typeName(value)), not \(want).",
            fix: "Send '\(path)' as \(want) (see the live_activity contract).")
    }

    private static func missing(_ path: String, fix: String) -> Problem {
        Problem(.error, code: .missingField, message: "The required field '\(path)' is missing.", fix: fix)
    }

    /// A key the contract does not have: a camelCase twin of a known one is an error (the backend reads the
    /// snake_case name and the value is lost), anything else an info, as for the body's own fields.
    private static func unknown(_ path: String, near: String, known: Set<String>) -> Problem {
        if known.contains(near) {
            return Problem(
                .error, code: .fieldNotSnakeCase,
                message: "The body has '\(path)'; the backend reads '\(near)' there and ignores this one.",
                fix: "Rename the field to '\(near)' (the backend's names are snake_case).")
        }
        return Problem(
            .info, code: .unknownField, message: "The body has the field '\(path)', which the backend ignores.",
            fix: "Remove it, or check its spelling.")
    }

    private static func duplicate(_ path: String, _ what: String) -> Problem {
        Problem(
            .warning, code: .liveActivityDuplicate,
            message: "\(path): \(what) appears more than once in live_activity; the backend records the last one.",
            fix: "Send each attributes type's push-to-start token and each activity's token once per update.")
    }
}
