public import Foundation
public import KKPushCore
import KKPushHTTP

extension MockAPNsServer {
    /// `mock-device-unknown` for `token` (redacted), with the fix.
    static func unknownToken(_ token: String) -> KKPushError {
        KKPushError(
            code: .mockDeviceUnknown, message: "The mock does not know the token '\(DeviceToken.redacted(token))'.",
            fix: "Mint or register the device first.")
    }

    // MARK: Keys

    /// Accepts provider tokens signed with `key` from now on.
    public func registerKey(_ key: MockKey) throws { try state.register(key) }

    /// The keys registered.
    public var keys: [MockKey] { state.keys }

    // MARK: Broadcast channels

    /// Every broadcast channel, with its subscribers and stored message.
    public var channels: [MockChannel] { state.channels.all }

    /// Subscribes the device `token` to channel `id` (as a Live Activity subscribing to a broadcast
    /// channel); a storage-policy-1 channel hands it its latest message at once.
    @discardableResult
    public func subscribe(token: String, toChannel id: String) throws -> MockChannel {
        try state.subscribe(token: token, toChannel: id)
    }

    // MARK: Devices

    /// Creates a simulated device: a random 32-byte token bound to `environment` and `topic`, whose
    /// accepted notifications arrive on its `notifications` stream.
    /// It starts online with its app in the foreground unless told otherwise (``setDeviceState(token:connectivity:app:)``).
    public func mintDevice(
        environment: APNsEnvironment, topic: String, connectivity: MockConnectivity = .online,
        app: MockAppState = .foreground
    ) -> SimulatedDevice {
        state.mintDevice(environment: environment, topic: topic, connectivity: connectivity, app: app)
    }

    /// Sets a device's connectivity and its app's state (nil: unchanged), and applies them at once: a device that
    /// comes online gets the push stored for it (one per app), an app brought to the foreground runs its deferred
    /// background push. Returns the device's state; throws if the mock does not know the token.
    @discardableResult
    public func setDeviceState(
        token: String, connectivity: MockConnectivity? = nil, app: MockAppState? = nil
    ) throws -> MockDeviceState {
        guard let result = state.setDeviceState(token: token, connectivity: connectivity, app: app) else {
            throw Self.unknownToken(token)
        }
        return result
    }

    /// A device's connectivity, app state and the pushes held for it; nil if the mock does not know the token.
    public func deviceState(token: String) -> MockDeviceState? { state.deviceState(token: token) }

    /// The device side's rules (``MockDeviceRules``): storage limit, background budget, hold of priority 5 pushes.
    /// Setting them checks them first; they apply from the next push on.
    public var deviceRules: MockDeviceRules { state.deviceRules }

    /// Replaces the device side's rules; throws naming the value out of range.
    public func setDeviceRules(_ rules: MockDeviceRules) throws {
        try rules.validate()
        state.deviceRules = rules
    }

    /// Registers a token (as an app on a device would get it): known environment and topic.
    public func registerDevice(_ registration: MockDeviceRegistration) throws {
        guard DeviceToken.isWellFormed(registration.token) else {
            throw KKPushError(
                code: .mockDeviceToken,
                message: "The token '\(DeviceToken.redacted(registration.token))' is not a device token.",
                fix: "Give 64 to 400 hex digits (an even number).")
        }
        state.register(registration)
    }

    /// Marks `token` unregistered: pushes to it get `410` with `reason` and `timestamp` = `date` in ms.
    /// Throws if the mock does not know the token.
    public func unregister(token: String, at date: Date? = nil, reason: APNsReason = .unregistered) throws {
        guard state.unregister(token: token, at: date ?? state.clock.now(), reason: reason) else {
            throw Self.unknownToken(token)
        }
    }

    /// The registered and minted devices.
    public var devices: [MockDeviceRegistration] { state.devices }

    /// Whether well-formed tokens the mock does not know get `BadDeviceToken`.
    public var strictDeviceTokens: Bool {
        get { state.strict }
        set { state.strict = newValue }
    }

    // MARK: Faults

    /// Adds a fault (an id is assigned if it has none) and returns it as stored.
    @discardableResult
    public func addFault(_ fault: MockFault) throws -> MockFault { try state.add(fault) }

    /// Removes the fault with `id`, or every fault if `id` is nil.
    public func removeFaults(id: String? = nil) { state.removeFaults(id: id) }

    /// The active faults.
    public var faults: [MockFault] { state.faults }

    // MARK: Delivery log

    /// Accepted notifications, oldest first (at most `limit`, the newest), optionally filtered; each with its delivery
    /// ``DeliveredNotification/state``, ``DeliveredNotification/history`` and ``DeliveredNotification/appCode``.
    public func deliveries(token: String? = nil, limit: Int = 1000) -> [DeliveredNotification] {
        let t = token?.lowercased()
        return state.log(limit: limit) { t == nil || $0.token == t }
    }

    /// The accepted notification answered with `apnsID`, if still in the log.
    public func delivery(apnsID: String) -> DeliveredNotification? {
        let id = apnsID.lowercased()
        return state.log(limit: 1) { $0.apnsID == id }.first
    }

    /// The accepted notification answered with `apnsUniqueID` (sandbox), if still in the log.
    public func delivery(apnsUniqueID: String) -> DeliveredNotification? {
        let id = apnsUniqueID.lowercased()
        return state.log(limit: 1) { $0.apnsUniqueID == id }.first
    }

    /// Returns once `count` more notifications have been accepted (counted from the call; at once if
    /// `count` ≤ 0), or when the mock is reset or shut down. For driving a fault at a point of a batch.
    public func waitForDeliveries(_ count: Int) async { await state.waitForDeliveries(count) }

    // MARK: Provider tokens

    /// Treats every provider token the mock has verified so far as expired, as if its hour had
    /// passed now: later requests with it get `403 ExpiredProviderToken` (on every connection), while a
    /// newly signed token is accepted, even one with the same `iat` (``advanceClock(by:)`` cannot do
    /// that: it ages new tokens as much as old ones). Returns how many tokens it expired.
    @discardableResult
    public func expireProviderTokens() -> Int { state.expireProviderTokens() }

    // MARK: Connections

    /// Client connections open now, both environments (a client that shut down should leave none).
    public var openConnections: Int { connections.count }

    /// Client connections accepted since the start, both environments.
    public var acceptedConnections: Int { connections.total }

    /// Connections closed at accept because ``MockServerConfiguration/maxConnections`` were open, all of them
    /// authenticated.
    public var refusedConnections: Int { connections.refusedCount }

    /// Connections closed to make room for a new one at the cap: half-open ones, then unauthenticated ones,
    /// oldest first.
    public var evictedConnections: Int { connections.evictedCount }

    // MARK: Clock and reset

    /// Moves the mock's clock forward (token expiry, 410 timestamps, log times).
    /// Pushes held for devices are settled at the new time (stored ones expire, a spent background budget frees).
    public func advanceClock(by seconds: TimeInterval) {
        state.clock.advance(by: seconds)
        state.settleDevices()
    }

    /// Forgets devices, faults, the delivery log, expired provider tokens and the clock offset; keys
    /// stay.
    public func reset() { state.reset() }
}

extension MockAPNsServer {
    /// The mock's Prometheus metrics (what the admin API's `GET /metrics` serves).
    public var metrics: MockMetrics { state.metrics }
}
