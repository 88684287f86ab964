import Foundation
package import KKPushClient
package import KKPushCore

/// What a row's attempt means for the row: the pure rule from the client's ``PushOutcome`` to the row's next state.
///
/// - accepted: `accepted`, with the apns-id;
/// - a rejection that cannot change (400, 403, 404, 410, 413): `rejected`, with Apple's reason and, for 410, its
///   timestamp;
/// - 429 and 5xx, a transport failure (timeout, connection, TLS, protocol) or a credential that could not sign:
///   `retry` after an exponential back-off (`base` × 2^(claims−1), at most `maximum`, times a random 0.5 to 1),
///   or `dead` once the row has had `maxAttempts` claims;
/// - a request the pre-flight rules refuse: `rejected` (APNs would reject it each time);
/// - interrupted (the worker stopped; the client shut down under it): back to `retry` at once; its claim does not
///   count if it was never sent, and it is flagged possibly_duplicated if it may have been;
/// - an answer about the worker's own configuration, not the push (``isConfiguration(_:)``: APNs refused the
///   credential, or no credential or endpoint of this worker may serve the row): `held`, back to `retry` after
///   `heldDelay`, its claim not counted, never `rejected` or `dead`. A worker with a wrong key, key id or team id
///   would otherwise end every row of the queue `rejected` in seconds; the row is fine and another worker (or this
///   one, fixed) sends it. The claim does not count so that a row a misconfigured worker held many times still
///   gets its `maxAttempts` real tries afterwards.
package struct QueueVerdict: Sendable, Equatable {
    /// The back-off of `retry`.
    package struct Backoff: Sendable, Equatable {
        package var base: Double
        package var maximum: Double
        package init(base: Double = 1, maximum: Double = 300) {
            self.base = base
            self.maximum = maximum
        }
        /// The delay before the next claim after `claims` claims, before jitter.
        package func delay(claims: Int) -> Double {
            var d = base
            for _ in 1..<max(1, claims) {
                d *= 2
                if d >= maximum { return maximum }
            }
            return min(d, maximum)
        }
    }

    /// The row's next state.
    package var write: QueueWrite
    /// What the attempt was, for the counts: the next state, `returned` for a push handed back unsent at a stop,
    /// `held` for one handed back because of the worker's configuration.
    package var outcome: String
    /// Whether this attempt may have delivered a second copy: no answer came to it, or the row was flagged
    /// possibly_duplicated (an earlier claim may have delivered it) and this attempt was accepted.
    package var mayHaveDuplicated: Bool

    /// APNs's reasons that speak of the sender's credential, not of the push: the key, key id or team id
    /// (`InvalidProviderToken`, `ExpiredProviderToken`: the token is refreshed, so a clock that is off),
    /// no credential, the certificate, a key restricted to the other environment, the permissions. Sent again with
    /// another credential, the same push may be accepted.
    package static let configurationReasons: Set<APNsReason> = [
        .invalidProviderToken, .missingProviderToken, .expiredProviderToken, .badCertificate,
        .badCertificateEnvironment, .forbidden, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
        .badEnvironmentKeyInToken,
    ]

    /// Whether `outcome` is about the worker's configuration, not the push: one of ``configurationReasons``, a
    /// credential the TLS handshake or the router refused (`credential`: unknown name, out of scope), or a client
    /// that could not make the request (`client`: no provider token, no endpoint for the row's environment).
    package static func isConfiguration(_ outcome: PushOutcome) -> Bool {
        switch outcome.result {
        case .accepted: return false
        case .rejected(let rejection): return configurationReasons.contains(rejection.reason)
        case .failed(let failure): return failure.kind == .credential || failure.kind == .client
        }
    }

    /// The verdict on `outcome` for `row` (its `attempts` counts this claim). `jitter` is a factor in 0.5...1 for
    /// a delay (a retry's back-off, `heldDelay`); nil: a random one, drawn only for a verdict that has a delay (a
    /// draw is a system call, and most verdicts are `accepted`). `heldDelay`: seconds, before jitter, before a row
    /// held for the worker's configuration may be claimed again.
    package static func decide(
        row: QueuedPush, outcome: PushOutcome, maxAttempts: Int, backoff: Backoff, worker: String,
        jitter: Double? = nil, heldDelay: Double = 0
    ) -> QueueVerdict {
        let jitter = { jitter ?? Double.random(in: 0.5...1) }
        var write = QueueWrite(
            id: row.id, state: "retry", apnsID: nil, status: nil, reason: nil, apnsTimestamp: nil, delay: nil,
            attemptsDelta: 0, duplicated: outcome.possiblyDuplicated, event: [:])
        var label = "retry"
        func retryOrDead(_ reason: String) {
            if row.attempts >= maxAttempts {
                write.state = "dead"
                label = "dead"
            } else {
                write.state = "retry"
                write.delay = (backoff.delay(claims: row.attempts) * jitter() * 1000).rounded() / 1000
                label = "retry"
            }
            write.reason = reason
        }
        switch outcome.result {
        case _ where isConfiguration(outcome):
            write.state = "retry"
            write.attemptsDelta = -1
            write.delay = heldDelay > 0 ? (heldDelay * jitter() * 1000).rounded() / 1000 : nil
            switch outcome.result {
            case .rejected(let rejection):
                write.status = rejection.status
                write.reason = rejection.reason.rawValue
            case .failed(let failure): write.reason = failure.kind.rawValue
            case .accepted: break
            }
            label = "held"
        case .accepted(let apnsID, _):
            write.state = "accepted"
            write.apnsID = apnsID
            label = "accepted"
        case .rejected(let rejection):
            write.status = rejection.status
            write.apnsID = rejection.apnsID
            label = "rejected"
            if rejection.status == 429 || rejection.status >= 500 {
                retryOrDead(rejection.reason.rawValue)
            } else {
                write.state = "rejected"
                write.reason = rejection.reason.rawValue
                write.apnsTimestamp = rejection.timestamp.map(Self.iso8601)
            }
        case .failed(let failure):
            label = "retry"
            switch failure.kind {
            case .interrupted:
                write.state = "retry"
                write.reason = failure.kind.rawValue
                if outcome.attempts == 0 && !outcome.possiblyDuplicated { write.attemptsDelta = -1 }
                label = "returned"
            case .preflight, .badInput:
                write.state = "rejected"
                write.reason = failure.kind.rawValue
                label = "rejected"
            default:
                retryOrDead(failure.kind.rawValue)
            }
        }
        var event: [String: JSONValue] = [
            "attempt": .int(row.attempts), "worker": .string(worker), "outcome": .string(label),
            "requests": .int(outcome.attempts),
            "duration_ms": .double((outcome.durationMilliseconds * 10).rounded() / 10),
        ]
        if let id = write.apnsID { event["apns_id"] = .string(id) }
        if let status = write.status { event["status"] = .int(status) }
        if let reason = write.reason { event["reason"] = .string(reason) }
        if let failure = outcome.failure { event["message"] = .string(String(failure.message.prefix(300))) }
        if let delay = write.delay { event["retry_in_s"] = .double(delay) }
        let accepted = label == "accepted"
        let mayHaveDuplicated = write.duplicated || (row.possiblyDuplicated && accepted)
        if mayHaveDuplicated { event["possibly_duplicated"] = .bool(true) }
        if label == "held" { event["claim_counted"] = .bool(false) }
        write.event = event
        return QueueVerdict(write: write, outcome: label, mayHaveDuplicated: mayHaveDuplicated)
    }

    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
