public import Foundation
public import KKPushCore

/// The registry's requests read from a Live Activity payload as a caller wrote it: the push queue's Live Activity
/// rows and send-batch's activity lines carry `{"aps": {...}}` and name the activity by key and event beside it.
///
/// The payload gives `content-state`, `alert`, `stale-date`, `relevance-score`, and for a start `attributes-type`,
/// `attributes` and `input-push-token`, for an end `dismissal-date`; `event` and `timestamp` are the registry's
/// (an `event` that contradicts the row's or line's is refused). A start carries `input-push-token: 1` unless the
/// payload says `"input-push-token": 0`: the app can report the activity's update token only if the device is asked
/// for one. Other top-level keys of the payload are not sent: the registry builds the push.
public enum ActivityPayloadRequests {
    /// The `aps` object of `payload`, checked against `event`; `activity-input-invalid` naming `field`.
    static func aps(_ payload: [UInt8], event: LiveActivityEvent, field: String) throws(KKPushError) -> (
        APS, [String: JSONValue]
    ) {
        func invalid(_ why: String, _ fix: String) -> KKPushError {
            KKPushError(code: .activityInputInvalid, message: "The Live Activity payload (\(field)) \(why)", fix: fix)
        }
        guard let object = (try? JSONValue.parse(payload))?.objectValue else {
            throw invalid(
                "is not a JSON object.", "Give the payload as a JSON object: {\"aps\": {\"content-state\": {...}}}.")
        }
        guard let members = object["aps"]?.objectValue else {
            throw invalid(
                "has no aps object.", "Put the Live Activity keys in aps: {\"aps\": {\"content-state\": {...}}}.")
        }
        let aps = APS(members: members)
        if let given = members["event"]?.stringValue, given != event.rawValue {
            throw invalid(
                "says aps.event \"\(given)\", but the push is a\(event == .update ? "n" : "") \(event.rawValue).",
                "Leave aps.event out (kkpush sets it from the activity's event), or make the two agree.")
        }
        return (aps, members)
    }

    /// A start of activity `key` on `device` from `payload`: `attributes-type`, `content-state` and `alert` are
    /// required (APNs does not start an activity without them), `attributes` is `{}` if left out.
    public static func start(
        key: String, device: String, topic: String, payload: [UInt8], pushToStartToken: String?,
        overBudget: ActivityOverBudget = .defer, field: String = "payload"
    ) throws(KKPushError) -> ActivityStartRequest {
        let (aps, members) = try aps(payload, event: .start, field: field)
        var missing: [String] = []
        if aps.attributesType == nil { missing.append("aps.attributes-type") }
        if aps.contentState == nil { missing.append("aps.content-state") }
        if aps.alert == nil { missing.append("aps.alert") }
        guard let type = aps.attributesType, let state = aps.contentState, let alert = aps.alert else {
            throw KKPushError(
                code: .activityInputInvalid,
                message: "The Live Activity start payload (\(field)) lacks \(missing.joined(separator: ", ")).",
                fix:
                    "A start needs aps.attributes-type (the ActivityAttributes type's name), aps.content-state and aps.alert; aps.attributes holds the static attributes."
            )
        }
        let input = members["input-push-token"].map { $0 != .int(0) && $0 != .bool(false) } ?? true
        return ActivityStartRequest(
            key: key, device: device, topic: topic, attributesType: type, attributes: aps.attributes ?? .object([:]),
            contentState: state, alert: alert, inputPushToken: input, staleDate: aps.staleDate,
            relevanceScore: aps.relevanceScore, pushToStartToken: pushToStartToken, overBudget: overBudget)
    }

    /// An update of activity `key` from `payload` (`content-state` required).
    public static func update(key: String, payload: [UInt8], field: String = "payload") throws(KKPushError)
        -> ActivityUpdateRequest
    {
        let (aps, _) = try aps(payload, event: .update, field: field)
        guard let state = aps.contentState else {
            throw KKPushError(
                code: .activityInputInvalid,
                message: "The Live Activity update payload (\(field)) lacks aps.content-state.",
                fix: "An update needs aps.content-state: the activity's new ContentState as JSON.")
        }
        return ActivityUpdateRequest(
            key: key, contentState: state, alert: aps.alert, staleDate: aps.staleDate,
            relevanceScore: aps.relevanceScore)
    }

    /// An end of activity `key` from `payload` (every field optional).
    public static func end(key: String, payload: [UInt8], field: String = "payload") throws(KKPushError)
        -> ActivityEndRequest
    {
        let (aps, _) = try aps(payload, event: .end, field: field)
        return ActivityEndRequest(
            key: key, contentState: aps.contentState, dismissalDate: aps.dismissalDate, alert: aps.alert)
    }
}
