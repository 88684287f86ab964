public import Foundation
public import KKPushCore

/// The Live Activity pushes of the registry, built on KKPushCore's model (`LiveActivityContent`): a start with
/// the activity key in its attributes and `input-push-token: 1`, updates and ends; and the checks of their inputs.
public enum ActivityPushes {
    /// The attribute a start carries the activity key in: the app reads it from `activity.attributes` and sends it
    /// back with the activity's update token. Safe for an attributes type without such a field: ActivityKit
    /// decodes `attributes` with the type's `Decodable` initializer, and a synthesized `init(from:)` ignores keys it
    /// does not know (as `kk_push_id` is ignored at the top of a payload).
    public static let activityKeyAttribute = "kk_activity_key"

    /// `activity-key-invalid` unless `key` is 1–200 printable ASCII characters (space to tilde): KKPushCore's
    /// ``ActivityKey/flaw(_:)``, the rule the app's token update checks apply too.
    public static func checkKey(_ key: String) throws(KKPushError) {
        switch ActivityKey.flaw(key) {
        case nil: return
        case .empty:
            throw KKPushError(
                code: .activityKeyInvalid, message: "The activity key (activityKey) is empty.",
                fix: "Give each activity a key of its own, e.g. dienst-<tenant>-<id>.")
        case .tooLong(let bytes):
            throw KKPushError(
                code: .activityKeyInvalid,
                message:
                    "The activity key (activityKey) is \(bytes) characters long; at most \(ActivityKey.maximumLength).",
                fix: "Use a shorter key, e.g. dienst-<tenant>-<id>.")
        case .notPrintable(let offset):
            throw KKPushError(
                code: .activityKeyInvalid,
                message:
                    "The activity key (activityKey) has a character that is not printable ASCII at byte \(offset + 1).",
                fix: "Use letters, digits and punctuation only (space to tilde), e.g. dienst-<tenant>-<id>.")
        }
    }

    /// The topic Live Activity pushes go to: `topic` itself when it ends in `.push-type.liveactivity`, else
    /// `topic` with that suffix (a bundle id).
    public static func liveActivityTopic(_ topic: String) -> String {
        let suffix = ".push-type.liveactivity"
        return topic.hasSuffix(suffix) ? topic : LiveActivityContent.topic(forBundleID: topic)
    }

    /// The token as sent (lower-case hex), or `activity-input-invalid` naming `field` when it is not a token.
    public static func checkToken(_ raw: String, field: String) throws(KKPushError) -> String {
        let normalized = DeviceToken.normalize(raw)
        guard let token = normalized.token, DeviceToken.isWellFormed(token) else {
            let why = DeviceToken.formatErrors(normalized.token ?? raw).first?.message ?? "it is not a hex token"
            throw KKPushError(
                code: .activityInputInvalid, message: "The token (\(field)) is not a device token: \(why)",
                fix: "Give the token as the app reported it: hex digits, at least 64 of them.")
        }
        return DeviceToken.canonical(token)
    }

    /// The start push of `request` to `token`: `attributes-type`, `attributes` with ``activityKeyAttribute``,
    /// `content-state`, `alert` (APNs requires it on a start), `input-push-token: 1` unless the request says
    /// otherwise, `timestamp` `at`; `apns-push-type: liveactivity`, priority 10, apns-id `apnsID`.
    public static func start(_ request: ActivityStartRequest, token: String, apnsID: String, at: Date)
        throws(KKPushError) -> NotificationRequest
    {
        try checkKey(request.key)
        if request.topic.trimmingCharacters(in: .whitespaces).isEmpty {
            throw KKPushError(
                code: .activityInputInvalid, message: "The topic (topic) is empty.",
                fix: "Give the app's bundle id, e.g. nl.kantinekoning.app.")
        }
        if request.attributesType.trimmingCharacters(in: .whitespaces).isEmpty {
            throw KKPushError(
                code: .activityInputInvalid, message: "The attributes type (attributesType) is empty.",
                fix: "Give the name of the app's ActivityAttributes type, e.g. DienstAttributes.")
        }
        guard case .object(var attributes) = request.attributes else {
            throw KKPushError(
                code: .activityInputInvalid,
                message: "The attributes (attributes) are \(request.attributes), not a JSON object.",
                fix: "Give the static ActivityAttributes values as a JSON object, e.g. {\"dienst\":\"Bar\"}.")
        }
        if let given = attributes[activityKeyAttribute], given != .string(request.key) {
            throw KKPushError(
                code: .activityInputInvalid,
                message:
                    "The attributes (attributes) already hold \(activityKeyAttribute) \(given), not the activity key '\(request.key)'.",
                fix: "Leave \(activityKeyAttribute) out of the attributes: kkpush sets it to the activity key.")
        }
        attributes[activityKeyAttribute] = .string(request.key)
        var content = LiveActivityContent.start(
            attributesType: request.attributesType, attributes: .object(attributes),
            contentState: request.contentState, alert: request.alert, timestamp: unixSeconds(at))
        content.inputPushToken = request.inputPushToken
        content.staleDate = request.staleDate
        content.relevanceScore = request.relevanceScore
        return notification(content, token: token, topic: request.topic, apnsID: apnsID)
    }

    /// The update push of `request` to the activity's update token.
    public static func update(_ request: ActivityUpdateRequest, token: String, topic: String, apnsID: String, at: Date)
        -> NotificationRequest
    {
        var content = LiveActivityContent.update(contentState: request.contentState, timestamp: unixSeconds(at))
        content.alert = request.alert
        content.staleDate = request.staleDate
        content.relevanceScore = request.relevanceScore
        return notification(content, token: token, topic: topic, apnsID: apnsID)
    }

    /// The end push of `request` to the activity's update token.
    public static func end(_ request: ActivityEndRequest, token: String, topic: String, apnsID: String, at: Date)
        -> NotificationRequest
    {
        var content = LiveActivityContent.end(
            contentState: request.contentState, timestamp: unixSeconds(at), dismissalDate: request.dismissalDate)
        content.alert = request.alert
        return notification(content, token: token, topic: topic, apnsID: apnsID)
    }

    static func notification(_ content: LiveActivityContent, token: String, topic: String, apnsID: String)
        -> NotificationRequest
    {
        let type = LiveActivityContent.pushType
        return NotificationRequest(
            deviceToken: token, topic: liveActivityTopic(topic), pushType: type, priority: type.defaultPriority,
            apnsID: apnsID, payload: content.payload.encoded())
    }

    /// `at` in whole UNIX seconds.
    static func unixSeconds(_ at: Date) -> Int { Int(at.timeIntervalSince1970.rounded(.down)) }
}
