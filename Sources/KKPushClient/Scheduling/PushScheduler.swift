import Foundation
import KKPushCore

/// The loop's time, in monotonic nanoseconds. The client uses `SystemLoopClock`; tests move a manual one.
protocol LoopClock: Sendable {
    /// Now, in nanoseconds since an arbitrary fixed point.
    func nanos() -> UInt64
}

/// What the loop does with a job whose attempt ended.
indirect enum PushVerdict {
    /// The job ends with this result.
    case finish(PushOutcome.Result)
    /// Retry if the policy allows (`PushScheduler.scheduleRetry`), at least `retryAfter` seconds later;
    /// otherwise end with `result`.
    case retry(otherwise: PushOutcome.Result, retryAfter: Double?)
    /// `ExpiredProviderToken`: get a new token and send again at once, on a new connection; if no new
    /// token can be had, do `otherwise`.
    case refreshToken(otherwise: PushVerdict)
}

/// The client's policy, without the transport: judges every attempt (outcome classification from the
/// status, APNs reason and transport error), decides retries (back-off with jitter, `Retry-After`, the
/// attempt and total-time limits), provider-token refresh on `ExpiredProviderToken`, and holds the
/// retries that wait for their time. Time and randomness are injected, so tests run it in virtual time.
/// Owned by the loop thread.
struct PushScheduler {
    let policy: APNsRetryPolicy
    let credential: APNsCredential
    let clock: any LoopClock
    var random: AnyRandomNumberGenerator
    /// Jobs waiting for their retry, by due time (earliest first).
    private(set) var retries: [Job] = []

    init(
        policy: APNsRetryPolicy, credential: APNsCredential, clock: any LoopClock = SystemLoopClock(),
        random: any RandomNumberGenerator = SystemRandomNumberGenerator()
    ) {
        self.policy = policy
        self.credential = credential
        self.clock = clock
        self.random = AnyRandomNumberGenerator(random)
    }

    /// Now, on the scheduler's clock.
    @inline(__always)
    func now() -> UInt64 { clock.nanos() }

    // MARK: Judging an attempt

    /// What to do with `job` after `attempt`; updates the job's attempt count, duplicate, fresh-connect
    /// and token-refresh flags.
    func verdict(for job: inout Job, after attempt: AttemptResult) -> PushVerdict {
        // libcurl's own re-sends of a refused stream are sends too.
        if attempt.sends > 1 { job.attempts += attempt.sends - 1 }
        if Self.answered(attempt) {
            if attempt.isHTTP1 {
                return .finish(
                    .failed(
                        PushFailure(
                            kind: .http1,
                            message:
                                "\(job.request.endpoint) answered over HTTP/1.1 (ALPN did not select h2). APNs speaks HTTP/2 only: this is not APNs, or a proxy downgraded the connection."
                        )))
            }
            if attempt.status == 200 {
                return .finish(.accepted(apnsID: attempt.apnsID, apnsUniqueID: attempt.apnsUniqueID))
            }
            let rejection = APNsErrorBody.rejection(status: attempt.status, body: attempt.body, apnsID: attempt.apnsID)
            let retryable =
                (attempt.status == 429 && rejection.reason != .tooManyProviderTokenUpdates)
                || attempt.status == 500 || attempt.status == 503
            let plain: PushVerdict =
                retryable
                ? .retry(otherwise: .rejected(rejection), retryAfter: attempt.retryAfter)
                : .finish(.rejected(rejection))
            if rejection.reason == .expiredProviderToken, !job.refreshedToken, case .token = credential.storage {
                job.refreshedToken = true
                return .refreshToken(otherwise: plain)
            }
            return plain
        }
        let failure = Self.failure(attempt, endpoint: job.request.endpoint, credential: credential)
        // Could the server have processed it? Only if the whole request went out and the answer was
        // lost; not when the handshake refused the credential (nothing reached HTTP), nor when the
        // server said the stream was refused.
        let sent = attempt.bodySent || attempt.resendRefused
        let provenUnprocessed = failure.kind == .credential || attempt.detail.contains("REFUSED_STREAM")
        if sent && !provenUnprocessed { job.possiblyDuplicated = true }
        // The retries of a failed attempt need no fresh connection of their own: libcurl never reuses a
        // connection it finds closed.
        job.freshConnect = false
        if failure.kind != .credential, attempt.transport.retried {
            return .retry(otherwise: .failed(failure), retryAfter: nil)
        }
        return .finish(.failed(failure))
    }

    /// True if the attempt brought an answer: a complete status line counts even if the stream was
    /// reset after it (a server that answers before reading the body); error answers need their reason,
    /// so they need the body.
    static func answered(_ attempt: AttemptResult) -> Bool {
        attempt.status >= 200 && (attempt.transport.ok || attempt.status == 200 || !attempt.body.isEmpty)
    }

    /// True if `attempt` brought no answer and timed out after its whole request went out: its
    /// connection may be dead (the loop asks the connection bookkeeping whether it answered anything since).
    static func mayShowDeadConnection(_ attempt: AttemptResult) -> Bool {
        !answered(attempt) && attempt.transport.timedOut && attempt.sends > 0 && attempt.bodySent
    }

    // MARK: Retries

    /// When the job's next attempt is due and the delay to it (back-off with jitter, at least
    /// `retryAfter`), or nil if the policy allows none (attempts used up, or the retry would start after
    /// the total time).
    mutating func retryDue(for job: Job, atLeast retryAfter: Double? = nil) -> (due: UInt64, delay: UInt64)? {
        guard job.attempts < policy.maxAttempts else { return nil }
        let base = policy.baseDelay(retry: job.attempts).nanoseconds
        let factor = 1 - Double.random(in: 0...policy.jitter, using: &random)
        var delay = UInt64(Double(base) * factor)
        if let retryAfter, retryAfter.isFinite, retryAfter > 0 {
            delay = max(delay, UInt64(retryAfter * 1e9))
        }
        let now = now()
        guard now + delay - job.startNanos <= policy.maxTotalTime.nanoseconds else { return nil }
        return (now + delay, delay)
    }

    /// Queues a retry if the policy allows one: its delay (ns), nil if none.
    mutating func scheduleRetry(_ job: inout Job, atLeast retryAfter: Double? = nil) -> UInt64? {
        guard let (due, delay) = retryDue(for: job, atLeast: retryAfter) else { return nil }
        job.dueNanos = due
        let index = retries.firstIndex { $0.dueNanos > due } ?? retries.count
        retries.insert(job, at: index)
        return delay
    }

    /// Takes the retries that are due now, earliest first.
    mutating func takeDue() -> ArraySlice<Job> {
        guard !retries.isEmpty else { return [] }
        let now = now()
        var i = 0
        while i < retries.count, retries[i].dueNanos <= now { i += 1 }
        guard i > 0 else { return [] }
        let due = retries[0..<i]
        retries.removeFirst(i)
        return due
    }

    /// How long the loop may wait for network activity before the first retry is due (ms, at most 1000).
    func pollTimeoutMS() -> Int32 {
        guard let first = retries.first else { return 1000 }
        let now = now()
        return first.dueNanos <= now ? 0 : Int32(min(1000, (first.dueNanos - now) / 1_000_000 + 1))
    }

    /// Takes every waiting retry (shutdown).
    mutating func takeAll() -> [Job] {
        defer { retries.removeAll() }
        return retries
    }

    // MARK: Failures

    /// TLS alerts (as OpenSSL names them in libcurl's error text) by which a server refuses the client's
    /// certificate in the handshake.
    static let credentialAlerts = [
        "certificate expired", "certificate revoked", "bad certificate", "unknown ca", "certificate unknown",
        "certificate required", "unsupported certificate", "access denied",
    ]

    /// The failure an attempt without an answer ends with.
    static func failure(_ attempt: AttemptResult, endpoint: APNsEndpoint, credential: APNsCredential) -> PushFailure {
        let code = attempt.curlCode
        let detail = attempt.detail.lowercased()
        if !attempt.transport.ok, let alert = credentialAlerts.first(where: { detail.contains($0) }) {
            let what: String
            var fix: String
            if case .certificate(_, _, let label) = credential.storage {
                what = "The client certificate \"\(label)\" was refused in the TLS handshake (\(alert))"
                fix = "Renew it in the Apple Developer account, or use the certificate for this environment"
            } else {
                what =
                    "The server refused the TLS handshake (\(alert)): it wants a client certificate this client did not give"
                fix = "Use a client certificate for this server, or a provider token against a server that takes one"
            }
            if alert == "unknown ca" {
                fix = "The server does not trust the certificate's issuer: use a certificate issued for this server"
            }
            return PushFailure(
                kind: .credential,
                message:
                    "\(what) by \(endpoint). Nothing was sent; retrying cannot help. \(fix). (\(attempt.detail), curl error \(code))",
                curlCode: code)
        }
        let kind = attempt.transport.kind
        var message: String
        if attempt.transport.ok {
            message = "\(endpoint) answered status \(attempt.status) without a readable body."
        } else if attempt.resendRefused {
            message =
                "The connection to \(endpoint) failed after the request was sent, before any answer (\(attempt.detail)); APNs may have received it (curl error \(code))"
        } else {
            let text = attempt.detail.isEmpty ? attempt.curlMessage : attempt.detail
            message = "\(text) (\(endpoint), curl error \(code))"
        }
        if kind == .tls { message += ". Check the CA file and, for certificates, the client certificate and key." }
        return PushFailure(kind: kind, message: message, curlCode: code == 0 ? nil : code)
    }
}

/// A random source of any kind, as a concrete type (the standard library's `random(in:using:)` wants one).
struct AnyRandomNumberGenerator: RandomNumberGenerator {
    private var base: any RandomNumberGenerator

    init(_ base: any RandomNumberGenerator) { self.base = base }

    mutating func next() -> UInt64 { base.next() }
}
