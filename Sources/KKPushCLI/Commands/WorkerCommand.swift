import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushQueue
import KKPushSystem

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
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @OptionGroup var connection: ConnectionOptions
    @Option(name: .customLong("batch-size"), parsing: .unconditional, help: "Rows per claim, 1 to 5000.")
    var batchSize: Int = 200
    @Option(parsing: .unconditional, help: "Claims in flight at once, 1 to 64.") var lanes: Int = 4
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
    @Flag(name: .customLong("exit-when-empty"), help: "Stop once no row is queued, waiting to retry or leased.")
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
    @Option(
        name: .customLong("metrics-file"),
        help: ArgumentHelp(
            "Rewrite the worker's counters here in the Prometheus text format (atomically) at each progress line and at the end.",
            valueName: "file"))
    var metricsFile: String?
    @Flag(help: "Progress and the final counts as JSON lines on stdout.") var json = false

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
        try await reportingErrors { try await work() }
    }

    private func work() async throws {
        let url = try database.url()
        try connection.checkInputFiles()
        if let metricsFile {
            try InputFile.checkWritable(metricsFile, what: "metrics file", label: "--metrics-file")
        }
        // Fails early, naming the fix, when the queue is not there, not kkpush's, newer than this kkpush, or the
        // user may not claim and write rows.
        let store = PushQueueStore(url: url, connections: lanes + 1)
        do {
            let schema = try await store.checkSchema(grant: .worker)
            if let warning = schema.olderWarning { StandardError.line("warning: \(FlagWords.common.apply(warning))") }
            try await store.checkWorkerPrivileges()
        } catch {
            await store.close()
            throw error
        }
        let clientConfiguration = try connection.clientConfiguration(capacity)
        // With --credentials, a client per credential, picked by the row's `credential` (or its topic and
        // environment); else one client for every row.
        let router: any QueueClientRouter =
            if let set = try connection.credentialSet() {
                CredentialFileRouter(router: ProviderClientRouter(credentials: set, configuration: clientConfiguration))
            } else {
                SingleClientRouter(client: try APNsClient(configuration: clientConfiguration))
            }
        var configuration = QueueWorkerConfiguration(
            owner: workerID ?? QueueWorkerConfiguration.defaultOwner(), batchSize: batchSize, lanes: lanes,
            lease: lease, maxAttempts: maxClaims, backoff: .init(base: retryBase, maximum: max(retryBase, 300)),
            pollInterval: pollInterval, exitWhenEmpty: exitWhenEmpty, grace: grace,
            progressInterval: progressInterval)
        configuration.configurationFailureLimit = credentialFailureLimit
        // --url is one host: it stands in for sandbox (a worker has no --env); production rows are held.
        configuration.servedEnvironments = connection.servedEnvironments(.sandbox)
        configuration.endpointHint = ConnectionOptions.endpointHint
        if connection.url != nil {
            StandardError.line(
                "worker: --url stands in for sandbox only; production rows are held until a worker with --production-url (or Apple's host) sends them."
            )
        }
        let metrics = QueueMetrics()
        let json = self.json
        let metricsFile = self.metricsFile
        let owner = configuration.owner
        let worker = QueueWorker(
            store: store, router: router, configuration: configuration, metrics: metrics,
            onEvent: { event in
                switch event {
                case .progress(let counts, let elapsed):
                    Self.report(
                        QueueWorkerEvent("progress", worker: owner, counts: counts, elapsed: elapsed), json: json)
                    if let metricsFile { Self.writeMetrics(metrics, to: metricsFile) }
                case .listening:
                    if !json { StandardError.line("worker \(owner): listening on kkpush_push_queue") }
                case .databaseError(let words, let wait):
                    StandardError.line(
                        "warning: worker \(owner): \(FlagWords.common.apply(words)) (trying again in \(String(format: "%.1f", wait)) s)"
                    )
                case .held(let count, let words):
                    StandardError.line(
                        "warning: worker \(owner): \(count) row\(count == 1 ? "" : "s") held, not sent or not accepted for this worker's own configuration: \(FlagWords.common.apply(words)) They wait in the queue (retry, claims not counted)."
                    )
                }
            })
        Signals.ignore(SIGPIPE)
        let signals = SignalWatch([SIGINT, SIGTERM]) { number in
            let name = number == SIGINT ? "SIGINT" : "SIGTERM"
            if worker.stop() {
                StandardError.line(
                    "\(name): no new claims; pushes in flight get up to \(Int(grace)) s (a second signal stops at once)."
                )
            } else {
                StandardError.line("\(name) again: stopping now; pushes in flight go back to the queue.")
            }
        }
        defer { signals.keep() }
        let ending = await worker.run()
        await store.close()
        Self.report(QueueWorkerEvent(ending: ending, worker: owner), json: json)
        if let metricsFile { Self.writeMetrics(metrics, to: metricsFile) }
        if let failure = ending.failure { throw failure }
    }

    /// A progress or final line: one JSON line on stdout with --json (a stream of them, one object a line), else
    /// a line on stderr.
    private static func report(_ event: QueueWorkerEvent, json: Bool) {
        if json {
            print(Output.json(encoding: event).description)
        } else {
            for line in event.textLines { StandardError.line(line) }
        }
    }

    private static func writeMetrics(_ metrics: QueueMetrics, to path: String) {
        do {
            try AtomicFile.write(metrics.exposition(), to: path)
        } catch {
            StandardError.line(
                "warning: Cannot write the metrics file '\(path)': \(ErrorWords.describe(error)) (--metrics-file).")
        }
    }
}
