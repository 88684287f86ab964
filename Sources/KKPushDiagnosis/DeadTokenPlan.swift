package import Foundation
import KKPushCore
package import KKPushStore
import Synchronization

/// `token prune`'s plan: the enrollments whose tokens APNs says are dead, each with its evidence and the guarded
/// clear that removes the token, and the enrollments with answers that are not enough to clear (each with why).
///
/// Dead means: a 410 (`Unregistered`, `ExpiredToken`) whose timestamp is later than the token's registration, or
/// `BadDeviceToken` in both environments (a probe of both, `audit --probe --state`) later than the registration.
/// Compared in whole seconds: the row's registration time must be before the answer's time rounded down to the
/// second (so a registration time stored to the second, as the real backend's `updated_at` is, is never taken for
/// earlier than it was). An answer without a time, a row without a registration time, a `BadDeviceToken` from one
/// environment only, a probe that found an environment knowing the token (at or after the dead answer), or an
/// acceptance of a push to the token not known to be before the dead answer is never enough. Tokens are matched
/// in one form (``DeadTokenEvidenceSet/normalizedToken(_:)``: lowercase), whatever case a source or a row holds.
package struct DeadTokenPlan: Sendable {
    /// One enrollment whose token is dead.
    package struct Entry: Sendable {
        package var row: RegisteredToken
        /// The latest time APNs said the token was dead (the guard's time, rounded down to the second).
        package var deadAt: Date
        package var evidence: [DeadTokenEvidence]

        /// The token's first characters only (never the whole token in text).
        package var tokenPrefix: String { DeviceToken.redacted(row.token) }

        /// The guarded clear of this row.
        package var clear: GuardedTokenClear {
            GuardedTokenClear(
                tenantSlug: row.tenantSlug, deviceID: row.deviceID, token: row.token, registeredBefore: deadAt,
                comment:
                    "\(row.tenantSlug)/\(row.deviceID) token \(tokenPrefix) registered \(row.registeredAt.map(DeadTokenEvidence.format) ?? "?") (\(row.registeredColumn)); \(evidence.filter { $0.kind == .gone || $0.kind == .unknownInBoth }.map(\.summary).joined(separator: "; "))"
            )
        }

        /// What the webhook is sent for this token (the whole token: the receiver acts on it), as gorush's
        /// feedback hook sends a failed push: `{"platform": "ios", "token", "tenant", "device_id", "reason",
        /// "dead_at", "evidence"}`.
        package var webhookBody: [UInt8] {
            var out: [UInt8] = []
            let reason = evidence.first { $0.kind == .gone || $0.kind == .unknownInBoth }?.answer ?? "dead"
            // The body is a wire format with gorush's member order, so it is written in that order; its evidence is
            // the one Encodable form of an answer (the plan's JSON), which encodes strings only and cannot fail.
            let evidenceJSON = (try? JSONValue(encoding: evidence)) ?? .array([])
            JSONValue.writeOrderedObject(
                [
                    ("platform", .string("ios")), ("token", .string(row.token)), ("tenant", .string(row.tenantSlug)),
                    ("device_id", .string(row.deviceID)), ("reason", .string(reason)),
                    ("dead_at", .string(DeadTokenEvidence.format(deadAt))), ("evidence", evidenceJSON),
                ], to: &out)
            return out
        }
    }

    /// An enrollment with answers about its token that do not make it dead.
    package struct Kept: Sendable {
        /// Why the token stays.
        package enum Why: String, Sendable {
            /// Registered at or after the latest dead answer (the app registered it again).
            case reRegistered = "re-registered"
            /// A probe found an environment that knows the token, at or after the dead answer.
            case knownByProbe = "known-by-probe"
            /// The dead answers carry no time (an older audit state file, a 410 without a timestamp).
            case noTime = "no-time"
            /// The row holds no registration time.
            case registrationUnknown = "registration-unknown"
            /// `BadDeviceToken` from one environment only: it may be the other environment's token.
            case unconfirmed = "unconfirmed"
            /// APNs accepted a push to the token after the dead answer (a later ledger line, a later accepted
            /// queue row): the token is alive.
            case acceptedLater = "accepted-later"
            /// APNs accepted a push to the token, and the sources cannot tell whether before or after the dead
            /// answer (a ledger line has no time to compare with another source's): it may be alive.
            case acceptedOrderUnknown = "accepted-order-unknown"
        }

        package var row: RegisteredToken
        package var why: Why
        package var evidence: [DeadTokenEvidence]

        package var tokenPrefix: String { DeviceToken.redacted(row.token) }

        /// One sentence: why the token stays.
        package var explanation: String {
            switch why {
            case .reRegistered:
                "registered \(row.registeredAt.map(DeadTokenEvidence.format) ?? "?") (\(row.registeredColumn)), not before APNs' answer"
            case .knownByProbe: "a probe found an environment that knows the token, at or after the dead answer"
            case .noTime: "APNs' answer carries no time, so it cannot be compared with the registration"
            case .registrationUnknown: "the row holds no registration time (\(row.registeredColumn) is NULL)"
            case .unconfirmed:
                "BadDeviceToken from one environment only: it may be the other environment's token (probe both)"
            case .acceptedLater:
                "APNs accepted a push to the token after the dead answer (\(acceptance)): the token is alive"
            case .acceptedOrderUnknown:
                "APNs accepted a push to the token (\(acceptance)), and nothing shows it was before the dead answer: it may be alive"
            }
        }

        /// The acceptance that keeps the token, in words.
        private var acceptance: String {
            evidence.last { $0.kind == .accepted }.map { "\($0.source.rawValue) \($0.location)" } ?? "?"
        }
    }

    package var dead: [Entry] = []
    package var kept: [Kept] = []
    /// Rows holding a token that were read.
    package var rowsRead = 0
    /// Tokens (or token hashes) with answers that no row holds.
    package var unmatched = 0
    /// What the table offers (set once it was read).
    package var table: TokenTable?
    /// What the sources skipped, and what the table lacks, one line each.
    package var notes: [String] = []

    package init() {}

    /// What one row's answers make of it.
    package enum Judgement: Sendable {
        case dead(Entry)
        case kept(Kept)
    }

    /// Judges one row's answers: dead (with its time), or kept (with why), or nil when there are none (or only
    /// acceptances).
    package static func judge(_ row: RegisteredToken, _ answers: [DeadTokenEvidence]) -> Judgement? {
        guard !answers.isEmpty else { return nil }
        let dead = answers.filter { $0.kind == .gone || $0.kind == .unknownInBoth }
        guard !dead.isEmpty else {
            if answers.contains(where: { $0.kind == .badDeviceToken }) {
                return .kept(Kept(row: row, why: .unconfirmed, evidence: answers))
            }
            return nil
        }
        // The last word wins: the token is dead only after a dead answer that every acceptance is known to precede.
        // An acceptance whose order cannot be told keeps the token (a prune never clears on a guess).
        let accepted = answers.filter { $0.kind == .accepted }
        if !accepted.isEmpty,
            !dead.contains(where: { d in accepted.allSatisfy { $0.precedes(d) == true } })
        {
            let later = accepted.filter { a in dead.allSatisfy { a.precedes($0) == false } }
            let keeping = (later.isEmpty ? accepted : later)
            return .kept(
                Kept(
                    row: row, why: later.isEmpty ? .acceptedOrderUnknown : .acceptedLater,
                    evidence: answers.filter { $0.kind != .accepted } + keeping))
        }
        let weighed = answers.filter { $0.kind != .accepted }
        guard let deadAt = dead.compactMap(\.at).max() else {
            return .kept(Kept(row: row, why: .noTime, evidence: weighed))
        }
        // An environment known to accept the token at or after the dead answer (or at an unknown time) wins.
        if weighed.contains(where: { $0.kind == .known && ($0.at.map { $0 >= deadAt } ?? true) }) {
            return .kept(Kept(row: row, why: .knownByProbe, evidence: weighed))
        }
        guard let registered = row.registeredAt else {
            return .kept(Kept(row: row, why: .registrationUnknown, evidence: weighed))
        }
        let cutoff = TokenRegistrations.wholeSeconds(deadAt)
        guard registered < cutoff else { return .kept(Kept(row: row, why: .reRegistered, evidence: weighed)) }
        return .dead(Entry(row: row, deadAt: cutoff, evidence: weighed))
    }

    /// Reads every row holding a token (read-only) and judges those with answers, in tenant and device id order.
    package static func make(
        evidence: DeadTokenEvidenceSet, location: EnrollmentStoreLocation, mapping: EnrollmentTableMapping?,
        batchSize: Int
    ) async throws -> DeadTokenPlan {
        let box = PlanBox(evidence: evidence)
        let table = try await TokenRegistrations.forEach(location, mapping: mapping, batchSize: batchSize) { batch in
            box.take(batch)
        }
        var plan = box.plan
        plan.table = table
        plan.notes = evidence.notes
        if !table.hasTokenTime {
            plan.notes.append(
                "the table has no token_updated_at: updated_at is the registration time (it changes with every change of the row, so some dead tokens may be kept)"
            )
        }
        return plan
    }
}

// The plan's JSON (tokens by prefix only): each type's coding keys are the field names scripts read; a time is
// written as `DeadTokenEvidence.format` writes it, and a time the row does not hold is null, never left out.

extension DeadTokenPlan: Encodable {
    enum CodingKeys: String, CodingKey {
        case dead, kept, unmatched, notes
        case rowsRead = "rows_read"
    }

    /// `{"dead": [...], "kept": [...], "rows_read", "unmatched", "notes"}`.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(dead, forKey: .dead)
        try c.encode(kept, forKey: .kept)
        try c.encode(rowsRead, forKey: .rowsRead)
        try c.encode(unmatched, forKey: .unmatched)
        try c.encode(notes, forKey: .notes)
    }
}

extension DeadTokenPlan.Entry: Encodable {
    enum CodingKeys: String, CodingKey {
        case tenant, status, evidence
        case deviceID = "device_id"
        case tokenPrefix = "token_prefix"
        case registeredAt = "registered_at"
        case registeredColumn = "registered_column"
        case deadAt = "dead_at"
    }

    /// `{"tenant", "device_id", "token_prefix", "status", "registered_at", "registered_column", "dead_at", "evidence"}`.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(row.tenantSlug, forKey: .tenant)
        try c.encode(row.deviceID, forKey: .deviceID)
        try c.encode(tokenPrefix, forKey: .tokenPrefix)
        try c.encode(row.status, forKey: .status)
        try c.encode(row.registeredAt.map(DeadTokenEvidence.format), forKey: .registeredAt)
        try c.encode(row.registeredColumn, forKey: .registeredColumn)
        try c.encode(DeadTokenEvidence.format(deadAt), forKey: .deadAt)
        try c.encode(evidence, forKey: .evidence)
    }
}

extension DeadTokenPlan.Kept: Encodable {
    enum CodingKeys: String, CodingKey {
        case tenant, why, explanation, evidence
        case deviceID = "device_id"
        case tokenPrefix = "token_prefix"
        case registeredAt = "registered_at"
    }

    /// `{"tenant", "device_id", "token_prefix", "why", "explanation", "registered_at", "evidence"}`.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(row.tenantSlug, forKey: .tenant)
        try c.encode(row.deviceID, forKey: .deviceID)
        try c.encode(tokenPrefix, forKey: .tokenPrefix)
        try c.encode(why.rawValue, forKey: .why)
        try c.encode(explanation, forKey: .explanation)
        try c.encode(row.registeredAt.map(DeadTokenEvidence.format), forKey: .registeredAt)
        try c.encode(evidence, forKey: .evidence)
    }
}

/// The plan being made, shared with the store's batches.
private final class PlanBox: Sendable {
    private let evidence: DeadTokenEvidenceSet
    /// The rows matched so far and the plan they make.
    private struct Building {
        var matched: Set<String> = []
        var matchedHashes: Set<String> = []
        var plan = DeadTokenPlan()
    }
    private let building = Mutex(Building())

    init(evidence: DeadTokenEvidenceSet) { self.evidence = evidence }

    /// Judges a batch, matching each row's token in the evidence's one form.
    func take(_ batch: [RegisteredToken]) {
        building.withLock { b in
            for row in batch {
                b.plan.rowsRead += 1
                let key = DeadTokenEvidenceSet.normalizedToken(row.token)
                if evidence.byToken[key] != nil { b.matched.insert(key) }
                let hashes = evidence.bySHA256.isEmpty ? [] : DeadTokenEvidenceSet.hashes(of: row.token)
                for hash in hashes where evidence.bySHA256[hash] != nil { b.matchedHashes.insert(hash) }
                switch DeadTokenPlan.judge(row, evidence.answers(for: row.token, hashes: hashes)) {
                case .dead(let entry): b.plan.dead.append(entry)
                case .kept(let kept): b.plan.kept.append(kept)
                case nil: break
                }
            }
        }
    }

    var plan: DeadTokenPlan {
        building.withLock { b in
            var p = b.plan
            p.unmatched =
                (evidence.byToken.count - b.matched.count) + (evidence.bySHA256.count - b.matchedHashes.count)
            return p
        }
    }
}
