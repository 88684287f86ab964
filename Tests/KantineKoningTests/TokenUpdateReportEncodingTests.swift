import Foundation
import KKPushCore
import KantineKoning
import Testing

/// `token verify`'s report as KantineKoning makes it (``TokenUpdateReport``): its JSON field names, null where the
/// body is not a JSON object, and the lines before the problems (the token by prefix only).
@Suite("Token update report: JSON and text")
struct TokenUpdateReportEncodingTests {
    static func object(_ report: TokenUpdateReport) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
    }

    static let token = String(repeating: "AB", count: 32)

    static func body(_ fields: String) -> Data {
        Data(
            """
            {"token": "\(token)", "build_environment": "development", "app_version": "1.4.2", \
            "hardware_identifier": "\(TokenUpdateFixtures.phoneA)"\(fields)}
            """.utf8)
    }

    @Test("A valid update: valid, the environment and the rule that decided, each problem as {severity, code, …}")
    func valid() throws {
        let report = TokenUpdateRules.check(body: Self.body(#", "aps_environment": "production""#))
        #expect(report.valid && report.resolvedEnvironment == .production)
        let o = try Self.object(report)
        #expect(Set(o.keys) == ["valid", "resolved_environment", "decided_by", "problems"])
        #expect(o["valid"] as? Bool == true && o["resolved_environment"] as? String == "production")
        #expect(o["decided_by"] as? String == ResolutionRule.apsEnvironment.rawValue)
        let problems = try #require(o["problems"] as? [[String: Any]])
        #expect(problems.count == report.problems.count && !problems.isEmpty)
        #expect(Set(problems[0].keys) == ["severity", "code", "message", "fix"])
        #expect(problems.map { $0["code"] as? String } == report.problems.map(\.code.rawValue))

        let lines = report.summaryLines
        #expect(lines.count == 3)
        #expect(lines[0] == "token update: valid (0 errors, 2 warnings)", "\(lines)")
        #expect(
            lines[1].hasPrefix(
                "  the backend resolves: production (api.push.apple.com), decided by aps_environment: "))
        #expect(
            lines[2]
                == "  token ABABABABABAB…, build_environment \"development\", aps_environment \"production\", app_version \"1.4.2\""
        )
        #expect(!lines.joined().contains(Self.token), "the whole token in the text")
    }

    @Test("A body that is not a JSON object: invalid, resolved_environment and decided_by null (not left out)")
    func notJSON() throws {
        let report = TokenUpdateRules.check(body: Data("token=abc".utf8))
        #expect(!report.valid)
        let o = try Self.object(report)
        #expect(Set(o.keys) == ["valid", "resolved_environment", "decided_by", "problems"])
        #expect(o["valid"] as? Bool == false && o["resolved_environment"] is NSNull && o["decided_by"] is NSNull)
        #expect(
            report.summaryLines == [
                "token update: INVALID (1 error, 0 warnings)",
                "  the backend resolves: nothing (the body is not a JSON object)",
            ])
    }
}
