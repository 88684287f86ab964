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
/// `ActivityAttributes` types, at most one activity here (the dienst in progress), its update token
/// when a start asks for one, and its subscription when a start names a broadcast channel.
///
/// The decisions are ActivityKit's, as Apple documents them ("Starting and updating Live Activities with
/// ActivityKit push notifications"): a start needs `attributes-type` naming a type the app declares,
/// `attributes` and `content-state`, or nothing starts (APNs has already answered 200); updates and ends
/// go to the activity's own token or channel, never to the push-to-start token; a push whose
/// `timestamp` is not newer than the last one shown is dropped; an ended activity takes no more pushes.
///
/// The mock routes a channel's broadcasts to the device tokens subscribed to it, so a phone subscribes
/// with a token of its own standing for the activity (iOS does this inside ActivityKit; an app never
/// sees such a token).
package actor LiveActivityPhone {
    /// A display name (`Sanne's iPhone`).
    package nonisolated let name: String
    /// The environment of the build's `aps-environment` (its tokens belong to it).
    package nonisolated let environment: APNsEnvironment
    /// The push-to-start token (`Activity<…>.pushToStartTokenUpdates`).
    package nonisolated let pushToStartToken: String
    /// The `ActivityAttributes` types the app declares.
    package nonisolated let attributesTypes: Set<String>
    /// The declared types' fields, by type name, where known: a push whose `attributes` or `content-state` would not
    /// decode into them is dropped, as ActivityKit drops it (APNs has answered 200). A type without one decodes
    /// anything.
    package nonisolated let descriptions: [String: ActivityAttributesDescription]
    nonisolated let mock: MockAPNsServer
    nonisolated let topic: String

    /// The activity, once started.
    package private(set) var activity: SimulatedActivity?
    /// Every Live Activity push that reached the phone and what it did, in order.
    package private(set) var handled: [ActivityPushHandling] = []
    private var listeners: [Task<Void, Never>] = []
    private var activityToken: String?

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
        Task { await self.listen(to: device, pushToStart: true) }
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

    /// The activity in one line: `active: {…}`, `ended: {…}` or `no activity`.
    package var stateLine: String {
        guard let a = activity else { return "no activity" }
        var line = "\(a.phase.rawValue) \(String(decoding: a.contentState.encoded(), as: UTF8.self))"
        if let channel = a.channelID { line += " (channel \(channel.prefix(8))…)" }
        if a.updateToken != nil { line += " (own update token)" }
        return line
    }

    private func listen(to device: SimulatedDevice, pushToStart: Bool) {
        let task = Task { [weak self] in
            for await delivered in device.notifications {
                guard let self else { return }
                await self.handle(delivered, pushToStart: pushToStart)
            }
        }
        listeners.append(task)
    }

    func handle(_ delivered: DeliveredNotification, pushToStart: Bool) async {
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
        /// Why the payload would not decode into `type`'s fields (nil: it would, or the fields are not known).
        func undecodable(_ type: String) -> String? {
            guard let description = descriptions[type], let payload else { return nil }
            let problems = description.problems(in: payload)
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
            if let current = activity, current.phase == .active {
                return record(false, "ignored: an activity is already running (\(current.attributesType))")
            }
            var started = SimulatedActivity(
                attributesType: type, attributes: attributes, contentState: state, timestamp: content.timestamp,
                phase: .active)
            if content.inputPushToken {
                let device = mock.mintDevice(environment: environment, topic: topic)
                started.updateToken = device.token
                listen(to: device, pushToStart: false)
            }
            if let channel = content.inputPushChannel {
                let device = mock.mintDevice(environment: environment, topic: topic)
                do {
                    try mock.subscribe(token: device.token, toChannel: channel)
                    started.channelID = channel
                    activityToken = device.token
                    listen(to: device, pushToStart: false)
                } catch {
                    activity = started
                    return record(true, "started, but not subscribed to channel \(channel.prefix(8))…: \(error)")
                }
            }
            activity = started
            return record(true, "started")
        }
        guard var current = activity else { return record(false, "ignored: no activity") }
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
            activity = current
            return record(true, "updated")
        case .end:
            if let state = content.contentState { current.contentState = state }
            current.timestamp = content.timestamp
            current.phase = .ended
            current.dismissalDate = content.dismissalDate
            activity = current
            return record(true, "ended")
        default:
            return record(false, "ignored: event \(event) is not start, update or end")
        }
    }
}
