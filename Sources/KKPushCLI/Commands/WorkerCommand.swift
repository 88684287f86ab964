import ArgumentParser
import Foundation
import KKPushActivities
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushHTTP
import KKPushQueue
import KKPushStore
import KKPushSystem
import Logging

/// `kkpush worker`: drains the push queue in PostgreSQL through the APNs client.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send the pushes of the PostgreSQL push queue (kkpush queue) and write each outcome in its row.",
        discussion: """
            Claims rows of public.kkpush_push_queue in batches (FOR UPDATE SKIP LOCKED) under a lease it extends \
            while it works, sends them with the credential and endpoint flags send-batch takes, and writes each \
            row's outcome: accepted (apns_id), rejected (status, reason, Apple's 410 timestamp), retry after a \
            back-off (429, 5xx, connection failures), dead after --max-claims claims; every attempt is appended to \
            the row's history. Any number of workers can share a queue. It wakes on NOTIFY kkpush_push_queue (the \
            insert trigger of queue migrate), when the earliest row waiting to retry comes due, and otherwise looks \
            every --poll-interval seconds. A row whose lease expired (its worker was killed) is claimed again by \
            any worker, flagged possibly_duplicated.

            Each row goes to its environment's endpoint: Apple's hosts, or --sandbox-url/--production-url. --url \
            stands in for sandbox only (a worker has no --env): production rows are then held, not sent.

            An answer about the worker's own configuration, not the push (403 InvalidProviderToken, \
            MissingProviderToken, ExpiredProviderToken, BadCertificate, BadCertificateEnvironment, Forbidden, \
            BadEnvironmentKeyIdInToken, UnrelatedKeyIdInToken; a row no credential of --credentials may serve; a row \
            of an environment without an endpoint) never ends a row: it is held, back to retry with its claim not \
            counted, and a warning says why. After --credential-failure-limit such answers in a row with no other \
            answer in between, the worker stops and exits 77 naming the problem and its fix; the rows wait in the \
            queue.

            Database: an error that passes by itself (the server restarting, a lost connection) is waited out with \
            a doubling back-off (0.5 s to 30 s), said each time; one that needs a person stops the worker: a \
            missing privilege exits 77 with the GRANT it needs, a missing, foreign or newer queue table exits 2.

            SIGINT/SIGTERM: no new claims; the pushes in flight get --grace seconds, then go back to the queue \
            (possibly_duplicated if they may have been sent); exit 0. A second signal stops at once.

            A progress line goes to stderr every --progress-interval seconds (with --json: a JSON line on stdout); \
            --metrics-file is rewritten then (atomically) in the Prometheus text format.

            As a service: --http ADDR serves /metrics (the same metrics), /healthz (200 while its loop runs) and \
            /readyz (200 when the database answers and the worker can send: a credential loaded, its last claim \
            neither refused for it nor unable to connect; else 503 with a JSON reason). --log-format json writes \
            one JSON object a line on stderr. SIGHUP reads the key, certificate or credentials files again: later \
            claims use them, pushes in flight finish on the old connections, no row is dropped; a file that fails \
            to load keeps the old credential, said on stderr.

            Each attempt is written to the attempt ledger (public.kkpush_push_attempts, queue schema version 6; \
            kkpush queue history) with the row's outcome; the worker prunes it after --attempt-retention days. \
            With --webhook URL and --webhook-secret-file, every final outcome (accepted, rejected, dead, collapsed) and \
            receipt is kept in public.kkpush_webhook_outbox in the transaction that writes it and POSTed in the \
            background, signed (X-KKPush-Signature: t=UNIX,v1=HMAC-SHA256 of "t.body"), with X-KKPush-Webhook-Id \
            for deduplication; retried with a doubling back-off, then failed (kkpush queue status counts them). A \
            receiver that is down never slows sending.

            A row with an activity_key (queue schema version 4) starts, updates or ends one Live Activity: with \
            --activity-registry the registry picks the token (the device's push-to-start token, the activity's \
            update token), a second start of a key sends nothing (accepted, its history naming the first push), an \
            update waits for the activity's update token and is never sent to another, and APNs' answer goes back \
            to the registry. Without --activity-registry such rows are held.

            After each claim and before sending (queue schema version 5): a row inside its quiet window (its own \
            quiet_hours, else --quiet-hours) waits until the window ends unless it is time-critical \
            (interruption-level time-sensitive or critical, a Live Activity end); a device over --device-cap waits \
            or its older same-kind push ends collapsed; rows the shared --rate buckets do not grant wait for their \
            slot. Each goes back as scheduled with not_before and its reason (quiet-hours, device-cap, rate), its \
            claim not counted; kkpush queue status shows what waits and until when. Idempotency keys of rows that \
            ended more than --idempotency-retention days ago are cleared at the start and every hour.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @OptionGroup var connection: ConnectionOptions
    @Option(name: .customLong("batch-size"), parsing: .unconditional, help: "Rows per claim, 1 to 5000.")
    var batchSize: Int = 200
    @Option(
        parsing: .unconditional,
        help:
            "Claims in flight at once, 1 to 64; each lane also makes its next claim while one is in flight (not with --rate or --device-cap)."
    )
    var lanes: Int = 4
    @Option(
        parsing: .unconditional, help: "Seconds a claim holds its rows (extended while the worker works), 1 to 3600.")
    var lease: Double = 60
    @Option(
        name: .customLong("max-claims"), parsing: .unconditional,
        help: "Claims a row gets before a failure that could pass makes it dead, 1 to 100.")
    var maxClaims: Int = 5
    @Option(
        name: .customLong("poll-interval"), parsing: .unconditional,
        help: "Seconds between looks at the queue when no NOTIFY came, 0.05 to 600.")
    var pollInterval: Double = 5
    @Option(
        name: .customLong("retry-base"), parsing: .unconditional,
        help: "Seconds before the first retry of a row (doubled each claim, at most 300), 0 to 300.")
    var retryBase: Double = 1
    @Flag(
        name: .customLong("exit-when-empty"),
        help: "Stop once no row is queued, scheduled, waiting to retry or leased.")
    var exitWhenEmpty = false
    @Option(
        name: .customLong("credential-failure-limit"), parsing: .unconditional,
        help:
            "Pushes in a row refused for the worker's credential or endpoints (held, not ended) before it stops with exit 77, 1 to 100000."
    )
    var credentialFailureLimit: Int = 10
    @Option(parsing: .unconditional, help: "Seconds pushes in flight get to finish after SIGINT/SIGTERM, 0 to 3600.")
    var grace: Double = 10
    @Option(
        name: .customLong("progress-interval"), parsing: .unconditional,
        help: "Seconds between progress lines, 0.1 to 3600.")
    var progressInterval: Double = 10
    @Option(name: .customLong("worker-id"), help: "This worker's name in lease_owner and history (default host:pid:n).")
    var workerID: String?
    @OptionGroup var capacity: ClientCapacityOptions
    @OptionGroup var policy: QueuePolicyOptions
    @Option(
        name: .customLong("metrics-file"),
        help: ArgumentHelp(
            "Rewrite the worker's counters here in the Prometheus text format (atomically) at each progress line and at the end.",
            valueName: "file"))
    var metricsFile: String?
    @Flag(help: "Progress and the final counts as JSON lines on stdout.") var json = false
    @OptionGroup var service: WorkerServiceOptions
    @Option(
        name: .customLong("activity-registry"),
        help:
            "The Live Activity registry (an SQLite file or a postgres:// URL, migrated on open): rows with an activity_key are planned and answered through it; without it they are held."
    )
    var activityRegistry: String?

    func validate() throws {
        if connection.env != nil || connection.buildEnvironment != nil || connection.testUser {
            throw ValidationError(
                "A worker sends each row to the environment in its `environment` column: leave out --env, --build-environment and --test-user."
            )
        }
        try NumericFlags.integer(batchSize, flag: "--batch-size", in: 1...5000)
        try NumericFlags.integer(lanes, flag: "--lanes", in: 1...64)
        try NumericFlags.seconds(lease, flag: "--lease", in: 1...3600)
        try NumericFlags.integer(maxClaims, flag: "--max-claims", in: 1...100)
        try NumericFlags.integer(credentialFailureLimit, flag: "--credential-failure-limit", in: 1...100_000)
        try NumericFlags.seconds(pollInterval, flag: "--poll-interval", in: 0.05...600)
        try NumericFlags.seconds(retryBase, flag: "--retry-base", in: 0...300)
        try NumericFlags.seconds(grace, flag: "--grace", in: 0...3600)
        try NumericFlags.seconds(progressInterval, flag: "--progress-interval", in: 0.1...3600)
        if let workerID, workerID.isEmpty || workerID.count > 200 {
            throw ValidationError("--worker-id must be 1 to 200 characters.")
        }
    }

    func run() async throws {
        guard service.logFormat == "json", !json else {
            try await reportingErrors { try await work() }
            return
        }
        // --log-format json: the error the worker stops with is its last log line (level critical, its code and fix
        // in the metadata), so a log pipeline reads the whole run as JSON; the exit status is the usual one.
        do {
            try await work()
        } catch let error as ExitCode {
            throw error
        } catch let error as ValidationError {
            throw error
        } catch {
            guard let rendered = ErrorReport.render(error, json: true) else { throw error }
            WorkerLog(json: true, worker: workerID ?? "").say(
                .critical, rendered.message, metadata: ["code": "\(rendered.code)", "fix": "\(rendered.fix ?? "")"])
            throw ExitCode(rendered.exit)
        }
    }

    private func work() async throws {
        // Before any Logger is made (the client's, the key cache's): JSON lines from them too.
        if service.logFormat == "json" { JSONLogHandler.bootstrapProcess() }
        let url = try database.url()
        try connection.checkInputFiles()
        if let metricsFile {
            try InputFile.checkWritable(metricsFile, what: "metrics file", label: "--metrics-file")
        }
        let owner = workerID ?? QueueWorkerConfiguration.defaultOwner()
        let log = WorkerLog(json: service.logFormat == "json", worker: owner)
        // Fails early, naming the fix, when the queue is not there, not kkpush's, newer than this kkpush, or the
        // user may not claim and write rows.
        let store = PushQueueStore(url: url, connections: lanes + 1)
        let ledger: Bool
        let ledgerSchema: Bool
        do {
            let schema = try await store.checkSchema(grant: .worker)
            if let warning = schema.olderWarning { log.say(.warning, FlagWords.common.apply(warning)) }
            try await store.checkWorkerPrivileges()
            ledgerSchema = schema.version >= QueueLedgerSchema.version
            ledger = ledgerSchema && !service.noAttemptLedger
            if ledgerSchema {
                try await store.checkLedgerPrivileges()
            } else if service.webhook != nil {
                throw KKPushError(
                    code: .queueNotMigrated,
                    message:
                        "--webhook needs the webhook outbox of queue schema version \(QueueLedgerSchema.version); \(url.named) is at version \(schema.version).",
                    fix: "Run kkpush queue migrate on the same database, then start the worker again.")
            }
        } catch {
            await store.close()
            throw error
        }
        let clientConfiguration = try connection.clientConfiguration(capacity)
        let connection = self.connection
        // With --credentials, a client per credential, picked by the row's `credential` (or its topic and
        // environment); else one client for every row. Made again on SIGHUP (the files read again).
        let makeRouter: @Sendable (APNsClientConfiguration) throws -> any QueueClientRouter = { configuration in
            if let set = try connection.credentialSet() {
                return CredentialFileRouter(
                    router: ProviderClientRouter(credentials: set, configuration: configuration))
            }
            return SingleClientRouter(client: try APNsClient(configuration: configuration))
        }
        let health = QueueWorkerHealth()
        let router = ReloadableClientRouter(try makeRouter(clientConfiguration))
        health.credential(loaded: true)
        var configuration = QueueWorkerConfiguration(
            owner: owner, batchSize: batchSize, lanes: lanes,
            lease: lease, maxAttempts: maxClaims, backoff: .init(base: retryBase, maximum: max(retryBase, 300)),
            pollInterval: pollInterval, exitWhenEmpty: exitWhenEmpty, grace: grace,
            progressInterval: progressInterval)
        configuration.configurationFailureLimit = credentialFailureLimit
        configuration.policy = try policy.policy()
        configuration.recordAttempts = ledger
        configuration.health = health
        // Live Activity rows (queue schema version 4) are planned and answered through the activity registry.
        do {
            if let activityRegistry {
                configuration.activityRegistry = try await ActivityRegistries.open(
                    activityRegistry, origin: "(activityRegistry)")
            }
        } catch {
            await store.close()
            await router.shutdown()
            throw error
        }
        let registry = configuration.activityRegistry
        if registry == nil, let waiting = try? await QueueActivities(registry: nil, store: store).waitingRows(),
            waiting > 0
        {
            log.say(
                .warning,
                "worker \(owner): \(waiting) Live Activity row\(waiting == 1 ? "" : "s") (activity_key) wait in the queue; without --activity-registry this worker holds them (back to retry, claims not counted), never sending them to their device_token."
            )
        }
        if !ledgerSchema {
            log.say(
                .warning,
                "worker \(owner): the queue is before schema version \(QueueLedgerSchema.version): attempts are not written to the attempt ledger (run kkpush queue migrate)."
            )
        }
        // --url is one host: it stands in for sandbox (a worker has no --env); production rows are held.
        configuration.servedEnvironments = connection.servedEnvironments(.sandbox)
        configuration.endpointHint = ConnectionOptions.endpointHint
        if connection.url != nil {
            log.say(
                .notice,
                "worker: --url stands in for sandbox only; production rows are held until a worker with --production-url (or Apple's host) sends them."
            )
        }
        let metrics = QueueMetrics()
        let json = self.json
        let metricsFile = self.metricsFile
        let worker = QueueWorker(
            store: store, router: router, configuration: configuration, metrics: metrics,
            onEvent: { event in
                switch event {
                case .progress(let counts, let elapsed):
                    Self.report(
                        QueueWorkerEvent("progress", worker: owner, counts: counts, elapsed: elapsed), json: json,
                        log: log)
                    if let metricsFile { Self.writeMetrics(metrics, to: metricsFile, log: log) }
                case .listening:
                    if !json { log.say(.info, "worker \(owner): listening on kkpush_push_queue") }
                case .databaseError(let words, let wait):
                    log.say(
                        .warning,
                        "worker \(owner): \(FlagWords.common.apply(words)) (trying again in \(String(format: "%.1f", wait)) s)"
                    )
                case .held(let count, let words):
                    log.say(
                        .warning,
                        "worker \(owner): \(count) row\(count == 1 ? "" : "s") held, not sent or not accepted for this worker's own configuration: \(FlagWords.common.apply(words)) They wait in the queue (retry, claims not counted)."
                    )
                }
            })
        // The ledger's pruning, the webhook's deliveries and the readiness probe share a small store of their own,
        // a connection each at most (opened when first used): they never wait for a lane's connection, nor a lane
        // for theirs, nor a probe for a long DELETE.
        let side = PushQueueStore(url: url, connections: 3)
        var delivery: QueueWebhookDelivery?
        var server: HTTP1Server?
        do {
            if let webhook = try service.webhookConfiguration(owner: owner) {
                let made = QueueWebhookDelivery(
                    store: side, configuration: webhook, metrics: metrics,
                    onEvent: { event in
                        switch event {
                        case .deliveryFailed(let id, let attempt, let reason, let final):
                            log.say(
                                .warning,
                                "worker \(owner): webhook event \(id) not delivered (attempt \(attempt)): \(reason)\(final ? "; given up, the event is failed" : "; it is tried again later")",
                                metadata: ["event_id": "\(id)"])
                        case .databaseError(let words):
                            log.say(.warning, "worker \(owner): webhook outbox: \(FlagWords.common.apply(words))")
                        }
                    })
                try await made.enable()
                delivery = made
            }
            if let http = service.http, let address = WorkerServiceOptions.address(http) {
                let started = try await Self.startServer(
                    address, metrics: metrics, health: health, probe: side, flag: http)
                server = started
                log.say(
                    .notice,
                    "worker \(owner): serving /metrics, /healthz and /readyz on http://\(address.host.contains(":") ? "[\(address.host)]" : address.host):\(started.port)",
                    metadata: ["port": "\(started.port)"])
            }
        } catch {
            await side.close()
            await store.close()
            await router.shutdown()
            await configuration.activityRegistry?.close()
            throw error
        }
        let deliveryTask = delivery.map { d in Task { await d.run() } }
        let retention = service.attemptRetention * 86_400
        let pruning = Task {
            // At the start, then every 10 minutes: a short DELETE at a time (QueueAttempts).
            while ledgerSchema && !Task.isCancelled {
                do {
                    try await side.pruneAttempts(olderThan: retention)
                } catch {
                    log.say(
                        .warning,
                        "worker \(owner): pruning the attempt ledger: \(FlagWords.common.apply(ErrorWords.describe(error)))"
                    )
                }
                try? await Task.sleep(for: .seconds(600))
            }
        }
        Signals.ignore(SIGPIPE)
        let signals = SignalWatch([SIGINT, SIGTERM]) { number in
            let name = number == SIGINT ? "SIGINT" : "SIGTERM"
            if worker.stop() {
                log.say(
                    .notice,
                    "\(name): no new claims; pushes in flight get up to \(Int(grace)) s (a second signal stops at once)."
                )
            } else {
                log.say(.notice, "\(name) again: stopping now; pushes in flight go back to the queue.")
            }
        }
        // SIGHUP: the credential files read again. The old clients keep what they were given for a lease, then
        // close: a push in flight is never cut off, and every row is still written by this worker.
        let lease = self.lease
        let reloads = SignalWatch([SIGHUP]) { _ in
            do {
                try connection.checkInputFiles()
                router.replace(with: try makeRouter(try connection.clientConfiguration(capacity)), retireAfter: lease)
                health.credential(loaded: true)
                log.say(.notice, "SIGHUP: credentials loaded again; the next claims use them.")
            } catch {
                log.say(
                    .error,
                    "SIGHUP: the credentials could not be loaded again, the worker keeps the ones it has: \(FlagWords.common.apply(ErrorWords.describe(error)))"
                )
            }
        }
        defer {
            signals.keep()
            reloads.keep()
        }
        health.setRunning(true)
        let ending = await worker.run()
        health.setRunning(false)
        pruning.cancel()
        delivery?.stop()
        _ = await deliveryTask?.value
        if let server {
            await server.stop()
            await server.wait()
        }
        await side.close()
        await store.close()
        await registry?.close()
        Self.report(QueueWorkerEvent(ending: ending, worker: owner), json: json, log: log)
        if let metricsFile { Self.writeMetrics(metrics, to: metricsFile, log: log) }
        if let failure = ending.failure { throw failure }
    }

    /// Binds `--http`; a bind that fails is the flag's error (exit 64 for an address that cannot be used).
    private static func startServer(
        _ address: (host: String, port: Int), metrics: QueueMetrics, health: QueueWorkerHealth, probe: PushQueueStore,
        flag: String
    ) async throws -> HTTP1Server {
        do {
            return try await WorkerHTTPEndpoints.start(
                host: address.host, port: address.port, metrics: metrics, health: health, probe: probe)
        } catch {
            throw CLIError.usage(
                .workerHttpBind, "--http \(flag) cannot be listened on: \(ErrorWords.describe(error)).",
                fix: "Give a free port on an address of this machine (port 0 picks a free one).")
        }
    }

    /// A progress or final line: one JSON line on stdout with --json (a stream of them, one object a line), else
    /// a line on stderr.
    private static func report(_ event: QueueWorkerEvent, json: Bool, log: WorkerLog) {
        if json {
            print(Output.json(encoding: event).description)
        } else {
            for line in event.textLines { log.say(.info, line) }
        }
    }

    private static func writeMetrics(_ metrics: QueueMetrics, to path: String, log: WorkerLog) {
        do {
            try AtomicFile.write(metrics.exposition(), to: path)
        } catch {
            log.say(
                .warning, "Cannot write the metrics file '\(path)': \(ErrorWords.describe(error)) (--metrics-file).")
        }
    }
}
