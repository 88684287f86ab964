import Foundation
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushTestSupport
import Testing

/// `token prune`'s plan and report as KKPushDiagnosis makes them: the JSON field names (the schema scripts read),
/// null where a value is unknown or nothing was done, tokens by prefix only, and the text that names no flag.
@Suite("Token prune: the plan's and the report's JSON and text")
struct TokenPruneReportTests {
    static let dead = String(repeating: "a1", count: 32)
    static let kept = String(repeating: "b2", count: 32)
    static let noTime = String(repeating: "c3", count: 32)

    static func date(_ iso: String) -> Date {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: iso)!
    }

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    /// A plan of one dead token (a 410 after its registration, ``dead``) and one kept (a 410 without a time,
    /// ``noTime``): `TokenPruneFixtures.reportPlan()`.
    static func plan() throws -> DeadTokenPlan {
        let plan = TokenPruneFixtures.reportPlan()
        try #require(plan.dead.count == 1 && plan.kept.count == 1, "a row with answers was not judged")
        #expect(plan.dead[0].row.token == dead && plan.kept[0].row.token == noTime)
        return plan
    }

    @Test("The plan's JSON: dead and kept entries with every field, null where the row holds no time")
    func planJSON() throws {
        let plan = try Self.plan()
        let o = try Self.object(plan)
        #expect(Set(o.keys) == ["dead", "kept", "rows_read", "unmatched", "notes"])
        #expect(o["rows_read"] as? Int == 3 && o["unmatched"] as? Int == 1)
        #expect(o["notes"] as? [String] == plan.notes)

        let dead = try #require((o["dead"] as? [[String: Any]])?.first)
        #expect(
            Set(dead.keys) == [
                "tenant", "device_id", "token_prefix", "status", "registered_at", "registered_column", "dead_at",
                "evidence",
            ])
        #expect(dead["device_id"] as? String == "dev-dead" && dead["token_prefix"] as? String == "a1a1a1a1a1a1…")
        #expect(dead["registered_at"] as? String == "2027-01-10T08:00:00.000Z")
        // The guard's time: APNs' answer rounded down to the second.
        #expect(dead["dead_at"] as? String == "2027-01-15T09:30:00.000Z")
        let evidence = try #require((dead["evidence"] as? [[String: Any]])?.first)
        #expect(Set(evidence.keys) == ["source", "location", "answer", "environment", "at"])
        #expect(
            evidence["source"] as? String == "send-batch ledger" && evidence["environment"] as? String == "production")
        #expect(evidence["at"] as? String == "2027-01-15T09:30:00.123Z")

        let kept = try #require((o["kept"] as? [[String: Any]])?.first)
        #expect(
            Set(kept.keys) == [
                "tenant", "device_id", "token_prefix", "why", "explanation", "registered_at", "evidence",
            ])
        #expect(kept["why"] as? String == "no-time" && kept["registered_at"] is NSNull)
        #expect(kept["explanation"] as? String == plan.kept[0].explanation)
        let keptEvidence = try #require((kept["evidence"] as? [[String: Any]])?.first)
        #expect(keptEvidence["at"] is NSNull)

        let text = String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)
        #expect(!text.contains(Self.dead) && !text.contains(Self.noTime), "a whole token in the JSON")
    }

    @Test("The webhook's body: gorush's members in order, the whole token, the evidence as the plan encodes it")
    func webhookBody() throws {
        let entry = try Self.plan().dead[0]
        let text = String(decoding: entry.webhookBody, as: UTF8.self)
        let members = ["platform", "token", "tenant", "device_id", "reason", "dead_at", "evidence"]
        let places = members.compactMap { text.range(of: "\"\($0)\":")?.lowerBound }
        #expect(places.count == members.count && places == places.sorted(), "\(text)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(entry.webhookBody)) as? [String: Any])
        #expect(o["token"] as? String == Self.dead && o["reason"] as? String == "410 Unregistered")
        #expect(o["dead_at"] as? String == "2027-01-15T09:30:00.000Z")
        let evidence = try #require((o["evidence"] as? [[String: Any]])?.first)
        #expect(Set(evidence.keys) == ["source", "location", "answer", "environment", "at"])
        #expect(evidence["location"] as? String == "results.jsonl line 1")
    }

    @Test("The report of a dry run: the plan's fields, applied and sql null, would_post null without a webhook")
    func dryRun() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ledger = dir.appendingPathComponent("results.jsonl")
        try Data(
            """
            {"index":1,"token":"\(Self.dead)","status":"rejected","reason":"Unregistered","http_status":410,"timestamp":1800000000000}
            {"index":2,"token":"\(Self.kept)","status":"accepted","reason":null,"http_status":200,"timestamp":null}

            """.utf8
        ).write(to: ledger)
        var evidence = DeadTokenEvidenceSet()
        try evidence.readLedger(path: ledger.path, label: "ledger")
        let report = TokenPruneReport(
            plan: try Self.plan(), applied: nil, webhook: .init(WebhookTally()), evidence: evidence, sql: nil,
            store: "enrollments.sqlite")

        let o = try Self.object(report)
        #expect(
            Set(o.keys) == [
                "dead", "kept", "rows_read", "unmatched", "notes", "store", "answers", "sql", "applied", "webhook",
            ])
        #expect(o["applied"] is NSNull && o["sql"] is NSNull && o["store"] as? String == "enrollments.sqlite")
        #expect(o["answers"] as? Int == evidence.count && evidence.count == 1)
        let webhook = try #require(o["webhook"] as? [String: Any])
        #expect(Set(webhook.keys) == ["posted", "failed", "would_post"])
        #expect(webhook["posted"] as? Int == 0 && webhook["would_post"] is NSNull)

        #expect(report.evidenceLine == "1 token with answers (send-batch ledger: 2 lines)")
        let lines = report.planLines
        #expect(lines.first == "Store: enrollments.sqlite (3 rows holding a token read)")
        #expect(lines.contains("Answers: 1 token with answers (send-batch ledger: 2 lines); 1 held by no enrollment."))
        #expect(lines.contains("Dead (1): APNs says the token is gone, after it was registered:"))
        #expect(
            lines.contains { $0.hasPrefix("  vvwilhelmus/dev-notime  token c3c3c3c3c3c3…  no-time: ") }, "\(lines)")
        #expect(report.appliedLines.isEmpty)
        for line in lines { #expect(!line.contains("--"), "a flag in the engine's text: \(line)") }
    }

    @Test("The report after the clears: the count cleared and each skipped row with its code and words")
    func applied() throws {
        let plan = try Self.plan()
        var applied = GuardedClearReport()
        applied.cleared = [plan.dead[0].clear]
        let skipped = GuardedTokenClear(
            tenantSlug: "agovv", deviceID: "dev-back", token: Self.kept,
            registeredBefore: Self.date(
                "2027-01-15T09:30:00.000Z"), comment: "")
        let again = Self.date("2027-01-20T10:00:00.000Z")
        applied.skipped = [(skipped, .reRegistered(again)), (skipped, .gone), (skipped, .tokenChanged)]
        let tally = WebhookTally()
        tally.used = true
        let report = TokenPruneReport(
            plan: plan, applied: applied, webhook: .init(tally), evidence: DeadTokenEvidenceSet(), sql: "plan.sql",
            store: "enrollments.sqlite")

        let o = try Self.object(report)
        #expect(o["sql"] as? String == "plan.sql")
        let done = try #require(o["applied"] as? [String: Any])
        #expect(Set(done.keys) == ["cleared", "skipped"] && done["cleared"] as? Int == 1)
        let rows = try #require(done["skipped"] as? [[String: Any]])
        #expect(rows.map { $0["why"] as? String } == ["re-registered", "gone", "token-changed"])
        #expect(Set(rows[0].keys) == ["tenant", "device_id", "token_prefix", "why"])
        #expect(rows[0]["token_prefix"] as? String == "b2b2b2b2b2b2…" && rows[0]["device_id"] as? String == "dev-back")

        #expect(report.planLines.last == "Plan written to plan.sql: 1 guarded clear in one transaction.")
        #expect(
            report.appliedLines == [
                "Applied in one transaction: 1 token cleared, 3 skipped.",
                "  skipped agovv/dev-back token b2b2b2b2b2b2…: re-registered since APNs' answer (registered 2027-01-20T10:00:00.000Z)",
                "  skipped agovv/dev-back token b2b2b2b2b2b2…: the row is gone",
                "  skipped agovv/dev-back token b2b2b2b2b2b2…: the row holds another token now (or none)",
            ])
        #expect(GuardedClearReport.Skip.reRegistered(nil).words.hasSuffix("(registered at an unknown time)"))
    }
}
