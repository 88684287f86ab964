import Foundation
import KKPushAuth
package import KKPushClient
package import KKPushCore
import KKPushStore
import KKPushSystem
package import KantineKoning
import Synchronization

/// `audit --state FILE`: the probed tokens, one JSON line each, appended and written through per token, so
/// an interrupted audit resumes where it stopped.
///
/// A line: `{"token_sha256": HEX, "sandbox": ANSWER, "production": ANSWER, "at": MS}` where ANSWER is
/// `{"status": 200}`, `{"status": 400, "reason": "PayloadEmpty"}` (a 410 adds APNs' `"timestamp"`, milliseconds
/// since 1970) or `{"failed": KIND}`, and `at` is when the token was probed (milliseconds since 1970; lines of
/// earlier versions lack it and the 410's timestamp: `token prune` reads them as answers without a time). The file never holds
/// a token, only its SHA-256 (created with mode 0600 all the same). On a rerun, tokens whose answers were
/// conclusive are not probed again and their answers are reused; inconclusive ones are probed again (a later
/// line wins). A line that cannot be read (a run killed in the middle of writing it) is skipped.
package final class AuditProbeState: Sendable {
    package let path: String
    private let fd: Int32
    /// What the earlier run recorded: read once, in `init`, and never changed (appends go to the file only).
    private let answers: [String: (DiagnosisFacts.ProbeAnswer, DiagnosisFacts.ProbeAnswer)]
    /// Lines read from an earlier run, and those skipped as unreadable.
    package let linesRead: Int
    package let linesSkipped: Int

    /// The option (or setting) that named the file, for messages.
    package let label: String

    /// Why the state file cannot be opened for appending: the `errno` value.
    package struct Unwritable: Error {
        package let path: String
        package let code: Int32
    }

    /// Reads what an earlier run recorded in `path` and opens it for appending. `label` names the option that gave
    /// the path and `holds` what the file holds, for messages. Throws ``Unwritable`` when it cannot be appended to.
    package init(path: String, label: String, holds: String) throws {
        self.path = path
        self.label = label
        var answers: [String: (DiagnosisFacts.ProbeAnswer, DiagnosisFacts.ProbeAnswer)] = [:]
        var linesRead = 0
        var linesSkipped = 0
        if FileManager.default.fileExists(atPath: path) {
            let reader = try LineReader(path: path, what: "probe state file", label: label, holds: holds)
            while let line = try reader.next() {
                if line.trimmingWhitespace().isEmpty { continue }
                guard let value = try? JSONInput.parse(Array(line.utf8), what: "it", code: .auditState, fix: ""),
                    let o = value.objectValue, let hash = o["token_sha256"]?.stringValue,
                    let s = o["sandbox"].flatMap({ Self.answer($0, label: label) }),
                    let p = o["production"].flatMap({ Self.answer($0, label: label) })
                else {
                    linesSkipped += 1
                    continue
                }
                linesRead += 1
                if Self.conclusive(s, p) { answers[hash] = (s, p) } else { answers[hash] = nil }
            }
        }
        self.answers = answers
        self.linesRead = linesRead
        self.linesSkipped = linesSkipped
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Unwritable(path: path, code: errno) }
    }

    deinit { close(fd) }

    /// Both answers settle the token (or one says 410): not probed again.
    package static func conclusive(_ s: DiagnosisFacts.ProbeAnswer, _ p: DiagnosisFacts.ProbeAnswer) -> Bool {
        func gone(_ a: DiagnosisFacts.ProbeAnswer) -> Bool {
            if case .rejected(410, _, _) = a { return true }
            return false
        }
        return gone(s) || gone(p) || (FleetProbeVerdict.isConclusive(s) && FleetProbeVerdict.isConclusive(p))
    }

    package static func key(_ token: String) -> String { SHA256Digest.hex(token) }

    /// The answers an earlier run recorded for `token`, if conclusive.
    package func recorded(_ token: String) -> (DiagnosisFacts.ProbeAnswer, DiagnosisFacts.ProbeAnswer)? {
        answers[Self.key(token)]
    }

    /// Appends one token's answers (one write(2), so a line is whole or, if killed, partial and skipped later).
    package func append(_ token: String, sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer) {
        var out: [UInt8] = []
        JSONValue.writeOrderedObject(
            [
                ("token_sha256", .string(Self.key(token))), ("sandbox", Self.json(sandbox)),
                ("production", Self.json(production)),
                ("at", .int(Int((Date().timeIntervalSince1970 * 1000).rounded(.down)))),
            ], to: &out)
        out.append(0x0A)
        out.withUnsafeBytes { _ = FileDescriptors.writeAll(fd, $0) }
    }

    package static func json(_ a: DiagnosisFacts.ProbeAnswer) -> JSONValue {
        switch a {
        case .accepted: return .object(["status": .int(200)])
        case .rejected(let status, let reason, let timestamp):
            var o: [String: JSONValue] = ["status": .int(status), "reason": .string(reason.rawValue)]
            if let timestamp { o["timestamp"] = .int(Int((timestamp.timeIntervalSince1970 * 1000).rounded(.down))) }
            return .object(o)
        case .failed(let kind, _): return .object(["failed": .string(kind)])
        }
    }

    /// An answer as `json(_:)` wrote it; a failure's message says it was recorded in the file of `label`.
    package static func answer(_ v: JSONValue, label: String) -> DiagnosisFacts.ProbeAnswer? {
        guard let o = v.objectValue else { return nil }
        if let kind = o["failed"]?.stringValue { return .failed(kind: kind, message: "recorded in \(label)") }
        guard let status = o["status"]?.intValue else { return nil }
        if status == 200 { return .accepted }
        guard let reason = o["reason"]?.stringValue else { return nil }
        let timestamp = o["timestamp"]?.intValue.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        return .rejected(status: status, reason: APNsReason(rawValue: reason), timestamp: timestamp)
    }
}

/// `audit --probe`: each distinct token of the active enrollments (read in apns_token order, so a token's
/// holders arrive together) asked in both environments with diagnose's non-delivering probe, through one
/// client (one connection per environment), at most `maxRate` tokens a second, at most `concurrency` at a time.
package final class AuditProber: Sendable {
    package let client: APNsClient
    package let topic: String
    package let state: AuditProbeState?
    package let tenant: String?
    package let interval: Duration
    package let concurrency: Int
    /// What changes as the tokens are fed and probed, behind one lock (the signal handler stops it from another
    /// thread; progress reads the counts).
    private struct Progress {
        var current: (token: String, holders: [Enrollment])?
        var nextStart = ContinuousClock.now
        var stopSignal: Int32?
        var probed = 0
        var reused = 0
    }
    private let progress = Mutex(Progress())
    /// Tokens probed now, and reused from --state.
    package var probed: Int { progress.withLock { $0.probed } }
    package var reused: Int { progress.withLock { $0.reused } }

    /// One token's answers, for the sink.
    package typealias Answered = (
        holders: [Enrollment], sandbox: DiagnosisFacts.ProbeAnswer, production: DiagnosisFacts.ProbeAnswer
    )

    package init(
        client: APNsClient, topic: String, state: AuditProbeState?, tenant: String?, maxRate: Double,
        concurrency: Int
    ) {
        self.client = client
        self.topic = topic
        self.state = state
        self.tenant = tenant
        self.interval = .nanoseconds(Int64((1e9 / maxRate).rounded(.up)))
        self.concurrency = concurrency
    }

    /// SIGINT or SIGTERM: no further probe starts; those in flight finish and are recorded.
    package func stop(_ signal: Int32) {
        progress.withLock { p in
            if p.stopSignal == nil { p.stopSignal = signal }
        }
    }

    package var stoppedBy: Int32? { progress.withLock { $0.stopSignal } }

    /// Takes a batch (in apns_token order); probes the tokens whose holders are complete, handing each
    /// token's answers to `deliver` as they come.
    package func feed(_ batch: [Enrollment], deliver: @Sendable (Answered) async -> Void) async {
        let complete = progress.withLock { p -> [(String, [Enrollment])] in
            var complete: [(String, [Enrollment])] = []
            for e in batch {
                guard e.status == .active, let token = e.apnsToken else { continue }
                if let c = p.current, c.token == token {
                    p.current!.holders.append(e)
                } else {
                    if let c = p.current { complete.append(c) }
                    p.current = (token, [e])
                }
            }
            return complete
        }
        await probe(complete, deliver: deliver)
    }

    /// The last token.
    package func finish(deliver: @Sendable (Answered) async -> Void) async {
        if let c = progress.withLock({ $0.current }) { await probe([c], deliver: deliver) }
        progress.withLock { $0.current = nil }
    }

    private func probe(_ groups: [(String, [Enrollment])], deliver: @Sendable (Answered) async -> Void) async {
        var asks: [(String, String, [Enrollment])] = []
        for (token, holders) in groups {
            // Only tokens an in-scope enrollment holds, and well-formed (token-format reports the others).
            guard holders.contains(where: { tenant == nil || $0.tenantSlug == tenant }),
                let normalized = DeviceToken.normalize(token).token
            else { continue }
            if let (s, p) = state?.recorded(token) {
                progress.withLock { $0.reused += 1 }
                await deliver((holders, s, p))
            } else {
                asks.append((token, normalized, holders))
            }
        }
        guard !asks.isEmpty else { return }
        let client = self.client
        let topic = self.topic
        await withTaskGroup(of: (String, [Enrollment], DiagnosisFacts.ProbeAnswer, DiagnosisFacts.ProbeAnswer).self) {
            group in
            var inFlight = 0
            func record(_ r: (String, [Enrollment], DiagnosisFacts.ProbeAnswer, DiagnosisFacts.ProbeAnswer)) async {
                inFlight -= 1
                progress.withLock { $0.probed += 1 }
                state?.append(r.0, sandbox: r.2, production: r.3)
                await deliver((r.1, r.2, r.3))
            }
            for (token, normalized, holders) in asks {
                if inFlight >= concurrency, let r = await group.next() { await record(r) }
                guard await waitForSlot() else { break }
                inFlight += 1
                group.addTask {
                    let (s, p) = await DiagnosisProbe.ask(
                        client, token: normalized, topic: topic, silentFallback: false)
                    return (token, holders, s, p)
                }
            }
            while let r = await group.next() { await record(r) }
        }
    }

    /// Waits for the next start the rate allows; false once stopped.
    private func waitForSlot() async -> Bool {
        while true {
            if stoppedBy != nil { return false }
            let now = ContinuousClock.now
            let nextStart = progress.withLock { $0.nextStart }
            if now >= nextStart { break }
            try? await Task.sleep(until: min(nextStart, now + .milliseconds(100)), clock: .continuous)
        }
        let interval = self.interval
        progress.withLock { $0.nextStart = max($0.nextStart, ContinuousClock.now - interval) + interval }
        return stoppedBy == nil
    }
}

/// The audit stopped by SIGINT or SIGTERM while probing.
package struct AuditInterrupted: Error {
    package var signal: Int32
}
