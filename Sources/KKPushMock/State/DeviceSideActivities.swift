public import Foundation
import KKPushCore

// The device side's Live Activities: the push-to-start budget, stale push-to-start tokens, the activities a start
// creates and their update tokens, and updates to an activity that has ended. Sources (Apple) in `DeviceSide.swift`:
// "Starting and updating Live Activities with ActivityKit push notifications" and forum thread 799505.

/// A Live Activity a start created on a mock device.
public struct MockActivity: Sendable, Hashable, Codable {
    /// Where it is in its life on the device.
    public enum Phase: String, Sendable, Hashable, Codable {
        /// Started, taking updates.
        case active
        /// An end push reached it: it takes no more updates (it stays on screen until its dismissal date).
        case ended
    }

    /// The push-to-start token the start came through (the device).
    public var pushToStartToken: String
    /// Its own update token, registered with the mock as a token of the same device; nil when the start did not ask
    /// for one (`input-push-token: 1`).
    public var updateToken: String?
    /// The start's `attributes-type`.
    public var attributesType: String?
    /// The start's `attributes.kk_activity_key`, the server's idempotency key for the activity, if it sent one.
    public var activityKey: String?
    /// The start's `apns-id`.
    public var startAPNsID: String
    /// When the device took the start, by the mock's clock.
    public var startedAt: Date
    /// Active or ended.
    public var phase: Phase
    /// When an end reached it.
    public var endedAt: Date?
    /// The end's `dismissal-date` (seconds since 1970), if it had one.
    public var dismissalDate: Int?

    enum CodingKeys: String, CodingKey {
        case phase
        case pushToStartToken = "push_to_start_token"
        case updateToken = "update_token"
        case attributesType = "attributes_type"
        case activityKey = "activity_key"
        case startAPNsID = "start_apns_id"
        case startedAt = "started_at_ms"
        case endedAt = "ended_at_ms"
        case dismissalDate = "dismissal_date"
    }

    /// Decodes the JSON form (times in milliseconds since 1970).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pushToStartToken = try c.decode(String.self, forKey: .pushToStartToken)
        updateToken = try c.decodeIfPresent(String.self, forKey: .updateToken)
        attributesType = try c.decodeIfPresent(String.self, forKey: .attributesType)
        activityKey = try c.decodeIfPresent(String.self, forKey: .activityKey)
        startAPNsID = try c.decode(String.self, forKey: .startAPNsID)
        startedAt = Date(timeIntervalSince1970: Double(try c.decode(Int64.self, forKey: .startedAt)) / 1000)
        phase = try c.decode(Phase.self, forKey: .phase)
        endedAt = try c.decodeIfPresent(Int64.self, forKey: .endedAt).map {
            Date(timeIntervalSince1970: Double($0) / 1000)
        }
        dismissalDate = try c.decodeIfPresent(Int.self, forKey: .dismissalDate)
    }

    /// Encodes the JSON form (times in milliseconds since 1970).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(pushToStartToken, forKey: .pushToStartToken)
        try c.encodeIfPresent(updateToken, forKey: .updateToken)
        try c.encodeIfPresent(attributesType, forKey: .attributesType)
        try c.encodeIfPresent(activityKey, forKey: .activityKey)
        try c.encode(startAPNsID, forKey: .startAPNsID)
        try c.encode(startedAt.millisecondsSince1970, forKey: .startedAt)
        try c.encode(phase, forKey: .phase)
        try c.encodeIfPresent(endedAt?.millisecondsSince1970, forKey: .endedAt)
        try c.encodeIfPresent(dismissalDate, forKey: .dismissalDate)
    }

    init(
        pushToStartToken: String, updateToken: String?, attributesType: String?, activityKey: String?,
        startAPNsID: String, startedAt: Date
    ) {
        self.pushToStartToken = pushToStartToken
        self.updateToken = updateToken
        self.attributesType = attributesType
        self.activityKey = activityKey
        self.startAPNsID = startAPNsID
        self.startedAt = startedAt
        self.phase = .active
    }
}

/// What the device side reads of a Live Activity push (`aps.event` and the keys a start or end carries).
struct ActivityTraits: Sendable, Hashable {
    var event: LiveActivityEvent
    var inputPushToken: Bool
    var attributesType: String?
    var activityKey: String?
    var dismissalDate: Int?

    /// Nil for a push without `aps.event`.
    init?(aps: APS) {
        guard let event = aps.event else { return nil }
        self.event = event
        inputPushToken = aps.inputPushToken
        attributesType = aps.attributesType
        if case .object(let fields) = aps.attributes, case .string(let key)? = fields["kk_activity_key"] {
            activityKey = key
        }
        dismissalDate = aps.dismissalDate
    }
}

extension MockState.Inner {
    /// The most activities a mock device keeps (the oldest ended ones are forgotten first, with their update tokens):
    /// bounded, so a benchmark's starts do not grow the mock without end.
    static let activitiesPerDevice = 256

    /// Live Activity starts `device` took within the push-to-start budget's window.
    func startsInWindow(_ device: MockState.DeviceEntry, now: Date) -> Int {
        let start = now.addingTimeInterval(-rules.pushToStartBudgetWindow)
        return device.side.starts.count(where: { $0 > start })
    }

    var startBudgetWords: String {
        "\(rules.pushToStartBudget) per \(InputNumbers.text(rules.pushToStartBudgetWindow)) s (push_to_start_budget)"
    }

    /// A Live Activity push on a stale push-to-start token: APNs answered 200, the device no longer uses the token.
    /// True when it discarded `entry`.
    mutating func discardOnStalePushToStart(
        _ entry: inout DeliveredNotification, traits: PushTraits, device: MockState.DeviceEntry, now: Date,
        metrics: MockMetrics
    ) -> Bool {
        guard device.registration.pushToStartStale, traits.activity != nil else { return false }
        move(
            &entry, to: .discardedStalePushToStartToken, at: now,
            detail:
                "the device no longer uses this push-to-start token (the app was reinstalled or the token rotated); APNs answered 200 and nothing reaches the app",
            metrics: metrics)
        return true
    }

    /// A Live Activity push handed to the device: a start through a push-to-start token within the budget creates
    /// an activity (and its update token when it asks for one), past the budget it is dropped; an update or end to
    /// an activity that has ended is dropped; an end ends it. Returns the state `entry` ends in when the device drops
    /// it (nil: it is delivered).
    mutating func takeActivityPush(
        _ entry: inout DeliveredNotification, activity: ActivityTraits, device: inout MockState.DeviceEntry,
        now: Date
    ) -> (state: DeliveryState, why: String)? {
        // A token the mock does not know has no device to keep activities or a budget for.
        guard devices[entry.token] != nil else { return nil }
        if let parent = device.side.activityOf {
            // An activity's update token: updates and ends.
            guard activity.event != .start,
                let index = devices[parent]?.side.activities.firstIndex(where: { $0.updateToken == entry.token })
            else { return nil }
            guard var record = devices[parent]?.side.activities[index] else { return nil }
            if record.phase == .ended {
                return (
                    .droppedActivityEnded,
                    "the activity ended at \(Self.utc(record.endedAt ?? now)); an ended Live Activity takes no more updates or ends"
                )
            }
            if activity.event == .end {
                record.phase = .ended
                record.endedAt = now
                record.dismissalDate = activity.dismissalDate
                devices[parent]?.side.activities[index] = record
            }
            return nil
        }
        guard activity.event == .start else { return nil }
        let window = now.addingTimeInterval(-rules.pushToStartBudgetWindow)
        device.side.starts.removeAll { $0 <= window }
        guard device.side.starts.count < rules.pushToStartBudget else {
            return (
                .discardedStartBudget,
                "the device took \(device.side.starts.count) starts within its push-to-start budget (\(startBudgetWords)); it drops this one and no activity starts"
            )
        }
        device.side.starts.append(now)
        var updateToken: String? = nil
        if activity.inputPushToken {
            let token = Self.newToken()
            var registration = MockDeviceRegistration(
                token: token, environment: device.registration.environment, topic: device.registration.topic,
                connectivity: device.registration.connectivity, app: device.registration.app)
            registration.pushToStartStale = false
            var side = DeviceSideData()
            side.activityOf = entry.token
            // The same device: its pushes reach the same stream.
            devices[token] = MockState.DeviceEntry(
                registration: registration, continuation: device.continuation, side: side)
            updateToken = token
            entry.activityUpdateToken = token
        }
        device.side.activities.append(
            MockActivity(
                pushToStartToken: entry.token, updateToken: updateToken, attributesType: activity.attributesType,
                activityKey: activity.activityKey, startAPNsID: entry.apnsID, startedAt: now))
        if device.side.activities.count > Self.activitiesPerDevice {
            let index = device.side.activities.firstIndex { $0.phase == .ended } ?? 0
            let forgotten = device.side.activities.remove(at: index)
            if let token = forgotten.updateToken { devices[token] = nil }
        }
        return nil
    }

    /// A new random token: 32 bytes, lowercase hex.
    static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }
}
