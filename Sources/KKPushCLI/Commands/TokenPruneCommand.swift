import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem
import Synchronization

/// `kkpush token prune`: the enrollments whose tokens APNs says are dead, as a plan (text, JSON, SQL), and with
/// `--apply` the guarded clears in one transaction.
struct TokenPruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract:
            "Plan (and with --apply run) clearing the tokens APNs says are dead, guarded against re-registration.",
        discussion: """
            Gathers APNs' answers from send-batch result files (--ledger, oldest first: 410 lines with Apple's \
            timestamp, BadDeviceToken lines, accepted lines; a later line, or a line of a later file, is a later \
            answer), audit --probe state files (--audit-state: answers of both environments, keyed by the token's \
            SHA-256) and the push queue's table kkpush_push_queue (--queue URL: rows with reason Unregistered, \
            ExpiredToken or BadDeviceToken, and accepted rows with their updated_at), then reads every enrollment \
            holding a token (the store opened read-only) and plans a clear for each whose token is dead: a 410 \
            whose timestamp is later than the token's registration (token_updated_at, else updated_at, compared in \
            whole seconds), or BadDeviceToken in both environments (a probe's answers) later than it. Tokens are \
            matched case-insensitively (APNs tokens are hex). A push to the token accepted after the dead answer \
            (accepted-later), or accepted with no way to tell whether before or after it (accepted-order-unknown: \
            an accepted ledger line against another source's answer), a BadDeviceToken from one environment only, \
            an answer without a time, a probe that found an environment knowing the token, or a registration at or \
            after the answer keeps the token; the plan says which and why. Clearing sets \
            apns_token (and token_updated_at where the table has it) to NULL and leaves the row, its other columns \
            and updated_at as they are (the enrollment stays; the app registers a new token when it next starts). \
            Without --apply nothing is written. --apply runs the plan in one transaction, each clear guarded: the \
            row is changed only if it still holds the token, registered before APNs' answer; it reports the rows \
            changed and those skipped (re-registered, token changed, row gone). --sql FILE writes the plan as one \
            SQL transaction for psql or sqlite3 (it holds whole tokens: written with mode 0600); text and --json \
            show token prefixes only. --webhook URL, with --apply, POSTs each token the transaction cleared as JSON \
            once it has committed (gorush's feedback hook: platform, token, tenant, device_id, reason, dead_at, \
            evidence), with a timeout and bounded retries; a skipped row is not posted, and without --apply nothing \
            is posted (the plan says how many tokens --apply would post). A failed POST is reported, never fatal. \
            Exit status: 0 done, 1 when --apply skipped a row or a webhook POST failed, 2 when an input or the \
            store cannot be used, 64 for bad flags.
            """)

    @OptionGroup var storeOptions: StoreOptions
    var store: String? { storeOptions.store }
    var schemaMap: String? { storeOptions.schemaMap }

    @Option(name: .long, help: "A send-batch result file (JSON lines; repeatable, oldest first).")
    var ledger: [String] = []

    @Option(name: .customLong("audit-state"), help: "An audit --probe --state file (repeatable).")
    var auditState: [String] = []

    @Option(name: .long, help: "A postgres:// URL of the database holding the push queue (kkpush_push_queue).")
    var queue: String?

    @Option(name: .long, help: "Write the plan as one SQL transaction to FILE (mode 0600: it holds whole tokens).")
    var sql: String?

    @Flag(help: "Print the plan (and what --apply did) as JSON.") var json = false

    @Flag(help: "Run the plan: clear the dead tokens in one transaction (default: write nothing).") var apply = false

    @Option(
        name: .long,
        help: "With --apply: POST each token cleared as JSON to this http:// or https:// URL (a dry run posts nothing)."
    )
    var webhook: String?

    @Option(
        name: .customLong("webhook-timeout"), parsing: .unconditional,
        help: "With --webhook: seconds per attempt (0.1 to 60).")
    var webhookTimeout: Double = 5

    @Option(name: .customLong("webhook-attempts"), help: "With --webhook: attempts per token (1 to 10).")
    var webhookAttempts: Int = 3

    @Option(name: .customLong("batch-size"), help: "Rows read per batch (1 to 100000).")
    var batchSize: Int = 5000

    func validate() throws {
        guard (1...100_000).contains(batchSize) else {
            throw ValidationError("--batch-size must be 1 to 100000 (got \(batchSize)).")
        }
        guard webhookTimeout.isFinite, (0.1...60).contains(webhookTimeout) else {
            throw ValidationError("--webhook-timeout must be 0.1 to 60 seconds.")
        }
        guard (1...10).contains(webhookAttempts) else {
            throw ValidationError("--webhook-attempts must be 1 to 10 (got \(webhookAttempts)).")
        }
        try TextFlags.nonEmpty([
            ("--store", store), ("--schema-map", schemaMap), ("--queue", queue), ("--sql", sql),
            ("--webhook", webhook),
        ])
        for (flag, values) in [("--ledger", ledger), ("--audit-state", auditState)] where values.contains("") {
            throw ValidationError("\(flag) needs a file.")
        }
        if ledger.isEmpty && auditState.isEmpty && queue == nil {
            throw ValidationError(
                "token prune needs APNs' answers: give --ledger FILE, --audit-state FILE or --queue URL.")
        }
        if let webhook {
            let lower = webhook.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
                throw ValidationError("--webhook must be an http:// or https:// URL.")
            }
        }
        if let queue, !PostgresURL.looksLikeURL(queue) {
            throw ValidationError("--queue must be a postgres:// URL (the push queue's database).")
        }
    }

    /// --store, else $DATABASE_URL; and which of the two it is.
    var storeSource: (value: String, flag: String)? {
        EnrollmentStoreLocation.flagOrEnvironment(store, flag: "--store")
    }

    func run() async throws {
        let failed = try await reportingErrors { () async throws -> Bool in
            guard let (value, flag) = storeSource else {
                throw CLIError.usage(
                    .storeUrlInvalid, "token prune needs a store: --store was not given and DATABASE_URL is not set.",
                    fix: "kkpush token prune --store enrollments.sqlite --ledger results.jsonl (or set DATABASE_URL).")
            }
            let location = try EnrollmentStoreLocation.parse(value, origin: flag)
            if schemaMap != nil, location.sqlitePath != nil {
                throw CLIError.usage(
                    .schemaMapSQLite, "--schema-map maps a PostgreSQL table, but \(flag) \(value) is an SQLite file.",
                    fix: "Give a postgres:// URL, or leave out --schema-map.")
            }
            if let path = location.sqlitePath { try EnrollmentStoreFile.checkExisting(path, label: flag) }
            let mapping = try schemaMap.map { try EnrollmentTableMapping.load(path: $0) }

            var evidence = DeadTokenEvidenceSet()
            for path in ledger { try evidence.readLedger(path: path, label: "--ledger") }
            for path in auditState { try evidence.readAuditState(path: path, label: "--audit-state") }
            if let queue {
                try await evidence.readPushQueue(
                    url: try PostgresURL(parsing: queue, origin: "--queue"), batchSize: batchSize)
            }

            let hook = webhook.map {
                WebhookPost.Settings(
                    url: $0, timeout: .milliseconds(Int64((webhookTimeout * 1000).rounded())), attempts: webhookAttempts
                )
            }
            let posts = WebhookTally()
            let plan = try await DeadTokenPlan.make(
                evidence: evidence, location: location, mapping: mapping, batchSize: batchSize)
            if !json { for note in plan.notes { Output.printError("note: \(note)") } }

            let clears = plan.dead.map(\.clear)
            if let sql, let table = plan.table {
                do {
                    try AtomicFile.write(
                        Array(TokenRegistrations.script(clears, table: table).utf8), to: sql, mode: 0o600)
                } catch let error as AtomicFile.Failure {
                    throw CLIError.input(
                        .outputWriteFailed, "--sql \(sql) cannot be written: \(error.text).",
                        fix: "Give a file in a directory you can write to.")
                }
            }
            let report = apply ? try await TokenRegistrations.clear(clears, in: location, mapping: mapping) : nil
            // The webhook says what was done, not what was planned: only the tokens the committed transaction
            // cleared are posted (a receiver acts on them: a token the guard kept, or a dry run, must not reach it).
            if let hook, let report {
                posts.used = true
                let entries = Dictionary(
                    plan.dead.map { (Self.clearKey($0.clear), $0) }, uniquingKeysWith: { first, _ in first })
                for clear in report.cleared {
                    guard let entry = entries[Self.clearKey(clear)] else { continue }
                    posts.record(entry, await WebhookPost.post(entry.webhookBody, settings: hook))
                }
            } else if hook != nil {
                posts.wouldPost = plan.dead.count
            }

            let pruned = TokenPruneReport(
                plan: plan, applied: report, webhook: .init(posts), answers: evidence.count,
                evidenceLine: Self.evidenceLine(evidence), sql: sql, store: location.display)
            Output.printReport(pruned, json: json)
            for failure in posts.failures {
                Output.printError("webhook: \(failure)")
            }
            return (report?.skipped.isEmpty == false) || !posts.failures.isEmpty
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    /// A clear's row and token: which plan entry it came from.
    static func clearKey(_ clear: GuardedTokenClear) -> [String] { [clear.tenantSlug, clear.deviceID, clear.token] }

    static func evidenceLine(_ evidence: DeadTokenEvidenceSet) -> String {
        let read = [DeadTokenEvidence.Source.ledger, .auditState, .pushQueue].compactMap { source in
            evidence.read[source].map { "\(source.rawValue): \($0) \(source == .pushQueue ? "rows" : "lines")" }
        }
        return "\(evidence.count) token\(evidence.count == 1 ? "" : "s") with answers (\(read.joined(separator: "; ")))"
    }

    static func skipWords(_ why: GuardedClearReport.Skip) -> String {
        switch why {
        case .gone: "the row is gone"
        case .tokenChanged: "the row holds another token now (or none)"
        case .reRegistered(let at):
            "re-registered since APNs' answer (registered \(at.map(DeadTokenEvidence.format) ?? "at an unknown time"))"
        }
    }

    static func skipCode(_ why: GuardedClearReport.Skip) -> String {
        switch why {
        case .gone: "gone"
        case .tokenChanged: "token-changed"
        case .reRegistered: "re-registered"
        }
    }
}

/// What `token prune` says: the plan (dead tokens with their evidence, kept ones with why), what `--apply` did and
/// what the webhook posted.
///
/// JSON: the plan's `dead`, `kept`, `rows_read`, `unmatched` and `notes`; `store`, `answers` (tokens with answers),
/// `sql` (the file written, or null), `applied` ({cleared, skipped: [{tenant, device_id, token_prefix, why}]}, null
/// without `--apply`) and `webhook` ({posted, failed, would_post (null unless a dry run with `--webhook`)}).
struct TokenPruneReport: CommandReport, Sendable {
    /// The webhook's tally when the report was made.
    struct Webhook: Sendable, Encodable {
        var posted: Int
        var failed: [String]
        var wouldPost: Int?
        var used: Bool

        init(_ tally: WebhookTally) {
            posted = tally.posted
            failed = tally.failures
            wouldPost = tally.wouldPost
            used = tally.used
        }

        enum CodingKeys: String, CodingKey {
            case posted, failed
            case wouldPost = "would_post"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(posted, forKey: .posted)
            try c.encode(failed, forKey: .failed)
            try c.encode(wouldPost, forKey: .wouldPost)
        }
    }

    /// A row `--apply` did not change, as JSON.
    struct Skipped: Encodable {
        var clear: GuardedTokenClear
        var why: GuardedClearReport.Skip
        enum CodingKeys: String, CodingKey {
            case tenant, why
            case deviceID = "device_id"
            case tokenPrefix = "token_prefix"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(clear.tenantSlug, forKey: .tenant)
            try c.encode(clear.deviceID, forKey: .deviceID)
            try c.encode(DeviceToken.redacted(clear.token), forKey: .tokenPrefix)
            try c.encode(TokenPruneCommand.skipCode(why), forKey: .why)
        }
    }

    /// What `--apply` did, as JSON.
    struct Applied: Encodable {
        var report: GuardedClearReport
        enum CodingKeys: String, CodingKey { case cleared, skipped }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(report.cleared.count, forKey: .cleared)
            try c.encode(report.skipped.map { Skipped(clear: $0.clear, why: $0.why) }, forKey: .skipped)
        }
    }

    var plan: DeadTokenPlan
    /// What `--apply` did (nil: a dry run).
    var applied: GuardedClearReport?
    var webhook: Webhook
    /// Tokens with answers.
    var answers: Int
    /// The answers read, in words (``TokenPruneCommand/evidenceLine(_:)``).
    var evidenceLine: String
    var sql: String?
    var store: String

    enum CodingKeys: String, CodingKey {
        case dead, kept, unmatched, notes, store, answers, sql, applied, webhook
        case rowsRead = "rows_read"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        // Each entry as the plan writes it (tokens by prefix only).
        try c.encode(plan.dead.map(\.json), forKey: .dead)
        try c.encode(plan.kept.map(\.json), forKey: .kept)
        try c.encode(plan.rowsRead, forKey: .rowsRead)
        try c.encode(plan.unmatched, forKey: .unmatched)
        try c.encode(plan.notes, forKey: .notes)
        try c.encode(store, forKey: .store)
        try c.encode(answers, forKey: .answers)
        try c.encode(sql, forKey: .sql)
        try c.encode(applied.map(Applied.init), forKey: .applied)
        try c.encode(webhook, forKey: .webhook)
    }

    var textLines: [String] {
        var lines = [
            "Store: \(store) (\(plan.rowsRead) rows holding a token read)",
            "Answers: \(evidenceLine); \(plan.unmatched) held by no enrollment.",
            "",
            "Dead (\(plan.dead.count)): APNs says the token is gone, after it was registered:",
        ]
        for e in plan.dead {
            lines.append(
                "  \(e.row.tenantSlug)/\(e.row.deviceID)  token \(e.tokenPrefix)  registered \(e.row.registeredAt.map(DeadTokenEvidence.format) ?? "?") (\(e.row.registeredColumn))"
            )
            for ev in e.evidence { lines.append("    \(ev.summary)") }
        }
        if plan.dead.isEmpty { lines.append("  none") }
        lines.append("")
        lines.append("Kept (\(plan.kept.count)): answers that are not enough to clear the token:")
        for k in plan.kept {
            lines.append(
                "  \(k.row.tenantSlug)/\(k.row.deviceID)  token \(k.tokenPrefix)  \(k.why.rawValue): \(k.explanation)")
            for ev in k.evidence { lines.append("    \(ev.summary)") }
        }
        if plan.kept.isEmpty { lines.append("  none") }
        lines.append("")
        if let sql {
            lines.append(
                "Plan written to \(sql): \(plan.dead.count) guarded clear\(plan.dead.count == 1 ? "" : "s") in one transaction."
            )
        }
        if let applied {
            lines.append(
                "Applied in one transaction: \(applied.cleared.count) token\(applied.cleared.count == 1 ? "" : "s") cleared, \(applied.skipped.count) skipped."
            )
            for s in applied.skipped {
                lines.append(
                    "  skipped \(s.clear.tenantSlug)/\(s.clear.deviceID) token \(DeviceToken.redacted(s.clear.token)): \(TokenPruneCommand.skipWords(s.why))"
                )
            }
        } else {
            lines.append(
                "Nothing written: add --apply to clear \(plan.dead.count) token\(plan.dead.count == 1 ? "" : "s").")
        }
        if let would = webhook.wouldPost {
            lines.append(
                "Webhook: nothing posted; with --apply it would be posted for the \(would) token\(would == 1 ? "" : "s") the transaction clears."
            )
        } else if applied != nil && webhook.used {
            lines.append("Webhook: \(webhook.posted) posted, \(webhook.failed.count) failed.")
        }
        return lines
    }
}

/// The webhook's POSTs: delivered, and the failures in words (token prefixes only); on a dry run, how many tokens
/// --apply would post.
final class WebhookTally: Sendable {
    private struct Tally {
        var delivered = 0
        var failed: [String] = []
        var planned: Int?
        var given = false
    }
    private let tally = Mutex(Tally())

    /// A dry run with --webhook: the tokens --apply would clear, and so post.
    var wouldPost: Int? {
        get { tally.withLock { $0.planned } }
        set { tally.withLock { $0.planned = newValue } }
    }

    /// Whether --webhook was given with --apply (then the summary says what was posted, even none).
    var used: Bool {
        get { tally.withLock { $0.given } }
        set { tally.withLock { $0.given = newValue } }
    }

    func record(_ entry: DeadTokenPlan.Entry, _ answer: WebhookPost.Answer) {
        tally.withLock { t in
            if answer.delivered {
                t.delivered += 1
            } else {
                t.failed.append(
                    "\(entry.row.tenantSlug)/\(entry.row.deviceID) token \(entry.tokenPrefix): \(answer.error ?? "failed") after \(answer.attempts) attempt\(answer.attempts == 1 ? "" : "s")"
                )
            }
        }
    }

    var posted: Int { tally.withLock { $0.delivered } }
    var failures: [String] { tally.withLock { $0.failed } }
}
