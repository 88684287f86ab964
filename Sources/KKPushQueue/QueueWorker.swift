import Foundation
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
    /// Stop once no row is queued, waiting to retry or leased.
    package var exitWhenEmpty: Bool
    /// Seconds pushes in flight get after ``QueueWorker/stop()`` before the clients are shut down.
    package var grace: Double
    /// Seconds between ``QueueWorker/Event/progress(_:elapsed:)`` events.
    package var progressInterval: Double

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
    /// Expired leases of other workers claimed again (flagged possibly_duplicated).
    package var reclaimed = 0
    package var accepted = 0
    package var rejected = 0
    package var retry = 0
    package var dead = 0
    /// Handed back unsent (or possibly sent, flagged) at a stop.
    package var returned = 0
    /// Outcomes not written: another worker had taken the row's expired lease.
    package var leaseLost = 0
    package var possiblyDuplicated = 0
    /// Claimed, outcome not yet written.
    package var inFlight = 0
    /// Not-accepted outcomes by reason.
    package var reasons: [String: Int] = [:]
    package var written: Int { accepted + rejected + retry + dead + returned }
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
        /// A database error the worker outlives (it tries again): its words.
        case databaseError(String)
    }

    /// How a run ended.
    package struct Ending: Sendable {
        package var counts: QueueWorkerCounts
        package var elapsed: Duration
        /// It stopped because the queue was empty (`exitWhenEmpty`), not because it was told to.
        package var emptied: Bool
    }

    package let configuration: QueueWorkerConfiguration
    package let metrics: QueueMetrics
    private let store: PushQueueStore
    private let router: any QueueClientRouter
    private let onEvent: @Sendable (Event) -> Void
    private let doorbell = Doorbell()
    private let state = Mutex(RunState())

    private struct RunState {
        var counts = QueueWorkerCounts()
        var stopping = false
        var emptied = false
        var graceTask: Task<Void, Never>?
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
    }

    /// The counts so far.
    package var counts: QueueWorkerCounts { state.withLock { $0.counts } }

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
        state.withLock { $0.graceTask }?.cancel()
        await router.shutdown()
        _ = await listener.value
        _ = await leases.value
        let (counts, emptied) = state.withLock { ($0.counts, $0.emptied) }
        return Ending(counts: counts, elapsed: ContinuousClock.now - start, emptied: emptied)
    }

    // MARK: - Lanes

    private func lane() async {
        while !isStopping {
            let seen = doorbell.generation
            let rows: [QueuedPush]
            do {
                rows = try await store.claim(
                    owner: configuration.owner, limit: configuration.batchSize, lease: configuration.lease,
                    maxAttempts: configuration.maxAttempts)
            } catch {
                onEvent(.databaseError(Self.words(error)))
                await doorbell.wait(after: seen, seconds: 1)
                continue
            }
            if rows.isEmpty {
                if configuration.exitWhenEmpty, (try? await store.hasWork()) == false {
                    state.withLock {
                        $0.emptied = true
                        $0.stopping = true
                    }
                    doorbell.ring()
                    break
                }
                await doorbell.wait(after: seen, seconds: configuration.pollInterval)
                continue
            }
            await process(rows)
        }
    }

    private func process(_ rows: [QueuedPush]) async {
        let reclaimed = rows.filter(\.possiblyDuplicated).count
        state.withLock {
            $0.counts.claimed += rows.count
            $0.counts.inFlight += rows.count
            metrics.setInFlight($0.counts.inFlight)
        }
        metrics.recordClaim(rows.count, reclaimed: reclaimed)
        let outcomes = await send(rows)
        let verdicts = zip(rows, outcomes).map { row, outcome in
            QueueVerdict.decide(
                row: row, outcome: outcome, maxAttempts: configuration.maxAttempts, backoff: configuration.backoff,
                worker: configuration.owner)
        }
        var written: Set<Int64> = []
        for attempt in 1...5 {
            do {
                written = try await store.complete(owner: configuration.owner, verdicts.map(\.write))
                break
            } catch {
                onEvent(.databaseError(Self.words(error)))
                // Left leased, the rows are claimed again when the lease expires (flagged possibly_duplicated).
                if attempt == 5 { break }
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
        state.withLock { s in
            s.counts.inFlight -= rows.count
            s.counts.reclaimed += reclaimed
            metrics.setInFlight(s.counts.inFlight)
            for (row, (verdict, outcome)) in zip(rows, zip(verdicts, outcomes)) {
                guard written.contains(verdict.write.id) else {
                    s.counts.leaseLost += 1
                    continue
                }
                switch verdict.outcome {
                case "accepted": s.counts.accepted += 1
                case "rejected": s.counts.rejected += 1
                case "dead": s.counts.dead += 1
                case "returned": s.counts.returned += 1
                default: s.counts.retry += 1
                }
                if verdict.write.duplicated { s.counts.possiblyDuplicated += 1 }
                if let reason = verdict.write.reason, verdict.outcome != "accepted" {
                    s.counts.reasons[reason, default: 0] += 1
                }
                metrics.record(
                    outcome: verdict.outcome, reason: verdict.write.reason ?? "", pushType: row.pushType,
                    priority: row.priority, duplicated: verdict.write.duplicated, duration: outcome.duration)
            }
        }
        metrics.recordLeaseLost(rows.count - written.count)
    }

    /// Sends `rows` (grouped by the client their credential picks), one outcome per row, in order.
    private func send(_ rows: [QueuedPush]) async -> [PushOutcome] {
        let outcomes = OutcomeSlots(count: rows.count)
        var groups: [ObjectIdentifier: (client: APNsClient, indices: [Int])] = [:]
        for (i, row) in rows.enumerated() {
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
                        request: Self.request(rows[i]),
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
            deviceToken: row.deviceToken, topic: row.topic, pushType: PushType(row.pushType), priority: row.priority,
            expiration: row.expiration, collapseID: row.collapseID, payload: Array(row.payload.utf8))
    }

    // MARK: - Leases and notifications

    /// Every third of the lease, moves this worker's leases on (until the run ends).
    private func extendLeases() async {
        let every = max(0.2, configuration.lease / 3)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(Int(every * 1000)))
            if Task.isCancelled { break }
            do {
                try await store.extendLeases(owner: configuration.owner, lease: configuration.lease)
            } catch {
                onEvent(.databaseError(Self.words(error)))
            }
        }
    }

    /// `LISTEN`s on a connection of its own and rings the doorbell on each notification; reconnects after a loss.
    private func listen() async {
        var announced = false
        while !Task.isCancelled {
            let connection: PQConnection
            do {
                connection = try await PQConnection.connect(url: store.url, readOnly: false, pooled: false)
                _ = try await connection.run { try $0.exec("LISTEN \(PushQueueSchema.channel)") }
            } catch {
                onEvent(.databaseError(Self.words(PushQueueErrors.map(error, url: store.url))))
                try? await Task.sleep(for: .seconds(1))
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
                    onEvent(.databaseError(Self.words(PushQueueErrors.map(error, url: store.url))))
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
