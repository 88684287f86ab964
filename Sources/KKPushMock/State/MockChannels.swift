public import Foundation
public import KKPushCore
import Synchronization

/// A broadcast channel the mock holds: created on one environment's management listener, for one app.
public struct MockChannel: Sendable, Codable, Hashable {
    /// The base64 id (random; never reissued).
    public var id: String
    /// The environment it was created in (it does not exist in the other).
    public var environment: APNsEnvironment
    /// The plain bundle id.
    public var bundleID: String
    /// `message-storage-policy`: 0 or 1.
    public var storagePolicy: Int
    /// The device tokens subscribed (lowercase), in the order they subscribed.
    public var subscribers: [String]
    /// The message kept for late subscribers (storage policy 1), while it lasts.
    public var storedMessage: StoredBroadcast?

    enum CodingKeys: String, CodingKey {
        case id, environment
        case bundleID = "bundle_id"
        case storagePolicy = "message_storage_policy"
        case subscribers
        case storedMessage = "stored_message"
    }
}

/// The latest broadcast of a storage-policy-1 channel, kept until `expiresAt`.
public struct StoredBroadcast: Sendable, Codable, Hashable {
    public var requestID: String
    public var priority: Int
    public var expiration: Int64
    public var payload: String
    public var expiresAt: Date

    enum CodingKeys: String, CodingKey {
        case requestID = "apns_request_id"
        case priority, expiration, payload
        case expiresAt = "expires_at_ms"
    }

    public init(requestID: String, priority: Int, expiration: Int64, payload: String, expiresAt: Date) {
        self.requestID = requestID
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
        self.expiresAt = expiresAt
    }

    /// Decodes the snake_case form; `expires_at_ms` in milliseconds since 1970.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        requestID = try c.decode(String.self, forKey: .requestID)
        priority = try c.decode(Int.self, forKey: .priority)
        expiration = try c.decode(Int64.self, forKey: .expiration)
        payload = try c.decode(String.self, forKey: .payload)
        expiresAt = Date(timeIntervalSince1970: Double(try c.decode(Int64.self, forKey: .expiresAt)) / 1000)
    }

    /// Encodes with snake_case keys; `expires_at_ms` as milliseconds since 1970, as every time the mock shows.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(requestID, forKey: .requestID)
        try c.encode(priority, forKey: .priority)
        try c.encode(expiration, forKey: .expiration)
        try c.encode(payload, forKey: .payload)
        try c.encode(expiresAt.millisecondsSince1970, forKey: .expiresAt)
    }
}

/// The mock's broadcast channels, per environment and app; their own lock (never taken on the
/// `/3/device` path).
final class ChannelRegistry: Sendable {
    private struct Inner {
        var channels: [String: MockChannel] = [:]
        /// Every id ever issued: a deleted channel's id is never issued again.
        var issued: Set<String> = []
    }

    private let inner = Mutex(Inner())

    enum CreateResult {
        case created(String)
        case limitReached
    }

    /// Creates a channel unless the app has `limit` channels in `environment` already.
    func create(environment: APNsEnvironment, bundleID: String, policy: ChannelStoragePolicy, limit: Int)
        -> CreateResult
    {
        inner.withLock { state in
            let count = state.channels.values.reduce(0) {
                $0 + ($1.environment == environment && $1.bundleID == bundleID ? 1 : 0)
            }
            if count >= limit { return .limitReached }
            var id: String
            repeat {
                var rng = SystemRandomNumberGenerator()
                id = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }).base64EncodedString()
            } while state.issued.contains(id)
            state.issued.insert(id)
            state.channels[id] = MockChannel(
                id: id, environment: environment, bundleID: bundleID, storagePolicy: policy.rawValue, subscribers: [],
                storedMessage: nil)
            return .created(id)
        }
    }

    /// The channel `id` of `bundleID` in `environment` (nil: ChannelNotRegistered).
    func channel(environment: APNsEnvironment, bundleID: String, id: String) -> MockChannel? {
        inner.withLock { state in
            guard let c = state.channels[id], c.environment == environment, c.bundleID == bundleID else { return nil }
            return c
        }
    }

    /// Deletes a channel; false if it is not there.
    func delete(environment: APNsEnvironment, bundleID: String, id: String) -> Bool {
        inner.withLock { state in
            guard let c = state.channels[id], c.environment == environment, c.bundleID == bundleID else {
                return false
            }
            state.channels[id] = nil
            return true
        }
    }

    /// The ids of the app's channels in `environment`, sorted.
    func list(environment: APNsEnvironment, bundleID: String) -> [String] {
        inner.withLock { state in
            state.channels.values.filter { $0.environment == environment && $0.bundleID == bundleID }.map(\.id).sorted()
        }
    }

    /// Every channel, by environment, app and id.
    var all: [MockChannel] {
        inner.withLock { state in
            state.channels.values.sorted {
                ($0.environment.rawValue, $0.bundleID, $0.id) < ($1.environment.rawValue, $1.bundleID, $1.id)
            }
        }
    }

    /// Subscribes `token` to channel `id`: the channel (with the stored message still valid at `now`),
    /// or nil if there is no such channel.
    func subscribe(id: String, token: String, now: Date) -> MockChannel? {
        inner.withLock { state in
            guard var c = state.channels[id] else { return nil }
            if !c.subscribers.contains(token) { c.subscribers.append(token) }
            if let stored = c.storedMessage, stored.expiresAt <= now { c.storedMessage = nil }
            state.channels[id] = c
            return c
        }
    }

    /// Unsubscribes `token`; false if there is no such channel.
    func unsubscribe(id: String, token: String) -> Bool {
        inner.withLock { state in
            guard state.channels[id] != nil else { return false }
            state.channels[id]?.subscribers.removeAll { $0 == token }
            return true
        }
    }

    /// Records a broadcast on channel `id` (keeping it when `stored` is given) and returns the subscribers.
    func broadcast(id: String, stored: StoredBroadcast?) -> [String] {
        inner.withLock { state in
            guard state.channels[id] != nil else { return [] }
            if let stored { state.channels[id]?.storedMessage = stored }
            return state.channels[id]?.subscribers ?? []
        }
    }

    /// Forgets every channel (issued ids stay issued).
    func reset() {
        inner.withLock { $0.channels.removeAll() }
    }
}

extension MockState {
    /// Subscribes `token` to channel `id` and hands it the channel's stored message (storage policy 1),
    /// if one is still kept. Throws `admin-channel-unknown` or `admin-channel-environment`.
    @discardableResult
    func subscribe(token rawToken: String, toChannel id: String) throws -> MockChannel {
        let token = rawToken.lowercased()
        guard let found = channels.all.first(where: { $0.id == id }) else {
            throw KKPushError(
                code: .adminChannelUnknown, message: "The mock has no channel with that id.",
                fix:
                    "Create it first (channelCreateCommand), or POST /1/apps/<bundleId>/channels; GET /channels lists them."
            )
        }
        if let device = device(token), device.environment != found.environment {
            throw KKPushError(
                code: .adminChannelEnvironment,
                message:
                    "The device is a \(device.environment) device; the channel exists in \(found.environment) only.",
                fix: "Subscribe a device of the channel's environment, or create the channel there.")
        }
        let now = clock.now()
        guard let channel = channels.subscribe(id: id, token: token, now: now) else {
            throw KKPushError(
                code: .adminChannelUnknown, message: "The mock has no channel with that id.",
                fix: "GET /channels lists them.")
        }
        if let stored = channel.storedMessage {
            let processor = MockRequestProcessor(
                environment: channel.environment, state: self, maxAge: 0, futureSkew: 0, updateInterval: 0)
            processor.deliverBroadcast(
                to: [token], channel: channel, requestID: stored.requestID, priority: stored.priority,
                expiration: stored.expiration, payload: stored.payload, now: now)
        }
        return channel
    }
}
