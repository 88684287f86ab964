package import Foundation
import KKPushAuth
import KKPushCore
package import KKPushStore
import KKPushSystem
import KantineKoning
import Synchronization

/// One answer of APNs about a token, as `token prune` weighs it: where it was read, what it says, and when.
package struct DeadTokenEvidence: Sendable, Hashable {
    /// What the answer says of the token.
    package enum Kind: Sendable, Hashable {
        /// 410 (`Unregistered`, `ExpiredToken`): the token is no longer active for the topic, as of `at`.
        case gone
        /// A probe of both environments answered `BadDeviceToken` in each: no environment knows the token.
        case unknownInBoth
        /// `BadDeviceToken` from one environment only: the token may belong to the other (needs a probe of both).
        case badDeviceToken
        /// A probe found an environment that knows the token (`environment`): the token is alive.
        case known
        /// APNs accepted a push to the token (200): the token was alive when the push was answered (`order` or
        /// `answeredAt` says when, as far as the source knows).
        case accepted
    }

    /// Where the answer was read.
    package enum Source: String, Sendable, Hashable {
        /// A `send-batch` result file.
        case ledger = "send-batch ledger"
        /// An `audit --probe --state` file.
        case auditState = "audit probe state"
        /// The push queue's table.
        case pushQueue = "push queue"
    }

    package var kind: Kind
    package var source: Source
    /// The file and line, or the queue's table and row state: `results.jsonl line 3`.
    package var location: String
    /// APNs' words: `410 Unregistered`, `400 BadDeviceToken in sandbox and production`.
    package var answer: String
    /// The environment that answered (one answer), if known.
    package var environment: String?
    /// When APNs said it: a 410's timestamp, or the time of the probe; nil when the source does not say.
    package var at: Date?
    /// When the answer reached kkpush (a queue row's `updated_at`, the time of a probe); nil when the source does not
    /// say. A 410's answer came at or after its `at`.
    package var answeredAt: Date?
    /// A ledger line's place among every ledger line read (the files in the order given, then line order): the
    /// order in which send-batch wrote its answers as they came. nil for the other sources.
    package var order: Int?

    package init(
        kind: Kind, source: Source, location: String, answer: String, environment: String?, at: Date?,
        answeredAt: Date? = nil, order: Int? = nil
    ) {
        self.kind = kind
        self.source = source
        self.location = location
        self.answer = answer
        self.environment = environment
        self.at = at
        self.answeredAt = answeredAt
        self.order = order
    }

    /// Whether this acceptance came before the dead answer `dead`: true (before), false (after), nil (the sources
    /// cannot tell). Two ledger lines go by their order; an acceptance with a time goes by the time the dead answer
    /// came (`answeredAt`), else by Apple's time (`at`: the answer came at or after it, so only an acceptance before
    /// it is known to be earlier). A ledger line's acceptance has no time: against another source it cannot be told.
    package func precedes(_ dead: DeadTokenEvidence) -> Bool? {
        if let mine = order, let theirs = dead.order { return mine < theirs }
        guard let accepted = answeredAt ?? at else { return nil }
        if let came = dead.answeredAt {
            if accepted < came { return true }
            if accepted > came { return false }
            return nil
        }
        if let apple = dead.at, accepted < apple { return true }
        return nil
    }

    /// One line for people: `410 Unregistered (sandbox) at 2027-01-15T09:30:00.000Z, send-batch ledger results.jsonl line 3`.
    package var summary: String {
        let env = environment.map { " (\($0))" } ?? ""
        let time = at.map { " at \(DeadTokenEvidence.format($0))" } ?? " (no time given)"
        return "\(answer)\(env)\(time), \(source.rawValue) \(location)"
    }

    /// A time as ISO 8601 UTC with milliseconds.
    package static func format(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: date)
    }

}

extension DeadTokenEvidence: Encodable {
    enum CodingKeys: String, CodingKey { case source, location, answer, environment, at }

    /// The JSON form: `{"source", "location", "answer", "environment", "at"}` (`environment` and `at` null when the
    /// source does not say; `at` as ``format(_:)`` writes it).
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source.rawValue, forKey: .source)
        try c.encode(location, forKey: .location)
        try c.encode(answer, forKey: .answer)
        try c.encode(environment, forKey: .environment)
        try c.encode(at.map(Self.format), forKey: .at)
    }
}

/// The answers gathered from every source, keyed by token (the ledger, the queue) or by the token's SHA-256 (the
/// audit's state file, which never holds a token).
package struct DeadTokenEvidenceSet: Sendable {
    /// Dead and `BadDeviceToken` answers, keyed by ``normalizedToken(_:)``.
    package var byToken: [String: [DeadTokenEvidence]] = [:]
    package var bySHA256: [String: [DeadTokenEvidence]] = [:]
    /// Acceptances, keyed by ``normalizedToken(_:)``: per token the latest ledger line and the latest queue row (a
    /// later acceptance keeps a token; an earlier one says nothing more). Not answers on their own: a token only
    /// accepted is not counted.
    package var accepted: [String: [DeadTokenEvidence]] = [:]
    /// What the readers skipped or could not use, one line each (said before the plan).
    package var notes: [String] = []
    /// Lines or rows read, per source.
    package var read: [DeadTokenEvidence.Source: Int] = [:]

    /// Ledger lines read so far (every file's, in the order given): the next line's ``DeadTokenEvidence/order``.
    private var ledgerLines = 0

    package init() {}

    /// The one form tokens are matched in, for every source and every store row: APNs tokens are hex, and a token
    /// in capitals (a backend that stored it so, a ledger written from such a file) is the same token.
    package static func normalizedToken(_ token: String) -> String { token.lowercased() }

    /// The SHA-256 keys an audit state file may hold for a row's token: of the token as stored (what audit hashes),
    /// and of its normalized form when that differs.
    package static func hashes(of token: String) -> [String] {
        let normal = normalizedToken(token)
        return normal == token
            ? [AuditProbeState.key(token)] : [AuditProbeState.key(token), AuditProbeState.key(normal)]
    }

    /// The answers about `token` as a store row holds it (`hashes`: its ``hashes(of:)``, when the caller has them):
    /// dead and `BadDeviceToken` answers, probes, and the acceptances.
    package func answers(for token: String, hashes: [String]? = nil) -> [DeadTokenEvidence] {
        let key = Self.normalizedToken(token)
        var hashed: [DeadTokenEvidence] = []
        if !bySHA256.isEmpty {
            for hash in hashes ?? Self.hashes(of: token) { hashed += bySHA256[hash] ?? [] }
        }
        return (byToken[key] ?? []) + hashed + (accepted[key] ?? [])
    }

    /// Records an acceptance: per source, only the latest one is kept (by ledger order; by time for the queue, an
    /// unknown time winning, as it may be the latest).
    private mutating func accept(_ token: String, _ e: DeadTokenEvidence) {
        var list = accepted[token, default: []]
        if let i = list.firstIndex(where: { $0.source == e.source }) {
            let old = list[i]
            let later: Bool
            if let a = e.order, let b = old.order {
                later = a > b
            } else if let a = e.answeredAt, let b = old.answeredAt {
                later = a > b
            } else {
                later = e.answeredAt == nil && old.answeredAt != nil
            }
            if later { list[i] = e }
        } else {
            list.append(e)
        }
        accepted[token] = list
    }

    /// How many distinct tokens (or hashes) have answers.
    package var count: Int { byToken.count + bySHA256.count }

    /// The 410s, `BadDeviceToken`s and acceptances (`http_status` 200) of a `send-batch` result file (JSON lines:
    /// `token`, `reason`, `http_status`, `timestamp` in milliseconds, `environment`); other lines are not evidence.
    /// send-batch writes each answer as it comes, so a later line is a later answer; files read one after another
    /// continue the order (the caller gives them oldest first). `label` names the input in messages.
    package mutating func readLedger(path: String, label: String) throws {
        let reader = try LineReader(
            path: path, what: "send-batch result file", label: label,
            holds: "send-batch's result lines (JSON, one per token)")
        let name = URL(fileURLWithPath: path).lastPathComponent
        var unreadable: [Int] = []
        var used = 0
        let first = ledgerLines
        var found: [(String, DeadTokenEvidence)] = []
        let number = try Self.eachObjectLine(reader) { number, object in
            guard let o = object else {
                unreadable.append(number)
                return
            }
            guard let raw = o["token"]?.stringValue, !raw.isEmpty else { return }
            let token = Self.normalizedToken(raw)
            let status = o["http_status"]?.intValue
            let environment = o["environment"]?.stringValue
            let location = "\(name) line \(number)"
            let order = first + number
            if status == 200 {
                found.append(
                    (
                        token,
                        DeadTokenEvidence(
                            kind: .accepted, source: .ledger, location: location, answer: "200 accepted",
                            environment: environment, at: nil, order: order)
                    ))
                used += 1
                return
            }
            guard let reason = o["reason"]?.stringValue else { return }
            if status == 410 {
                let at = o["timestamp"]?.intValue.map { Date(timeIntervalSince1970: Double($0) / 1000) }
                found.append(
                    (
                        token,
                        DeadTokenEvidence(
                            kind: .gone, source: .ledger, location: location, answer: "410 \(reason)",
                            environment: environment, at: at, order: order)
                    ))
                used += 1
            } else if reason == APNsReason.badDeviceToken.rawValue {
                found.append(
                    (
                        token,
                        DeadTokenEvidence(
                            kind: .badDeviceToken, source: .ledger, location: location,
                            answer: "\(status.map { "\($0) " } ?? "")\(reason)", environment: environment, at: nil,
                            order: order)
                    ))
                used += 1
            }
        }
        for (token, e) in found {
            if e.kind == .accepted { accept(token, e) } else { byToken[token, default: []].append(e) }
        }
        ledgerLines += number
        read[.ledger, default: 0] += number
        if !unreadable.isEmpty {
            notes.append(
                "\(name): \(unreadable.count) line\(unreadable.count == 1 ? " is" : "s are") not a JSON result line (line\(unreadable.count == 1 ? "" : "s") \(unreadable.prefix(5).map(String.init).joined(separator: ", "))\(unreadable.count > 5 ? ", …" : "")): skipped"
            )
        }
        // An empty file is refused too: send-batch never writes one (it refuses an empty token file), so a
        // 0-byte ledger is the wrong file or one truncated, and taking it would prune on less than was asked.
        if used == 0 && unreadable.count == number {
            throw KKPushError(
                code: .tokenPruneInputMalformed,
                message: number == 0
                    ? "The send-batch result file \(label) \(path) is empty: it holds no result line."
                    : "The send-batch result file \(label) \(path) holds no result line (\(number) lines, none JSON).",
                fix: "Give the file send-batch wrote its results to (one JSON object per line).")
        }
    }

    /// The probe answers of an `audit --probe --state` file: a 410 in either environment (with APNs' timestamp),
    /// `BadDeviceToken` in both, or an environment that knows the token. Keyed by the token's SHA-256.
    package mutating func readAuditState(path: String, label: String) throws {
        let reader = try LineReader(
            path: path, what: "probe state file", label: label, holds: "the audit probe's answers (JSON, one per token)"
        )
        let name = URL(fileURLWithPath: path).lastPathComponent
        var unreadable = 0
        var withoutTime = 0
        let number = try Self.eachObjectLine(reader) { number, object in
            guard let o = object, let hash = o["token_sha256"]?.stringValue,
                let s = o["sandbox"].flatMap({ AuditProbeState.answer($0, label: label) }),
                let p = o["production"].flatMap({ AuditProbeState.answer($0, label: label) })
            else {
                unreadable += 1
                return
            }
            let probedAt = o["at"]?.intValue.map { Date(timeIntervalSince1970: Double($0) / 1000) }
            let location = "\(name) line \(number)"
            func words(_ a: DiagnosisFacts.ProbeAnswer) -> String {
                switch a {
                case .accepted: "200"
                case .rejected(let status, let reason, _): "\(status) \(reason.rawValue)"
                case .failed(let kind, _): "failed (\(kind))"
                }
            }
            let both = "sandbox \(words(s)), production \(words(p))"
            var found: [DeadTokenEvidence] = []
            for (environment, a) in [("sandbox", s), ("production", p)] {
                switch a {
                case .rejected(410, let reason, let timestamp):
                    found.append(
                        DeadTokenEvidence(
                            kind: .gone, source: .auditState, location: location, answer: "410 \(reason.rawValue)",
                            environment: environment, at: timestamp, answeredAt: probedAt))
                    if timestamp == nil { withoutTime += 1 }
                case .accepted, .rejected(_, .payloadEmpty, _), .rejected(_, .payloadTooLarge, _):
                    found.append(
                        DeadTokenEvidence(
                            kind: .known, source: .auditState, location: location, answer: both,
                            environment: environment, at: probedAt))
                default: break
                }
            }
            if case .rejected(_, .badDeviceToken, _) = s, case .rejected(_, .badDeviceToken, _) = p {
                found.append(
                    DeadTokenEvidence(
                        kind: .unknownInBoth, source: .auditState, location: location,
                        answer: "400 BadDeviceToken in sandbox and production", environment: nil, at: probedAt,
                        answeredAt: probedAt))
                if probedAt == nil { withoutTime += 1 }
            }
            // A later line of one token replaces an earlier one (as audit reads its state file).
            if found.isEmpty { bySHA256[hash] = nil } else { bySHA256[hash] = found }
        }
        read[.auditState, default: 0] += number
        if unreadable > 0 {
            notes.append("\(name): \(unreadable) line\(unreadable == 1 ? " is" : "s are") not a probe answer: skipped")
        }
        if withoutTime > 0 {
            notes.append(
                "\(name): \(withoutTime) answer\(withoutTime == 1 ? " has" : "s have") no time (written by an earlier kkpush): never enough to clear a token"
            )
        }
    }

    /// Runs `body` with each non-blank line of `reader` as a JSON object (nil for a line that is not one) and its
    /// line number; returns how many lines there were.
    private static func eachObjectLine(
        _ reader: LineReader, _ body: (Int, [String: JSONValue]?) throws -> Void
    ) throws -> Int {
        var number = 0
        while let line = try reader.next() {
            number += 1
            if line.trimmingWhitespace().isEmpty { continue }
            let value = try? JSONInput.parse(Array(line.utf8), what: "it", code: .tokenPruneInputMalformed, fix: "")
            try body(number, value?.objectValue)
        }
        return number
    }

    /// The push queue's rows with a dead-token reason (`kkpush_push_queue` in the database `url`), and per token
    /// its latest `accepted` row (when it was answered: the row's `updated_at`).
    package mutating func readPushQueue(url: PostgresURL, batchSize: Int) async throws {
        let rows = RowBox<PushQueueRejection>()
        try await PushQueueRejections.forEach(url: url, batchSize: batchSize) { batch in rows.append(batch) }
        for row in rows.all {
            let location =
                "\(PushQueueRejections.table) (\(row.state ?? "?"), updated \(row.updatedAt.map(DeadTokenEvidence.format) ?? "?"))"
            let status = row.status.map { "\($0) " } ?? ""
            let token = Self.normalizedToken(row.deviceToken)
            if row.reason == APNsReason.badDeviceToken.rawValue {
                byToken[token, default: []].append(
                    DeadTokenEvidence(
                        kind: .badDeviceToken, source: .pushQueue, location: location, answer: "\(status)\(row.reason)",
                        environment: row.environment, at: nil, answeredAt: row.updatedAt))
            } else {
                byToken[token, default: []].append(
                    DeadTokenEvidence(
                        kind: .gone, source: .pushQueue, location: location, answer: "\(status)\(row.reason)",
                        environment: row.environment, at: row.apnsTimestamp, answeredAt: row.updatedAt))
            }
        }
        let acceptances = RowBox<PushQueueAcceptance>()
        try await PushQueueRejections.forEachAcceptance(url: url, batchSize: batchSize) { batch in
            acceptances.append(batch)
        }
        for row in acceptances.all {
            let when = row.updatedAt.map(DeadTokenEvidence.format) ?? "at an unknown time (updated_at is NULL)"
            accept(
                Self.normalizedToken(row.deviceToken),
                DeadTokenEvidence(
                    kind: .accepted, source: .pushQueue,
                    location:
                        "\(PushQueueRejections.table) (accepted, updated \(when)\(row.rows > 1 ? ", the latest of \(row.rows) rows" : ""))",
                    answer: "200 accepted", environment: row.environment, at: row.updatedAt,
                    answeredAt: row.updatedAt))
        }
        read[.pushQueue, default: 0] += rows.all.count + acceptances.all.reduce(0) { $0 + $1.rows }
    }
}

/// The queue's rows, collected from the batches handed over.
private final class RowBox<Row: Sendable>: Sendable {
    private let rows = Mutex<[Row]>([])
    func append(_ batch: [Row]) { rows.withLock { $0 += batch } }
    var all: [Row] { rows.withLock { $0 } }
}
