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
        subcommands: [QueueMigrateCommand.self, QueueStatusCommand.self, QueueEnqueueCommand.self])
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
        abstract: "Rows of the push queue by state, the oldest waiting row's age, and the possibly duplicated.")

    @OptionGroup var database: QueueDatabaseOptions
    @Flag(
        help:
            "Print a JSON object: counts (by state), waiting, oldest_waiting_seconds, possibly_duplicated, expired_leases, version."
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
        return lines
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
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(help: "Token file, one hex token per line; - for stdin.") var tokens: String
    @Option(help: "apns-topic: the bundle ID.") var topic: String
    @Option(help: "APNs environment: sandbox or production.") var env: String = "sandbox"
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(parsing: .unconditional, help: "apns-priority: 10, 5 or 1.") var priority: Int?
    @Option(help: "The credential's name (a key of a credentials file); stored for the worker's router.")
    var credential: String?
    @OptionGroup var payloadOptions: PayloadOptions
    @Flag(help: "Print a JSON object: enqueued, first_id, last_id.") var json = false

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
            let report = try await PushQueueStore.enqueueReport(
                url: url, tokens: bytes, source: "--tokens \(tokens)",
                push: QueueInsert(
                    deviceToken: "", topic: topic, pushType: type, priority: priority,
                    payload: String(decoding: payload, as: UTF8.self), environment: environment,
                    credential: credential))
            for warning in report.warnings { StandardError.line("warning: \(FlagWords.common.apply(warning))") }
            Output.printReport(report, json: json)
        }
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
