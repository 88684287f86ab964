import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushQueue

/// `kkpush queue history`: the attempt ledger (`public.kkpush_push_attempts`), newest first.
struct QueueHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "The attempt ledger: every attempt workers made, by push, token or time, newest first.",
        discussion: """
            Reads public.kkpush_push_attempts (queue schema version 6): one row per attempt a worker made, written \
            with the row's outcome: time, worker, queue row id, device token, apns-id, status, reason, latency and \
            outcome (accepted, rejected, retry, dead, held, returned, lease_lost). Workers prune it after \
            --attempt-retention (default 30 days). Each queue row's history column keeps the same attempts as JSON \
            beside the row (the DocC article PushQueue).
            """)

    @OptionGroup var database: QueueDatabaseOptions
    @Option(name: .customLong("push"), parsing: .unconditional, help: "Only the attempts of this queue row (its id).")
    var push: Int64?
    @Option(help: "Only the attempts at this device token (hex, any case).") var token: String?
    @Option(
        help: "Only attempts since then: a time back from now (90m, 24h, 7d, 3600s) or an ISO 8601 time.")
    var since: String?
    @Option(help: "Only attempts before then: a time back from now (90m, 24h, 7d) or an ISO 8601 time.")
    var until: String?
    @Option(parsing: .unconditional, help: "At most this many attempts, 1 to 100000.") var limit: Int = 100
    @Flag(
        help:
            "Print a JSON object: attempts (id, at, worker, connection_id, queue_id, attempt, device_token, environment, apns_id, status, reason, latency_ms, outcome, possibly_duplicated), truncated."
    )
    var json = false

    func validate() throws {
        try NumericFlags.integer(limit, flag: "--limit", in: 1...100_000)
        if let push, push < 1 { throw ValidationError("--push \(push) is not a queue row id: ids start at 1.") }
        if let token {
            let trimmed = token.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || !trimmed.allSatisfy(\.isHexDigit) {
                throw ValidationError("--token '\(token)' is not a hex device token.")
            }
        }
        for (flag, value) in [("--since", since), ("--until", until)] {
            if let value, ReceiptsCommand.parseSince(value, now: Date()) == nil {
                throw ValidationError(
                    "\(flag) '\(value)' is neither a time back from now (90m, 24h, 7d, 3600s) nor an ISO 8601 time (2027-01-15T09:30:00Z)."
                )
            }
        }
    }

    func run() async throws {
        try await reportingErrors {
            let url = try database.url()
            let now = Date()
            let query = QueueHistoryQuery(
                queueID: push, deviceToken: token?.trimmingCharacters(in: .whitespaces),
                since: since.flatMap { ReceiptsCommand.parseSince($0, now: now) }?.timeIntervalSince1970,
                until: until.flatMap { ReceiptsCommand.parseSince($0, now: now) }?.timeIntervalSince1970,
                limit: limit)
            let report = try await PushQueueStore.withStore(url: url) { try await $0.attempts(query) }
            Output.printReport(report, json: json)
        }
    }
}

extension QueueHistoryReport: CommandReport {}
