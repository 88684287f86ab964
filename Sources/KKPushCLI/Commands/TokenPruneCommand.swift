import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem

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
                plan: plan, applied: report, webhook: .init(posts), evidence: evidence, sql: sql,
                store: location.display)
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
}

// The report and the webhook's tally are KKPushDiagnosis's (`TokenPruneReport.swift`, beside the plan); the text a
// person reads ends here, with what names this command's flags.

extension TokenPruneReport: CommandReport {
    var textLines: [String] {
        var lines = planLines
        if applied != nil {
            lines += appliedLines
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
