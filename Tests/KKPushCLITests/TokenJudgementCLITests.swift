import Foundation
import KKPushTestSupport
import Testing

/// One token judgement across commands: an uppercase token is a warning in `audit` and `diagnose` alike (the
/// mock and `send` accept it too); a value too short to be a token is shown, not masked.
@Suite("Token judgement across commands")
struct TokenJudgementCLITests {
    static let lower = String(repeating: "ab12", count: 16)

    /// A store of one active enrollment per (device, token), written as the audit's tests write theirs.
    static func store(_ rows: [(device: String, token: String)]) async throws -> (db: String, dir: URL) {
        try await AuditCLITests.makeSQLite(
            rows.enumerated().map { i, r in
                AuditCLITests.Row(
                    tenant: "vvwilhelmus", device: r.device, teams: ["A"], hardware: AuditCLITests.hw(i + 1),
                    token: r.token, build: "production")
            })
    }

    @Test("audit: an uppercase token is a token-uppercase warning (exit 0), as diagnose says of the same row")
    func uppercaseAuditAndDiagnose() async throws {
        let (db, dir) = try await Self.store([("upper", Self.lower.uppercased())])
        defer { try? FileManager.default.removeItem(at: dir) }
        let audit = try await CLI.run(["audit", "--store", db, "--json", "--ignore-process-env"])
        #expect(audit.status == 0, "\(audit.stdout)\(audit.stderr)")
        #expect(audit.stdout.contains(#""finding":"token-uppercase""#))
        #expect(audit.stdout.contains(#""severity":"warning""#))
        #expect(!audit.stdout.contains(#""finding":"token-format""#))

        let diagnose = try await CLI.run([
            "diagnose", "--store", db, "--device-id", "upper", "--ignore-process-env", "--json",
        ])
        #expect(diagnose.status == 0, "\(diagnose.stdout)\(diagnose.stderr)")
        let findings = try #require(try diagnose.json()["findings"] as? [[String: Any]])
        let upper = findings.filter { $0["code"] as? String == "token-uppercase" }
        #expect(upper.count == 1)
        #expect(upper.first?["severity"] as? String == "warning")
        #expect(!findings.contains { $0["code"] as? String == "token-format" })

        let flag = try await CLI.run(["diagnose", "--token", Self.lower.uppercased(), "--json"])
        let flagFindings = try #require(try flag.json()["findings"] as? [[String: Any]])
        #expect(
            flagFindings.contains {
                $0["code"] as? String == "token-uppercase" && $0["severity"] as? String == "warning"
            })
    }

    @Test("audit shows a three-character token as it is, not as •••")
    func shortTokenShown() async throws {
        let (db, dir) = try await Self.store([("short", "abc")])
        defer { try? FileManager.default.removeItem(at: dir) }
        let audit = try await CLI.run(["audit", "--store", db, "--json", "--ignore-process-env"])
        #expect(audit.status == 1, "\(audit.stdout)\(audit.stderr)")
        #expect(audit.stdout.contains(#""token_prefix":"abc""#))
        #expect(audit.stdout.contains("apns_token abc is not a usable APNs token"))
        #expect(!audit.stdout.contains("•••"))
    }
}
