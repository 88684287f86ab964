/// The Live Activity part of `aps` (spec §3.3, Apple A14): what a start, update or end push carries.
///
/// Sent with `apns-push-type: liveactivity` to the topic `<bundle id>.push-type.liveactivity`
/// (``PushType/liveactivity``), on the same `/3/device/<token>` path as every device push. Which token
/// differs (``tokenNote``): a start goes to a push-to-start token, an update or end to the activity's
/// update token.
public struct LiveActivityContent: Sendable, Equatable {
    /// `event`: start, update or end.
    public var event: LiveActivityEvent
    /// `timestamp`: UNIX seconds of this content; iOS drops pushes older than the last it showed.
    public var timestamp: Int
    /// `content-state`: the activity's `ContentState`, encoded with default JSON strategies.
    public var contentState: JSONValue?
    /// `attributes-type` (start only): the name of the app's `ActivityAttributes` type.
    public var attributesType: String?
    /// `attributes` (start only): the static `ActivityAttributes` values.
    public var attributes: JSONValue?
    /// `stale-date`: UNIX seconds after which the activity shows as stale.
    public var staleDate: Int?
    /// `dismissal-date` (end): UNIX seconds when an ended activity leaves the Lock Screen; a past time
    /// dismisses it at once, none keeps it up to 4 hours.
    public var dismissalDate: Int?
    /// `relevance-score`: orders several activities (any number, e.g. 25, 50, 100).
    public var relevanceScore: Double?
    /// `input-push-token: 1` (start, iOS 18+): asks the device for the new activity's update token.
    public var inputPushToken: Bool
    /// `input-push-channel` (start, iOS 18+): subscribes the new activity to a broadcast channel.
    public var inputPushChannel: String?
    /// `alert`: required on a start (shown when the activity starts), optional on update and end.
    public var alert: APSAlert?

    /// Creates Live Activity content; see ``start(attributesType:attributes:contentState:alert:timestamp:)``,
    /// ``update(contentState:timestamp:)`` and ``end(contentState:timestamp:dismissalDate:)``.
    public init(
        event: LiveActivityEvent, timestamp: Int, contentState: JSONValue? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, staleDate: Int? = nil, dismissalDate: Int? = nil, relevanceScore: Double? = nil,
        inputPushToken: Bool = false, inputPushChannel: String? = nil, alert: APSAlert? = nil
    ) {
        self.event = event
        self.timestamp = timestamp
        self.contentState = contentState
        self.attributesType = attributesType
        self.attributes = attributes
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.alert = alert
    }

    /// A start (push-to-start): the attributes type and values, the first content state and the alert.
    public static func start(
        attributesType: String, attributes: JSONValue, contentState: JSONValue, alert: APSAlert, timestamp: Int
    ) -> LiveActivityContent {
        LiveActivityContent(
            event: .start, timestamp: timestamp, contentState: contentState, attributesType: attributesType,
            attributes: attributes, alert: alert)
    }

    /// An update with a new content state.
    public static func update(contentState: JSONValue, timestamp: Int) -> LiveActivityContent {
        LiveActivityContent(event: .update, timestamp: timestamp, contentState: contentState)
    }

    /// An end, with an optional final content state and dismissal date.
    public static func end(contentState: JSONValue? = nil, timestamp: Int, dismissalDate: Int? = nil)
        -> LiveActivityContent
    {
        LiveActivityContent(event: .end, timestamp: timestamp, contentState: contentState, dismissalDate: dismissalDate)
    }

    /// The push type to send it with: `liveactivity`.
    public static let pushType = PushType.liveactivity

    /// The topic for `bundleID`: `<bundle id>.push-type.liveactivity`.
    public static func topic(forBundleID bundleID: String) -> String { pushType.topic(forBundleID: bundleID) }

    /// What differs between push-to-start and update tokens; the same for every event.
    public static let tokenNote =
        "Push-to-start and update tokens share the push type (liveactivity), the topic (<bundle id>.push-type.liveactivity) "
        + "and the /3/device/ path. A push-to-start token comes from Activity<Attributes>.pushToStartTokenUpdates, one per "
        + "activity type (iOS 17.2+); an update token comes from each activity's pushTokenUpdates. A start sent to an "
        + "update token, or an update or end sent to a push-to-start token, does nothing on the device."

    /// Sets these keys in `aps` (other keys are kept).
    public func apply(to aps: inout APS) {
        aps.event = event
        aps.timestamp = timestamp
        aps.contentState = contentState
        aps.attributesType = attributesType
        aps.attributes = attributes
        aps.staleDate = staleDate
        aps.dismissalDate = dismissalDate
        aps.relevanceScore = relevanceScore
        aps.inputPushToken = inputPushToken
        aps.inputPushChannel = inputPushChannel
        if let alert { aps.alert = alert }
    }

    /// The payload: `{"aps":{...}}` with these keys.
    public var payload: Payload {
        var aps = APS()
        apply(to: &aps)
        return Payload(aps: aps)
    }
}

extension APS {
    /// The Live Activity content of this `aps`, or nil without an `event` or a whole-second `timestamp`.
    public var liveActivity: LiveActivityContent? {
        guard let event, let timestamp else { return nil }
        return LiveActivityContent(
            event: event, timestamp: timestamp, contentState: contentState, attributesType: attributesType,
            attributes: attributes, staleDate: staleDate, dismissalDate: dismissalDate, relevanceScore: relevanceScore,
            inputPushToken: inputPushToken, inputPushChannel: inputPushChannel, alert: alert)
    }
}

extension Payload {
    /// A Live Activity push (send it with ``LiveActivityContent/pushType`` to
    /// ``LiveActivityContent/topic(forBundleID:)``).
    public static func liveActivity(_ content: LiveActivityContent) -> Payload { content.payload }
}
