import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

@testable import KKPushDiagnosis

/// `diagnose --json` and `token prune --json` encode a finding as `Finding` encodes itself and the plan's members as
/// `DeadTokenPlan` encodes them, no longer re-encoded by hand field by field. The hand encodings they replaced are
/// kept here, as they were, as the reference: through the command line's encoder (`Output.encoder()`, sorted keys)
/// the bytes are the same for fixtures with every severity, `confirmed` both ways, text with quotes, slashes, line
/// breaks and non-ASCII, dead and kept tokens, clears applied and skipped.
@Suite("diagnose and token prune --json: the reports' own encodings, byte for byte as before")
struct ReportEncodingParityCLITests {
    /// The finding encoding `DiagnoseReport` had (its `FindingJSON`).
    struct HandFinding: Encodable {
        var finding: Finding
        enum CodingKeys: String, CodingKey { case severity, code, message, fix, why, confirmed }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(finding.severity.rawValue, forKey: .severity)
            try c.encode(finding.code, forKey: .code)
            try c.encode(finding.message, forKey: .message)
            try c.encode(finding.fix, forKey: .fix)
            try c.encode(finding.why, forKey: .why)
            try c.encode(finding.confirmed, forKey: .confirmed)
        }
    }

    /// The report encoding `TokenPruneReport` had: the plan's members one by one, then the report's.
    struct HandPruneReport: Encodable {
        var report: TokenPruneReport
        enum CodingKeys: String, CodingKey {
            case dead, kept, unmatched, notes, store, answers, sql, applied, webhook
            case rowsRead = "rows_read"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(report.plan.dead, forKey: .dead)
            try c.encode(report.plan.kept, forKey: .kept)
            try c.encode(report.plan.rowsRead, forKey: .rowsRead)
            try c.encode(report.plan.unmatched, forKey: .unmatched)
            try c.encode(report.plan.notes, forKey: .notes)
            try c.encode(report.store, forKey: .store)
            try c.encode(report.answers, forKey: .answers)
            try c.encode(report.sql, forKey: .sql)
            try c.encode(report.applied.map(TokenPruneReport.Applied.init), forKey: .applied)
            try c.encode(report.webhook, forKey: .webhook)
        }
    }

    static func bytes(_ value: some Encodable) throws -> String {
        String(decoding: try Output.encoder().encode(value), as: UTF8.self)
    }

    static let findings = [
        Finding(
            .error, .environmentMismatch, message: #"build_environment "production" sends to production"#,
            why: "The token is a sandbox one.\nAPNs answers BadDeviceToken.",
            fix: "kkpush env resolve (buildEnvironment)",
            confirmed: true),
        Finding(
            .warning, .keyTeamSwapped, message: "Key file /keys/AuthKey_KKTEST0001.p8 — café", why: "w", fix: "f"),
        Finding(.info, .connectivity, message: "", why: "", fix: "https://127.0.0.1:2197/3/device/…", confirmed: true),
    ]

    @Test(
        "A finding, a diagnosis and a report with enrollments and reconciliation: the same bytes as the hand encoding")
    func diagnoseReport() throws {
        for finding in Self.findings {
            #expect(try Self.bytes(finding) == Self.bytes(HandFinding(finding: finding)), "\(finding)")
        }
        let blocked = Diagnosis(findings: Self.findings, pushEnvironment: .production, tokenEnvironment: .sandbox)
        let clean = Diagnosis(findings: [Self.findings[2]], pushEnvironment: .sandbox, tokenEnvironment: nil)
        let report = DiagnoseReport(
            entries: [.init(label: "vvwilhelmus/1 (member)", diagnosis: clean), .init(label: nil, diagnosis: blocked)],
            reconciliation: Array(Self.findings.reversed()))
        let text = try Self.bytes(report)
        // Every finding of the report stands in it as the hand encoding wrote it.
        let hand = try Self.bytes(Self.findings.map(HandFinding.init))
        let own = try Self.bytes(Self.findings)
        #expect(own == hand)
        #expect(text.contains(String(hand.dropFirst().dropLast())), "\(text)")
        #expect(text.contains(try Self.bytes(Self.findings.reversed().map(HandFinding.init))), "\(text)")
    }

    @Test("token prune's report, dry run and applied: the same bytes as the hand encoding")
    func pruneReport() throws {
        let plan = TokenPruneFixtures.reportPlan()
        try #require(plan.dead.count == 1 && plan.kept.count == 1)
        let registered = Date(timeIntervalSince1970: 1_799_000_000.25)
        var applied = GuardedClearReport()
        applied.cleared = [plan.dead[0].clear]
        let back = GuardedTokenClear(
            tenantSlug: "agovv", deviceID: "dev-back", token: String(repeating: "b2", count: 32),
            registeredBefore: registered, comment: "")
        applied.skipped = [(back, .reRegistered(registered)), (back, .gone), (back, .tokenChanged)]
        let tally = WebhookTally()
        tally.used = true
        let reports = [
            TokenPruneReport(
                plan: plan, applied: nil, webhook: .init(WebhookTally()), evidence: DeadTokenEvidenceSet(), sql: nil,
                store: "enrollments.sqlite"),
            TokenPruneReport(
                plan: plan, applied: applied, webhook: .init(tally), evidence: DeadTokenEvidenceSet(),
                sql: "/tmp/plan.sql", store: "postgres://kkpush@127.0.0.1/kantinekoning"),
        ]
        for report in reports {
            let own = try Self.bytes(report)
            #expect(own == (try Self.bytes(HandPruneReport(report: report))), "\(own)")
            #expect(own.contains(#""rows_read":3"#) && own.contains(#""store":"#), "\(own)")
        }
    }
}
