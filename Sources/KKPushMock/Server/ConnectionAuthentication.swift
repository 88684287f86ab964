import Foundation
import KKPushAuth
import KKPushCore
import Synchronization

/// A registered key ready to verify signatures (the PEM parsed once, at registration).
struct ProviderKeyVerifier: Sendable {
    let publicKey: ES256PublicKey

    init(key: MockKey) throws {
        do {
            publicKey = try ES256PublicKey(pem: key.pem)
        } catch let error as KKPushError {
            throw KKPushError(
                code: error.code, message: "Key \(key.keyID): \(error.message)", fix: error.fix,
                underlying: error.underlying)
        }
    }
}

/// What a connection has proven about itself: a client certificate, or the provider token it
/// uses (cached once verified, so later requests only have its age checked).
struct ConnectionAuthentication {
    enum Mode {
        /// Provider tokens.
        case token
        /// A client certificate; nil if it could not be read.
        case certificate(PeerCertificate?)
    }

    struct CachedToken {
        /// The `authorization` header exactly as received, for the fast path.
        var header: String
        var token: String
        var keyID: String
        var teamID: String
        /// The key's registered scope, for the topic check of each request.
        var key: MockKey
        var issuedAt: Date
        var firstUsed: Date
        /// ``MockState/tokenExpiryEpoch`` when it was last checked against the expired tokens.
        var expiryEpoch: Int
    }

    var mode: Mode
    /// The token in use, once one has verified.
    var current: CachedToken?
    /// The key and team of the connection's first valid token.
    var firstKeyID: String?
    var firstTeamID: String?
    /// Set when a token verified for the first time on this connection (to raise the stream limit).
    var justAuthenticated = false

    init(mode: Mode) { self.mode = mode }

    /// Checks the `authorization` header; nil when the request may go on, else the reason to answer.
    /// Counted in `kkpush_mock_provider_tokens_total`: a token verified in full and taken into use, or a
    /// refusal (every request refused, with its reason).
    mutating func authenticate(
        authorization: String?, environment: APNsEnvironment, state: MockState, now: Date, maxAge: TimeInterval,
        futureSkew: TimeInterval, updateInterval: TimeInterval
    ) -> APNsReason? {
        verifiedNow = false
        let reason = check(
            authorization: authorization, environment: environment, state: state, now: now, maxAge: maxAge,
            futureSkew: futureSkew, updateInterval: updateInterval)
        if let reason {
            state.metrics.tokenRejected(reason)
        } else if verifiedNow {
            state.metrics.tokenVerified()
        }
        return reason
    }

    /// Set by ``check(authorization:environment:state:now:maxAge:futureSkew:updateInterval:)`` when a
    /// token verified in full was taken into use.
    private var verifiedNow = false

    private mutating func check(
        authorization: String?, environment: APNsEnvironment, state: MockState, now: Date, maxAge: TimeInterval,
        futureSkew: TimeInterval, updateInterval: TimeInterval
    ) -> APNsReason? {
        guard let authorization else { return .missingProviderToken }
        // Fast path: the same header as the cached token's; only its age (or an explicit expiry) can
        // have changed.
        if let cached = current, cached.header == authorization {
            let epoch = state.tokenExpiryEpoch.load(ordering: .relaxed)
            if cached.expiryEpoch != epoch {
                if state.isExpired(token: cached.token) { return .expiredProviderToken }
                current?.expiryEpoch = epoch
            }
            return now.timeIntervalSince(cached.issuedAt) > maxAge ? .expiredProviderToken : nil
        }
        let token = Self.bearerToken(authorization)
        guard !token.isEmpty else { return .missingProviderToken }

        if let current, current.token == token {
            if state.isExpired(token: token) { return .expiredProviderToken }
            let age = now.timeIntervalSince(current.issuedAt)
            return age > maxAge ? .expiredProviderToken : nil
        }

        let decoded: DecodedProviderToken
        do {
            decoded = try ProviderToken.decode(token)
        } catch {
            return .invalidProviderToken
        }
        guard let kid = decoded.kid, let registered = state.key(id: kid) else { return .invalidProviderToken }
        if let firstTeamID, decoded.iss != firstTeamID { return .invalidProviderToken }
        if let firstKeyID, kid != firstKeyID { return .unrelatedKeyIdInToken }
        guard decoded.iss == registered.key.teamID else { return .invalidProviderToken }
        guard registered.key.allows(environment) else { return .badEnvironmentKeyIdInToken }
        let claims: ProviderTokenClaims
        switch ProviderToken.verify(
            token, key: registered.verifier.publicKey, now: now, maxAge: maxAge, allowedFutureSkew: futureSkew)
        {
        case .valid(let c): claims = c
        case .invalid(let failure): return failure.apnsReason
        }
        // Noted before the epoch is read: an expiry in between then always covers this token.
        state.noteVerified(token: token)
        let epoch = state.tokenExpiryEpoch.load(ordering: .sequentiallyConsistent)
        if state.isExpired(token: token) { return .expiredProviderToken }
        // A token expired by MockState.expireProviderTokens() is as if its hour had passed: the
        // connection may replace it at once.
        if let current, now.timeIntervalSince(current.firstUsed) < updateInterval,
            !state.isExpired(token: current.token)
        {
            return .tooManyProviderTokenUpdates
        }
        if current == nil { justAuthenticated = true }
        verifiedNow = true
        current = CachedToken(
            header: authorization, token: token, keyID: claims.keyID, teamID: claims.teamID, key: registered.key,
            issuedAt: claims.issuedAt,
            firstUsed: now, expiryEpoch: epoch)
        firstKeyID = claims.keyID
        firstTeamID = claims.teamID
        return nil
    }

    /// The token after `bearer ` (case-insensitive scheme), trimmed; "" if the header is not bearer.
    static func bearerToken(_ header: String) -> String {
        let trimmed = header.trimmingWhitespace()
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return "" }
        return String(trimmed.dropFirst(7)).trimmingWhitespace()
    }
}
