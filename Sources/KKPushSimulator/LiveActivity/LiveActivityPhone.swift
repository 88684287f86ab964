import Foundation
package import KKPushCore
package import KKPushMock

/// A Live Activity on a simulated phone, as ActivityKit would hold it.
package struct SimulatedActivity: Sendable, Equatable {
    /// Where it is in its life.
    package enum Phase: String, Sendable, Equatable {
        /// On the Lock Screen, taking updates.
        case active
        /// Ended by an `end` push; it stays until its dismissal date.
        case ended
    }

    /// The `ActivityAttributes` type it was started with (`attributes-type`).
    package var attributesType: String
    /// The static attributes (`attributes`).
    package var attributes: JSONValue
    /// The content shown (`content-state` of the newest push taken).
    package var contentState: JSONValue
    /// The `timestamp` of the newest push taken: older ones are dropped, as iOS drops them.
    package var timestamp: Int
    /// The phase.
    package var phase: Phase
    /// The activity's own update token, when the start asked for one (`input-push-token: 1`).
    package var updateToken: String?
    /// The broadcast channel it listens to, when the start named one (`input-push-channel`).
    package var channelID: String?
    /// The `dismissal-date` of the end push, if it had one.
    package var dismissalDate: Int?
    /// ActivityKit's `Activity.id`: made by the phone when the activity starts.
    package var activityID: String = ""
    /// The start's `attributes.kk_activity_key` (the server's key for the activity), if it sent one.
    package var activityKey: String?
    /// The token the phone subscribed to the broadcast channel with (the mock's stand-in for ActivityKit's own).
    var channelToken: String?
}

/// An activity's update token as the app reports it to its backend (`activity_tokens` of the token update): what
/// `Activity.pushTokenUpdates` gives the app's code once it runs.
package struct ActivityTokenReportItem: Sendable, Equatable {
    /// The activity's `kk_activity_key`, from its attributes.
    package var activityKey: String?
    /// ActivityKit's `Activity.id`.
    package var activityID: String
    /// The `ActivityAttributes` type.
    package var attributesType: String
    /// The update token, lowercase hex.
    package var token: String
}

/// What a phone did with one Live Activity push.
package struct ActivityPushHandling: Sendable, Equatable {
    /// The phone.
    package var phone: String
    /// The token it arrived on (push-to-start, update token, or the channel subscription), short.
    package var via: String
    /// The push's `event` (start, update, end; `?` if it had none).
    package var event: String
    /// True if it changed the activity (started, updated or ended it).
    package var taken: Bool
    /// In words: what changed, or why the phone ignored the push.
    package var note: String
}

/// A phone's Live Activity side, as iOS 18 runs it for one app: a push-to-start token for the app's
/// `ActivityAttributes` types, the activities its starts created (each start that decodes starts one, as ActivityKit
/// does: a start sent twice makes two activities, which is why a server keeps one key per activity), each one's
/// update token when its start asks for one, and its subscription when a start names a broadcast channel.
///
/// The decisions are ActivityKit's, as Apple documents them ("Starting and updating Live Activities with
/// ActivityKit push notifications"): a start needs `attributes-type` naming a type the app declares,
/// `attributes` and `content-state`, or nothing starts (APNs has already answered 200); updates and ends
/// go to the activity's own token or channel, never to the push-to-start token; a push whose
/// `timestamp` is not newer than the last one shown is dropped; an ended activity takes no more pushes (the mock's
/// device side drops them before they reach the phone: `dropped on the device: activity-ended`).
///
/// A push is dropped for what ActivityKit drops it for, and nothing else: a payload that does not decode into the
/// app's types (`live-activity-would-not-decode`). A `Date` holding a Unix time decodes (as a date decades late), so
/// the phone takes it and shows the date as the device would read it; the linter names it, the phone does not drop
/// it.
///
/// The activity's update token is the one the mock's device side made for the start (`activity_update_token` of the
/// delivery), a token of the same device: its pushes arrive on the phone's own stream. The app's code learns it only
/// when it runs (`Activity.pushTokenUpdates`): an app that is not running (killed) reports it when it is next
/// launched (``launchApp()``), as ``takeTokenReports()`` shows.
///
/// The mock routes a channel's broadcasts to the device tokens subscribed to it, so a phone subscribes
/// with a token of its own standing for the activity (iOS does this inside ActivityKit; an app never
/// sees such a token).
package actor LiveActivityPhone {
    /// A display name (`Sanne's iPhone`).
    package nonisolated let name: String
    /// The environment of the build's `aps-environment` (its tokens belong to it).
    package nonisolated let environment: APNsEnvironment
    /// The push-to-start token the phone was made with (`Activity<…>.pushToStartTokenUpdates`); after a rotation
    /// (``rotatePushToStartToken()``) the current one is ``currentPushToStartToken``.
    package nonisolated let pushToStartToken: String
    /// The `ActivityAttributes` types the app declares.
    package nonisolated let attributesTypes: Set<String>
    /// The declared types' fields, by type name, where known: a push whose `attributes` or `content-state` would not
    /// decode into them is dropped, as ActivityKit drops it (APNs has answered 200). A type without one decodes
    /// anything.
    package nonisolated let descriptions: [String: ActivityAttributesDescription]
    nonisolated let mock: MockAPNsServer
    nonisolated let topic: String

    /// The activities started on the phone, oldest first.
    package private(set) var activities: [SimulatedActivity] = []
    /// The newest activity, once one started.
    package var activity: SimulatedActivity? { activities.last }
    /// Every Live Activity push that reached the phone and what it did, in order.
    package private(set) var handled: [ActivityPushHandling] = []
    /// The push-to-start token the app uses now.
    package private(set) var currentPushToStartToken: String
    /// Whether the app's code runs (false: the person or the system killed it). ActivityKit starts an activity from
    /// a push-to-start either way; only a running app can read its update token and report it.
    package private(set) var appRunning = true
    /// Update tokens the app has read and not yet posted to its backend.
    private var pendingReports: [ActivityTokenReportItem] = []
    /// Every push-to-start token the phone had (a stale one still names its pushes).
    private var pushToStartTokens: Set<String>
    private var listeners: [Task<Void, Never>] = []

    /// Mints the phone's push-to-start token with the mock (in `environment`, for the app's Live Activity
    /// topic) and starts listening on it.
    package init(
        name: String, environment: APNsEnvironment, bundleID: String, attributesTypes: Set<String>,
        descriptions: [ActivityAttributesDescription] = [], mock: MockAPNsServer
    ) {
        self.name = name
        self.environment = environment
        self.attributesTypes = attributesTypes.union(descriptions.map(\.name))
        self.descriptions = Dictionary(descriptions.map { ($0.name, $0) }) { first, _ in first }
        self.mock = mock
        self.topic = LiveActivityContent.topic(forBundleID: bundleID)
        let device = mock.mintDevice(environment: environment, topic: topic)
        self.pushToStartToken = device.token
        self.currentPushToStartToken = device.token
        self.pushToStartTokens = [device.token]
        Task { await self.listen(to: device) }
    }

    /// The activity whose update token is `token`.
    package func activity(updateToken token: String) -> SimulatedActivity? {
        activities.first { $0.updateToken == token }
    }

    /// The app is killed: ActivityKit still starts activities from push-to-start, but nothing reports their tokens.
    package func killApp() { appRunning = false }

    /// The app is launched again: it reads the update tokens of the activities started meanwhile
    /// (`Activity.activities`, `pushTokenUpdates`) and has them to post.
    package func launchApp() { appRunning = true }

    /// The update tokens the running app posts to its backend now (`activity_tokens` of the token update), each once;
    /// empty while the app is not running.
    package func takeTokenReports() -> [ActivityTokenReportItem] {
        guard appRunning else { return [] }
        defer { pendingReports = [] }
        return pendingReports
    }

    /// The app is reinstalled (or iOS rotates the token): `pushToStartTokenUpdates` gives a new push-to-start token,
    /// and the old one goes stale on the device (APNs still answers 200 to it; the mock's device side discards what
    /// is sent to it). Returns the new token.
    package func rotatePushToStartToken() throws -> String {
        try mock.markPushToStartStale(token: currentPushToStartToken)
        let device = mock.mintDevice(environment: environment, topic: topic)
        currentPushToStartToken = device.token
        pushToStartTokens.insert(device.token)
        listen(to: device)
        return device.token
    }

    /// Stops listening.
    package func stop() {
        for l in listeners { l.cancel() }
        listeners = []
    }

    /// Waits until the phone has handled `count` pushes, or `timeout` passes; true if it has.
    package func waitForHandled(_ count: Int, timeout: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while handled.count < count {
            if clock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// The newest activity in one line: `active: {…}`, `ended: {…}` or `no activity`.
    package var stateLine: String {
        guard let a = activity else { return "no activity" }
        var line = "\(a.phase.rawValue) \(String(decoding: a.contentState.encoded(), as: UTF8.self))"
        if let channel = a.channelID { line += " (channel \(channel.prefix(8))…)" }
        if a.updateToken != nil { line += " (own update token)" }
        return line
    }

    /// Listens to a device's stream: its push-to-start token's pushes and those of the update tokens the mock made
    /// for its activities (tokens of the same device), or a channel subscription's.
    private func listen(to device: SimulatedDevice) {
        let task = Task { [weak self] in
            for await delivered in device.notifications {
                guard let self else { return }
                await self.handle(delivered)
            }
        }
        listeners.append(task)
    }

    func handle(_ delivered: DeliveredNotification) async {
        let pushToStart = delivered.channelID == nil && pushToStartTokens.contains(delivered.token)
        let via =
            pushToStart
            ? "push-to-start token"
            : delivered.channelID.map { "channel \($0.prefix(8))…" } ?? "update token"
        let payload = try? Payload(parsing: delivered.payload)
        let aps = payload?.aps
        let content = aps?.liveActivity
        let event = content?.event.rawValue ?? "?"
        func record(_ taken: Bool, _ note: String) {
            handled.append(ActivityPushHandling(phone: name, via: via, event: event, taken: taken, note: note))
        }
        /// Why the payload would not decode into `type`'s fields (nil: it would, or the fields are not known). Only
        /// what JSONDecoder refuses (`live-activity-would-not-decode`): a misread date decodes, and is shown.
        func undecodable(_ type: String) -> String? {
            guard let description = descriptions[type], let payload else { return nil }
            let problems = description.problems(in: payload).filter { $0.code == .liveActivityWouldNotDecode }
            return problems.isEmpty ? nil : problems.map(\.message).joined(separator: "; ")
        }
        guard let content else {
            return record(false, "ignored: no aps.event with a whole-second aps.timestamp")
        }
        if pushToStart {
            guard content.event == .start else {
                return record(false, "ignored: an \(event) sent to a push-to-start token does nothing")
            }
            guard let type = content.attributesType else {
                return record(
                    false, "not started: no aps.attributes-type, so iOS cannot tell which ActivityAttributes to decode")
            }
            guard attributesTypes.contains(type) else {
                return record(false, "not started: the app declares no ActivityAttributes type named \(type)")
            }
            guard let attributes = content.attributes, let state = content.contentState else {
                return record(false, "not started: the start lacks aps.attributes or aps.content-state")
            }
            if let why = undecodable(type) {
                return record(false, "not started: would not decode into \(type): \(why)")
            }
            var started = SimulatedActivity(
                attributesType: type, attributes: attributes, contentState: state, timestamp: content.timestamp,
                phase: .active)
            started.activityID = UUID().uuidString
            if case .object(let fields) = attributes, case .string(let key)? = fields["kk_activity_key"] {
                started.activityKey = key
            }
            var note = "started"
            if content.inputPushToken {
                // The token the mock's device side made for this start: a token of this device, on its stream.
                if let token = delivered.activityUpdateToken {
                    started.updateToken = token
                    pendingReports.append(
                        ActivityTokenReportItem(
                            activityKey: started.activityKey, activityID: started.activityID, attributesType: type,
                            token: token))
                    if !appRunning { note += "; the app is not running: its update token is reported at next launch" }
                } else {
                    note += "; the device gave it no update token"
                }
            }
            if let channel = content.inputPushChannel {
                let device = mock.mintDevice(environment: environment, topic: topic)
                do {
                    try mock.subscribe(token: device.token, toChannel: channel)
                    started.channelID = channel
                    started.channelToken = device.token
                    listen(to: device)
                } catch {
                    activities.append(started)
                    return record(true, "started, but not subscribed to channel \(channel.prefix(8))…: \(error)")
                }
            }
            activities.append(started)
            return record(true, note)
        }
        guard
            let index = activities.lastIndex(where: {
                $0.updateToken == delivered.token || $0.channelToken == delivered.token
            })
        else { return record(false, "ignored: no activity") }
        var current = activities[index]
        switch content.event {
        case .start:
            return record(false, "ignored: a start sent to an activity's token does nothing")
        case _ where current.phase == .ended:
            return record(false, "ignored: the activity has ended")
        case _ where content.timestamp <= current.timestamp:
            return record(
                false,
                "ignored: timestamp \(content.timestamp) is not newer than the last shown (\(current.timestamp))")
        case _ where undecodable(current.attributesType) != nil:
            return record(
                false,
                "dropped: would not decode into \(current.attributesType): \(undecodable(current.attributesType) ?? "")"
            )
        case .update:
            guard let state = content.contentState else {
                return record(false, "ignored: an update without aps.content-state")
            }
            current.contentState = state
            current.timestamp = content.timestamp
            activities[index] = current
            return record(true, "updated")
        case .end:
            if let state = content.contentState { current.contentState = state }
            current.timestamp = content.timestamp
            current.phase = .ended
            current.dismissalDate = content.dismissalDate
            activities[index] = current
            return record(true, "ended")
        default:
            return record(false, "ignored: event \(event) is not start, update or end")
        }
    }
}
