import Foundation
package import KKPushCore
package import KKPushStore

// What the queue's commands report, as values: `queue migrate`, `queue status`, `queue enqueue` and each of the
// worker's progress and final lines. Each is `Encodable` with explicit coding keys (the JSON field names scripts
// read) and says its text lines where they need none of a command line's words.

/// What `queue migrate` did: the steps applied (none on a second run) and the version the queue is at.
package struct QueueMigrationReport: Encodable, Sendable {
    /// The database, its password masked; and as the text names it (with where the URL came from).
    package var database: String
    package var databaseName: String
    package var applied: [String]
    package var version: Int

    package init(url: PostgresURL, result: PushQueueSchema.MigrationResult) {
        database = url.redacted
        databaseName = url.named
        applied = result.applied
        version = result.version
    }

    /// Whether anything was applied.
    package var changed: Bool { !applied.isEmpty }

    enum CodingKeys: String, CodingKey { case database, applied, version, changed }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(database, forKey: .database)
        try c.encode(applied, forKey: .applied)
        try c.encode(version, forKey: .version)
        try c.encode(changed, forKey: .changed)
    }

    package var textLines: [String] {
        if applied.isEmpty { return ["\(databaseName): nothing changed; the push queue is at version \(version)"] }
        return applied.map { "applied \($0)" } + ["\(databaseName): the push queue is at version \(version)"]
    }
}

extension PushQueueSchema {
    /// `queue migrate`'s engine: ``migrate(url:)``, as its report.
    package static func migrateReport(url: PostgresURL) async throws -> QueueMigrationReport {
        QueueMigrationReport(url: url, result: try await migrate(url: url))
    }
}

/// `queue status`'s report: ``PushQueueStatus`` with the JSON field names, and the warnings of the schema check
/// (said on stderr, not in the document).
package struct QueueStatusReport: Encodable, Sendable {
    package var status: PushQueueStatus
    /// An older queue's note, or a newer queue's warning (the counts may miss what the newer version changed).
    package var warnings: [String]
    /// The webhook outbox by state (schema step 6; nil before it, or for a user that may not read the outbox).
    package var webhooks: QueueWebhookCounts? = nil

    enum CodingKeys: String, CodingKey {
        case counts, waiting, version
        case oldestWaitingSeconds = "oldest_waiting_seconds"
        case possiblyDuplicated = "possibly_duplicated"
        case expiredLeases = "expired_leases"
        case waits
        case webhooks
    }

    /// Every field; `oldest_waiting_seconds` to the tenth, `null` when no row waits.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status.counts, forKey: .counts)
        try c.encode(status.waiting, forKey: .waiting)
        try c.encode(status.oldestWaitingSeconds.map { ($0 * 10).rounded() / 10 }, forKey: .oldestWaitingSeconds)
        try c.encode(status.possiblyDuplicated, forKey: .possiblyDuplicated)
        try c.encode(status.expiredLeases, forKey: .expiredLeases)
        try c.encode(status.version, forKey: .version)
        try c.encode(status.waits, forKey: .waits)
        try c.encodeIfPresent(webhooks, forKey: .webhooks)
    }
}

extension PushQueueStore {
    /// `queue status`'s engine: the schema checked (a queue of a newer kkpush is read with a warning: reading counts
    /// changes nothing; one missing or not kkpush's is refused), then the counts.
    package static func statusReport(url: PostgresURL) async throws -> QueueStatusReport {
        try await withStore(url: url) { store in
            var warnings: [String] = []
            do {
                let schema = try await store.checkSchema()
                if let warning = schema.olderWarning { warnings.append(warning) }
            } catch let error as KKPushError where error.code == .queueSchemaNewer {
                warnings.append(
                    "\(error.message) The counts below may miss what the newer version changed; workers and enqueue of this kkpush refuse it."
                )
            }
            var report = QueueStatusReport(status: try await store.status(), warnings: warnings)
            // The outbox's counts where there is one this user may read (webhooks: <doc:PushQueue>).
            if report.status.version >= QueueLedgerSchema.version {
                report.webhooks = try? await store.webhookCounts()
            }
            return report
        }
    }

    /// `queue enqueue`'s engine: one row per token line of `tokens` (`source` names it in errors, as
    /// ``InputFile`` names a file), each `push` with that token; all or nothing. Empty lines and lines starting
    /// with `#` are skipped; a line that is not a hex token refuses the lot before the store is touched.
    package static func enqueueReport(url: PostgresURL, tokens: [UInt8], source: String, push: QueueInsert)
        async throws -> QueueEnqueueReport
    {
        let inserts = try tokenLines(tokens, source: source).map { token in
            var row = push
            row.deviceToken = token
            return row
        }
        return try await withStore(url: url) { store in
            // A queue that is missing, not kkpush's, or newer than this kkpush is refused before any insert.
            let schema = try await store.checkSchema(grant: .enqueue)
            let (ids, repeated) = try await store.enqueueCounting(inserts)
            return QueueEnqueueReport(ids: ids, repeated: repeated, warnings: schema.olderWarning.map { [$0] } ?? [])
        }
    }

    /// The hex tokens of a token file, lowercased: one per line, blank and `#` lines skipped.
    package static func tokenLines(_ bytes: [UInt8], source: String) throws -> [String] {
        var tokens: [String] = []
        for (number, line) in String(decoding: bytes, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).enumerated() {
            let token = line.trimmingCharacters(in: .whitespaces)
            if token.isEmpty || token.hasPrefix("#") { continue }
            guard token.count.isMultiple(of: 2), token.allSatisfy(\.isHexDigit) else {
                throw KKPushError(
                    code: .queueTokenInvalid, message: "Line \(number + 1) of \(source) is not a hex device token.",
                    fix: "Give one hex device token per line.")
            }
            tokens.append(token.lowercased())
        }
        return tokens
    }
}

/// What `queue enqueue` queued: how many rows and their ids.
package struct QueueEnqueueReport: Encodable, Sendable {
    /// The new rows' ids, in the order of the token lines.
    package var ids: [Int64]
    /// Pushes not queued: their idempotency key was already queued for their topic and device (kept).
    package var repeated = 0
    /// An older queue's note (said on stderr).
    package var warnings: [String] = []

    enum CodingKeys: String, CodingKey {
        case enqueued
        case firstID = "first_id"
        case lastID = "last_id"
        case repeated
    }

    /// `{enqueued, first_id, last_id, repeated}`, the ids `null` when nothing was queued.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ids.count, forKey: .enqueued)
        try c.encode(ids.first, forKey: .firstID)
        try c.encode(ids.last, forKey: .lastID)
        try c.encode(repeated, forKey: .repeated)
    }

    package var textLines: [String] {
        ["enqueued \(ids.count) pushes\(ids.first.map { " (ids \($0) to \(ids.last ?? $0))" } ?? "")"]
            + (repeated > 0
                ? ["\(repeated) not queued again: their idempotency key was already queued for their topic and device"]
                : [])
    }
}

/// One of the worker's progress lines, or its last (`emptied`, `stopped`, `failed`): its counts so far, the time
/// it ran and the time it was busy. With `--json` each is one JSON line on stdout, else one line on stderr.
package struct QueueWorkerEvent: Encodable, Sendable {
    /// `progress`, `emptied`, `stopped` or `failed`.
    package var event: String
    package var worker: String
    package var counts: QueueWorkerCounts
    package var elapsed: Duration

    package init(_ event: String, worker: String, counts: QueueWorkerCounts, elapsed: Duration) {
        self.event = event
        self.worker = worker
        self.counts = counts
        self.elapsed = elapsed
    }

    /// The ending's line: `failed`, `emptied` or `stopped`.
    package init(ending: QueueWorker.Ending, worker: String) {
        self.init(
            ending.failure != nil ? "failed" : ending.emptied ? "emptied" : "stopped", worker: worker,
            counts: ending.counts, elapsed: ending.elapsed)
    }

    enum CodingKeys: String, CodingKey {
        case event, worker, claimed, reclaimed, accepted, rejected, retry, dead, returned, held, deferred, collapsed
        case reasons
        case leaseLost = "lease_lost"
        case possiblyDuplicated = "possibly_duplicated"
        case inFlight = "in_flight"
        case elapsedSeconds = "elapsed_seconds"
        case busySeconds = "busy_seconds"
        case perSecond = "per_second"
    }

    /// Every count; the times to the millisecond, the rate (over the busy time) to the whole push.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(event, forKey: .event)
        try c.encode(worker, forKey: .worker)
        try c.encode(counts.claimed, forKey: .claimed)
        try c.encode(counts.reclaimed, forKey: .reclaimed)
        try c.encode(counts.accepted, forKey: .accepted)
        try c.encode(counts.rejected, forKey: .rejected)
        try c.encode(counts.retry, forKey: .retry)
        try c.encode(counts.dead, forKey: .dead)
        try c.encode(counts.returned, forKey: .returned)
        try c.encode(counts.held, forKey: .held)
        try c.encode(counts.deferred, forKey: .deferred)
        try c.encode(counts.collapsed, forKey: .collapsed)
        try c.encode(counts.leaseLost, forKey: .leaseLost)
        try c.encode(counts.possiblyDuplicated, forKey: .possiblyDuplicated)
        try c.encode(counts.inFlight, forKey: .inFlight)
        try c.encode(counts.reasons, forKey: .reasons)
        try c.encode((elapsed.seconds * 1000).rounded() / 1000, forKey: .elapsedSeconds)
        try c.encode((counts.busySeconds * 1000).rounded() / 1000, forKey: .busySeconds)
        try c.encode(counts.perBusySecond.rounded(), forKey: .perSecond)
    }

    /// The line a person reads. The rate is over the busy time (rows in flight), not the elapsed time: a worker
    /// waiting for work is not slow.
    package var textLines: [String] {
        let c = counts
        var line =
            "worker \(worker) \(event): \(c.accepted) accepted, \(c.rejected) rejected, \(c.retry) to retry, \(c.dead) dead, \(c.returned) returned, \(c.held) held; \(c.inFlight) in flight; \(Int(c.perBusySecond.rounded()))/s over \(String(format: "%.1f", c.busySeconds)) s busy of \(String(format: "%.1f", elapsed.seconds)) s"
        if c.reclaimed > 0 || c.possiblyDuplicated > 0 {
            line += "; \(c.reclaimed) reclaimed from expired leases, \(c.possiblyDuplicated) possibly duplicated"
        }
        if c.deferred > 0 || c.collapsed > 0 {
            line += "; \(c.deferred) held back to wait (quiet hours, device cap, rate), \(c.collapsed) collapsed"
        }
        if c.leaseLost > 0 { line += "; \(c.leaseLost) outcomes lost to expired leases" }
        if !c.reasons.isEmpty {
            line += "; " + c.reasons.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }
        return [line]
    }
}
