import Foundation
import KKPushCore
import KantineKoning
import Testing

/// `audit`'s summary counters as KantineKoning encodes them (``FleetAuditTally/Summary``): every field name, the
/// counts by code and by tenant, the routing groups, and the server's variables by their own names, null when unset.
@Suite("Fleet audit: the summary's JSON")
struct FleetAuditJSONTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test("The summary of a small fleet: counters, by_finding, by_tenant, routing and settings")
    func summary() throws {
        let fleet = [
            FleetAuditRulesTests.e("a", hw: FleetAuditRulesTests.hw(1), token: FleetAuditRulesTests.token(1)),
            FleetAuditRulesTests.e(
                "b", tenant: "agovv", hw: FleetAuditRulesTests.hw(2), token: FleetAuditRulesTests.token(2),
                status: .revoked),
            FleetAuditRulesTests.e("c", hw: FleetAuditRulesTests.hw(3), token: nil),
        ]
        let settings = ServerAPNsSettings(forceEnv: "sandbox")
        let (_, tally) = FleetAudit.audit(fleet, settings: settings)
        let o = try Self.object(tally.summary(settings: settings))
        #expect(
            Set(o.keys) == [
                "scanned", "active", "revoked", "with_token", "distinct_tokens", "errors", "warnings", "by_finding",
                "by_tenant", "routing", "settings",
            ])
        #expect(o["scanned"] as? Int == 3 && o["active"] as? Int == 2 && o["revoked"] as? Int == 1)
        #expect(o["with_token"] as? Int == tally.withToken && o["distinct_tokens"] as? Int == tally.distinctTokens)
        #expect(o["errors"] as? Int == tally.errorCount && o["warnings"] as? Int == tally.warningCount)

        let byFinding = try #require(o["by_finding"] as? [String: [String: Any]])
        #expect(Set(byFinding.keys) == Set(tally.byCode.keys))
        let revoked = try #require(byFinding[FleetAuditCode.revokedWithToken])
        #expect(Set(revoked.keys) == ["severity", "count", "meaning"])
        #expect(revoked["severity"] as? String == "warning" && revoked["count"] as? Int == 1)
        #expect(revoked["meaning"] as? String == FleetAuditCatalog.entry(FleetAuditCode.revokedWithToken)?.meaning)

        let tenants = try #require(o["by_tenant"] as? [String: [String: Any]])
        #expect(Set(tenants.keys) == ["vvwilhelmus", "agovv"])
        #expect(tenants["agovv"]?["enrollments"] as? Int == 1)
        #expect(
            tenants["agovv"]?["findings"] as? [String: Int] == tally.byTenant["agovv"]?.findings
                && tally.byTenant["agovv"]?.findings.isEmpty == false)

        let routing = try #require(o["routing"] as? [[String: Any]])
        #expect(routing.count == tally.routingByCount.count && !routing.isEmpty)
        #expect(
            Set(routing[0].keys) == [
                "token_environment", "token_evidence", "push_environment", "decided_by", "enrollments", "misrouted",
            ])
        #expect(routing[0]["push_environment"] as? String == "sandbox")
        #expect(routing[0]["decided_by"] as? String == ResolutionRule.forceEnv.rawValue)

        let server = try #require(o["settings"] as? [String: Any])
        #expect(Set(server.keys) == [ServerAPNsSettings.forceVariable, ServerAPNsSettings.legacyVariable])
        #expect(server[ServerAPNsSettings.forceVariable] as? String == "sandbox")
        #expect(server[ServerAPNsSettings.legacyVariable] is NSNull)
    }
}
