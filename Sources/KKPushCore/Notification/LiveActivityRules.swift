import Foundation

/// The payload rules for Live Activity pushes (`apns-push-type: liveactivity`), part of stage 6
/// (``APNsRequestRules/checkPayload(_:)``, through ``PayloadRules``): the client's pre-flight, the mock
/// and `payload lint` all run them.
///
/// Severity follows the rest of the rules: an error only for what APNs itself rejects, with the APNs
/// reason. On the device endpoint (`/3/device/`) Apple documents no rejection for any Live Activity key
/// (`BadRequestPayload` belongs to the broadcast endpoint), and its documentation says the device, not
/// APNs, drops a push whose `content-state` does not decode. So every rule here is a **warning** (the
/// device ignores or mishandles the push) or an **info**; the one error a Live Activity payload gets is
/// the size, `413 PayloadTooLarge` over ``devicePayloadLimit`` bytes (``PushType/payloadLimit``).
///
/// Apple-documented (spec §3.3, A14): `event` is start, update or end; `timestamp`, `stale-date` and
/// `dismissal-date` are UNIX seconds; `content-state` is a dictionary; a start needs an `alert`,
/// `attributes-type` and `attributes`; `input-push-token` (1) and `input-push-channel` belong to a start;
/// a `dismissal-date` in the past dismisses at once; priority 10 counts against an hourly budget; 4096
/// bytes for a device push, 5120 for a broadcast. kkpush's judgement: that `content-state` is needed on
/// update as well as start, that start-only keys on an update or end are a mistake, that a number over
/// 10^11 is milliseconds, that a date before the timestamp (or before now) is a mistake, and the
/// severities.
///
/// Codes: `liveactivity-missing-event`, `liveactivity-event-unknown`, `liveactivity-missing-timestamp`,
/// `liveactivity-timestamp-milliseconds`, `liveactivity-date-milliseconds`,
/// `liveactivity-missing-content-state`, `liveactivity-start-incomplete`, `liveactivity-start-only-key`,
/// `liveactivity-input-push-token-not-1`, `liveactivity-stale-date-past`, `liveactivity-dismissal-date-past`
/// (a warning; an info on an end, where Apple documents a past date as the way to dismiss at once), and the
/// infos `liveactivity-priority-budget` and `liveactivity-broadcast-size`. The types of the keys
/// (`aps-value-wrong-type`) and `liveactivity-keys-wrong-push-type` are ``PayloadRules``'.
public enum LiveActivityRules {
    /// The payload limit of a Live Activity push to a device token (`/3/device/`).
    public static let devicePayloadLimit = 4096
    /// The payload limit of a broadcast push to a channel (spec §9.2).
    public static let broadcastPayloadLimit = 5120
    /// A UNIX time above this (in the year 5138 as seconds, 1973 as milliseconds) is taken for milliseconds.
    public static let millisecondsThreshold = 100_000_000_000
    /// The events Apple documents.
    public static let events: [LiveActivityEvent] = LiveActivityEvent.allCases
    /// The keys only a start uses.
    public static let startOnlyKeys = ["attributes-type", "attributes", "input-push-token", "input-push-channel"]

    /// What a Live Activity push of one event carries that it should not, and lacks that it needs, by `aps` key
    /// (``eventKeys(_:present:)``).
    public struct EventKeys: Sendable, Hashable {
        /// The keys the event needs and the push lacks, in the order ``requiredKeys(for:)`` gives them.
        public var missing: [String]
        /// The start-only keys an update or an end carries, in the order of ``startOnlyKeys``.
        public var startOnly: [String]
    }

    /// The `aps` keys a push of `event` needs: a start `attributes-type`, `attributes`, `content-state` and an
    /// `alert` (Apple's requirements, and kkpush's for the content state); an update its `content-state`; an end
    /// none (an unknown event: none either).
    public static func requiredKeys(for event: LiveActivityEvent) -> [String] {
        switch event {
        case .start: ["attributes-type", "attributes", "content-state", "alert"]
        case .update: ["content-state"]
        default: []
        }
    }

    /// The event rules of one push, in one place: which keys `event` needs that are not `present`, and which
    /// start-only keys an update or end carries. ``check(_:request:now:into:)`` judges a payload's `aps` by them, and
    /// a builder its inputs (`present`: whether the input for that key is given).
    public static func eventKeys(_ event: LiveActivityEvent, present: (String) -> Bool) -> EventKeys {
        EventKeys(
            missing: requiredKeys(for: event).filter { !present($0) },
            startOnly: event == .start || !event.isKnown ? [] : startOnlyKeys.filter(present))
    }

    /// Whether a UNIX time `value` is in milliseconds rather than seconds (above ``millisecondsThreshold``).
    public static func isMilliseconds(_ value: Int) -> Bool { value > millisecondsThreshold }

    /// The current UNIX time in seconds.
    public static func currentUnixSeconds() -> Int { Int(Date().timeIntervalSince1970.rounded(.down)) }

    /// Checks the `aps` of a `liveactivity` push. `now` (UNIX seconds) is the reference for dates when
    /// the payload has no usable timestamp, and for "already past".
    public static func check(
        _ aps: [String: JSONValue], request: NotificationRequest, now: Int = currentUnixSeconds(),
        into check: inout RequestCheck
    ) {
        // Event.
        let eventValue = aps["event"]
        let event = eventValue?.stringValue.map { LiveActivityEvent(rawValue: $0) }
        if let eventValue {
            if !(event?.isKnown ?? false) {
                check.add(
                    warning(
                        .liveactivityEventUnknown, "'aps.event' is \(eventValue), not start, update or end.",
                        "Send \"event\" as \"start\", \"update\" or \"end\"."))
            }
        } else {
            check.add(
                warning(
                    .liveactivityMissingEvent,
                    "A liveactivity push has no 'aps.event'; the device does not know whether to start, update or end.",
                    "Send \"event\":\"update\" (or start/end)."))
        }
        let name = event?.isKnown == true ? "Live Activity \(event!.rawValue)" : "Live Activity push"

        // Timestamp.
        var reference = now
        var referenceName = "now"
        if let timestamp = aps["timestamp"] {
            if let seconds = timestamp.intValue {
                if isMilliseconds(seconds) {
                    check.add(
                        warning(
                            .liveactivityTimestampMilliseconds,
                            "'aps.timestamp' is \(seconds): the timestamp is in milliseconds; APNs wants seconds. iOS compares it with the last update's and would take every later update (in seconds) as older, and drop it.",
                            "Send the UNIX time in seconds (\(seconds / 1000))."))
                } else {
                    reference = seconds
                    referenceName = "the timestamp (\(seconds))"
                }
            }  // another type: aps-value-wrong-type (PayloadRules)
        } else {
            check.add(
                warning(
                    .liveactivityMissingTimestamp,
                    "A \(name) has no 'aps.timestamp'; iOS uses it to drop updates older than the last one it showed.",
                    "Add \"timestamp\" with the current UNIX time in seconds."))
        }

        // What the event needs and allows (``eventKeys(_:present:)``, the rules `payload build` checks its flags by).
        let keys = event.map { eventKeys($0, present: { aps[$0] != nil }) } ?? EventKeys(missing: [], startOnly: [])
        if keys.missing.contains("content-state") {
            check.add(
                warning(
                    .liveactivityMissingContentState,
                    "A \(name) has no 'aps.content-state', so the device has nothing to show.",
                    "Send the activity's ContentState dictionary, encoded with default JSON strategies."))
        }

        // Start-only keys.
        if event == .start {
            let missing = keys.missing.filter { $0 != "content-state" }
            if !missing.isEmpty {
                check.add(
                    warning(
                        .liveactivityStartIncomplete,
                        "A Live Activity start lacks \(missing.map { "aps." + $0 }.joined(separator: ", ")); Apple requires attributes-type, attributes and an alert, and the device does not start the activity without them.",
                        "A start needs event, timestamp, content-state, attributes-type (the ActivityAttributes type's name), attributes and alert."
                    ))
            }
        } else {
            let present = keys.startOnly
            if !present.isEmpty {
                check.add(
                    warning(
                        .liveactivityStartOnlyKey,
                        "A \(name) carries \(present.map { "aps." + $0 }.joined(separator: ", ")), which only a start uses; the device ignores \(present.count > 1 ? "them" : "it").",
                        "Leave \(present.joined(separator: ", ")) out of update and end pushes."))
            }
        }
        if let value = aps["input-push-token"], value.intValue != 1 {
            check.add(
                warning(
                    .liveactivityInputPushTokenNot1,
                    "'aps.input-push-token' is \(value), not the number 1; the device does not send an update token.",
                    "Send \"input-push-token\":1 on a start, or leave it out."))
        }

        // Dates.
        for key in ["stale-date", "dismissal-date"] {
            guard let seconds = aps[key]?.intValue else { continue }
            if isMilliseconds(seconds) {
                check.add(
                    warning(
                        .liveactivityDateMilliseconds,
                        "'aps.\(key)' is \(seconds): it is in milliseconds; APNs wants seconds, so the date is thousands of years away.",
                        "Send the UNIX time in seconds (\(seconds / 1000))."))
                continue
            }
            let pastReference = seconds < reference
            let pastNow = seconds < now
            guard pastReference || pastNow else { continue }
            let when = pastReference ? "before \(referenceName)" : "already past (now is \(now))"
            if key == "stale-date" {
                check.add(
                    warning(
                        .liveactivityStaleDatePast,
                        "'aps.stale-date' (\(seconds)) is \(when), so the activity shows as stale at once.",
                        "Send a stale-date after the timestamp, or leave it out."))
            } else {
                let isEnd = event == .end
                check.add(
                    Problem(
                        isEnd ? .info : .warning, code: .liveactivityDismissalDatePast,
                        message:
                            "'aps.dismissal-date' (\(seconds)) is \(when): the activity is dismissed at once\(isEnd ? " (Apple's way to end and remove it immediately)" : "").",
                        fix: isEnd
                            ? "To keep the ended activity on the Lock Screen a while, send a later dismissal-date (or none: up to 4 hours)."
                            : "Send a dismissal-date after the timestamp, or leave it out."))
            }
        }

        // Priority and size.
        let priority = request.priority ?? 10
        if priority == 10 {
            check.add(
                Problem(
                    .info, code: .liveactivityPriorityBudget,
                    message: (request.priority == nil
                        ? "apns-priority is not set, so APNs uses 10; " : "apns-priority is 10; ")
                        + "priority-10 Live Activity pushes count against an hourly budget; past it, updates may be throttled.",
                    fix:
                        "Send routine updates at priority 5; for frequent priority-10 updates set NSSupportsLiveActivitiesFrequentUpdates in the app's Info.plist."
                ))
        }
        let size = request.payload.count
        if size > devicePayloadLimit, size <= broadcastPayloadLimit {
            check.add(
                Problem(
                    .info, code: .liveactivityBroadcastSize,
                    message:
                        "At \(size) bytes this payload would fit a broadcast push (\(broadcastPayloadLimit) bytes) but not a push to a device token (\(devicePayloadLimit) bytes).",
                    fix: "Shorten the content-state or alert to \(devicePayloadLimit) bytes for device pushes."))
        }
    }

    static func warning(_ code: Problem.Code, _ message: String, _ fix: String) -> Problem {
        Problem(.warning, code: code, message: message, fix: fix)
    }
}
