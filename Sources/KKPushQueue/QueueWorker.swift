import Foundation
package import KKPushActivities
package import KKPushClient
package import KKPushCore
import KKPushStore
import Synchronization

/// Picks the APNs client for a row's `credential` column: the seam where multi-team routing plugs in (a
/// credentials file naming one key per team). ``SingleClientRouter`` ignores the name.
package protocol QueueClientRouter: Sendable {
    /// The client for `credential` (nil: the default). Throws a ``KKPushError`` for a name it does not know; the
    /// row then fails as a credential failure (retried, then dead).
    func client(forCredential credential: String?, topic: String, environment: APNsEnvironment) throws -> APNsClient
    /// Shuts down every client it made (idempotent): pushes still in flight end interrupted.
    func shutdown() async
}

/// One client for every row, whatever its `credential` says.
package struct SingleClientRouter: QueueClientRouter {
    package let client: APNsClient
    package init(client: APNsClient) { self.client = client }
    package func client(forCredential credential: String?, topic: String, environment: APNsEnvironment) throws
        -> APNsClient
    { client }
    package func shutdown() async { await client.shutdown() }
}

/// A client per credential of a credentials file (``ProviderClientRouter``): a row's `credential` names one, or
/// (nil) the first that may serve the row's topic in its environment; never two teams on one connection. A row
/// no credential may serve fails with the scope problem (retried, then dead, its history saying why).
package struct CredentialFileRouter: QueueClientRouter {
    package let router: ProviderClientRouter
    package init(router: ProviderClientRouter) { self.router = router }
    package func client(forCredential credential: String?, topic: String, environment: APNsEnvironment) throws
        -> APNsClient
    {
        try router.client(credential: credential, topic: topic, environment: environment).client
    }
    package func shutdown() async { await router.shutdown() }
}

/// How a worker claims and retries.
package struct QueueWorkerConfiguration: Sendable {
    /// Its name in `lease_owner` and `history`: unique per worker process.
    package var owner: String
    /// Rows per claim.
    package var batchSize: Int
    /// Claims sent at once (each claims, sends, writes, claims again).
    package var lanes: Int
    /// Seconds a claim holds its rows; extended every third of it while the worker lives.
    package var lease: Double
    /// Claims a row gets before a failure that could pass makes it `dead`.
    package var maxAttempts: Int
    package var backoff: QueueVerdict.Backoff
    /// Seconds between claims when no notification came (the fallback poll; `retry` rows come due without one).
    package var pollInterval: Double
    /// Stop once no row is queued, scheduled, waiting to retry or leased.
    package var exitWhenEmpty: Bool
    /// Seconds pushes in flight get after ``QueueWorker/stop()`` before the clients are shut down.
    package var grace: Double
    /// Seconds between ``QueueWorker/Event/progress(_:elapsed:)`` events.
    package var progressInterval: Double
    /// The environments this worker has an endpoint for: a row of another is held (back to `retry`, its claim not
    /// counted), never sent to the wrong environment's host.
    package var servedEnvironments: Set<APNsEnvironment> = [.sandbox, .production]
    /// Said after "no endpoint for production rows" when a row's environment is not served: how to give one.
    package var endpointHint = ""
    /// The activity registry Live Activity rows are planned and answered through (``QueueActivities``); nil: such
    /// rows are held, never sent to their `device_token` as it stands.
    package var activityRegistry: (any ActivityRegistry)?
    /// Rows held in a row for the worker's configuration (``QueueVerdict/isConfiguration(_:)``), with no push
    /// answered otherwise in between, after which the worker stops (``QueueWorker/Ending/failure``): the queue
    /// waits untouched instead of being cycled through a credential APNs refuses.
    package var configurationFailureLimit = 10
    /// The longest wait between tries of a database that is unavailable (seconds; it doubles from 0.5).
    package var databaseBackoffMaximum = 30.0
    /// Claim-time decisions (``QueuePolicy``): rates, the device cap, quiet hours, the idempotency keys' retention.
    package var policy = QueuePolicy()
    /// Write each attempt to the attempt ledger (schema step 6, ``QueueAttempt``) in its outcome's statement; off
    /// for a queue migrated before step 6.
    package var recordAttempts = true
    /// What the worker's readiness reads of its sends (``QueueWorkerHealth``); nil: nobody asks.
    package var health: QueueWorkerHealth?

    package init(
        owner: String = QueueWorkerConfiguration.defaultOwner(), batchSize: Int = 200, lanes: Int = 4,
        lease: Double = 60, maxAttempts: Int = 5, backoff: QueueVerdict.Backoff = .init(), pollInterval: Double = 5,
        exitWhenEmpty: Bool = false, grace: Double = 10, progressInterval: Double = 10
    ) {
        self.owner = owner
        self.batchSize = batchSize
        self.lanes = lanes
        self.lease = lease
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.pollInterval = pollInterval
        self.exitWhenEmpty = exitWhenEmpty
        self.grace = grace
        self.progressInterval = progressInterval
    }

    /// `host:pid:random`, so two workers (or a restarted one) never share a name.
    package static func defaultOwner() -> String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(UInt32.random(in: 0...UInt32.max) % 100_000)"
    }
}

/// What a worker did so far.
package struct QueueWorkerCounts: Sendable, Equatable {
    package var claimed = 0
    /// Rows whose expired lease (another worker's, or an earlier run's) this worker took over: each counted once,
    /// by the claim that took it over (flagged possibly_duplicated).
    package var reclaimed = 0
    package var accepted = 0
    package var rejected = 0
    package var retry = 0
    /// Rows ended `dead`: after their last claim failed, and expired leases at their last claim that a claim of
    /// this worker ended (`LeaseExpired`).
    package var dead = 0
    /// Handed back unsent (or possibly sent, flagged) at a stop.
    package var returned = 0
    /// Handed back for the worker's configuration (APNs refused its credential, no credential or endpoint of it
    /// may serve the row): back to `retry`, claims not counted.
    package var held = 0
    /// Rows a claim held back to wait (quiet hours, the device cap, a rate): written back `scheduled` or `retry`,
    /// their claim not counted; the same row counts again at each claim that holds it back.
    package var deferred = 0
    /// Rows ended `collapsed` at the device cap: a newer push of the same kind for the device waits.
    package var collapsed = 0
    /// Outcomes not written: another worker had taken the row's expired lease.
    package var leaseLost = 0
    /// Attempts that may have delivered a copy a second time: no answer came, or a row flagged
    /// possibly_duplicated (an earlier claim may have delivered it) was accepted.
    package var possiblyDuplicated = 0
    /// Claimed, outcome not yet written.
    package var inFlight = 0
    /// Not-accepted outcomes by reason.
    package var reasons: [String: Int] = [:]
    /// Seconds during which the worker had rows in flight (claimed, outcome not yet written): the time it was busy.
    package var busySeconds = 0.0
    /// Outcomes written (dead rows ended at claim time included).
    package var written: Int { accepted + rejected + retry + dead + returned + held }
    /// Outcomes per busy second: the rate while there was work, not diluted by waiting for it.
    package var perBusySecond: Double { busySeconds > 0 ? Double(written) / busySeconds : 0 }
}

/// `kkpush worker`'s engine: claims rows of the push queue in batches under a lease (`FOR UPDATE SKIP LOCKED`),
/// sends them through an APNs client, writes each row's outcome, extends its leases while it works, and wakes on
/// the queue's `NOTIFY` (a `LISTEN` connection of its own) with a slow poll as fallback.
///
/// ``stop()`` (SIGTERM, SIGINT): no new claims; the pushes in flight get `grace` seconds, then the clients are shut
/// down and what is still in flight goes back to the queue (unsent: as it was; possibly sent: flagged
/// possibly_duplicated). A worker killed outright leaves its rows leased: when the lease expires another worker
/// claims them, flagged possibly_duplicated.
package final class QueueWorker: Sendable {
    /// What the worker reports as it runs.
    package enum Event: Sendable {
        /// The counts, every `progressInterval` seconds.
        case progress(QueueWorkerCounts, elapsed: Duration)
        /// The `LISTEN` connection is up (a notification now wakes the worker).
        case listening
        /// A database error the worker outlives: its words, and the seconds until it tries again.
        case databaseError(String, retryIn: Double)
        /// Rows of a claim held for the worker's configuration: how many, and why (each distinct reason, `; `
        /// between them).
        case held(Int, String)
    }

    /// How a run ended.
    package struct Ending: Sendable {
        package var counts: QueueWorkerCounts
        package var elapsed: Duration
        /// It stopped because the queue was empty (`exitWhenEmpty`), not because it was told to.
        package var emptied: Bool
        /// It stopped by itself for a problem a person must fix: a database error that will not pass (a missing
        /// privilege, a missing or foreign table: `queue-permission-denied`, …), or a credential APNs refused
        /// for `configurationFailureLimit` pushes in a row (`queue-credential-refused`). Nil: it was told to stop,
        /// or the queue emptied.
        package var failure: KKPushError?
    }

    package let configuration: QueueWorkerConfiguration
    package let metrics: QueueMetrics
    private let store: PushQueueStore
    private let router: any QueueClientRouter
    let onEvent: @Sendable (Event) -> Void
    /// Live Activity rows (QueueLiveActivity.swift).
    let activities: QueueActivities
    private let doorbell = Doorbell()
    private let state = Mutex(RunState())

    private struct RunState {
        var counts = QueueWorkerCounts()
        var stopping = false
        var emptied = false
        var graceTask: Task<Void, Never>?
        var failure: KKPushError?
        /// Configuration answers in a row with no other answer in between.
        var configurationStreak = 0
        /// Since when rows are in flight (nil: none is).
        var busySince: ContinuousClock.Instant?
        /// The rows this worker holds: claimed (ahead or in flight) and not yet written or handed back. Only
        /// their leases are extended: a row the worker lost track of (its outcome or its admission could not be
        /// written) keeps its lease only until it expires, then is claimed again (flagged possibly_duplicated),
        /// never held for as long as the worker lives.
        var holding: Set<Int64> = []
    }

    package init(
        store: PushQueueStore, router: any QueueClientRouter, configuration: QueueWorkerConfiguration,
        metrics: QueueMetrics = QueueMetrics(), onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        self.router = router
        self.configuration = configuration
        self.metrics = metrics
        self.onEvent = onEvent
        activities = QueueActivities(registry: configuration.activityRegistry, store: store)
    }

    /// The counts so far (the busy time up to now).
    package var counts: QueueWorkerCounts {
        state.withLock { s in
            var counts = s.counts
            if let since = s.busySince { counts.busySeconds += (ContinuousClock.now - since).seconds }
            return counts
        }
    }

    /// Stops the worker for a problem a person must fix (the first one is kept); in-flight pushes get `grace`.
    private func fail(_ error: KKPushError) {
        state.withLock { if $0.failure == nil { $0.failure = error } }
        stop()
    }

    /// No new claims; pushes in flight get `grace` seconds, then go back to the queue. A second call stops at once.
    /// Whether this was the first call.
    @discardableResult
    package func stop() -> Bool {
        let (first, router, grace) = state.withLock { s -> (Bool, any QueueClientRouter, Double) in
            defer { s.stopping = true }
            return (!s.stopping, self.router, configuration.grace)
        }
        doorbell.ring()
        if first && grace > 0 {
            let task = Task {
                try? await Task.sleep(for: .milliseconds(Int(grace * 1000)))
                if !Task.isCancelled { await router.shutdown() }
            }
            state.withLock { $0.graceTask = task }
        } else {
            Task { await router.shutdown() }
        }
        return first
    }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    /// Runs until ``stop()`` (or, with `exitWhenEmpty`, until nothing is left), then shuts the clients down.
    package func run() async -> Ending {
        let start = ContinuousClock.now
        let listener = Task { await listen() }
        let leases = Task { await extendLeases() }
        let pruner = Task { await pruneIdempotencyKeys() }
        let progress = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int(configuration.progressInterval * 1000)))
                if Task.isCancelled { break }
                onEvent(.progress(self.counts, elapsed: ContinuousClock.now - start))
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<max(1, configuration.lanes) { group.addTask { await self.lane() } }
        }
        listener.cancel()
        progress.cancel()
        leases.cancel()
        pruner.cancel()
        state.withLock { $0.graceTask }?.cancel()
        await router.shutdown()
        _ = await listener.value
        _ = await leases.value
        let (emptied, failure) = state.withLock { ($0.emptied, $0.failure) }
        return Ending(counts: counts, elapsed: ContinuousClock.now - start, emptied: emptied, failure: failure)
    }

    // MARK: - Lanes

    /// What a lane's claim came back with (``claimNext()``).
    private enum LaneClaim: Sendable {
        /// The rows to send, admitted by the policy; `claimed`: how many the claim got (the policy may have handed
        /// some or all of them back).
        case rows([QueuedPush], claimed: Int)
        case failed(any Error)
    }

    /// A lane: claims, sends, writes the outcomes, claims again. The next claim is made while the rows of the one
    /// before are in flight (claimed as soon as they are handed to the client), so the lane never waits for the
    /// database between two batches: at most one such claim ahead per lane, so a lane holds at most two claims'
    /// rows, every one under this worker's lease (``extendLeases()`` moves the leases of the rows it holds). A claim
    /// that came back short is not followed by one ahead: the queue had no more ready rows, and a claim right
    /// behind it would only cost a statement. Nor does a worker with rates or a device cap claim ahead: a claim
    /// takes the rate's tokens for its rows, so rows claimed ahead would go out later than their tokens and, after
    /// a slow batch, bunched with the next ones, above the rate within a second; and the cap counts the pushes
    /// accepted, so a claim ahead would admit a device's push while its previous one is still in flight. Such a
    /// worker sends at the rate, not at its client's pace, anyway. Rows claimed ahead that a stop leaves unsent go
    /// back to the queue unsent (``handBack(_:)``).
    private func lane() async {
        var databaseFailures = 0
        // The claim ahead, and the doorbell's generation from before it was made.
        var ahead: (claim: Task<LaneClaim, Never>, seen: Int)?
        claiming: while !isStopping {
            let seen: Int
            let next: LaneClaim
            if let claim = ahead {
                ahead = nil
                (next, seen) = (await claim.claim.value, claim.seen)
            } else {
                seen = doorbell.generation
                next = await claimNext()
            }
            let rows: [QueuedPush]
            let claimed: Int
            switch next {
            case .failed(let error):
                guard await outlive(error, failures: &databaseFailures) else { break claiming }
                continue
            case .rows(let admitted, let count):
                databaseFailures = 0
                // Rows held back by quiet hours, the device cap or a rate went back to the queue (said in their
                // rows): claim again at once.
                if admitted.isEmpty && count > 0 { continue }
                rows = admitted
                claimed = count
            }
            if rows.isEmpty {
                if configuration.exitWhenEmpty {
                    do {
                        if try await store.hasWork() == false {
                            state.withLock {
                                $0.emptied = true
                                $0.stopping = true
                            }
                            doorbell.ring()
                            break claiming
                        }
                    } catch {
                        guard await outlive(error, failures: &databaseFailures) else { break claiming }
                        continue
                    }
                }
                await doorbell.wait(after: seen, seconds: await idleWait())
                continue
            }
            if claimed >= configuration.batchSize, configuration.policy.rates.isEmpty,
                configuration.policy.deviceCap == nil, !isStopping
            {
                let seen = doorbell.generation
                ahead = (Task { await self.claimNext() }, seen)
            }
            await process(rows)
        }
        if let claim = ahead { await handBack(await claim.claim.value) }
    }

    /// Claims up to a batch of rows and admits them (``PushQueueStore/admit(_:policy:owner:)``: quiet hours, the
    /// device cap, the rates); rows whose expired lease had had every claim are counted as ended dead.
    private func claimNext() async -> LaneClaim {
        let claim: QueueClaim
        do {
            claim = try await store.claim(
                owner: configuration.owner, limit: configuration.batchSize, lease: configuration.lease,
                maxAttempts: configuration.maxAttempts)
        } catch {
            return .failed(error)
        }
        if claim.endedDead > 0 { countEndedDead(claim.endedDead) }
        guard !claim.rows.isEmpty else { return .rows([], claimed: 0) }
        hold(claim.rows)
        do {
            let admission = try await store.admission(
                claim.rows, policy: configuration.policy, owner: configuration.owner)
            let admitted = admission.rows
            if admission.deferred > 0 || admission.collapsed > 0 {
                state.withLock { s in
                    s.counts.deferred += admission.deferred
                    s.counts.collapsed += admission.collapsed
                }
            }
            // The rows admit held back were written back to the queue by it: no longer this worker's.
            let kept = Set(admitted.map(\.id))
            release(claim.rows.filter { !kept.contains($0.id) })
            return .rows(admitted, claimed: claim.rows.count)
        } catch {
            // Not admitted, not sent: back to the queue as the claim found them if the database lets us; else their
            // lease runs out (no longer extended) and they are claimed again, flagged possibly_duplicated.
            _ = try? await store.release(owner: configuration.owner, claim.rows)
            release(claim.rows)
            return .failed(error)
        }
    }

    /// Rows the worker now holds: their leases are extended until ``release(_:)``.
    private func hold(_ rows: [QueuedPush]) {
        state.withLock { s in for row in rows { s.holding.insert(row.id) } }
    }

    /// Rows the worker no longer holds (written, handed back, or lost track of): their leases are left alone.
    private func release(_ rows: [QueuedPush]) {
        guard !rows.isEmpty else { return }
        state.withLock { s in for row in rows { s.holding.remove(row.id) } }
    }

    /// Rows a lane claimed ahead and will not send (the worker is stopping): back to the queue as the claim found
    /// them (``PushQueueStore/release(owner:_:)``: state, owner and claims as they were, as the rows a stop
    /// leaves unclaimed); rows it took over from an expired lease go back as pushes a stop interrupts before they
    /// were sent (`retry`, still flagged: an earlier claim may have sent them). Counted `returned`. If a write
    /// fails they stay leased until the lease expires, then are claimed again flagged possibly_duplicated.
    private func handBack(_ claim: LaneClaim) async {
        guard case .rows(let rows, _) = claim, !rows.isEmpty else { return }
        defer { release(rows) }
        var written = (try? await store.release(owner: configuration.owner, rows)) ?? []
        let writes = rows.filter { $0.priorState == nil }.map { row in
            QueueVerdict.decide(
                row: row,
                outcome: PushOutcome(
                    result: .failed(
                        PushFailure(kind: .interrupted, message: "Not sent: the worker stopped before sending it.")),
                    duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment)),
                maxAttempts: configuration.maxAttempts, backoff: configuration.backoff, worker: configuration.owner
            ).write
        }
        if !writes.isEmpty {
            written.formUnion((try? await store.complete(owner: configuration.owner, writes)) ?? [])
        }
        let reclaimed = rows.filter(\.reclaimed).count
        state.withLock { s in
            s.counts.claimed += rows.count
            s.counts.reclaimed += reclaimed
            s.counts.returned += written.count
            s.counts.leaseLost += rows.count - written.count
        }
        metrics.recordClaim(rows.count, reclaimed: reclaimed)
        for row in rows where written.contains(row.id) {
            metrics.record(
                outcome: "returned", reason: "interrupted", pushType: row.pushType, priority: Self.priority(row),
                duplicated: false, duration: .zero)
        }
        metrics.recordLeaseLost(rows.count - written.count)
    }

    /// How long a lane with nothing to claim sleeps: until the earliest `retry` row comes due (or lease expires),
    /// at most the poll interval, at least 10 ms (a due row another worker holds locked is not claimable yet).
    private func idleWait() async -> Double {
        let poll = configuration.pollInterval
        guard let due = try? await store.secondsUntilNextDue() else { return poll }
        return min(poll, max(0.01, due + 0.005))
    }

    /// A database error in a lane: one that will not pass by itself (``isPermanent(_:)``) stops the worker
    /// (false); another is waited out with a doubling back-off (0.5 s up to `databaseBackoffMaximum`), said
    /// each time (true: try again).
    private func outlive(_ error: any Error, failures: inout Int) async -> Bool {
        let error =
            PostgresErrors.map(error, url: store.url) ?? KKPushError(code: .storeQueryFailed, message: "\(error)")
        if Self.isPermanent(error) {
            fail(error)
            return false
        }
        failures += 1
        let wait = min(configuration.databaseBackoffMaximum, 0.5 * pow(2, Double(min(failures - 1, 20))))
        onEvent(.databaseError(Self.words(error), retryIn: wait))
        await doorbell.wait(after: doorbell.generation, seconds: wait)
        return !isStopping
    }

    /// Errors no wait cures: a privilege, a missing or foreign table, a newer schema, a refused login, a missing
    /// database, a read-only server, TLS the server will not speak as asked. Everything else (the server
    /// restarting, a lost connection, too many connections, a failed query) is waited out.
    static func isPermanent(_ error: KKPushError) -> Bool {
        let permanent: Set<KKPushError.Code> = [
            .queuePermissionDenied, .queueNotMigrated, .queueTableForeign, .queueSchemaNewer, .storeAuthFailed,
            .storeDatabaseMissing, .storeReadOnly, .storeNotMigrated, .storeSchemaMismatch,
        ]
        return permanent.contains(error.code)
    }

    /// Rows a claim ended `dead` (expired leases at their last claim): counted as this worker's outcomes.
    private func countEndedDead(_ n: Int) {
        state.withLock { s in
            s.counts.dead += n
            s.counts.reasons["LeaseExpired", default: 0] += n
        }
        for _ in 0..<n {
            metrics.record(
                outcome: "dead", reason: "LeaseExpired", pushType: "", priority: nil, duplicated: false,
                duration: .zero)
        }
    }

    private func process(_ rows: [QueuedPush]) async {
        let reclaimed = rows.filter(\.reclaimed).count
        let streak = state.withLock { s -> Int in
            s.counts.claimed += rows.count
            if s.counts.inFlight == 0 { s.busySince = ContinuousClock.now }
            s.counts.inFlight += rows.count
            s.counts.reclaimed += reclaimed
            metrics.setInFlight(s.counts.inFlight)
            return s.configurationStreak
        }
        metrics.recordClaim(rows.count, reclaimed: reclaimed)
        // Live Activity rows are planned through the activity registry first (QueueLiveActivity.swift).
        // A held row waits the back-off of the worker's streak of configuration answers: a lone worker with a
        // wrong key does not spin on it, and a row waits at most `backoff.maximum`.
        let heldDelay = configuration.backoff.delay(claims: streak + 1)
        let (outcomes, activityVerdicts) = await sendResolvingActivities(
            rows, heldDelay: heldDelay)
        let verdicts = zip(rows, outcomes).map { row, outcome in
            activityVerdicts[row.id]
                ?? QueueVerdict.decide(
                    row: row, outcome: outcome, maxAttempts: configuration.maxAttempts, backoff: configuration.backoff,
                    worker: configuration.owner, heldDelay: heldDelay)
        }
        configuration.health?.observe(outcomes)
        // The attempt ledger's rows, written by the outcomes' statement (no round trip of their own).
        let ledger =
            configuration.recordAttempts
            ? zip(rows, zip(outcomes, verdicts)).map { QueueAttempt(row: $0, outcome: $1.0, verdict: $1.1) } : []
        var written: Set<Int64> = []
        var writeError: KKPushError?
        for attempt in 1...5 {
            do {
                written = try await store.complete(
                    owner: configuration.owner, verdicts.map(\.write), attempts: ledger)
                writeError = nil
                break
            } catch {
                let mapped =
                    PostgresErrors.map(error, url: store.url)
                    ?? KKPushError(code: .storeQueryFailed, message: "\(error)")
                writeError = mapped
                // Left leased, the rows are claimed again when the lease expires (flagged possibly_duplicated).
                if Self.isPermanent(mapped) || attempt == 5 { break }
                let wait = 0.2 * Double(attempt)
                onEvent(.databaseError(Self.words(mapped), retryIn: wait))
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            }
        }
        if let writeError, Self.isPermanent(writeError) { fail(writeError) }
        // How many rows of this claim were held, and each distinct reason (a claim may hold rows for several).
        var held: (count: Int, reasons: [String]) = (0, [])
        let limitReached = state.withLock { s -> KKPushError? in
            s.counts.inFlight -= rows.count
            if s.counts.inFlight == 0, let since = s.busySince {
                s.counts.busySeconds += (ContinuousClock.now - since).seconds
                s.busySince = nil
            }
            metrics.setInFlight(s.counts.inFlight)
            var lastHeld: PushOutcome?
            for (row, (verdict, outcome)) in zip(rows, zip(verdicts, outcomes)) {
                // The streak: configuration answers in a row; any other answer from APNs (the credential worked)
                // ends it. Transport failures say nothing either way.
                if verdict.outcome == "held" {
                    s.configurationStreak += 1
                    lastHeld = outcome
                    let words = Self.configurationWords(outcome)
                    if !held.reasons.contains(words) { held.reasons.append(words) }
                } else if outcome.failure == nil {
                    s.configurationStreak = 0
                }
                guard written.contains(verdict.write.id) else {
                    s.counts.leaseLost += 1
                    continue
                }
                switch verdict.outcome {
                case "accepted": s.counts.accepted += 1
                case "rejected": s.counts.rejected += 1
                case "dead": s.counts.dead += 1
                case "returned": s.counts.returned += 1
                case "held": s.counts.held += 1
                default: s.counts.retry += 1
                }
                if verdict.mayHaveDuplicated { s.counts.possiblyDuplicated += 1 }
                if let reason = verdict.write.reason, verdict.outcome != "accepted" {
                    s.counts.reasons[reason, default: 0] += 1
                }
                if verdict.outcome == "held" { held.count += 1 }
                metrics.record(
                    outcome: verdict.outcome, reason: verdict.write.reason ?? "", pushType: row.pushType,
                    priority: Self.priority(row), duplicated: verdict.mayHaveDuplicated, duration: outcome.duration)
            }
            guard let lastHeld, s.configurationStreak >= configuration.configurationFailureLimit else { return nil }
            return Self.configurationFailure(lastHeld, streak: s.configurationStreak)
        }
        metrics.recordLeaseLost(rows.count - written.count)
        release(rows)
        if held.count > 0, !held.reasons.isEmpty { onEvent(.held(held.count, held.reasons.joined(separator: "; "))) }
        if let limitReached { fail(limitReached) }
    }

    /// What a configuration answer says: `403 InvalidProviderToken: the provider token is invalid: …`.
    static func configurationWords(_ outcome: PushOutcome) -> String {
        switch outcome.result {
        case .rejected(let rejection):
            return "\(rejection.status) \(rejection.reason.rawValue): \(rejection.reason.explanation)"
        case .failed(let failure): return "\(failure.kind.rawValue): \(failure.message)"
        case .accepted: return "accepted"
        }
    }

    /// The error a worker stops with after `streak` configuration answers in a row.
    static func configurationFailure(_ last: PushOutcome, streak: Int) -> KKPushError {
        let credential =
            "Check the worker's credential: the key file (key), the key id (keyID) and the team id (teamID), the certificate (cert), or the credentials file's entries, their environments and topics (credentials)."
        let fix: String
        switch last.result {
        case .rejected(let rejection): fix = rejection.reason.fix + " " + credential
        case .failed(let failure) where failure.kind == .credential: fix = credential
        case .failed(let failure) where failure.message.contains(QueueActivities.noRegistryWords):
            fix =
                "Give the worker the activity registry (activityRegistry) that holds the Live Activities' tokens (the queue's own database serves)."
        default: fix = credential + " Check the endpoints it was given too."
        }
        return KKPushError(
            code: .queueCredentialRefused,
            message:
                "This worker stopped: \(streak) pushes in a row could not be sent for its own configuration, none answered otherwise in between (last: \(configurationWords(last))). Their rows went back to the queue as retry, their claims not counted: none was rejected or ended dead.",
            fix: fix + " Then start the worker again: the rows are waiting in the queue.")
    }

    /// Sends `rows` (grouped by the client their credential picks), one outcome per row, in order. A row of an
    /// environment this worker has no endpoint for is not sent (a `client` failure: held).
    /// `requests`: the request of a row to send instead of its own (a Live Activity row's, planned by the registry).
    func send(_ rows: [QueuedPush], requests: [Int64: NotificationRequest] = [:]) async -> [PushOutcome] {
        let outcomes = OutcomeSlots(count: rows.count)
        var groups: [ObjectIdentifier: (client: APNsClient, indices: [Int])] = [:]
        for (i, row) in rows.enumerated() {
            guard configuration.servedEnvironments.contains(row.environment) else {
                let served = configuration.servedEnvironments.map(\.rawValue).sorted().joined(separator: " and ")
                outcomes.set(
                    i,
                    PushOutcome(
                        result: .failed(
                            PushFailure(
                                kind: .client,
                                message:
                                    "No endpoint for \(row.environment.rawValue) rows: this worker was given one for \(served) only.\(configuration.endpointHint.isEmpty ? "" : " \(configuration.endpointHint)")"
                            )), duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment)))
                continue
            }
            do {
                let client = try router.client(
                    forCredential: row.credential, topic: row.topic, environment: row.environment)
                groups[ObjectIdentifier(client), default: (client, [])].indices.append(i)
            } catch {
                // The code first (`credential-topic: …`), so the row's history says which scope problem.
                let message = (error as? KKPushError).map { "\($0.code.rawValue): \($0.message)" } ?? "\(error)"
                outcomes.set(
                    i,
                    PushOutcome(
                        result: .failed(PushFailure(kind: .credential, message: message)), duration: .zero,
                        attempts: 0, endpoint: APNsEndpoint.apple(row.environment)))
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for (_, entry) in groups {
                let items = entry.indices.map { i in
                    PushBatchItem(
                        request: requests[rows[i].id] ?? Self.request(rows[i]),
                        endpoint: entry.client.configuration.endpoint(for: rows[i].environment))
                }
                let indices = entry.indices
                group.addTask {
                    await entry.client.sendAll(items) { result in
                        outcomes.set(indices[result.index], result.outcome)
                    }
                }
            }
        }
        return outcomes.all { list in
            list.enumerated().map { i, outcome in
                outcome
                    ?? PushOutcome(
                        result: .failed(PushFailure(kind: .interrupted, message: "No outcome came.")), duration: .zero,
                        attempts: 0, possiblyDuplicated: true, endpoint: APNsEndpoint.apple(rows[i].environment))
            }
        }
    }

    private static func words(_ error: any Error) -> String {
        (error as? KKPushError)?.message ?? String(describing: error)
    }

    /// The APNs request of a row.
    package static func request(_ row: QueuedPush) -> NotificationRequest {
        NotificationRequest(
            deviceToken: row.deviceToken, topic: row.topic, pushType: PushType(row.pushType), priority: priority(row),
            expiration: row.expiration, collapseID: row.collapseID, payload: Array(row.payload.utf8))
    }

    /// The row's `apns-priority`: its own, else by push type as `send` and `send-batch` choose: 5 for a background
    /// push (Apple calls 10 an error there, and APNs uses 10 when the header is left out), 10 otherwise.
    package static func priority(_ row: QueuedPush) -> Int {
        row.priority ?? PushType(row.pushType).defaultPriority
    }

    // MARK: - Leases and notifications

    /// At the start and every hour, clears the idempotency keys past the retention (any worker may: the statement
    /// is the same whoever runs it); a failure is said and tried again an hour later.
    private func pruneIdempotencyKeys() async {
        guard let retention = configuration.policy.idempotencyRetention else { return }
        while !Task.isCancelled {
            do {
                try await store.pruneIdempotencyKeys(retention: retention)
            } catch {
                let mapped =
                    PushQueueErrors.map(error, url: store.url) as? KKPushError
                    ?? KKPushError(code: .storeQueryFailed, message: "\(error)")
                // A queue migrated before step 5 has no keys to prune; an error no wait cures (a missing
                // privilege) stops the worker, as the claims would.
                if mapped.code == .queueTableForeign { return }
                if Self.isPermanent(mapped) {
                    fail(mapped)
                    return
                }
                onEvent(.databaseError(Self.words(mapped), retryIn: 3600))
            }
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    /// Every third of the lease, moves this worker's leases on (until the run ends).
    private func extendLeases() async {
        let every = max(0.2, configuration.lease / 3)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(Int(every * 1000)))
            if Task.isCancelled { break }
            do {
                let holding = state.withLock { Array($0.holding) }
                if !holding.isEmpty {
                    try await store.extendLeases(owner: configuration.owner, ids: holding, lease: configuration.lease)
                }
            } catch {
                let mapped =
                    PostgresErrors.map(error, url: store.url)
                    ?? KKPushError(code: .storeQueryFailed, message: "\(error)")
                if Self.isPermanent(mapped) {
                    fail(mapped)
                    break
                }
                onEvent(.databaseError(Self.words(mapped), retryIn: every))
            }
        }
    }

    /// `LISTEN`s on a connection of its own and rings the doorbell on each notification; reconnects after a loss.
    private func listen() async {
        var announced = false
        var failures = 0
        while !Task.isCancelled {
            let connection: PQConnection
            do {
                connection = try await PQConnection.connect(url: store.url, readOnly: false, pooled: false)
                _ = try await connection.run { try $0.exec("LISTEN \(PushQueueSchema.channel)") }
                failures = 0
            } catch {
                // Waited out with the lanes' doubling back-off; an error that will not pass stops the lanes too.
                failures += 1
                let wait = min(configuration.databaseBackoffMaximum, 0.5 * pow(2, Double(min(failures - 1, 20))))
                onEvent(.databaseError(Self.words(PushQueueErrors.map(error, url: store.url)), retryIn: wait))
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
                continue
            }
            if !announced {
                announced = true
                onEvent(.listening)
            }
            // A notification may have come before LISTEN: look once.
            doorbell.ring()
            while !Task.isCancelled {
                do {
                    let channels = try await connection.run { try $0.waitForNotifications(timeoutMilliseconds: 250) }
                    if !channels.isEmpty { doorbell.ring() }
                } catch {
                    onEvent(.databaseError(Self.words(PushQueueErrors.map(error, url: store.url)), retryIn: 0))
                    break
                }
            }
            connection.close()
        }
    }
}

/// One outcome per row of a claim, filled from the client's loop thread.
final class OutcomeSlots: Sendable {
    private let slots: Mutex<[PushOutcome?]>
    init(count: Int) { slots = Mutex([PushOutcome?](repeating: nil, count: count)) }
    func set(_ index: Int, _ outcome: PushOutcome) { slots.withLock { $0[index] = outcome } }
    func all<T>(_ body: ([PushOutcome?]) -> T) -> T { slots.withLock { body($0) } }
}

/// Wakes the lanes waiting for work: a generation number, raised by each ring, and the waiters of one.
final class Doorbell: Sendable {
    private struct State {
        var generation = 0
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits whose time ran out before they were registered.
        var expired: Set<Int> = []
    }
    private let state = Mutex(State())

    var generation: Int { state.withLock { $0.generation } }

    func ring() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.generation += 1
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for w in waiters { w.resume() }
    }

    /// Returns once the generation is past `seen`, or after `seconds`.
    func wait(after seen: Int, seconds: Double) async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            let waiter = self?.state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let w = s.waiters.removeValue(forKey: id) { return w }
                s.expired.insert(id)
                return nil
            }
            waiter?.resume()
        }
        defer {
            timer.cancel()
            state.withLock { _ = $0.expired.remove(id) }
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.generation != seen || s.expired.remove(id) != nil { return true }
                s.waiters[id] = c
                return false
            }
            if now { c.resume() }
        }
    }
}
