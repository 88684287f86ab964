public import Foundation
public import KKPushCore

/// The server's record of Live Activities, from start to end: per device and attributes type its push-to-start
/// token (with its rotation history), per activity its key, state, current update token and timestamps, and per
/// device the starts sent (the start budget).
///
/// Every path that starts, updates or ends a Live Activity goes through one registry: plan the push
/// (``planStart(_:at:dryRun:)``, ``planUpdate(_:at:dryRun:)``, ``planEnd(_:at:dryRun:)``), send it, and record APNs' answer
/// (``recordAnswer(_:)``); the app's token updates go to ``recordReport(_:device:at:)``. State changes are made by
/// ``ActivityTransition`` alone.
///
/// Two implementations share the SQL: ``SQLiteActivityRegistry`` (a file) and ``PostgresActivityRegistry``
/// (kkpush's own tables in PostgreSQL); ``ActivityRegistries/open(_:settings:origin:)`` opens either from a path or URL.
public protocol ActivityRegistry: Sendable {
    /// The settings the registry plans by (start budget, stale timeout).
    var settings: ActivityRegistrySettings { get }

    /// Creates kkpush's activity tables, or applies the steps a newer kkpush added; idempotent. A database migrated
    /// by a newer kkpush is refused (`activity-registry-newer`).
    func migrate() async throws -> ActivityMigrationResult

    /// Records what the app reported on a token update of `device` (push-to-start tokens, activities' update
    /// tokens, activities the app saw end or dismissed), at `at`. A `nil`, empty or malformed push-to-start token
    /// never replaces a stored one: it is kept in the history as a refused rotation with its reason. An activity the
    /// app started itself is recorded under the report's ``ActivityTokenReport/topic``, and ignored without one.
    func recordReport(_ report: ActivityTokenReport, device: String, at: Date) async throws -> ActivityReportResult

    /// Plans a start: idempotent by ``ActivityStartRequest/key`` (a known key answers `.existing` and sends
    /// nothing; two callers at once create one activity), within the device's start budget (`.deferred` or
    /// `.refused` past it, as the request asks). A `.send` plan has already recorded the activity as `requested`,
    /// counted the start in the budget and recorded a given ``ActivityStartRequest/pushToStartToken`` as the device's
    /// current one: send it, then give APNs' answer to ``recordAnswer(_:)``. Any other plan records nothing.
    ///
    /// `dryRun`: plans as it would, in a transaction rolled back: nothing is recorded (the preview of a start).
    func planStart(_ request: ActivityStartRequest, at: Date, dryRun: Bool) async throws -> ActivityStartPlan

    /// Plans an update of the activity `request.key`, to its current update token. Refused with
    /// `activity-no-update-token` while the activity has none (still `requested`, or `stale`), `activity-ended`
    /// once it ended or was dismissed, `activity-unknown` for a key the registry does not know,
    /// `activity-topic-missing` for an activity stored without a topic (by an older kkpush).
    /// `dryRun`: nothing is recorded.
    func planUpdate(_ request: ActivityUpdateRequest, at: Date, dryRun: Bool) async throws -> ActivityPushPlan

    /// Plans an end of the activity `request.key`, to its current update token; refused as ``planUpdate(_:at:dryRun:)``
    /// is. The activity becomes `ended` when APNs accepts it (``recordAnswer(_:)``).
    /// `dryRun`: nothing is recorded.
    func planEnd(_ request: ActivityEndRequest, at: Date, dryRun: Bool) async throws -> ActivityPushPlan

    /// Records APNs' answer to a push this registry planned: a 200 on a start sets `start_accepted_at`; a 200 on
    /// an end ends the activity; 410 `Unregistered` or 400 `BadDeviceToken` marks a push-to-start token dead, or
    /// dismisses the activity of an update token; a rejected start frees its place in the budget. Returns the
    /// activity after it (nil for a key the registry does not know).
    @discardableResult
    func recordAnswer(_ answer: ActivityAnswer) async throws -> ActivityRecord?

    /// Moves every `requested` activity whose start APNs accepted more than the stale timeout before `at` to
    /// `stale` (its push-to-start token becomes `suspect`), and every `requested` activity planned that long ago
    /// with no APNs answer recorded to `stale` too (the token is not suspected: the start may never have been
    /// sent); and every `ended` activity whose dismissal time passed (4 hours after the end without one) to
    /// `dismissed`. Returns the activities it changed, after the change.
    func sweepStale(at: Date) async throws -> [ActivityRecord]

    /// The activity of `key`, or nil.
    func activity(key: String) async throws -> ActivityRecord?

    /// The activities that match `filter`, oldest first.
    func activities(_ filter: ActivityFilter) async throws -> [ActivityRecord]

    /// The push-to-start tokens of `device`, one per attributes type, each with its rotation history (oldest
    /// first).
    func pushToStartTokens(device: String) async throws -> [PushToStartTokenRecord]

    /// Closes the registry's connections; later calls throw. Idempotent.
    func close() async
}

extension ActivityRegistry {
    /// ``planStart(_:at:dryRun:)`` for real: the plan is recorded.
    public func planStart(_ request: ActivityStartRequest, at: Date) async throws -> ActivityStartPlan {
        try await planStart(request, at: at, dryRun: false)
    }

    /// ``planUpdate(_:at:dryRun:)`` for real.
    public func planUpdate(_ request: ActivityUpdateRequest, at: Date) async throws -> ActivityPushPlan {
        try await planUpdate(request, at: at, dryRun: false)
    }

    /// ``planEnd(_:at:dryRun:)`` for real.
    public func planEnd(_ request: ActivityEndRequest, at: Date) async throws -> ActivityPushPlan {
        try await planEnd(request, at: at, dryRun: false)
    }
}

// MARK: - Settings

/// What a registry plans by. Every default is a choice, stated with its reason.
public struct ActivityRegistrySettings: Sendable, Equatable {
    /// At most this many starts per device within ``startBudgetWindow``. Default 10: an Apple DTS engineer said the
    /// device takes "about 10" push-to-start pushes in a short window and drops the rest while APNs answers 200
    /// (Apple Developer Forums thread 799505; `NSSupportsLiveActivitiesFrequentUpdates` does not raise it).
    public var startBudgetCount: Int
    /// The budget's window, in seconds. Default 3600: Apple gives no window length; an hour is kkpush's choice (a
    /// budget counted over a longer window than the device's only defers more, never loses a start).
    public var startBudgetWindow: TimeInterval
    /// How long after APNs accepted a start the activity's update token may take to come back before the activity
    /// is `stale` and its push-to-start token `suspect`. Default 120 s, kkpush's choice: a started activity asks
    /// for its update token at once (`input-push-token: 1`), and the app reports it on its next token update; two
    /// minutes leaves room for a slow network without keeping a lost start unnoticed for long.
    public var staleTimeout: TimeInterval

    /// The defaults: 10 starts in 3600 s, stale after 120 s.
    public static let defaults = ActivityRegistrySettings()

    /// Default start budget count (10, Apple DTS, forum thread 799505).
    public static let defaultStartBudgetCount = 10
    /// Default start budget window (3600 s, kkpush's choice).
    public static let defaultStartBudgetWindow: TimeInterval = 3600
    /// Default stale timeout (120 s, kkpush's choice).
    public static let defaultStaleTimeout: TimeInterval = 120

    /// Creates settings; out-of-range values are refused by ``validated()``.
    public init(
        startBudgetCount: Int = defaultStartBudgetCount, startBudgetWindow: TimeInterval = defaultStartBudgetWindow,
        staleTimeout: TimeInterval = defaultStaleTimeout
    ) {
        self.startBudgetCount = startBudgetCount
        self.startBudgetWindow = startBudgetWindow
        self.staleTimeout = staleTimeout
    }

    /// The settings, or `activity-settings-invalid` naming the value out of range (count 1…10000, window
    /// 1…604800 s, stale timeout 1…86400 s).
    public func validated() throws(KKPushError) -> ActivityRegistrySettings {
        if !(1...10_000).contains(startBudgetCount) {
            throw KKPushError(
                code: .activitySettingsInvalid,
                message: "The start budget count (startBudgetCount) is \(startBudgetCount); it must be 1 to 10000.",
                fix: "Give a count of starts per window, e.g. 10 (Apple's \"about 10\").")
        }
        if !(startBudgetWindow.isFinite && startBudgetWindow >= 1 && startBudgetWindow <= 604_800) {
            throw KKPushError(
                code: .activitySettingsInvalid,
                message:
                    "The start budget window (startBudgetWindow) is \(startBudgetWindow) s; it must be 1 to 604800 s.",
                fix: "Give the window in seconds, e.g. 3600.")
        }
        if !(staleTimeout.isFinite && staleTimeout >= 1 && staleTimeout <= 86_400) {
            throw KKPushError(
                code: .activitySettingsInvalid,
                message: "The stale timeout (staleTimeout) is \(staleTimeout) s; it must be 1 to 86400 s.",
                fix: "Give the timeout in seconds, e.g. 120.")
        }
        return self
    }
}

// MARK: - Values

/// The state of one Live Activity in the registry.
public enum ActivityState: String, Sendable, Hashable, Codable, CaseIterable {
    /// A start was planned or sent; no update token has come back yet.
    case requested
    /// The activity's update token is known: updates and ends go to it.
    case active
    /// An end was sent and APNs accepted it (or the app reported the activity ended).
    case ended
    /// The activity is gone from the device: its dismissal time passed, the app reported it dismissed, or APNs
    /// answered that its update token is no longer valid.
    case dismissed
    /// No update token came back within the stale timeout after APNs accepted the start: the device probably never
    /// started it (its push-to-start token is marked `suspect`).
    case stale
}

/// How far a push-to-start token can be trusted.
public enum PushToStartTokenStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// No start on it went stale.
    case good
    /// A start sent to it went stale (APNs said 200, no activity came back): still used while no newer token
    /// arrives, and the start plan says so.
    case suspect
    /// APNs answered 410 `Unregistered` or 400 `BadDeviceToken` for it: never used again.
    case dead
}

/// What a start does when the device's start budget is spent.
public enum ActivityOverBudget: String, Sendable, Hashable, Codable, CaseIterable {
    /// Plan `.deferred` with the time the budget frees a place (the default: the start is not lost).
    case `defer`
    /// Plan `.refused` with `activity-start-budget`.
    case refuse
}

/// A start of a Live Activity by push-to-start.
public struct ActivityStartRequest: Sendable, Equatable {
    /// The caller's idempotency key for this activity (1–200 printable ASCII characters), e.g. `dienst-club-42`.
    /// Sent in `attributes` as `kk_activity_key` (``ActivityPushes/activityKeyAttribute``).
    public var key: String
    /// The device the activity starts on: the caller's stable name for it (an enrollment or device id). The start
    /// budget and push-to-start tokens are per device.
    public var device: String
    /// The app's bundle id, or the full topic `<bundle id>.push-type.liveactivity`.
    public var topic: String
    /// `attributes-type`: the name of the app's `ActivityAttributes` type.
    public var attributesType: String
    /// `attributes`: the static attributes (a JSON object; `kk_activity_key` is added).
    public var attributes: JSONValue
    /// `content-state`: the first content state.
    public var contentState: JSONValue
    /// `alert`: APNs requires one on a start.
    public var alert: APSAlert
    /// `input-push-token: 1` (default true): the device sends the new activity's update token, which the app
    /// reports back.
    public var inputPushToken: Bool
    /// `stale-date`, UNIX seconds.
    public var staleDate: Int?
    /// `relevance-score`.
    public var relevanceScore: Double?
    /// The push-to-start token to send to (hex). Nil: the device's current one for ``attributesType``. A given
    /// token is recorded as the device's current one (source `start`) only when the start is planned to send
    /// (`.send`): a deferred, refused or existing start records nothing. A given token the registry holds as `dead`
    /// for this device and type is refused (`activity-no-push-to-start-token`), as the stored one would be.
    public var pushToStartToken: String?
    /// What to do past the start budget (default `.defer`).
    public var overBudget: ActivityOverBudget

    /// Creates a start request.
    public init(
        key: String, device: String, topic: String, attributesType: String, attributes: JSONValue = .object([:]),
        contentState: JSONValue, alert: APSAlert, inputPushToken: Bool = true, staleDate: Int? = nil,
        relevanceScore: Double? = nil, pushToStartToken: String? = nil, overBudget: ActivityOverBudget = .defer
    ) {
        self.key = key
        self.device = device
        self.topic = topic
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.alert = alert
        self.inputPushToken = inputPushToken
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.pushToStartToken = pushToStartToken
        self.overBudget = overBudget
    }
}

/// An update of a known activity.
public struct ActivityUpdateRequest: Sendable, Equatable {
    /// The activity's key.
    public var key: String
    /// `content-state`.
    public var contentState: JSONValue
    /// `alert` (optional on an update).
    public var alert: APSAlert?
    /// `stale-date`, UNIX seconds.
    public var staleDate: Int?
    /// `relevance-score`.
    public var relevanceScore: Double?

    /// Creates an update request.
    public init(
        key: String, contentState: JSONValue, alert: APSAlert? = nil, staleDate: Int? = nil,
        relevanceScore: Double? = nil
    ) {
        self.key = key
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }
}

/// An end of a known activity.
public struct ActivityEndRequest: Sendable, Equatable {
    /// The activity's key.
    public var key: String
    /// The final `content-state` (optional).
    public var contentState: JSONValue?
    /// `dismissal-date`, UNIX seconds: when the ended activity leaves the Lock Screen (none: up to 4 hours).
    public var dismissalDate: Int?
    /// `alert` (optional).
    public var alert: APSAlert?

    /// Creates an end request.
    public init(key: String, contentState: JSONValue? = nil, dismissalDate: Int? = nil, alert: APSAlert? = nil) {
        self.key = key
        self.contentState = contentState
        self.dismissalDate = dismissalDate
        self.alert = alert
    }
}

/// Which kind of token a push goes to.
public enum ActivityTokenKind: String, Sendable, Hashable, Codable {
    /// A push-to-start token (a start).
    case pushToStart = "push-to-start"
    /// An activity's update token (an update or end).
    case update
}

/// One push the registry planned: send ``request`` and give APNs' answer to
/// ``ActivityRegistry/recordAnswer(_:)`` (``answer(status:reason:apnsID:at:)``).
public struct ActivityPush: Sendable, Equatable {
    /// The activity's key.
    public var key: String
    /// start, update or end.
    public var event: LiveActivityEvent
    /// The token it goes to (hex, lower case).
    public var token: String
    /// Which kind of token that is.
    public var tokenKind: ActivityTokenKind
    /// For a start: the push-to-start token's status (`.suspect`: a start on it went stale before, and nothing
    /// newer arrived); nil for updates and ends.
    public var tokenStatus: PushToStartTokenStatus?
    /// The request to send: `apns-push-type: liveactivity`, the `.push-type.liveactivity` topic, priority 10, an
    /// apns-id of the registry's (so the answer and the mock's log name the same push).
    public var request: NotificationRequest
    /// What the caller should know about this push (a suspect token, a token given with the request), in words.
    public var notes: [String]

    /// Creates a planned push.
    public init(
        key: String, event: LiveActivityEvent, token: String, tokenKind: ActivityTokenKind,
        tokenStatus: PushToStartTokenStatus? = nil, request: NotificationRequest, notes: [String] = []
    ) {
        self.key = key
        self.event = event
        self.token = token
        self.tokenKind = tokenKind
        self.tokenStatus = tokenStatus
        self.request = request
        self.notes = notes
    }

    /// APNs' answer to this push, for ``ActivityRegistry/recordAnswer(_:)``: `status` the HTTP status (nil: no
    /// answer, the push failed before APNs answered), `reason` APNs' reason name.
    public func answer(status: Int?, reason: String?, apnsID: String? = nil, at: Date) -> ActivityAnswer {
        ActivityAnswer(
            key: key, event: event, token: token, status: status, reason: reason,
            apnsID: apnsID ?? request.apnsID, at: at)
    }
}

/// What ``ActivityRegistry/planStart(_:at:)`` decided.
public enum ActivityStartPlan: Sendable, Equatable {
    /// Send this start (the activity is recorded as `requested`, the start counted in the budget).
    case send(ActivityPush)
    /// An activity with this key exists: nothing is sent; this is it (its state, the push it sent, its token).
    case existing(ActivityRecord)
    /// The device's start budget is spent until `until`: start again then. Nothing is recorded.
    case deferred(until: Date, reason: String)
    /// Not sent, for this reason (`activity-start-budget`, `activity-no-push-to-start-token`, …).
    case refused(KKPushError)
}

/// What ``ActivityRegistry/planUpdate(_:at:)`` and ``ActivityRegistry/planEnd(_:at:)`` decided.
public enum ActivityPushPlan: Sendable, Equatable {
    /// Send this push to the activity's update token.
    case send(ActivityPush)
    /// Not sent, for this reason (`activity-no-update-token`, `activity-ended`, `activity-unknown`).
    case refused(KKPushError)
}

/// APNs' answer to a push the registry planned.
public struct ActivityAnswer: Sendable, Equatable {
    /// The activity's key.
    public var key: String
    /// The push's event.
    public var event: LiveActivityEvent
    /// The token it was sent to.
    public var token: String
    /// The HTTP status (200 accepted); nil when no answer came (a network failure: the push may have arrived).
    public var status: Int?
    /// APNs' reason (`Unregistered`, `BadDeviceToken`, …), nil on 200.
    public var reason: String?
    /// The apns-id of the push.
    public var apnsID: String?
    /// When the answer came.
    public var at: Date

    /// Creates an answer.
    public init(
        key: String, event: LiveActivityEvent, token: String, status: Int?, reason: String?, apnsID: String?,
        at: Date
    ) {
        self.key = key
        self.event = event
        self.token = token
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.at = at
    }

    /// Whether APNs says the token is gone: 410 (`Unregistered`, `ExpiredToken`) or 400 `BadDeviceToken`.
    public var tokenIsDead: Bool {
        status == 410 || (status == 400 && reason == "BadDeviceToken")
    }
}

/// One activity as the registry holds it.
public struct ActivityRecord: Sendable, Equatable, Codable {
    /// The caller's key.
    public var key: String
    /// The device it runs on.
    public var device: String
    /// Its `ActivityAttributes` type.
    public var attributesType: String
    /// The topic its pushes go to (`<bundle id>.push-type.liveactivity`).
    public var topic: String
    /// Its state.
    public var state: ActivityState
    /// Its current update token (hex), once the app reported it.
    public var updateToken: String?
    /// ActivityKit's id of the activity, as the app reported it.
    public var activityID: String?
    /// The push-to-start token its start went to.
    public var pushToStartToken: String?
    /// The apns-id of its start push.
    public var startApnsID: String?
    /// APNs' HTTP status for its start (nil: no answer recorded).
    public var startStatus: Int?
    /// APNs' reason for a rejected start.
    public var startReason: String?
    /// When the start was planned.
    public var requestedAt: Date
    /// When APNs accepted the start.
    public var startAcceptedAt: Date?
    /// When its update token first came back.
    public var activeAt: Date?
    /// When it ended.
    public var endedAt: Date?
    /// Its `dismissal-date` (from the end push), if any.
    public var dismissalDate: Date?
    /// When it was dismissed.
    public var dismissedAt: Date?
    /// When it went stale.
    public var staleAt: Date?
    /// The last change.
    public var updatedAt: Date
    /// Why it is in its state, in words (the last transition's cause).
    public var note: String?

    /// The JSON keys: the tables' column names (snake case).
    enum CodingKeys: String, CodingKey {
        case key, device, topic, state, note
        case attributesType = "attributes_type"
        case updateToken = "update_token"
        case activityID = "activity_id"
        case pushToStartToken = "push_to_start_token"
        case startApnsID = "start_apns_id"
        case startStatus = "start_status"
        case startReason = "start_reason"
        case requestedAt = "requested_at"
        case startAcceptedAt = "start_accepted_at"
        case activeAt = "active_at"
        case endedAt = "ended_at"
        case dismissalDate = "dismissal_date"
        case dismissedAt = "dismissed_at"
        case staleAt = "stale_at"
        case updatedAt = "updated_at"
    }

    /// Creates a record.
    public init(
        key: String, device: String, attributesType: String, topic: String, state: ActivityState,
        updateToken: String? = nil, activityID: String? = nil, pushToStartToken: String? = nil,
        startApnsID: String? = nil, startStatus: Int? = nil, startReason: String? = nil, requestedAt: Date,
        startAcceptedAt: Date? = nil, activeAt: Date? = nil, endedAt: Date? = nil, dismissalDate: Date? = nil,
        dismissedAt: Date? = nil, staleAt: Date? = nil, updatedAt: Date, note: String? = nil
    ) {
        self.key = key
        self.device = device
        self.attributesType = attributesType
        self.topic = topic
        self.state = state
        self.updateToken = updateToken
        self.activityID = activityID
        self.pushToStartToken = pushToStartToken
        self.startApnsID = startApnsID
        self.startStatus = startStatus
        self.startReason = startReason
        self.requestedAt = requestedAt
        self.startAcceptedAt = startAcceptedAt
        self.activeAt = activeAt
        self.endedAt = endedAt
        self.dismissalDate = dismissalDate
        self.dismissedAt = dismissedAt
        self.staleAt = staleAt
        self.updatedAt = updatedAt
        self.note = note
    }
}

/// Which activities ``ActivityRegistry/activities(_:)`` returns (every field nil: all).
public struct ActivityFilter: Sendable, Equatable {
    /// Only this device's.
    public var device: String?
    /// Only in this state.
    public var state: ActivityState?
    /// Only of this attributes type.
    public var attributesType: String?
    /// At most this many (the oldest first).
    public var limit: Int?

    /// Creates a filter.
    public init(
        device: String? = nil, state: ActivityState? = nil, attributesType: String? = nil, limit: Int? = nil
    ) {
        self.device = device
        self.state = state
        self.attributesType = attributesType
        self.limit = limit
    }

    /// Every activity.
    public static let all = ActivityFilter()
}

/// A device's push-to-start token for one attributes type, with its history.
public struct PushToStartTokenRecord: Sendable, Equatable, Codable {
    /// The device.
    public var device: String
    /// The `ActivityAttributes` type.
    public var attributesType: String
    /// The current token (hex).
    public var token: String
    /// How far it can be trusted.
    public var status: PushToStartTokenStatus
    /// When this token was first reported.
    public var firstSeen: Date
    /// When it was last reported (or used).
    public var lastSeen: Date
    /// Who reported it (`app`, `start`, …).
    public var source: String
    /// Every rotation reported for this device and type, oldest first, refused ones included.
    public var history: [PushToStartRotation]

    /// The JSON keys (snake case).
    enum CodingKeys: String, CodingKey {
        case device, token, status, source, history
        case attributesType = "attributes_type"
        case firstSeen = "first_seen"
        case lastSeen = "last_seen"
    }

    /// Creates a record.
    public init(
        device: String, attributesType: String, token: String, status: PushToStartTokenStatus, firstSeen: Date,
        lastSeen: Date, source: String, history: [PushToStartRotation] = []
    ) {
        self.device = device
        self.attributesType = attributesType
        self.token = token
        self.status = status
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.source = source
        self.history = history
    }
}

/// One reported push-to-start token rotation.
public struct PushToStartRotation: Sendable, Equatable, Codable {
    /// What became of it.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// It became the current token.
        case accepted
        /// The same token again (its last-seen time moved).
        case unchanged
        /// Refused (nil, empty or not a token): the stored token was kept.
        case refused
    }
    /// The token as reported (nil for a `null`).
    public var token: String?
    /// What became of it.
    public var outcome: Outcome
    /// Why it was refused (nil otherwise).
    public var reason: String?
    /// Who reported it.
    public var source: String
    /// When.
    public var at: Date

    /// Creates a rotation.
    public init(token: String?, outcome: Outcome, reason: String? = nil, source: String, at: Date) {
        self.token = token
        self.outcome = outcome
        self.reason = reason
        self.source = source
        self.at = at
    }
}

/// What the app reported of its Live Activities on a token update (the token-update contract's `live_activity`
/// object).
public struct ActivityTokenReport: Sendable, Equatable {
    /// `push_to_start_tokens`: per attributes type the current push-to-start token (nil: the app sent `null`).
    public var pushToStartTokens: [PushToStartTokenReport]
    /// `activity_tokens`: per activity its update token.
    public var activityTokens: [ActivityUpdateTokenReport]
    /// `activity_states`: activities the app saw end or be dismissed.
    public var activityStates: [ActivityStateReport]
    /// Who reports (recorded in the history): `app` by default.
    public var source: String
    /// The reporting app's bundle id (or its full topic `<bundle id>.push-type.liveactivity`): a backend gives the
    /// token update's `bundle_id`, or its own app's bundle id when the update leaves it out. An activity the app
    /// started itself (an update token for a key the registry does not know) is recorded under it, so its updates
    /// and ends go to `<bundle id>.push-type.liveactivity`; without it such an activity is not recorded
    /// (`activity-topic-missing` in ``ActivityReportResult/ignored``). It also gives a topic to a known activity
    /// stored without one (by an older kkpush).
    public var topic: String?

    /// Creates a report.
    public init(
        pushToStartTokens: [PushToStartTokenReport] = [], activityTokens: [ActivityUpdateTokenReport] = [],
        activityStates: [ActivityStateReport] = [], source: String = "app", topic: String? = nil
    ) {
        self.pushToStartTokens = pushToStartTokens
        self.activityTokens = activityTokens
        self.activityStates = activityStates
        self.source = source
        self.topic = topic
    }
}

/// One `push_to_start_tokens` entry.
public struct PushToStartTokenReport: Sendable, Equatable {
    /// `attributes_type`.
    public var attributesType: String
    /// `token` (hex), or nil for `null`.
    public var token: String?
    /// Creates an entry.
    public init(attributesType: String, token: String?) {
        self.attributesType = attributesType
        self.token = token
    }
}

/// One `activity_tokens` entry.
public struct ActivityUpdateTokenReport: Sendable, Equatable {
    /// `activity_key`: the `kk_activity_key` of the activity's attributes.
    public var activityKey: String
    /// `activity_id`: ActivityKit's id.
    public var activityID: String?
    /// `attributes_type`.
    public var attributesType: String?
    /// `token` (hex).
    public var token: String
    /// Creates an entry.
    public init(activityKey: String, activityID: String? = nil, attributesType: String? = nil, token: String) {
        self.activityKey = activityKey
        self.activityID = activityID
        self.attributesType = attributesType
        self.token = token
    }
}

/// One `activity_states` entry.
public struct ActivityStateReport: Sendable, Equatable {
    /// What the app can report of an activity.
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        /// The activity ended on the device.
        case ended
        /// It was dismissed from the device.
        case dismissed
    }
    /// `activity_key`.
    public var activityKey: String
    /// `state`.
    public var state: State
    /// Creates an entry.
    public init(activityKey: String, state: State) {
        self.activityKey = activityKey
        self.state = state
    }
}

/// What ``ActivityRegistry/recordReport(_:device:at:)`` did with each entry.
public struct ActivityReportResult: Sendable, Equatable, Codable {
    /// The push-to-start rotations, in report order (accepted, unchanged or refused with the reason).
    public var rotations: [PushToStartRotation]
    /// The activities whose update token or state changed, after the change.
    public var activities: [ActivityRecord]
    /// Entries that changed nothing, with the reason (an unknown key without attributes type, an invalid token, a
    /// state the activity cannot take).
    public var ignored: [String]

    /// Creates a result.
    public init(rotations: [PushToStartRotation] = [], activities: [ActivityRecord] = [], ignored: [String] = []) {
        self.rotations = rotations
        self.activities = activities
        self.ignored = ignored
    }
}

/// What ``ActivityRegistry/migrate()`` did.
public struct ActivityMigrationResult: Sendable, Equatable, Codable {
    /// The steps applied, one line each; empty on a second run.
    public var applied: [String]
    /// The schema's version after it.
    public var version: Int

    /// Creates a result.
    public init(applied: [String], version: Int) {
        self.applied = applied
        self.version = version
    }
}
