public import Foundation
public import KKPushCore

// The device side of the mock: what becomes of a push after APNs answered 200, as Apple documents it.
//
// Sources (Apple):
// - "Sending notification requests to APNs" (developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns):
//   `apns-expiration` (0: deliver once or never, do not store), `apns-priority` (5: "may be grouped and delivered in
//   bursts", power considered), `apns-collapse-id` (the device shows one notification per collapse id).
// - Local and Remote Notification Programming Guide, "Quality of Service, Store-and-Forward, and Coalesced
//   Notifications" (archived): an offline device's notification is stored for a limited time, only the newest per
//   app is kept, a device offline for long loses it.
// - "Pushing background updates to your App" (developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app):
//   background notifications are low priority and may be throttled; "don't try to send more than two or three per
//   hour".
// - `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: "the system does not automatically launch
//   your app if the user has force-quit it".
// - "Modifying content in newly delivered notifications": `mutable-content` runs the Notification Service Extension.
// - "Viewing the status of push notifications using Metrics and APNs"
//   (developer.apple.com/documentation/usernotifications/viewing-the-status-of-push-notifications-using-metrics-and-apns):
//   the Push Notifications Console's delivery states, whose words ``DeliveryState`` uses where they exist.
// - "Starting and updating Live Activities with ActivityKit push notifications"
//   (developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications):
//   a start to a push-to-start token starts an activity, `input-push-token: 1` gives it its own update token, updates
//   and ends go to that token; an ended activity takes no more updates.
// - Apple Developer Forums thread 799505 (developer.apple.com/forums/thread/799505): an Apple DTS engineer says the
//   device takes "about 10" push-to-start starts in a short window and drops the rest while APNs answers 200, with no
//   window length; ``MockDeviceRules/pushToStartBudget`` and its window are kkpush's choice from it.

/// Whether a simulated device reaches APNs.
public enum MockConnectivity: String, Sendable, Hashable, Codable, CaseIterable {
    /// Connected: an accepted push is delivered at once (unless held for power, ``MockDeviceRules/lowPriorityHold``).
    case online
    /// Not connected: an accepted push is stored, one per app, until the device comes online or it expires.
    case offline
}

/// The app's state on a simulated device: what a delivered push can make its code do.
public enum MockAppState: String, Sendable, Hashable, Codable, CaseIterable {
    /// On screen: an alert reaches `userNotificationCenter(_:willPresent:withCompletionHandler:)`, a background push
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`, at once and outside the budget.
    case foreground
    /// Running off screen: a background push wakes it within the budget; an alert runs no code until opened.
    case background
    /// In memory, not running: as ``background`` (the system wakes it for a background push, within the budget).
    case suspended
    /// Swiped away by the person: no background launch at all; alerts are still shown.
    case forceQuit = "force-quit"
}

/// The rules the mock applies on the device side where Apple gives no number: each a choice, configurable.
public struct MockDeviceRules: Sendable, Hashable, Codable {
    /// How long a push for an offline device is stored when its `apns-expiration` does not end it sooner, in seconds.
    /// Apple says "a limited time" and gives no number; kkpush chooses 30 days (the figure vendors report from Apple's
    /// console; unconfirmed).
    public var storageLimit: TimeInterval = 30 * 86_400
    /// Background pushes a device runs per ``backgroundBudgetWindow`` while its app is not in the foreground; past
    /// it the push is `deferred: background budget`. Apple: "don't try to send more than two or three per hour"; kkpush
    /// chooses 3.
    public var backgroundBudget: Int = 3
    /// The rolling window of ``backgroundBudget``, in seconds (one hour).
    public var backgroundBudgetWindow: TimeInterval = 3600
    /// How long a priority 5 or 1 push to an online device is held (`stored: power considerations`) before it is
    /// delivered, with the others held for that device, in one burst; 0 (the default): delivered at once. Apple says
    /// such pushes "may be grouped and delivered in bursts" and gives no delay; delivering at once is kkpush's
    /// choice, so a test sees priority 5 pushes arrive unless it asks for the hold.
    public var lowPriorityHold: TimeInterval = 0
    /// Live Activity starts a device takes through its push-to-start token per ``pushToStartBudgetWindow``; past it a
    /// start is `discarded: start-budget` (APNs answered 200). Apple's DTS engineer says "about 10" starts in a short
    /// window (Apple Developer Forums thread 799505); kkpush chooses 10.
    public var pushToStartBudget: Int = 10
    /// The rolling window of ``pushToStartBudget``, in seconds. Apple gives no length ("a short window"); kkpush
    /// chooses one hour, the window of the background budget, so a test that sends more starts in an hour sees them
    /// dropped.
    public var pushToStartBudgetWindow: TimeInterval = 3600

    /// The defaults.
    public init() {}

    /// Creates rules; every argument is optional.
    public init(
        storageLimit: TimeInterval = 30 * 86_400, backgroundBudget: Int = 3,
        backgroundBudgetWindow: TimeInterval = 3600,
        lowPriorityHold: TimeInterval = 0, pushToStartBudget: Int = 10, pushToStartBudgetWindow: TimeInterval = 3600
    ) {
        self.storageLimit = storageLimit
        self.backgroundBudget = backgroundBudget
        self.backgroundBudgetWindow = backgroundBudgetWindow
        self.lowPriorityHold = lowPriorityHold
        self.pushToStartBudget = pushToStartBudget
        self.pushToStartBudgetWindow = pushToStartBudgetWindow
    }

    enum CodingKeys: String, CodingKey {
        case storageLimit = "storage_limit_s"
        case backgroundBudget = "background_budget"
        case backgroundBudgetWindow = "background_budget_window_s"
        case lowPriorityHold = "low_priority_hold_s"
        case pushToStartBudget = "push_to_start_budget"
        case pushToStartBudgetWindow = "push_to_start_budget_window_s"
    }

    /// The keys of the JSON form (every one optional when read).
    static let shape = JSONInput.Shape.fields([
        "storage_limit_s", "background_budget", "background_budget_window_s", "low_priority_hold_s",
        "push_to_start_budget", "push_to_start_budget_window_s",
    ])

    /// Decodes the JSON form; a missing key keeps its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = MockDeviceRules()
        storageLimit = try c.decodeIfPresent(Double.self, forKey: .storageLimit) ?? d.storageLimit
        backgroundBudget = try c.decodeIfPresent(Int.self, forKey: .backgroundBudget) ?? d.backgroundBudget
        backgroundBudgetWindow =
            try c.decodeIfPresent(Double.self, forKey: .backgroundBudgetWindow) ?? d.backgroundBudgetWindow
        lowPriorityHold = try c.decodeIfPresent(Double.self, forKey: .lowPriorityHold) ?? d.lowPriorityHold
        pushToStartBudget = try c.decodeIfPresent(Int.self, forKey: .pushToStartBudget) ?? d.pushToStartBudget
        pushToStartBudgetWindow =
            try c.decodeIfPresent(Double.self, forKey: .pushToStartBudgetWindow) ?? d.pushToStartBudgetWindow
    }

    /// The most seconds a setting takes: ten years.
    static let maximumSeconds: TimeInterval = 10 * 365 * 86_400

    /// Checks the values; throws naming the field and the fix.
    public func validate() throws {
        for (name, value, low) in [
            ("storage_limit_s", storageLimit, 1.0), ("background_budget_window_s", backgroundBudgetWindow, 1.0),
            ("low_priority_hold_s", lowPriorityHold, 0.0),
            ("push_to_start_budget_window_s", pushToStartBudgetWindow, 1.0),
        ]
        where !(value.isFinite && value >= low && value <= Self.maximumSeconds) {
            throw KKPushError(
                code: .mockDeviceRules, message: "\(name) \(InputNumbers.text(value)) is out of range.",
                fix: "Give seconds from \(Int(low)) to \(Int(Self.maximumSeconds)) (ten years).")
        }
        guard (0...1_000_000).contains(backgroundBudget) else {
            throw KKPushError(
                code: .mockDeviceRules, message: "background_budget \(backgroundBudget) is out of range.",
                fix: "Give a number of background pushes per window from 0 to 1000000 (default 3).")
        }
        guard (0...1_000_000).contains(pushToStartBudget) else {
            throw KKPushError(
                code: .mockDeviceRules, message: "push_to_start_budget \(pushToStartBudget) is out of range.",
                fix: "Give a number of Live Activity starts per window from 0 to 1000000 (default 10).")
        }
    }
}

/// What became of an accepted push on the device side: the words of Apple's Push Notifications Console where it has
/// them ("Viewing the status of push notifications using Metrics and APNs": Received by APNs, Delivered to Device,
/// Stored - Device Offline, Stored - Power Considerations, Discarded - Expired, Discarded - Token Unregistered), the
/// device's own decisions otherwise. `category: detail`, lowercase.
public enum DeliveryState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Accepted (200), not yet handed on ("Received by APNs"): the first step of every history.
    case received
    /// Handed to the device ("Delivered to Device"; "From Storage" is the history's detail).
    case delivered
    /// Kept by APNs while the device is offline ("Stored - Device Offline").
    case storedDeviceOffline = "stored: device offline"
    /// Held for the device's power ("Stored - Power Considerations"): a priority 5 or 1 push, when
    /// ``MockDeviceRules/lowPriorityHold`` is set.
    case storedPowerConsiderations = "stored: power considerations"
    /// Held by the device: its app's background budget is spent (delivered once it frees, or when the app comes to
    /// the foreground).
    case deferredBackgroundBudget = "deferred: background budget"
    /// A newer push for the same app arrived while this one was stored or deferred: only the newest is kept
    /// (coalescing).
    case discardedReplaced = "discarded: replaced by a newer push"
    /// Its `apns-expiration` passed, or was 0 for a device that was offline, or the storage limit ran out
    /// ("Discarded - Expired").
    case discardedExpired = "discarded: expired"
    /// The token was unregistered while the push was stored ("Discarded - Token Unregistered").
    case discardedTokenUnregistered = "discarded: token unregistered"
    /// Delivered and shown, then replaced on the device by a newer notification with the same `apns-collapse-id`.
    case replacedCollapseID = "replaced: same collapse id"
    /// A background push to an app the person force-quit: the device does not launch it.
    case notRunForceQuit = "not run: app force-quit"
    /// A Live Activity push the device drops because its content does not decode into the app's `ActivityAttributes`.
    case droppedDoesNotDecode = "dropped on the device: does not decode"
    /// A Live Activity start past the device's push-to-start budget (``MockDeviceRules/pushToStartBudget``): the
    /// device drops it, no activity starts. The detail after the colon is the reason's code, as the registry names it.
    case discardedStartBudget = "discarded: start-budget"
    /// A Live Activity push to a push-to-start token the device no longer uses (the app was reinstalled or the token
    /// rotated: ``MockDeviceRegistration/pushToStartStale``): APNs answers 200, nothing reaches the app.
    case discardedStalePushToStartToken = "discarded: stale-push-to-start-token"
    /// A Live Activity update or end to an activity that has already ended: the device drops it.
    case droppedActivityEnded = "dropped on the device: activity-ended"

    /// Held by APNs or the device, waiting: it may still be delivered.
    public var isHeld: Bool {
        self == .storedDeviceOffline || self == .storedPowerConsiderations || self == .deferredBackgroundBudget
    }

    /// Whether `query` names this state: the whole words (`stored: device offline`) or the category (`stored`).
    public func matches(_ query: String) -> Bool {
        rawValue == query || rawValue.hasPrefix(query + ":")
    }
}

/// One step of a push's delivery history.
public struct DeliveryTransition: Sendable, Hashable, Codable {
    /// When, by the mock's clock.
    public var time: Date
    /// The state entered.
    public var state: DeliveryState
    /// Why, in words (the rule and its numbers), if there is more to say than the state.
    public var detail: String?

    /// Creates a step.
    public init(time: Date, state: DeliveryState, detail: String? = nil) {
        self.time = time
        self.state = state
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey { case time, state, detail }

    /// Decodes the JSON form (`time` in milliseconds since 1970).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        time = Date(timeIntervalSince1970: Double(try c.decode(Int64.self, forKey: .time)) / 1000)
        state = try c.decode(DeliveryState.self, forKey: .state)
        detail = try c.decodeIfPresent(String.self, forKey: .detail)
    }

    /// Encodes `time` as milliseconds since 1970.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(time.millisecondsSince1970, forKey: .time)
        try c.encode(state, forKey: .state)
        try c.encodeIfPresent(detail, forKey: .detail)
    }
}

/// The app's code a push ran on the device, when it was delivered: what a simulated app, or a diagnosis, reads to
/// know whether the app could react (refresh its data) and when.
public struct AppCodeRun: Sendable, Hashable, Codable {
    /// A piece of the app's code iOS calls for a push.
    public enum Handler: String, Sendable, Hashable, Codable, CaseIterable {
        /// The Notification Service Extension (`mutable-content: 1` on an alert), about 30 seconds before display
        /// ("Modifying content in newly delivered notifications").
        case serviceExtension = "service-extension"
        /// `userNotificationCenter(_:willPresent:withCompletionHandler:)`: an alert while the app is in the foreground.
        case willPresent = "will-present"
        /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: `content-available: 1`.
        case backgroundHandler = "background-handler"
        /// PushKit's `pushRegistry(_:didReceiveIncomingPushWith:for:completion:)`: a VoIP push.
        case pushKit = "pushkit"
    }

    /// The app's state when the push was delivered.
    public var appState: MockAppState
    /// The code that ran at delivery, in order; empty: none.
    public var runs: [Handler]
    /// True when the app's code runs only once the person opens the notification (`didReceive`): an alert to an app
    /// that is not in the foreground runs nothing before.
    public var onOpen: Bool
    /// Why, in words.
    public var note: String

    /// Creates a record.
    public init(appState: MockAppState, runs: [Handler], onOpen: Bool, note: String) {
        self.appState = appState
        self.runs = runs
        self.onOpen = onOpen
        self.note = note
    }

    enum CodingKeys: String, CodingKey {
        case appState = "app_state"
        case runs
        case onOpen = "on_open"
        case note
    }
}

/// A device's state as the admin API and ``MockAPNsServer/deviceState(token:)`` show it.
public struct MockDeviceState: Sendable, Hashable, Codable {
    /// The device token, lowercase.
    public var token: String
    /// Whether it reaches APNs.
    public var connectivity: MockConnectivity
    /// Its app's state.
    public var app: MockAppState
    /// Pushes held for it now: stored while offline (one per app), held for power, deferred by the budget.
    public var stored: Int
    public var heldForPower: Int
    public var deferred: Int
    /// Background pushes it ran within the budget's window, and the budget.
    public var backgroundRunsInWindow: Int
    public var backgroundBudget: Int
    /// Live Activity starts it took through this push-to-start token within the budget's window, and the budget.
    public var startsInWindow: Int = 0
    public var pushToStartBudget: Int = 0
    /// True when this push-to-start token is stale on the device (``MockDeviceRegistration/pushToStartStale``).
    public var pushToStartStale: Bool = false
    /// The Live Activities its starts created, oldest first (``MockActivity``).
    public var activities: [MockActivity] = []
    /// For an activity's update token: the push-to-start token of the device it belongs to.
    public var activityOf: String? = nil

    enum CodingKeys: String, CodingKey {
        case token, connectivity, app, stored, deferred, activities
        case heldForPower = "held_for_power"
        case backgroundRunsInWindow = "background_runs_in_window"
        case backgroundBudget = "background_budget"
        case startsInWindow = "starts_in_window"
        case pushToStartBudget = "push_to_start_budget"
        case pushToStartStale = "push_to_start_stale"
        case activityOf = "activity_of"
    }
}

/// What the device side reads of a push: its push type and the `aps` keys that decide what runs.
struct PushTraits: Sendable, Hashable {
    /// `alert`, `sound` or `badge` in `aps`: something the person sees.
    var visible = false
    var contentAvailable = false
    var mutableContent = false
    /// What a Live Activity push says of its activity (nil: no `aps.event`).
    var activity: ActivityTraits? = nil

    init(payload: [UInt8]) {
        guard let aps = (try? Payload(parsing: payload))?.aps else { return }
        visible = aps.alert != nil || aps.sound != nil || aps.badge != nil
        contentAvailable = aps.contentAvailable
        mutableContent = aps.mutableContent
        activity = ActivityTraits(aps: aps)
    }

    init(visible: Bool, contentAvailable: Bool, mutableContent: Bool) {
        self.visible = visible
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
    }

    /// How the device treats a push of `pushType` (the header; nil: not sent) with these traits.
    func kind(pushType: String?) -> PushKind {
        switch pushType {
        case PushType.liveactivity.rawValue: return .liveActivity
        case PushType.voip.rawValue: return .voip
        case PushType.background.rawValue: return .background
        case nil, PushType.alert.rawValue:
            return contentAvailable && !visible ? .background : .alert
        default: return .system
        }
    }
}

/// The device's treatment of a push.
enum PushKind {
    /// Shown to the person (alert, sound, badge); `content-available` may also wake the app.
    case alert
    /// `content-available: 1` alone, or push type `background`: wakes the app, budgeted.
    case background
    /// ActivityKit updates the Live Activity; the app's code does not run.
    case liveActivity
    /// PushKit hands it to the app.
    case voip
    /// Handled by the system or an extension (widgets, controls, complication, location, file provider, MDM,
    /// push to talk): outside this model of the app's code.
    case system
}
