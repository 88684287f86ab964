/// The payload checks of stage 6 (``APNsRequestRules/checkPayload(_:)``) after size: whether the body is
/// a JSON object (an error, `PayloadEmpty`, see ``APNsRequestRules``), then warnings only — things
/// APNs accepts but that are wrong or will not work on the device. Warning codes:
///
/// `duplicate-json-key`, `aps-missing`, `aps-not-object`, `custom-key-in-aps`, `aps-value-wrong-type`,
/// `alert-wrong-type`, `alert-unknown-key`, `loc-args-wrong-type`, `badge-not-integer`,
/// `sound-wrong-type`, `sound-volume-out-of-range`, `sound-critical-not-1`, `content-available-not-1`,
/// `mutable-content-not-1`, `mutable-content-without-alert`, `interruption-level-unknown`,
/// `relevance-score-out-of-range`, `push-type-missing`, `push-type-mismatch`, `background-with-alert`,
/// `background-missing-content-available`, `background-priority-10`, `liveactivity-missing-event`,
/// `liveactivity-event-unknown`, `liveactivity-missing-timestamp`, `liveactivity-timestamp-milliseconds`,
/// `liveactivity-missing-content-state`, `liveactivity-start-incomplete` and the rest of
/// ``LiveActivityRules``, `liveactivity-keys-wrong-push-type`, `widgets-missing-content-changed`,
/// `mdm-missing-magic`.
public enum PayloadRules {
    /// The keys Apple documents inside `aps` (spec §3.3).
    public static let apsKeys: Set<String> = [
        "alert", "badge", "sound", "thread-id", "category", "content-available", "mutable-content",
        "target-content-id", "interruption-level", "relevance-score", "filter-criteria", "stale-date",
        "content-state", "timestamp", "event", "dismissal-date", "attributes-type", "attributes",
        "input-push-token", "input-push-channel", "content-changed", "url-args",
    ]
    /// The keys Apple documents inside `aps.alert` (spec §3.4).
    public static let alertKeys: Set<String> = [
        "title", "subtitle", "body", "launch-image", "title-loc-key", "title-loc-args", "subtitle-loc-key",
        "subtitle-loc-args", "loc-key", "loc-args",
    ]
    /// Older alert keys clients still send; APNs passes them on (spec §3.4).
    public static let legacyAlertKeys: Set<String> = ["action", "action-loc-key", "summary-arg", "summary-arg-count"]
    /// The Live Activity keys in `aps`.
    public static let liveActivityKeys: Set<String> = [
        "timestamp", "event", "content-state", "stale-date", "dismissal-date", "attributes-type", "attributes",
        "input-push-token", "input-push-channel",
    ]
    /// The values `interruption-level` may take.
    public static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    /// The payload checks after the size: `PayloadEmpty` (an error) for a body that is not a JSON object,
    /// then the warnings listed on ``PayloadRules``.
    public static func check(_ request: NotificationRequest) -> RequestCheck {
        var check = RequestCheck()
        if request.pushType == nil { check.add(APNsRequestRules.pushTypeMissing(request)) }
        if request.pushType == .background, (request.priority ?? 10) == 10 {
            let what = request.priority == nil ? "apns-priority is not set, so APNs uses 10," : "apns-priority is 10"
            check.add(
                warning(
                    .backgroundPriority10,
                    "\(what) on a background push; Apple calls priority 10 an error there, and the system may drop or throttle it.",
                    "Send background pushes with apns-priority 5."))
        }
        var parser = JSONParser(request.payload)
        let root: JSONValue
        do {
            root = try parser.parseDocument()
        } catch {
            check.add(
                Problem(
                    .error, code: .payloadEmpty,
                    message: error.message
                        + " kkpush (and its mock) answers PayloadEmpty; real APNs's answer is unconfirmed.",
                    fix: error.fix ?? "Send one JSON object."))
            return check
        }
        guard let object = root.objectValue else {
            check.add(
                Problem(
                    .error, code: .payloadEmpty,
                    message:
                        "The payload is \(root.jsonTypePhrase), not an object. kkpush (and its mock) answers PayloadEmpty; real APNs's answer is unconfirmed.",
                    fix: "Send a JSON object with an aps dictionary, e.g. {\"aps\":{\"alert\":\"Hallo\"}}."))
            return check
        }
        for path in parser.duplicateKeys {
            check.add(
                warning(
                    .duplicateJsonKey, "The key '\(path)' appears twice; which value the device sees is undefined.",
                    "Send each key once."))
        }
        let pushType = request.effectivePushType
        guard let apsValue = object["aps"] else {
            if pushType == .mdm {
                if object["mdm"] == nil {
                    check.add(
                        warning(
                            .mdmMissingMagic, "An mdm push has no top-level 'mdm' key.",
                            "Send {\"mdm\":\"<PushMagic>\"} with the device's PushMagic string."))
                }
            } else {
                check.add(
                    warning(
                        .apsMissing,
                        "The payload has no 'aps' dictionary, so the device shows nothing and wakes nothing.",
                        "Add an aps dictionary: {\"aps\":{\"alert\":...}} or {\"aps\":{\"content-available\":1}}."))
            }
            return check
        }
        guard let aps = apsValue.objectValue else {
            check.add(
                warning(
                    .apsNotObject,
                    "'aps' is \(apsValue.typeNameWithArticle), not a dictionary; the device ignores it.",
                    "Make aps a dictionary: {\"aps\":{\"alert\":\"Hallo\"}}."))
            return check
        }
        checkAPS(aps, request: request, pushType: pushType, into: &check)
        return check
    }

    static func checkAPS(
        _ aps: [String: JSONValue], request: NotificationRequest, pushType: PushType, into check: inout RequestCheck
    ) {
        for key in aps.keys.sorted() where !apsKeys.contains(key) {
            check.add(
                warning(
                    .customKeyInAps, "'aps.\(key)' is not an aps key; APNs and iOS ignore custom keys inside aps.",
                    "Move '\(key)' out of aps to the top level of the payload."))
        }
        // Types of the simple keys.
        let stringKeys = [
            "thread-id", "category", "target-content-id", "filter-criteria", "attributes-type", "input-push-channel",
        ]
        for key in stringKeys {
            if let value = aps[key], value.stringValue == nil {
                check.add(wrongType("aps.\(key)", value, expected: "a string"))
            }
        }
        let numberKeys = ["stale-date", "dismissal-date", "timestamp"]
        for key in numberKeys {
            if let value = aps[key], value.intValue == nil {
                check.add(wrongType("aps.\(key)", value, expected: "a UNIX time in whole seconds"))
            }
        }
        for key in ["content-state", "attributes"] {
            if let value = aps[key], value.objectValue == nil {
                check.add(wrongType("aps.\(key)", value, expected: "a dictionary"))
            }
        }

        // Alert.
        var hasVisibleAlert = false
        if let alert = aps["alert"] {
            switch alert {
            case .string(let text):
                hasVisibleAlert = !text.isEmpty
            case .object(let fields):
                hasVisibleAlert = ["title", "subtitle", "body", "title-loc-key", "subtitle-loc-key", "loc-key"].contains
                {
                    fields[$0] != nil
                }
                for key in fields.keys.sorted() {
                    let value = fields[key]!
                    if key.hasSuffix("-loc-args") || key == "loc-args" {
                        let ok = value.arrayValue?.allSatisfy { $0.stringValue != nil } ?? false
                        if !ok {
                            check.add(
                                warning(
                                    .locArgsWrongType,
                                    "'aps.alert.\(key)' is \(value.typeNameWithArticle), not an array of strings.",
                                    "Send \(key) as an array of strings, e.g. [\"Jan\",\"zaterdag\"]."))
                        }
                    } else if alertKeys.contains(key) {
                        if value.stringValue == nil {
                            check.add(
                                warning(
                                    .alertWrongType,
                                    "'aps.alert.\(key)' is \(value.typeNameWithArticle), not a string.",
                                    "Send \(key) as a string."))
                        }
                    } else if !legacyAlertKeys.contains(key) {
                        check.add(
                            warning(
                                .alertUnknownKey, "'aps.alert.\(key)' is not an alert key; iOS ignores it.",
                                "Use title, subtitle, body, launch-image or the *-loc-key/*-loc-args keys."))
                    }
                }
            default:
                check.add(
                    warning(
                        .alertWrongType,
                        "'aps.alert' is \(alert.typeNameWithArticle), not a string or a dictionary.",
                        "Send alert as a string (the body) or as {\"title\":...,\"body\":...}."))
            }
        }

        // Badge.
        if let badge = aps["badge"], !(badge.intValue.map { $0 >= 0 } ?? false) {
            check.add(
                warning(
                    .badgeNotInteger, "'aps.badge' is \(badge), not a whole number of 0 or more; iOS ignores it.",
                    "Send badge as a number: 0 clears the badge."))
        }

        // Sound.
        if let sound = aps["sound"] {
            switch sound {
            case .string: break
            case .object(let fields):
                if fields["name"]?.stringValue == nil {
                    check.add(
                        warning(
                            .soundWrongType, "The critical sound dictionary has no string 'name'.",
                            "Send {\"critical\":1,\"name\":\"default\",\"volume\":1.0}."))
                }
                if let critical = fields["critical"], critical.intValue != 1 {
                    check.add(
                        warning(
                            .soundCriticalNot1, "'aps.sound.critical' is \(critical), not 1.",
                            "Send critical: 1 for a critical alert sound (it needs Apple's critical-alerts entitlement)."
                        ))
                }
                if let volume = fields["volume"] {
                    if let number = volume.doubleValue {
                        if !(0...1).contains(number) {
                            check.add(
                                warning(
                                    .soundVolumeOutOfRange, "'aps.sound.volume' is \(volume), outside 0...1.",
                                    "Send a volume from 0.0 (silent) to 1.0 (full)."))
                        }
                    } else {
                        check.add(wrongType("aps.sound.volume", volume, expected: "a number from 0 to 1"))
                    }
                }
            default:
                check.add(
                    warning(
                        .soundWrongType,
                        "'aps.sound' is \(sound.typeNameWithArticle), not a string or a critical-sound dictionary.",
                        "Send sound as \"default\" or a file name, or {\"critical\":1,\"name\":...,\"volume\":...}."))
            }
        }

        // Flags.
        let contentAvailable = aps["content-available"]
        if let contentAvailable, contentAvailable != .int(1) {
            check.add(
                warning(
                    .contentAvailableNot1,
                    "'aps.content-available' is \(contentAvailable), not the number 1; iOS does not wake the app.",
                    "Send \"content-available\":1 (a number), or leave the key out."))
        }
        if let mutable = aps["mutable-content"] {
            if mutable != .int(1) {
                check.add(
                    warning(
                        .mutableContentNot1,
                        "'aps.mutable-content' is \(mutable), not the number 1; the service extension does not run.",
                        "Send \"mutable-content\":1, or leave the key out."))
            } else if !hasVisibleAlert {
                check.add(
                    warning(
                        .mutableContentWithoutAlert,
                        "'aps.mutable-content' is set but there is no alert title, subtitle or body, so the service extension never runs.",
                        "Add an alert with a title or body, or drop mutable-content."))
            }
        }
        if let level = aps["interruption-level"], !(level.stringValue.map(interruptionLevels.contains) ?? false) {
            check.add(
                warning(
                    .interruptionLevelUnknown,
                    "'aps.interruption-level' is \(level), not passive, active, time-sensitive or critical.",
                    "Use one of passive, active, time-sensitive, critical (critical needs Apple's entitlement)."))
        }
        if let score = aps["relevance-score"] {
            if let number = score.doubleValue {
                if pushType != .liveactivity, !(0...1).contains(number) {
                    check.add(
                        warning(
                            .relevanceScoreOutOfRange,
                            "'aps.relevance-score' is \(score), outside 0...1 (only Live Activities take any number).",
                            "Send a relevance score from 0.0 to 1.0."))
                }
            } else {
                check.add(wrongType("aps.relevance-score", score, expected: "a number"))
            }
        }

        // Push type versus content.
        let interactive = ["alert", "sound", "badge"].filter { aps[$0] != nil }
        switch pushType {
        case .background:
            if !interactive.isEmpty {
                check.add(
                    warning(
                        .backgroundWithAlert,
                        "A background push carries \(interactive.map { "aps." + $0 }.joined(separator: ", ")); background pushes must not alert, sound or badge.",
                        "Send the alert as an alert push, or drop \(interactive.joined(separator: "/")) from this background push."
                    ))
            }
            if contentAvailable == nil {
                check.add(
                    warning(
                        .backgroundMissingContentAvailable,
                        "A background push has no 'aps.content-available', so the app is not woken.",
                        "Add \"content-available\":1 to aps."))
            }
        case .alert:
            if interactive.isEmpty && request.pushType != nil {
                check.add(
                    warning(
                        .pushTypeMismatch,
                        contentAvailable != nil
                            ? "apns-push-type is alert but aps has only content-available: this is a background push."
                            : "apns-push-type is alert but aps has no alert, sound or badge, so nothing is shown.",
                        contentAvailable != nil
                            ? "Send it with apns-push-type background and apns-priority 5."
                            : "Add an alert (title/body), or send a background push."))
            }
        case .widgets:
            if aps["content-changed"] != .bool(true) {
                check.add(
                    warning(
                        .widgetsMissingContentChanged, "A widgets push lacks \"content-changed\":true in aps.",
                        "Send {\"aps\":{\"content-changed\":true}}."))
            }
        default: break
        }

        // Live Activities.
        let activityKeys = aps.keys.filter { liveActivityKeys.contains($0) }.sorted()
        if pushType == .liveactivity {
            LiveActivityRules.check(aps, request: request, into: &check)
        } else if !activityKeys.isEmpty {
            check.add(
                warning(
                    .liveactivityKeysWrongPushType,
                    "The Live Activity keys \(activityKeys.map { "aps." + $0 }.joined(separator: ", ")) are in a \(pushType) push; only liveactivity pushes use them.",
                    "Send Live Activity updates with apns-push-type liveactivity to <bundle id>.push-type.liveactivity."
                ))
        }
    }

    static func warning(_ code: Problem.Code, _ message: String, _ fix: String) -> Problem {
        Problem(.warning, code: code, message: message, fix: fix)
    }

    static func wrongType(_ path: String, _ value: JSONValue, expected: String) -> Problem {
        warning(
            .apsValueWrongType,
            "'\(path)' is \(value.typeNameWithArticle)\(value == .null ? "" : " (\(value))"), not \(expected); iOS ignores it.",
            "Send \(path) as \(expected).")
    }
}
