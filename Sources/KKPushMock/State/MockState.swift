import Foundation
import KKPushCore
import NIOCore
import Synchronization

/// What the mock knows and records, shared by every connection and the admin API: keys,
/// devices, faults, the delivery log. One lock; every critical section is short.
final class MockState: Sendable {
    struct RegisteredKey: Sendable {
        var key: MockKey
        var verifier: ProviderKeyVerifier
    }

    struct DeviceEntry {
        var registration: MockDeviceRegistration
        var continuation: AsyncStream<DeliveredNotification>.Continuation?
        /// The pushes held for it, its background runs, what it shows (``DeviceSideData``).
        var side = DeviceSideData()
    }

    struct Waiter {
        var token: String
        var after: UInt64
        var promise: EventLoopPromise<Void>
    }

    struct Inner {
        var keys: [String: RegisteredKey] = [:]
        var devices: [String: DeviceEntry] = [:]
        var faults: [MockFault] = []
        var nextFaultID = 1
        var log: DeliveryLog
        var sequence: UInt64 = 0
        /// The newest rejected requests (``MockState/rejectionPage(after:before:limit:where:)``).
        var rejections: RejectionLog
        var rejectionSequence: UInt64 = 0
        var waiters: [Waiter] = []
        var strict: Bool
        /// Provider tokens verified since the last ``MockState/expireProviderTokens()``.
        var verifiedTokens: Set<String> = []
        /// Provider tokens treated as expired whatever their `iat`.
        var expiredTokens: Set<String> = []
        /// Waiters for a number of accepted notifications (``MockState/waitForDeliveries(_:)``).
        var countWaiters: [(target: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        /// The device side's settings (``MockServerConfiguration/deviceRules``).
        var rules: MockDeviceRules
        /// The devices holding a push (stored, held for power, deferred): the ones time can change.
        var pending: Set<String> = []
    }

    private let inner: Mutex<Inner>
    /// The mock's clock: the configured clock plus an offset moved by `POST /clock`.
    let clock: OffsetWallClock
    /// Moves on every ``expireProviderTokens()``, so a connection's cached token is looked up again
    /// only then (one atomic load per request otherwise).
    let tokenExpiryEpoch = Atomic<Int>(0)
    /// The mock's Prometheus metrics (the admin API's `GET /metrics`); never reset, unlike the log.
    let metrics = MockMetrics()
    /// The broadcast channels (their own lock).
    let channels = ChannelRegistry()

    /// How many rejected requests the mock keeps by default (the newest):
    /// ``MockServerConfiguration/rejectionLogCapacity``.
    static let defaultRejectionCapacity = 1000

    /// The app's `ActivityAttributes` (``MockServerConfiguration/activityAttributes``): a Live Activity delivery
    /// that would not decode on the device is logged with its warnings.
    let activityAttributes: ActivityAttributesDescription?

    init(
        logCapacity: Int, rejectionCapacity: Int = MockState.defaultRejectionCapacity, strict: Bool,
        clock: any WallClock, activityAttributes: ActivityAttributesDescription? = nil,
        deviceRules: MockDeviceRules = MockDeviceRules()
    ) {
        inner = Mutex(
            Inner(
                log: DeliveryLog(capacity: logCapacity), rejections: RejectionLog(capacity: rejectionCapacity),
                strict: strict, rules: deviceRules))
        self.clock = OffsetWallClock(base: clock)
        self.activityAttributes = activityAttributes
    }

    /// What the device would not decode of a Live Activity payload (nil: nothing, or no description configured).
    func decodeWarnings(pushType: String?, payload: [UInt8]) -> [String]? {
        guard let activityAttributes, pushType == PushType.liveactivity.rawValue,
            let parsed = try? Payload(parsing: payload)
        else { return nil }
        // Only what JSONDecoder refuses drops the push on the device: a date that decodes but is misread
        // (live-activity-date-misread) is shown as the device reads it, not dropped.
        let problems = activityAttributes.problems(in: parsed).filter { $0.code == .liveActivityWouldNotDecode }
        return problems.isEmpty ? nil : problems.map(\.message)
    }

    // MARK: Keys

    func register(_ key: MockKey) throws {
        let verifier = try ProviderKeyVerifier(key: key)
        inner.withLock { $0.keys[key.keyID] = RegisteredKey(key: key, verifier: verifier) }
    }

    func key(id: String) -> RegisteredKey? { inner.withLock { $0.keys[id] } }

    var keys: [MockKey] { inner.withLock { $0.keys.values.map(\.key).sorted { $0.keyID < $1.keyID } } }

    // MARK: Devices

    var strict: Bool {
        get { inner.withLock { $0.strict } }
        set { inner.withLock { $0.strict = newValue } }
    }

    func register(_ device: MockDeviceRegistration) {
        inner.withLock { state in
            let old = state.devices[device.token]
            state.devices[device.token] = DeviceEntry(
                registration: device, continuation: old?.continuation, side: old?.side ?? DeviceSideData())
        }
    }

    func mintDevice(
        environment: APNsEnvironment, topic: String, connectivity: MockConnectivity = .online,
        app: MockAppState = .foreground
    ) -> SimulatedDevice {
        let token = Inner.newToken()
        let (stream, continuation) = AsyncStream.makeStream(
            of: DeliveredNotification.self, bufferingPolicy: .bufferingNewest(10_000))
        inner.withLock { state in
            state.devices[token] = DeviceEntry(
                registration: MockDeviceRegistration(
                    token: token, environment: environment, topic: topic, connectivity: connectivity, app: app),
                continuation: continuation)
        }
        return SimulatedDevice(token: token, environment: environment, topic: topic, notifications: stream)
    }

    /// Marks `token` unregistered at `date`; false if the mock does not know the token.
    func unregister(token: String, at date: Date, reason: APNsReason) -> Bool {
        let now = clock.now()
        return inner.withLock { state in
            guard var entry = state.devices[token.lowercased()] else { return false }
            entry.registration.unregisteredAt = date
            entry.registration.unregisteredReason = reason
            state.devices[token.lowercased()] = entry
            state.discardHeld(token: token.lowercased(), now: now, metrics: metrics)
            return true
        }
    }

    // MARK: Device side

    /// Applies the mock's clock to every push held (stored, held for power, deferred): called before every read of
    /// the log or the devices and after the clock moves, so time passing is seen without a timer.
    func settleDevices() {
        let now = clock.now()
        inner.withLock { $0.settleAll(now: now, metrics: metrics) }
    }

    /// Sets a device's connectivity and app state (nil: unchanged) and applies them at once (a device that comes
    /// online gets what was stored for it); nil if the mock does not know the token.
    func setDeviceState(token: String, connectivity: MockConnectivity?, app: MockAppState?) -> MockDeviceState? {
        let now = clock.now()
        let token = token.lowercased()
        return inner.withLock { state in
            guard var entry = state.devices[token] else { return nil }
            if let connectivity { entry.registration.connectivity = connectivity }
            if let app { entry.registration.app = app }
            state.devices[token] = entry
            state.settle(token: token, now: now, metrics: metrics)
            // Its activities' update tokens are tokens of the same device: they follow it.
            for update in entry.side.activities.compactMap(\.updateToken) where state.devices[update] != nil {
                if let connectivity { state.devices[update]?.registration.connectivity = connectivity }
                if let app { state.devices[update]?.registration.app = app }
                state.settle(token: update, now: now, metrics: metrics)
            }
            return state.deviceState(token, now: now)
        }
    }

    /// Marks a push-to-start token stale on its device (the app was reinstalled, or the token rotated) or current
    /// again; nil if the mock does not know the token.
    func setPushToStartStale(token: String, stale: Bool) -> MockDeviceState? {
        let now = clock.now()
        let token = token.lowercased()
        return inner.withLock { state in
            guard state.devices[token] != nil else { return nil }
            state.devices[token]?.registration.pushToStartStale = stale
            return state.deviceState(token, now: now)
        }
    }

    /// A device's state and what is held for it; nil if the mock does not know the token.
    func deviceState(token: String) -> MockDeviceState? {
        let now = clock.now()
        return inner.withLock { state in
            state.settleAll(now: now, metrics: metrics)
            return state.deviceState(token.lowercased(), now: now)
        }
    }

    /// The device side's rules; a change applies from the next push or settle on.
    var deviceRules: MockDeviceRules {
        get { inner.withLock { $0.rules } }
        set { inner.withLock { $0.rules = newValue } }
    }

    /// The registration of `token` (lowercase) and whether strict mode is on, under one lock.
    func lookup(_ token: String) -> (MockDeviceRegistration?, Bool) {
        // No settling here: this is the hot path of every request; ``accept(_:traits:now:metrics:)`` settles the
        // token it delivers to.
        inner.withLock { ($0.devices[token]?.registration, $0.strict) }
    }

    func device(_ token: String) -> MockDeviceRegistration? {
        inner.withLock { $0.devices[token]?.registration }
    }

    var devices: [MockDeviceRegistration] {
        settleDevices()
        return inner.withLock { $0.devices.values.map(\.registration).sorted { $0.token < $1.token } }
    }

    // MARK: Faults

    @discardableResult
    func add(_ fault: MockFault) throws -> MockFault {
        try fault.validate()
        return inner.withLock { state in
            var f = fault
            if f.id.isEmpty {
                f.id = "f\(state.nextFaultID)"
                state.nextFaultID += 1
            }
            state.faults.removeAll { $0.id == f.id }
            state.faults.append(f)
            return f
        }
    }

    func removeFaults(id: String? = nil) {
        inner.withLock { state in
            if let id { state.faults.removeAll { $0.id == id } } else { state.faults.removeAll() }
        }
    }

    var faults: [MockFault] { inner.withLock { $0.faults } }

    /// The faults that apply to a request, with per-request counts consumed (except GOAWAY, whose
    /// count is consumed by ``consumeGoAway(id:)`` when it fires). A fault still skipping requests
    /// counts this one down and does not apply.
    /// `idleMilliseconds`: how long the request's connection sat idle before it (nil for its first request);
    /// a black-hole fault matches only a connection idle at least its threshold.
    func matchingFaults(
        idleMilliseconds: Int? = nil, request: () -> (token: String, topic: String?)
    ) -> [MockFault] {
        inner.withLock { state in
            if state.faults.isEmpty { return [] }
            let (token, topic) = request()
            var matched: [MockFault] = []
            var i = 0
            while i < state.faults.count {
                let f = state.faults[i]
                guard f.scope.matches(token: token, topic: topic) else {
                    i += 1
                    continue
                }
                if case .blackHole(let threshold) = f.kind, (idleMilliseconds ?? -1) < threshold {
                    i += 1
                    continue
                }
                if f.skip > 0 {
                    state.faults[i].skip -= 1
                    i += 1
                    continue
                }
                matched.append(f)
                if case .goAway = f.kind {
                    i += 1
                    continue
                }
                if let r = f.remaining {
                    if r <= 1 {
                        state.faults.remove(at: i)
                        continue
                    }
                    state.faults[i].remaining = r - 1
                }
                i += 1
            }
            return matched
        }
    }

    func consumeGoAway(id: String) {
        inner.withLock { state in
            guard let i = state.faults.firstIndex(where: { $0.id == id }) else { return }
            if let r = state.faults[i].remaining {
                if r <= 1 { state.faults.remove(at: i) } else { state.faults[i].remaining = r - 1 }
            }
        }
    }

    // MARK: Provider tokens

    /// Records a provider token that verified (so ``expireProviderTokens()`` can expire it).
    func noteVerified(token: String) {
        inner.withLock { state in
            if state.verifiedTokens.count >= 100_000 { state.verifiedTokens.removeAll() }
            state.verifiedTokens.insert(token)
        }
    }

    /// True if `token` was expired by ``expireProviderTokens()``.
    func isExpired(token: String) -> Bool {
        inner.withLock { $0.expiredTokens.contains(token) }
    }

    /// Treats every provider token verified so far as expired, as if its hour had passed now: later
    /// requests with it get `403 ExpiredProviderToken`, while a newly signed token (even with the same
    /// `iat`) is accepted, and a connection may switch to it at once (no `TooManyProviderTokenUpdates`,
    /// as after a real hour). Returns how many tokens it expired.
    @discardableResult
    func expireProviderTokens() -> Int {
        let n = inner.withLock { state in
            let n = state.verifiedTokens.count
            state.expiredTokens.formUnion(state.verifiedTokens)
            state.verifiedTokens.removeAll()
            return n
        }
        tokenExpiryEpoch.add(1, ordering: .sequentiallyConsistent)
        return n
    }

    // MARK: Rejections

    /// Records a request answered with an error (kept: the newest ``MockServerConfiguration/rejectionLogCapacity``).
    func recordRejection(_ make: (UInt64) -> RejectedRequest) {
        inner.withLock { state in
            state.rejectionSequence += 1
            state.rejections.append(make(state.rejectionSequence))
        }
    }

    /// A page of the rejections (``RingLog/page(after:before:limit:where:)``).
    func rejectionPage(
        after: UInt64?, before: UInt64?, limit: Int, where predicate: ((RejectedRequest) -> Bool)?
    ) -> LogPage<RejectedRequest> {
        inner.withLock { $0.rejections.page(after: after, before: before, limit: limit, where: predicate) }
    }

    // MARK: Delivery

    /// Records an accepted notification, applies the device side's rules (it is delivered to its simulated device,
    /// stored, held or discarded: ``MockState/Inner/accept(_:traits:now:metrics:)``) and wakes long-polls.
    /// `traits`: what the device reads of its payload (computed once per payload by the caller).
    func deliver(traits: PushTraits, _ make: (UInt64) -> DeliveredNotification) {
        let now = clock.now()
        let (woken, counted): ([EventLoopPromise<Void>], [CheckedContinuation<Void, Never>]) = inner.withLock { state in
            state.sequence += 1
            let entry = make(state.sequence)
            state.accept(entry, traits: traits, now: now, metrics: metrics)
            var counted: [CheckedContinuation<Void, Never>] = []
            if !state.countWaiters.isEmpty {
                let sequence = state.sequence
                state.countWaiters.removeAll { w in
                    if w.target <= sequence {
                        counted.append(w.continuation)
                        return true
                    }
                    return false
                }
            }
            if state.waiters.isEmpty { return ([], counted) }
            var woken: [EventLoopPromise<Void>] = []
            state.waiters.removeAll { w in
                if w.token == entry.token {
                    woken.append(w.promise)
                    return true
                }
                return false
            }
            return (woken, counted)
        }
        for p in woken { p.succeed() }
        for c in counted { c.resume() }
    }

    /// Returns once `count` more notifications have been accepted (counted from the call), or at
    /// ``reset()`` or ``finish()``.
    func waitForDeliveries(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready: Bool = inner.withLock { state in
                if count <= 0 { return true }
                state.countWaiters.append((state.sequence + UInt64(count), continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    func log(limit: Int, where predicate: (DeliveredNotification) -> Bool) -> [DeliveredNotification] {
        settleDevices()
        return inner.withLock { $0.log.entries(limit: limit, where: predicate) }
    }

    /// A page of the delivery log (``RingLog/page(after:before:limit:where:)``).
    func logPage(
        after: UInt64?, before: UInt64?, limit: Int, where predicate: ((DeliveredNotification) -> Bool)?
    ) -> LogPage<DeliveredNotification> {
        settleDevices()
        return inner.withLock { $0.log.page(after: after, before: before, limit: limit, where: predicate) }
    }

    /// The delivery numbered `sequence`, if the log still holds it.
    func delivery(sequence: UInt64) -> DeliveredNotification? {
        settleDevices()
        return inner.withLock { $0.log.entry(sequence: sequence) }
    }

    func notifications(token: String, after: UInt64, limit: Int) -> [DeliveredNotification] {
        settleDevices()
        return inner.withLock { $0.log.entries(after: after, limit: limit) { $0.token == token } }
    }

    /// Returns the entries for `token` after `after`, or registers `promise` to be completed on the
    /// next delivery to that token (and returns an empty array).
    func notificationsOrWait(token: String, after: UInt64, limit: Int, promise: EventLoopPromise<Void>)
        -> [DeliveredNotification]
    {
        settleDevices()
        return inner.withLock { state in
            let found = state.log.entries(after: after, limit: limit) { $0.token == token }
            if found.isEmpty { state.waiters.append(Waiter(token: token, after: after, promise: promise)) }
            return found
        }
    }

    func cancelWait(_ promise: EventLoopPromise<Void>) {
        inner.withLock { state in state.waiters.removeAll { $0.promise.futureResult === promise.futureResult } }
    }

    var logCount: Int { inner.withLock { $0.log.count } }

    /// Forgets devices, faults, the log and expired provider tokens (keys stay registered);
    /// finishes device streams.
    func reset(keepKeys: Bool = true) {
        let (continuations, waiters, counted) = inner.withLock { state in
            let c = state.devices.values.compactMap(\.continuation)
            let w = state.waiters.map(\.promise)
            let n = state.countWaiters.map(\.continuation)
            for entry in state.devices.values {
                for held in entry.side.allHeld { metrics.forgetHeld(held.entry) }
            }
            state.pending.removeAll()
            state.devices.removeAll()
            state.faults.removeAll()
            state.log.removeAll()
            state.rejections.removeAll()
            state.waiters.removeAll()
            state.countWaiters.removeAll()
            state.verifiedTokens.removeAll()
            state.expiredTokens.removeAll()
            if !keepKeys { state.keys.removeAll() }
            return (c, w, n)
        }
        tokenExpiryEpoch.add(1, ordering: .sequentiallyConsistent)
        channels.reset()
        for c in continuations { c.finish() }
        for w in waiters { w.succeed() }
        for c in counted { c.resume() }
        clock.reset()
    }

    /// Finishes every device stream and long-poll (at shutdown).
    func finish() {
        let (continuations, waiters, counted) = inner.withLock { state in
            let c = state.devices.values.compactMap(\.continuation)
            let w = state.waiters.map(\.promise)
            let n = state.countWaiters.map(\.continuation)
            for k in state.devices.keys { state.devices[k]?.continuation = nil }
            state.waiters.removeAll()
            state.countWaiters.removeAll()
            return (c, w, n)
        }
        for c in continuations { c.finish() }
        for w in waiters { w.succeed() }
        for c in counted { c.resume() }
    }
}
