import Foundation
package import KKPushClient
package import KKPushCore
import Synchronization

/// What the send-batch coordinator waits for.
package enum BatchEvent: Sendable {
    /// The client returned from the batch (every admitted push has its outcome), or the input
    /// failed (then after the outcomes of the pushes before it).
    case finished((any Error)?)
    /// SIGINT or SIGTERM.
    case signal(Int32)
    /// The grace period after the first signal is over.
    case graceOver
    /// Stopping, and every admitted push has its result line.
    case drained
    /// A result line could not be written (stdout closed, disk full).
    case outputFailed
}

/// The books of one `send-batch` run: the pushes admitted from the input (their line numbers), the
/// outcomes as they come (counted, and written as JSON lines), and at the end a result line for
/// every admitted push that has none (interrupted), so that every line read gets exactly one.
///
/// Memory stays bounded whatever the input's length: only pushes admitted and not yet finished
/// (the client's buffer and its pushes in flight) are remembered.
package final class BatchLedger: Sendable {
    package struct Pending {
        var line: Int
        var token: String
        var endpoint: APNsEndpoint
    }

    package struct Counts: Sendable {
        package var accepted = 0
        package var rejected: [String: Int] = [:]
        package var failed: [String: Int] = [:]
        package var duplicated = 0
        package var interruptedSent = 0
        package var interruptedUnsent = 0
        package var blank = 0
        /// Lines left to the other parts of a `K/N` shard.
        package var otherShard = 0
        /// JSON lines whose own `environment` differed from `--env` / `--build-environment` (the line's won).
        package var environmentOverrides = 0
        /// Lines that named a channel (broadcasts), whatever came of them.
        package var broadcasts = 0
        /// Lines refused before sending because their credential may not serve their topic or environment (or no
        /// credential of the file may); also counted in `failed` as bad input.
        package var credentialScope = 0
        /// Lines refused before sending because the batch has no endpoint for their environment (one stand-in URL
        /// serves one environment); also counted in `failed` as bad input.
        package var unservedEnvironment = 0
        package var skipped: [String: Int] = [:]
        /// Live Activity starts not sent because their activity exists (a second start of a key, ``BatchActivities``).
        package var activityExisting = 0
        /// Lines skipped because an earlier line of the run had the same `idempotency_key` for the same token and
        /// topic (sent once): not an earlier run's outcome, so not in ``skipped``.
        package var repeatedKeys = 0
        package var admitted = 0
        /// The number of the last input line taken (pushed, skipped, blank).
        package var lastLine = 0
        package var written = 0

        package var rejectedTotal: Int { rejected.values.reduce(0, +) }
        package var failedTotal: Int { failed.values.reduce(0, +) }
        package var skippedTotal: Int { skipped.values.reduce(0, +) }
        package var total: Int { accepted + rejectedTotal + failedTotal }
    }

    private struct State {
        var pending: [Int: Pending] = [:]
        var stopping = false
        var closed = false
        var drainReported = false
        var counts = Counts()
        var writer: ResultWriter
        var lastProgress: ContinuousClock.Instant?
    }

    private let state: Mutex<State>
    /// Where the progress line goes (stderr while it is a terminal), or nil for none.
    private let progress: (@Sendable (String) -> Void)?
    private let quietAccepted: Bool
    private let onEvent: @Sendable (BatchEvent) -> Void
    /// The run's metrics (`--metrics-file`), counted where the summary's counts are.
    package let metrics: BatchMetrics

    package init(
        writer: ResultWriter, progress: (@Sendable (String) -> Void)?, quietAccepted: Bool, metrics: BatchMetrics,
        onEvent: @escaping @Sendable (BatchEvent) -> Void
    ) {
        self.metrics = metrics
        state = Mutex(State(writer: writer))
        self.progress = progress
        self.quietAccepted = quietAccepted
        self.onEvent = onEvent
    }

    // MARK: Input side (the reading task)

    /// True once the run is stopping: no more lines are taken.
    package var isStopping: Bool { state.withLock { $0.stopping } }

    /// Takes the push on input line `line` into the books as the batch's `position`th; false (and
    /// not taken) once the run is stopping.
    package func admit(position: Int, line: Int, item: PushBatchItem) -> Bool {
        state.withLock { s in
            guard !s.stopping else { return false }
            s.pending[position] = Pending(line: line, token: item.request.deviceToken, endpoint: item.endpoint)
            s.counts.admitted += 1
            s.counts.lastLine = line
            return true
        }
    }

    /// A blank or comment line (`line`: its number).
    package func countBlank(line: Int) {
        state.withLock { s in
            s.counts.blank += 1
            metrics.countBlank()
            s.counts.lastLine = max(s.counts.lastLine, line)
        }
    }

    /// A line that belongs to another part of the shard (`line`: its number).
    package func countOtherShard(line: Int) {
        state.withLock { s in
            s.counts.otherShard += 1
            metrics.countOtherShard()
            s.counts.lastLine = max(s.counts.lastLine, line)
        }
    }

    /// A JSON line whose own `environment` overrode `--env`.
    package func countEnvironmentOverride() {
        state.withLock { $0.counts.environmentOverrides += 1 }
    }

    /// An input line that cannot be used: its result line (failed `bad-input`, the message naming the line and
    /// the field) is written at once; it counts as failed.
    package func recordBadLine(
        line: Int, token: String, message: String, endpoint: APNsEndpoint, credentialScope: Bool = false,
        unservedEnvironment: Bool = false
    ) {
        var events: [BatchEvent] = []
        state.withLock { s in
            guard !s.closed else { return }
            if credentialScope { s.counts.credentialScope += 1 }
            if unservedEnvironment { s.counts.unservedEnvironment += 1 }
            s.counts.lastLine = max(s.counts.lastLine, line)
            let outcome = PushOutcome(
                result: .failed(PushFailure(kind: .badInput, message: message)), duration: .zero, attempts: 0,
                endpoint: endpoint)
            if !Self.write(
                line: line, token: token, outcome: outcome, to: &s, quietAccepted: quietAccepted, metrics: metrics)
            {
                events.append(.outputFailed)
            }
        }
        for event in events { onEvent(event) }
    }

    /// The outcome of a broadcast line (sent by the reader itself, never admitted to the client).
    package func recordBroadcast(line: Int, channel: String, outcome: PushOutcome) {
        var events: [BatchEvent] = []
        state.withLock { s in
            guard !s.closed else { return }
            s.counts.lastLine = max(s.counts.lastLine, line)
            s.counts.broadcasts += 1
            if !Self.write(
                line: line, token: "", channel: channel, outcome: outcome, to: &s, quietAccepted: quietAccepted,
                metrics: metrics)
            {
                events.append(.outputFailed)
            }
            if let progress { Self.showProgress(&s, to: progress) }
        }
        for event in events { onEvent(event) }
    }

    /// A Live Activity start not sent: its key's activity exists (no result line; the summary counts it).
    package func countActivityExisting(line: Int) {
        state.withLock { s in
            s.counts.activityExisting += 1
            s.counts.lastLine = max(s.counts.lastLine, line)
        }
    }

    /// A line whose `idempotency_key` an earlier line of the run had: skipped, the earlier one sent.
    package func countRepeatedKey(line: Int) {
        state.withLock { s in
            s.counts.repeatedKeys += 1
            s.counts.lastLine = max(s.counts.lastLine, line)
        }
    }

    /// A line `--resume` skips, with why ("accepted" or the final rejection's reason).
    package func countResumeSkip(_ reason: String, line: Int) {
        state.withLock { s in
            s.counts.skipped[reason, default: 0] += 1
            metrics.countResumeSkip(reason)
            s.counts.lastLine = max(s.counts.lastLine, line)
        }
    }

    // MARK: Outcomes (the client's loop thread)

    /// Counts and writes one outcome. Ignored once closed (its line was written as interrupted).
    package func record(_ result: PushResult) {
        var events: [BatchEvent] = []
        state.withLock { s in
            guard !s.closed, let pending = s.pending.removeValue(forKey: result.index) else { return }
            if !Self.write(
                line: pending.line, token: result.deviceToken, outcome: result.outcome, to: &s,
                quietAccepted: quietAccepted, metrics: metrics)
            {
                events.append(.outputFailed)
            }
            if s.stopping, s.pending.isEmpty, !s.drainReported {
                s.drainReported = true
                events.append(.drained)
            }
            if let progress { Self.showProgress(&s, to: progress) }
        }
        for event in events { onEvent(event) }
    }

    /// Counts an outcome and writes its line; false if the write failed just now.
    private static func write(
        line: Int, token: String, channel: String? = nil, outcome: PushOutcome, to s: inout State, quietAccepted: Bool,
        metrics: BatchMetrics
    ) -> Bool {
        metrics.record(outcome, broadcast: channel != nil)
        switch outcome.result {
        case .accepted: s.counts.accepted += 1
        case .rejected(let r): s.counts.rejected[r.reason.rawValue, default: 0] += 1
        case .failed(let f):
            s.counts.failed[f.kind.rawValue, default: 0] += 1
            if f.kind == .interrupted {
                if outcome.possiblyDuplicated { s.counts.interruptedSent += 1 } else { s.counts.interruptedUnsent += 1 }
            }
        }
        if outcome.possiblyDuplicated { s.counts.duplicated += 1 }
        if quietAccepted && outcome.isAccepted { return true }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(400)
        writeLine(index: line, token: token, channel: channel, outcome: outcome, to: &bytes)
        s.counts.written += 1
        return s.writer.append(bytes)
    }

    private static func showProgress(_ s: inout State, to emit: (String) -> Void) {
        let now = ContinuousClock.now
        if let last = s.lastProgress, now - last <= .milliseconds(250) { return }
        s.lastProgress = now
        let c = s.counts
        emit(
            "\r\(c.total) done: \(c.accepted) accepted, \(c.rejectedTotal) rejected, \(c.failedTotal) failed")
    }

    // MARK: The coordinator

    /// Stops taking lines; reports `.drained` once every admitted push has its line (at once if
    /// none is pending). Returns how many are pending now.
    @discardableResult
    package func beginStopping() -> Int {
        let (count, drained) = state.withLock { s -> (Int, Bool) in
            s.stopping = true
            let drained = s.pending.isEmpty && !s.drainReported
            if drained { s.drainReported = true }
            return (s.pending.count, drained)
        }
        if drained { onEvent(.drained) }
        return count
    }

    /// Pushes admitted without an outcome yet.
    package var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Writes what is buffered (a timer calls this every 100 ms, so no line waits longer).
    package func flushIfDue() {
        let failed = state.withLock { s -> Bool in s.writer.buffer.isEmpty ? false : !s.writer.flush() }
        if failed { onEvent(.outputFailed) }
    }

    /// Ends the books: every admitted push still without an outcome gets a result line, failed
    /// `interrupted` (`possibly_duplicated` as given: true when kkpush cannot know whether it was
    /// sent), in line order; later outcomes are ignored. Flushes everything.
    package func close(unknownMayHaveBeenSent: Bool) {
        state.withLock { s in
            guard !s.closed else { return }
            s.stopping = true
            let message =
                unknownMayHaveBeenSent
                ? "kkpush stopped before the client reported on this push; it may have been sent."
                : "Stopped before this push was sent."
            for (_, pending) in s.pending.sorted(by: { $0.key < $1.key }) {
                let outcome = PushOutcome(
                    result: .failed(PushFailure(kind: .interrupted, message: message)), duration: .zero, attempts: 0,
                    possiblyDuplicated: unknownMayHaveBeenSent, endpoint: pending.endpoint)
                _ = Self.write(
                    line: pending.line, token: pending.token, outcome: outcome, to: &s, quietAccepted: false,
                    metrics: metrics)
            }
            s.pending.removeAll()
            s.closed = true
            _ = s.writer.flush()
        }
    }

    /// The counts so far.
    package var counts: Counts { state.withLock { $0.counts } }

    /// The first write error, with the descriptor's name: (name, the system's words, errno).
    package var outputFailure: (name: String, message: String, code: Int32)? {
        state.withLock { s in s.writer.failure.map { (s.writer.name, $0, s.writer.failureCode) } }
    }

    // MARK: Result lines

    /// One result as a JSON line (this runs once per push on the client's loop thread), its fields in this
    /// order: `index` (the input line number, from 1), `token`, `status`, `apns_id`, `apns_unique_id`, `reason`,
    /// `http_status`, `timestamp`, `environment`, `duration_ms`, `attempts`, `possibly_duplicated`, `connection`
    /// (``PushOutcome/connection``: the number of the connection the last attempt went on, null if none), and
    /// `error` for failures. A broadcast line has `"token": null` and `channel` after it; its `apns_id` is the broadcast's
    /// `apns-request-id`.
    package static func writeLine(
        index: Int, token: String, channel: String? = nil, outcome: PushOutcome, to out: inout [UInt8]
    ) {
        var unique: String? = nil
        var reason: String? = nil
        var timestamp: Int64? = nil
        var error: String? = nil
        switch outcome.result {
        case .accepted(_, let u):
            unique = u
        case .rejected(let r):
            reason = r.reason.rawValue
            timestamp = r.timestamp.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
        case .failed(let f):
            reason = f.kind.rawValue
            error = f.message
        }
        let tenths = Int((outcome.durationMilliseconds * 10).rounded())
        var members: [(String, JSONValue)] = [
            ("index", .int(index)), ("token", channel == nil ? .string(token) : .null),
            ("status", .string("\(outcome.status)")), ("apns_id", JSONValue(outcome.apnsID)),
            ("apns_unique_id", JSONValue(unique)),
            ("reason", JSONValue(reason)),
            ("http_status", JSONValue(outcome.httpStatus)), ("timestamp", timestamp.map { .int(Int($0)) } ?? .null),
            ("environment", JSONValue(outcome.endpoint.environment?.rawValue)),
            ("duration_ms", .double(Double(tenths) / 10)), ("attempts", .int(outcome.attempts)),
            ("possibly_duplicated", .bool(outcome.possiblyDuplicated)),
            ("connection", outcome.connection.map(JSONValue.int) ?? .null),
        ]
        if let channel { members.insert(("channel", .string(channel)), at: 2) }
        if let error { members.append(("error", .string(error))) }
        JSONValue.writeOrderedObject(members, to: &out)
        out.append(UInt8(ascii: "\n"))
    }

}
