import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushQueue
import KKPushStore
import KKPushSystem

/// `kkpush queue`: the push queue in PostgreSQL that `kkpush worker` drains.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "The push queue in PostgreSQL (kkpush_push_queue) that kkpush worker drains.",
        discussion: """
            A backend enqueues a push with one INSERT into public.kkpush_push_queue in its own transaction; \
            kkpush worker sends it and writes its outcome in the row. The DocC article PushQueue lists the table \
            and the statement.
            """,
        subcommands: [
            QueueMigrateCommand.self, QueueStatusCommand.self, QueueEnqueueCommand.self, QueueHistoryCommand.self,
            QueuePruneKeysCommand.self,
        ])
}

/// The queue's `--db`: a PostgreSQL connection string (default `$DATABASE_URL`).
struct QueueDatabaseOptions: ParsableArguments {
    @Option(
        help:
            "The PostgreSQL database of the queue: a connection string as libpq reads it, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...] or key=value pairs, with the PG* variables and ~/.pgpass (default: $DATABASE_URL)."
    )
    var db: String?

    /// The parsed connection string.
    func url() throws -> PostgresURL {
        let environment = CommandIO.current.environment
        let (text, origin): (String, String)
        if let db {
            (text, origin) = (db, "--db")
        } else if let fromEnvironment = environment["DATABASE_URL"], !fromEnvironment.isEmpty {
            (text, origin) = (fromEnvironment, "DATABASE_URL")
        } else {
            throw CLIError.usage(
                .storeUrlInvalid, "The push queue needs a PostgreSQL database: give --db or set DATABASE_URL.",
                fix: "Give --db postgres://USER@HOST/DB (the database the backend writes its queue rows into).")
        }
        guard PostgresURL.looksLikeURL(text) else {
            throw CLIError.usage(
                .storeUrlInvalid,
                "\(origin) is not a PostgreSQL connection string: the push queue lives in PostgreSQL.",
                fix: "Give postgres://USER@HOST/DB, or host=HOST dbname=DB.")
        }
        return try PostgresURL(parsing: text, origin: origin, environment: environment)
    }
}

/// `kkpush queue migrate`.
struct QueueMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create kkpush's queue table, its indexes and the NOTIFY trigger (versioned; idempotent).",
        discussion: """
            Applies the queue's schema versions not yet applied (recorded in public.kkpush_push_queue_versions), in \
            one transaction under an advisory lock: public.kkpush_push_queue, the indexes workers claim by, and a \
            statement-level AFTER INSERT trigger that sends NOTIFY kkpush_push_queue. Only kkpush's own tables: the \
            backend's are never changed. A second run applies nothing and says so.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Flag(help: "Print a JSON object: database, applied (a list), version, changed.") var json = false

    func run() async throws {
        try await reportingErrors {
            Output.printReport(try await PushQueueSchema.migrateReport(url: try database.url()), json: json)
        }
    }
}

extension QueueMigrationReport: CommandReport {}

/// `kkpush queue status`.
struct QueueStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Rows of the push queue by state, the oldest waiting row's age, and the possibly duplicated.",
        discussion: """
            States: queued, scheduled (held back until not_before: quiet hours, a device cap, a rate), leased, \
            retry; final: accepted, rejected, dead, collapsed (a newer push of the same kind for the device \
            superseded it at its cap). Then what waits for a time, by reason (scheduled: a send time; \
            quiet-hours, device-cap, rate, retry), with how many rows and the earliest and latest time (UTC).
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Flag(
        help:
            "Print a JSON object: counts (by state), waiting, oldest_waiting_seconds, possibly_duplicated, expired_leases, version, waits (reason, rows, earliest, latest), webhooks (pending, delivered, failed; from schema version 6)."
    )
    var json = false

    func run() async throws {
        try await reportingErrors {
            let report = try await PushQueueStore.statusReport(url: try database.url())
            for warning in report.warnings { StandardError.line("warning: \(FlagWords.common.apply(warning))") }
            Output.printReport(report, json: json)
        }
    }
}

extension QueueStatusReport: CommandReport {
    /// The states as a table, then the oldest waiting row's age, the possibly duplicated and the expired leases.
    var textLines: [String] {
        var lines = Output.table(PushQueueStatus.states.map { [$0, String(status.counts[$0] ?? 0)] })
        lines.append(
            "oldest waiting: \(status.oldestWaitingSeconds.map { "\(String(format: "%.1f", $0)) s" } ?? "none waiting")"
        )
        lines.append("possibly duplicated: \(status.possiblyDuplicated)")
        if status.expiredLeases > 0 {
            lines.append("expired leases: \(status.expiredLeases) (a worker stopped; the next claim takes them)")
        }
        // What waits for a time, and until when: a send time, quiet hours, a device cap, a rate, a retry.
        for wait in status.waits {
            let until = wait.earliest == wait.latest ? wait.earliest : "\(wait.earliest) to \(wait.latest)"
            lines.append("waiting for \(wait.reason): \(wait.rows) until \(until)")
        }
        if let webhooks, webhooks.pending + webhooks.delivered + webhooks.failed > 0 {
            lines.append(
                "webhook events: \(webhooks.pending) pending, \(webhooks.delivered) delivered, \(webhooks.failed) failed\(webhooks.failed > 0 ? " (given up after their attempts: see kkpush_webhook_outbox.last_error)" : "")"
            )
        }
        return lines
    }
}

/// `kkpush queue prune-keys`.
struct QueuePruneKeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune-keys",
        abstract: "Clear the idempotency keys of rows that ended longer ago than the retention.",
        discussion: """
            A row keeps its idempotency key while it waits and for --idempotency-retention days after it ended \
            (accepted, rejected, dead, collapsed); then the key is cleared so it may be used again. The row, its \
            outcome and history stay. Workers do the same every hour; this runs it once.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(
        name: .customLong("idempotency-retention"), parsing: .unconditional,
        help: "Days an ended row keeps its idempotency key, 1 to 3650.")
    var idempotencyRetention: Int = 30
    @Flag(help: "Print a JSON object: pruned, retention_days.") var json = false

    func validate() throws {
        try NumericFlags.integer(idempotencyRetention, flag: "--idempotency-retention", in: 1...3650)
    }

    func run() async throws {
        try await reportingErrors {
            let days = idempotencyRetention
            let pruned = try await PushQueueStore.withStore(url: try database.url()) { store in
                _ = try await store.checkSchema(grant: .worker)
                return try await store.pruneIdempotencyKeys(retention: Double(days) * 86_400)
            }
            Output.printReport(QueuePruneKeysReport(pruned: pruned, retentionDays: days), json: json)
        }
    }
}

/// What `queue prune-keys` cleared.
struct QueuePruneKeysReport: CommandReport {
    var pruned: Int
    var retentionDays: Int

    enum CodingKeys: String, CodingKey {
        case pruned
        case retentionDays = "retention_days"
    }

    var textLines: [String] {
        [
            "cleared \(pruned) idempotency key\(pruned == 1 ? "" : "s") of rows that ended more than \(retentionDays) days ago"
        ]
    }
}

/// `kkpush queue enqueue`.
struct QueueEnqueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Queue one push per device token of a file (or stdin), for tests and operators.",
        discussion: """
            Each non-empty line that does not start with # is a hex device token; every push gets the same topic, \
            payload and environment. Before anything is queued the push is checked as send checks it: the payload \
            is a JSON object within the push type's limit (4096 bytes, 5120 for voip), the priority 10, 5 or 1, \
            the topic not empty; an error names the flag and nothing is queued (exit 64). A backend enqueues \
            with its own INSERT instead (the DocC article PushQueue).

            --idempotency-key: a token whose row already has the key for the topic is not queued again (counted \
            as repeated). --at with --time-zone: the rows wait until that local time (not_before). \
            --quiet-hours: the rows' own quiet window instead of the worker's.
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(help: "Token file, one hex token per line; - for stdin.") var tokens: String
    @Option(help: "apns-topic: the bundle ID.") var topic: String
    @Option(help: "APNs environment: sandbox or production.") var env: String = "sandbox"
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(parsing: .unconditional, help: "apns-priority: 10, 5 or 1.") var priority: Int?
    @Option(help: "The credential's name (a key of a credentials file); stored for the worker's router.")
    var credential: String?
    @Option(
        name: .customLong("idempotency-key"),
        help:
            "A key unique per topic and device while kept: a push whose key is already queued for its token is not queued again (counted as repeated)."
    )
    var idempotencyKey: String?
    @Option(
        name: .customLong("at"),
        help: ArgumentHelp(
            "Send no earlier than this local time, YYYY-MM-DD HH:MM, in --time-zone (a time the clocks skip becomes the first instant after; one they repeat, its first occurrence).",
            valueName: "local-time"))
    var at: String?
    @Option(
        name: .customLong("time-zone"),
        help: "The IANA time zone of --at (Europe/Amsterdam); required with --at.")
    var timeZone: String?
    @Option(
        name: .customLong("quiet-hours"),
        help: ArgumentHelp(
            "The rows' own quiet window, ZONE=HH:MM-HH:MM (Europe/Amsterdam=22:00-07:00), or none: instead of the worker's --quiet-hours.",
            valueName: "zone=start-end"))
    var quietHours: String?
    @OptionGroup var payloadOptions: PayloadOptions
    @Flag(help: "Print a JSON object: enqueued, first_id, last_id, repeated.") var json = false

    func validate() throws {
        if APNsEnvironment(lenient: env) == nil {
            throw ValidationError("--env '\(env)' is neither sandbox nor production.")
        }
        if topic.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError("--topic is empty: give the app's bundle id (plus the push type's suffix).")
        }
        if let pushType, pushType.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError(
                "--push-type is empty: give a push type such as alert or background, or leave it out.")
        }
        if let credential, credential.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ValidationError(
                "--credential is empty: give a name from the worker's credentials file, or leave it out.")
        }
        if let idempotencyKey, idempotencyKey.trimmingCharacters(in: .whitespaces).isEmpty || idempotencyKey.count > 200
        {
            throw ValidationError("--idempotency-key must be 1 to 200 characters, not blank.")
        }
        if (at == nil) != (timeZone == nil) {
            throw ValidationError("--at and --time-zone go together: the local send time and the zone it is read in.")
        }
        do {
            _ = try schedule()
        } catch let error as KKPushError {
            throw ValidationError(FlagWords.common.apply("\(error.message) \(error.fix ?? "")"))
        }
        if payloadOptions.payload == nil, !payloadOptions.hasBuilderFlags {
            throw ValidationError("Give a payload: --payload FILE or the payload flags (--title, --body, ...).")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let url = try database.url()
            let bytes = try InputFile.read(
                tokens, what: "token file", label: "--tokens", maximumSize: 256 << 20)
            let (payload, suggested, _) = try payloadOptions.build()
            let environment = APNsEnvironment(lenient: env) ?? .sandbox
            let type = pushType ?? suggested.rawValue
            // What APNs would reject for every row is refused here, before the store is touched.
            try Self.preflight(
                NotificationRequest(
                    deviceToken: String(repeating: "0", count: 64), topic: topic, pushType: PushType(type),
                    priority: priority, payload: payload))
            var push = QueueInsert(
                deviceToken: "", topic: topic, pushType: type, priority: priority,
                payload: String(decoding: payload, as: UTF8.self), environment: environment, credential: credential)
            (push.notBefore, push.idempotencyKey, push.quietHours) = try schedule()
            let report = try await PushQueueStore.enqueueReport(
                url: url, tokens: bytes, source: "--tokens \(tokens)", push: push)
            for warning in report.warnings { StandardError.line("warning: \(FlagWords.common.apply(warning))") }
            Output.printReport(report, json: json)
        }
    }

    /// The send time (`--at` in `--time-zone`, as an instant), the key and the rows' own quiet window.
    func schedule() throws -> (notBefore: String?, key: String?, quietHours: String?) {
        var notBefore: String?
        if let at, let timeZone {
            let zone = try LocalTime.zone(timeZone, field: "timeZone")
            notBefore = ISO8601DateFormatter().string(from: try LocalTime.instant(at, in: zone, field: "sendAt"))
        }
        if let quietHours, quietHours.lowercased() != "none" {
            _ = try QuietHours(parsing: quietHours, field: "quietHours")
        }
        return (notBefore, idempotencyKey, quietHours)
    }

    /// Refuses a push APNs would reject (the pre-flight rules `send` uses): every row would end `rejected`. The
    /// error names the flags at fault (exit 64); warnings (a background push without priority: the worker sends
    /// it at 5) do not stop it.
    static func preflight(_ request: NotificationRequest) throws {
        let check = APNsRequestRules.preflight(request, authentication: .token)
        let errors = check.errors.filter { $0.code != .badDeviceToken && $0.code != .missingDeviceToken }
        guard let first = errors.first else { return }
        let flags = Array(Set(errors.compactMap { SendCommand.preflightFlags[$0.code] })).sorted()
        let reasons = errors.map {
            "\($0.code): \($0.message.hasSuffix(".") ? String($0.message.dropLast()) : $0.message)"
        }
        throw CLIError.usage(
            .queuePushInvalid,
            "APNs would reject every push of this enqueue (\(flags.isEmpty ? "the options" : flags.joined(separator: ", "))): \(reasons.joined(separator: "; ")). Nothing was queued.",
            fix: first.fix)
    }
}

extension QueueEnqueueReport: CommandReport {}
