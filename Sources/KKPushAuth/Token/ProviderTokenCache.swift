public import Foundation
public import KKPushCore
public import Logging
import Synchronization

/// A provider token handed out by ``ProviderTokenCache``.
public struct CachedProviderToken: Sendable, Equatable {
    /// The whole token. Secret: log ``prefix`` instead.
    public var value: String
    /// Its `iat`.
    public var issuedAt: Date
    /// Which token of the cache this is: 1 for the first minted, 2 for the next, and so on.
    public var generation: Int
    /// The first 12 characters and `…`, for logs.
    public var prefix: String

    /// Creates a cached token.
    public init(value: String, issuedAt: Date, generation: Int) {
        self.value = value
        self.issuedAt = issuedAt
        self.generation = generation
        self.prefix = redactedPrefix(value)
    }
}

/// The first 12 characters of a secret and `…`, the only part kkpush logs (``Redaction/prefix(_:keep:)``,
/// which fully masks a short secret).
public func redactedPrefix(_ secret: String) -> String {
    Redaction.prefix(secret)
}

/// One provider token per key, shared by every connection that uses the key (spec §5.3).
///
/// The token is reused for ``reuseInterval`` (default 50 minutes; always within 20…60 minutes,
/// so it is regenerated at most once per 20 minutes and never sent older than an hour), except
/// that ``refreshAfterExpired(rejected:)`` regenerates at once when APNs answered
/// `ExpiredProviderToken`. Thread-safe and synchronous: a `Mutex` guards the state, and the
/// token is minted while holding it, so concurrent callers all get the same token.
public final class ProviderTokenCache: Sendable {
    /// The shortest reuse interval (Apple: refresh no more than once every 20 minutes).
    public static let minimumReuse: TimeInterval = 20 * 60
    /// The longest reuse interval (Apple: tokens older than an hour are rejected).
    public static let maximumReuse: TimeInterval = 60 * 60

    /// The key id (`kid`).
    public let keyID: String
    /// The team id (`iss`).
    public let teamID: String
    /// How long a token is reused, after clamping to 20…60 minutes.
    public let reuseInterval: TimeInterval

    private let key: ES256PrivateKey
    private let clock: any WallClock
    private let logger: Logger
    private let state = Mutex<State>(State())

    private struct State {
        var current: CachedProviderToken?
        var generations = 0
        var forcedRefreshes = 0
    }

    /// Creates a cache. `reuseFor` outside 20…60 minutes is clamped, with a warning logged.
    public init(
        key: ES256PrivateKey, keyID: String, teamID: String, clock: any WallClock = SystemWallClock(),
        reuseFor: TimeInterval = 50 * 60,
        logger: Logger = Logger(label: "kkpush.auth", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
        self.logger = logger
        let clamped = min(max(reuseFor.isFinite ? reuseFor : 50 * 60, Self.minimumReuse), Self.maximumReuse)
        if clamped != reuseFor {
            logger.warning(
                "Provider token reuse interval clamped",
                metadata: ["requested_s": "\(reuseFor)", "used_s": "\(clamped)", "why": "APNs wants 20...60 minutes"])
        }
        reuseInterval = clamped
    }

    /// How many tokens this cache has minted.
    public var generations: Int { state.withLock { $0.generations } }

    /// How many of them were forced by ``refreshAfterExpired(rejected:)``.
    public var forcedRefreshes: Int { state.withLock { $0.forcedRefreshes } }

    /// The token to send now: the cached one while it is younger than ``reuseInterval``, else a
    /// new one. A clock that went back more than a minute behind the token's `iat` also forces a
    /// new token (APNs would reject an `iat` in the future).
    public func currentToken() throws -> CachedProviderToken {
        try state.withLock { state in
            let now = clock.now()
            if let current = state.current {
                let age = now.timeIntervalSince(current.issuedAt)
                if age < reuseInterval, age > -60 { return current }
            }
            return try mint(&state, now: now, reason: state.current == nil ? "first" : "reuse interval elapsed")
        }
    }

    /// APNs answered `ExpiredProviderToken` to `token`. If it is still the current token, a new one
    /// is minted at once (even within 20 minutes) and this is logged; if another caller already
    /// replaced it, the current token is returned without minting again.
    public func refreshAfterExpired(rejected token: String) throws -> CachedProviderToken {
        try state.withLock { state in
            let now = clock.now()
            if let current = state.current, current.value != token {
                let age = now.timeIntervalSince(current.issuedAt)
                if age < reuseInterval, age > -60 { return current }
                return try mint(&state, now: now, reason: "reuse interval elapsed")
            }
            state.forcedRefreshes += 1
            logger.warning(
                "APNs answered ExpiredProviderToken; regenerating the provider token now",
                metadata: ["kid": "\(keyID)", "rejected": "\(redactedPrefix(token))"])
            return try mint(&state, now: now, reason: "ExpiredProviderToken")
        }
    }

    private func mint(_ state: inout State, now: Date, reason: String) throws -> CachedProviderToken {
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let value = try ProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: key)
        state.generations += 1
        let token = CachedProviderToken(value: value, issuedAt: issuedAt, generation: state.generations)
        state.current = token
        logger.info(
            "Minted provider token",
            metadata: [
                "kid": "\(keyID)", "generation": "\(token.generation)", "token": "\(token.prefix)",
                "reason": "\(reason)",
            ])
        return token
    }
}
