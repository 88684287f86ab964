import Foundation
import KKPushCore
import Testing

@testable import KKPushClient

/// The client's retry and outcome policy in virtual time: a manual clock and a seeded random source,
/// no network, no sleeping.
@Suite("PushScheduler")
struct ConnectionSchedulingTests {
    /// A clock the test moves.
    final class ManualClock: LoopClock, @unchecked Sendable {
        var now: UInt64 = 1_000_000_000_000
        func nanos() -> UInt64 { now }
        func advance(by duration: Duration) { now += duration.nanoseconds }
    }

    /// A provider-token source that only counts.
    final class CountingTokens: BearerTokenSource, @unchecked Sendable {
        var refreshes = 0
        func currentBearer() throws -> (value: String, generation: Int) { ("token\(refreshes)", refreshes) }
        func refreshBearer(afterExpired token: String) throws { refreshes += 1 }
    }

    static let endpoint = APNsEndpoint(host: "127.0.0.1", port: 1)
    static let token = APNsCredential(storage: .token(CountingTokens()))

    static func scheduler(
        _ policy: APNsRetryPolicy = APNsRetryPolicy(), credential: APNsCredential = token,
        clock: ManualClock = ManualClock(), seed: UInt64 = 17
    ) -> PushScheduler {
        PushScheduler(policy: policy, credential: credential, clock: clock, random: SeededRandom(seed: seed))
    }

    final class NullSink: ResultSink, @unchecked Sendable {
        func deliver(_ result: PushResult) {}
    }

    static func job(attempts: Int = 1, start: UInt64, index: Int = 0) -> Job {
        let request = NotificationRequest(
            deviceToken: String(repeating: "ab", count: 32), topic: "nl.kantinekoning.app", pushType: .alert,
            priority: 10, payload: Array(#"{"aps":{}}"#.utf8))
        var job = Job(request: WireRequest(endpoint: endpoint, request: request), sink: NullSink(), index: index)
        job.attempts = attempts
        job.startNanos = start
        return job
    }

    static func answer(_ status: Int, _ reason: String? = nil, retryAfter: Double? = nil) -> AttemptResult {
        let body = reason.map { Array(#"{"reason":"\#($0)"}"#.utf8) } ?? []
        return AttemptResult(
            curlCode: 0, curlMessage: "", transport: .completed, isHTTP1: false, status: status, requestBytesSent: 100,
            detail: "", bodySent: true, sends: 1, resendRefused: false, localPort: 40000, sentNanos: 0,
            retryAfter: retryAfter, apnsID: nil, apnsUniqueID: nil, body: body)
    }

    static func transportFailure(
        code: Int, kind: PushFailure.Kind, retried: Bool, timedOut: Bool = false, bodySent: Bool = false,
        detail: String = ""
    ) -> AttemptResult {
        AttemptResult(
            curlCode: code, curlMessage: "curl error",
            transport: TransportError(ok: false, timedOut: timedOut, kind: kind, retried: retried),
            isHTTP1: false, status: 0, requestBytesSent: 0, detail: detail, bodySent: bodySent, sends: 1,
            resendRefused: false, localPort: 40000, sentNanos: 0, retryAfter: nil, apnsID: nil, apnsUniqueID: nil,
            body: [])
    }

    enum Kind: Equatable {
        case finishAccepted
        case finishRejected(Int)
        case finishFailed(PushFailure.Kind)
        case retry, refresh
    }

    static func kind(_ verdict: PushVerdict) -> Kind {
        switch verdict {
        case .finish(.accepted): return .finishAccepted
        case .finish(.rejected(let r)): return .finishRejected(r.status)
        case .finish(.failed(let f)): return .finishFailed(f.kind)
        case .retry: return .retry
        case .refreshToken: return .refresh
        }
    }

    // MARK: Back-off

    @Test("back-off doubles from the initial delay up to the largest; no jitter means exact delays")
    func backoffSequence() {
        let clock = ManualClock()
        var scheduler = Self.scheduler(
            APNsRetryPolicy(maxAttempts: 10, initialDelay: .milliseconds(200), maxDelay: .seconds(1), jitter: 0),
            clock: clock)
        let delays = (1...6).map { attempts in
            scheduler.retryDue(for: Self.job(attempts: attempts, start: clock.now)).map { $0.delay / 1_000_000 }
        }
        #expect(delays == [200, 400, 800, 1000, 1000, 1000])
    }

    @Test("jitter keeps each delay within 1 - jitter ... 1 of the back-off, spread over the range, reproducibly")
    func jitterBounds() {
        let clock = ManualClock()
        let policy = APNsRetryPolicy(maxAttempts: 10, initialDelay: .milliseconds(400), jitter: 0.5)
        var scheduler = Self.scheduler(policy, clock: clock, seed: 42)
        var again = Self.scheduler(policy, clock: clock, seed: 42)
        let base = Duration.milliseconds(400).nanoseconds
        var delays: [UInt64] = []
        for _ in 0..<1000 {
            let delay = scheduler.retryDue(for: Self.job(attempts: 1, start: clock.now))!.delay
            #expect(delay >= base / 2 && delay <= base)
            #expect(again.retryDue(for: Self.job(attempts: 1, start: clock.now))!.delay == delay)
            delays.append(delay)
        }
        #expect(Double(delays.min()!) < Double(base) * 0.55)
        #expect(Double(delays.max()!) > Double(base) * 0.95)
    }

    @Test("Retry-After is honoured as a lower bound, and capped by the policy's total time")
    func retryAfter() {
        let clock = ManualClock()
        var scheduler = Self.scheduler(
            APNsRetryPolicy(initialDelay: .milliseconds(200), maxTotalTime: .seconds(60), jitter: 0), clock: clock)
        let job = Self.job(start: clock.now)
        #expect(scheduler.retryDue(for: job, atLeast: 2.5)?.delay == 2_500_000_000)
        // Shorter than the back-off: the back-off wins.
        #expect(scheduler.retryDue(for: job, atLeast: 0.05)?.delay == 200_000_000)
        // Not a usable value: ignored.
        #expect(scheduler.retryDue(for: job, atLeast: .infinity)?.delay == 200_000_000)
        #expect(scheduler.retryDue(for: job, atLeast: -3)?.delay == 200_000_000)
        // Beyond the total time: no retry at all.
        #expect(scheduler.retryDue(for: job, atLeast: 120) == nil)
        // The header itself is capped at an hour.
        #expect(RetryAfter.seconds("86400", now: Date()) == RetryAfter.ceiling)
    }

    @Test("no retry after the last attempt, nor one that would start after the total time")
    func limits() {
        let clock = ManualClock()
        var scheduler = Self.scheduler(
            APNsRetryPolicy(maxAttempts: 3, initialDelay: .seconds(1), maxTotalTime: .seconds(10), jitter: 0),
            clock: clock)
        let start = clock.now
        #expect(scheduler.retryDue(for: Self.job(attempts: 2, start: start)) != nil)
        #expect(scheduler.retryDue(for: Self.job(attempts: 3, start: start)) == nil)
        clock.advance(by: .seconds(8))
        // 8 s in, a 2 s back-off ends exactly at the total time: still allowed; a moment later, not.
        #expect(scheduler.retryDue(for: Self.job(attempts: 2, start: start)) != nil)
        clock.advance(by: .nanoseconds(1))
        #expect(scheduler.retryDue(for: Self.job(attempts: 2, start: start)) == nil)
        #expect(Self.scheduler(.none, clock: clock).retryDueCopy(Self.job(attempts: 1, start: clock.now)) == nil)
    }

    // MARK: Outcomes

    @Test(
        "429, 500, 503 and broken connections are retried",
        arguments: [
            (429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable"),
        ])
    func retriedStatuses(status: Int, reason: String) {
        let scheduler = Self.scheduler()
        var job = Self.job(start: 1)
        #expect(Self.kind(scheduler.verdict(for: &job, after: Self.answer(status, reason))) == .retry)
        var other = Self.job(start: 1)
        let reset = Self.transportFailure(code: 56, kind: .connection, retried: true, bodySent: true)
        #expect(Self.kind(scheduler.verdict(for: &other, after: reset)) == .retry)
        #expect(other.possiblyDuplicated)
        var refused = Self.job(start: 1)
        let refusedStream = Self.transportFailure(
            code: 92, kind: .protocol, retried: true, bodySent: true,
            detail: "stream was not closed cleanly: REFUSED_STREAM")
        #expect(Self.kind(scheduler.verdict(for: &refused, after: refusedStream)) == .retry)
        #expect(!refused.possiblyDuplicated)
    }

    @Test(
        "4xx answers and 410 are final after one attempt; so are TLS and credential failures",
        arguments: [
            (400, "BadDeviceToken"), (403, "Forbidden"), (410, "Unregistered"), (413, "PayloadTooLarge"),
            (429, "TooManyProviderTokenUpdates"), (404, "BadPath"),
        ])
    func finalStatuses(status: Int, reason: String) {
        let scheduler = Self.scheduler()
        var job = Self.job(start: 1)
        #expect(Self.kind(scheduler.verdict(for: &job, after: Self.answer(status, reason))) == .finishRejected(status))
        var tls = Self.job(start: 1)
        #expect(
            Self.kind(scheduler.verdict(for: &tls, after: Self.transportFailure(code: 60, kind: .tls, retried: false)))
                == .finishFailed(.tls))
        var refused = Self.job(start: 1)
        let alert = Self.transportFailure(
            code: 56, kind: .connection, retried: true, bodySent: true, detail: "SSL alert: certificate expired")
        #expect(Self.kind(scheduler.verdict(for: &refused, after: alert)) == .finishFailed(.credential))
        #expect(!refused.possiblyDuplicated)
        var ok = Self.job(start: 1)
        #expect(Self.kind(scheduler.verdict(for: &ok, after: Self.answer(200))) == .finishAccepted)
    }

    @Test("ExpiredProviderToken: a token refresh once per push, never with a certificate")
    func tokenRefreshOnce() {
        let scheduler = Self.scheduler()
        var job = Self.job(start: 1)
        let expired = Self.answer(403, "ExpiredProviderToken")
        let first = scheduler.verdict(for: &job, after: expired)
        #expect(Self.kind(first) == .refresh)
        if case .refreshToken(let otherwise) = first { #expect(Self.kind(otherwise) == .finishRejected(403)) }
        #expect(job.refreshedToken)
        #expect(Self.kind(scheduler.verdict(for: &job, after: expired)) == .finishRejected(403))
        let certificate = Self.scheduler(
            credential: .certificate(certificatePEM: [1], privateKeyPEM: [2]))
        var other = Self.job(start: 1)
        #expect(Self.kind(certificate.verdict(for: &other, after: expired)) == .finishRejected(403))
    }

    @Test("a timed-out attempt whose request went out may show a dead connection; an answered one does not")
    func deadConnection() {
        let timedOut = Self.transportFailure(code: 28, kind: .timeout, retried: true, timedOut: true, bodySent: true)
        #expect(PushScheduler.mayShowDeadConnection(timedOut))
        var unsent = timedOut
        unsent.bodySent = false
        #expect(!PushScheduler.mayShowDeadConnection(unsent))
        var answered = timedOut
        answered.status = 200
        #expect(!PushScheduler.mayShowDeadConnection(answered))
    }

    // MARK: The retry queue in virtual time

    @Test("retries wait in due order and come out when the clock reaches them")
    func queue() {
        let clock = ManualClock()
        var scheduler = Self.scheduler(
            APNsRetryPolicy(maxAttempts: 5, initialDelay: .milliseconds(100), jitter: 0), clock: clock)
        var late = Self.job(attempts: 3, start: clock.now, index: 1)  // 400 ms
        var early = Self.job(attempts: 1, start: clock.now, index: 2)  // 100 ms
        #expect(scheduler.scheduleRetry(&late) == 400_000_000)
        #expect(scheduler.scheduleRetry(&early, atLeast: 0.2) == 200_000_000)
        #expect(scheduler.pollTimeoutMS() == 201)
        #expect(scheduler.takeDue().isEmpty)
        clock.advance(by: .milliseconds(250))
        #expect(scheduler.takeDue().map(\.index) == [2])
        #expect(scheduler.pollTimeoutMS() == 151)
        clock.advance(by: .milliseconds(150))
        #expect(scheduler.pollTimeoutMS() == 0)
        #expect(scheduler.takeDue().map(\.index) == [1])
        #expect(scheduler.pollTimeoutMS() == 1000)
    }

    @Test("503 every time: attempts up to the limit, the last rejection kept, in bounded virtual time")
    func boundedRetriesInVirtualTime() {
        let clock = ManualClock()
        let policy = APNsRetryPolicy(maxAttempts: 4, initialDelay: .milliseconds(200), maxDelay: .seconds(10))
        var scheduler = Self.scheduler(policy, clock: clock, seed: 7)
        var job = Self.job(attempts: 0, start: clock.now)
        var final: PushOutcome.Result?
        while final == nil {
            job.attempts += 1
            switch scheduler.verdict(for: &job, after: Self.answer(503, "ServiceUnavailable")) {
            case .retry(let otherwise, let retryAfter):
                if scheduler.scheduleRetry(&job, atLeast: retryAfter) == nil {
                    final = otherwise
                } else {
                    clock.now = scheduler.retries[0].dueNanos
                    job = scheduler.takeDue().first!
                }
            case .finish(let result): final = result
            case .refreshToken: Issue.record("no refresh for a 503")
            }
        }
        guard case .rejected(let rejection) = final else { return #expect(Bool(false), "\(String(describing: final))") }
        #expect(rejection.status == 503)
        #expect(job.attempts == 4)
        // 200 + 400 + 800 ms of back-off, each shortened by at most half.
        let waited = clock.now - job.startNanos
        #expect(waited >= 700_000_000 && waited <= 1_400_000_000)
    }
}

extension PushScheduler {
    /// `retryDue` on a copy (for a scheduler held in a `let`).
    func retryDueCopy(_ job: Job) -> (due: UInt64, delay: UInt64)? {
        var copy = self
        return copy.retryDue(for: job)
    }
}
