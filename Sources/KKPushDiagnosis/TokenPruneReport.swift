package import KKPushClient
import KKPushCore
package import KKPushStore
import Synchronization

/// What `token prune` says: the plan (dead tokens with their evidence, kept ones with why), what the guarded clears
/// did and what the webhook posted.
///
/// JSON: the plan's `dead`, `kept`, `rows_read`, `unmatched` and `notes` (``DeadTokenPlan``'s coding keys); `store`,
/// `answers` (tokens with answers), `sql` (the file written, or null), `applied` ({cleared, skipped: [{tenant,
/// device_id, token_prefix, why}]}, null on a dry run) and `webhook` ({posted, failed, would_post (null unless a dry
/// run with a webhook)}). Tokens by prefix only.
///
/// Its text is in two parts: ``planLines`` and ``appliedLines`` here, which name no command line's flag; what a dry
/// run would do and the webhook's line are the command's (they name its flags).
package struct TokenPruneReport: Encodable, Sendable {
    /// The webhook's tally when the report was made.
    package struct Webhook: Encodable, Sendable {
        package var posted: Int
        package var failed: [String]
        /// A dry run with a webhook: the tokens the transaction would clear, and so post.
        package var wouldPost: Int?
        /// Whether a webhook was given and the clears applied (then the text says what was posted, even none).
        package var used: Bool

        package init(_ tally: WebhookTally) {
            posted = tally.posted
            failed = tally.failures
            wouldPost = tally.wouldPost
            used = tally.used
        }

        enum CodingKeys: String, CodingKey {
            case posted, failed
            case wouldPost = "would_post"
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(posted, forKey: .posted)
            try c.encode(failed, forKey: .failed)
            try c.encode(wouldPost, forKey: .wouldPost)
        }
    }

    /// A row the guarded clears did not change: `{tenant, device_id, token_prefix, why}` (why: ``GuardedClearReport/Skip/code``).
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
            try c.encode(why.code, forKey: .why)
        }
    }

    /// What the guarded clears did: `{cleared (a count), skipped: [...]}`.
    struct Applied: Encodable {
        var report: GuardedClearReport

        enum CodingKeys: String, CodingKey { case cleared, skipped }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(report.cleared.count, forKey: .cleared)
            try c.encode(report.skipped.map { Skipped(clear: $0.clear, why: $0.why) }, forKey: .skipped)
        }
    }

    package var plan: DeadTokenPlan
    /// What the guarded clears did (nil: a dry run).
    package var applied: GuardedClearReport?
    package var webhook: Webhook
    /// Tokens with answers.
    package var answers: Int
    /// The answers read, in words (``DeadTokenEvidenceSet/summary``).
    package var evidenceLine: String
    /// The SQL file written, if any.
    package var sql: String?
    /// The store as shown (a URL without its password).
    package var store: String

    package init(
        plan: DeadTokenPlan, applied: GuardedClearReport?, webhook: Webhook, evidence: DeadTokenEvidenceSet,
        sql: String?, store: String
    ) {
        self.plan = plan
        self.applied = applied
        self.webhook = webhook
        self.answers = evidence.count
        self.evidenceLine = evidence.summary
        self.sql = sql
        self.store = store
    }

    enum CodingKeys: String, CodingKey { case store, answers, sql, applied, webhook }

    package func encode(to encoder: any Encoder) throws {
        // The plan's members as the plan encodes them (dead, kept, rows_read, unmatched, notes), then the report's own
        // in the same object: a second keyed container of one encoder adds to the object the first began.
        try plan.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(store, forKey: .store)
        try c.encode(answers, forKey: .answers)
        try c.encode(sql, forKey: .sql)
        try c.encode(applied.map(Applied.init), forKey: .applied)
        try c.encode(webhook, forKey: .webhook)
    }

    /// The store, the answers, the dead and kept tokens (each with its evidence), and the SQL file written.
    package var planLines: [String] {
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
        return lines
    }

    /// What the transaction did: the tokens cleared and each row skipped with why (empty on a dry run).
    package var appliedLines: [String] {
        guard let applied else { return [] }
        var lines = [
            "Applied in one transaction: \(applied.cleared.count) token\(applied.cleared.count == 1 ? "" : "s") cleared, \(applied.skipped.count) skipped."
        ]
        for s in applied.skipped {
            lines.append(
                "  skipped \(s.clear.tenantSlug)/\(s.clear.deviceID) token \(DeviceToken.redacted(s.clear.token)): \(s.why.words)"
            )
        }
        return lines
    }
}

extension GuardedClearReport.Skip {
    /// The stable code of why a row was skipped, as `token prune`'s JSON says it.
    package var code: String {
        switch self {
        case .gone: "gone"
        case .tokenChanged: "token-changed"
        case .reRegistered: "re-registered"
        }
    }

    /// Why a row was skipped, in words.
    package var words: String {
        switch self {
        case .gone: "the row is gone"
        case .tokenChanged: "the row holds another token now (or none)"
        case .reRegistered(let at):
            "re-registered since APNs' answer (registered \(at.map(DeadTokenEvidence.format) ?? "at an unknown time"))"
        }
    }
}

extension DeadTokenEvidenceSet {
    /// The answers read, in words: `3 tokens with answers (send-batch ledger: 7 lines; push queue: 2 rows)`.
    package var summary: String {
        let read = [DeadTokenEvidence.Source.ledger, .auditState, .pushQueue].compactMap { source in
            self.read[source].map { "\(source.rawValue): \($0) \(source == .pushQueue ? "rows" : "lines")" }
        }
        return "\(count) token\(count == 1 ? "" : "s") with answers (\(read.joined(separator: "; ")))"
    }
}

/// The webhook's POSTs: delivered, and the failures in words (token prefixes only); on a dry run, how many tokens
/// the transaction would clear and so post.
package final class WebhookTally: Sendable {
    private struct Tally {
        var delivered = 0
        var failed: [String] = []
        var planned: Int?
        var given = false
    }
    private let tally = Mutex(Tally())

    package init() {}

    /// A dry run with a webhook: the tokens the transaction would clear, and so post.
    package var wouldPost: Int? {
        get { tally.withLock { $0.planned } }
        set { tally.withLock { $0.planned = newValue } }
    }

    /// Whether a webhook was given and the clears applied (then the summary says what was posted, even none).
    package var used: Bool {
        get { tally.withLock { $0.given } }
        set { tally.withLock { $0.given = newValue } }
    }

    /// Counts one POST's answer for `entry`'s token.
    package func record(_ entry: DeadTokenPlan.Entry, _ answer: WebhookPost.Answer) {
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

    package var posted: Int { tally.withLock { $0.delivered } }
    package var failures: [String] { tally.withLock { $0.failed } }
}
