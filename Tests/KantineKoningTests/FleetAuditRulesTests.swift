import Foundation
import KKPushCore
import KantineKoning
import Testing

@Suite("Fleet audit: the rules on hand-made fleets")
struct FleetAuditRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    static func hw(_ n: Int) -> String { String(format: "6F1C2A8E-0000-4000-8000-%012X", n) }

    static func e(
        _ device: String, tenant: String = "vvwilhelmus", teams: [String] = ["JO11-3"], hw hardware: String,
        token: String?, build: String? = "production", aps: String? = nil, testUser: Bool = false,
        status: EnrollmentStatus = .active
    ) -> Enrollment {
        Enrollment(
            deviceID: device, tenantSlug: tenant, teamCodes: teams, role: .member, hardwareIdentifier: hardware,
            apnsToken: token, buildEnvironment: build, apsEnvironment: aps, appVersion: "1.4.2", isTestUser: testUser,
            status: status, updatedAt: now)
    }

    /// A healthy fleet: one phone in two tenants (one token), development and production builds, a test user on
    /// a development build, a revoked enrollment without a token, 5 teams on one phone.
    static let healthy: [Enrollment] = [
        e("a1", tenant: "vvwilhelmus", teams: ["JO11-3", "JO9-1"], hw: hw(1), token: token(1)),
        e("a2", tenant: "rkvvmeteoor", teams: ["MO13-2", "JO8-1", "JO7-1"], hw: hw(1).lowercased(), token: token(1)),
        e("b1", hw: hw(2), token: token(2), build: "development"),
        e("c1", hw: hw(3), token: token(3), build: "development", testUser: true),
        e("d1", hw: hw(4), token: nil, build: nil, status: .revoked),
        e("e1", hw: hw(5), token: token(5), build: "development", aps: "development"),
        e("e2", hw: hw(6), token: token(6), build: "development", aps: "production"),
        // revoked, on another phone, holding nothing: the active token of hw(1) is not "shared"
        e("a0", tenant: "vvwilhelmus", hw: hw(7), token: nil, status: .revoked),
    ]

    @Test("a healthy fleet gives no finding")
    func healthyFleet() {
        let (findings, tally) = FleetAudit.audit(Self.healthy)
        #expect(findings.isEmpty, "\(findings.map { "\($0.code) \($0.deviceID)" })")
        #expect(tally.scanned == Self.healthy.count)
        #expect(tally.active == 6)
        #expect(tally.revoked == 2)
        #expect(tally.withToken == 6)
        #expect(tally.distinctTokens == 5)
        #expect(!tally.hasErrors)
        #expect(tally.routing.values.reduce(0, +) == 6)
        #expect(!tally.routing.keys.contains { $0.misrouted })
    }

    /// Every finding, each planted once (or on the group it needs), by code → the enrollments it names.
    static let planted: [(Enrollment, [String])] = [
        (e("shared-1", tenant: "t1", hw: hw(10), token: token(10)), ["token-shared"]),
        (e("shared-2", tenant: "t2", hw: hw(11), token: token(10)), ["token-shared"]),
        (e("revoked-tok", hw: hw(12), token: token(12), status: .revoked), ["revoked-with-token"]),
        (e("no-token", hw: hw(13), token: nil, build: nil), ["token-missing"]),
        (
            e("upper", hw: hw(14), token: token(14).uppercased().replacingOccurrences(of: "0", with: "A")),
            ["token-uppercase"]
        ),
        (e("short", hw: hw(15), token: "abcd1234"), ["token-format"]),
        (
            e("tester", hw: hw(16), token: token(16), build: "production", testUser: true),
            ["test-user-production-build"]
        ),
        (e("testing", hw: hw(17), token: token(17), build: "testing"), ["build-environment-testing"]),
        (e("unknown", hw: hw(18), token: token(18), build: "staging"), ["build-environment-unknown"]),
        (e("missing", hw: hw(19), token: token(19), build: nil), ["build-environment-missing"]),
        (e("nonstd", hw: hw(20), token: token(20), build: "release"), ["build-environment-nonstandard"]),
        (e("nearmiss", hw: hw(21), token: token(21), build: "Development"), ["build-environment-not-normalized"]),
        (
            e("switch-1", tenant: "t1", hw: hw(22), token: token(22), build: "development"),
            ["build-environment-disagree"]
        ),
        (
            e("switch-2", tenant: "t2", hw: hw(22), token: token(22), build: "production"),
            ["build-environment-disagree"]
        ),
        (e("teams-1", tenant: "t1", teams: ["A", "B", "C"], hw: hw(23), token: token(23)), ["too-many-teams"]),
        (e("teams-2", tenant: "t2", teams: ["A", "D", "E"], hw: hw(23), token: token(23)), ["too-many-teams"]),
        // revoked enrollments do not count towards the teams or the shared token
        (e("teams-old", tenant: "t3", teams: ["X", "Y", "Z"], hw: hw(24), token: nil, status: .revoked), []),
    ]

    @Test("every finding is found once per affected enrollment, and nowhere else")
    func everyFinding() {
        let fleet = Self.planted.map(\.0) + Self.healthy
        let (findings, tally) = FleetAudit.audit(fleet)
        var expected: [String: Set<String>] = [:]
        for (e, codes) in Self.planted { for c in codes { expected[c, default: []].insert(e.deviceID) } }
        var got: [String: Set<String>] = [:]
        for f in findings { got[f.code, default: []].insert(f.deviceID) }
        #expect(got == expected)
        #expect(findings.count == expected.values.map(\.count).reduce(0, +), "one finding per enrollment and code")
        for (code, devices) in expected { #expect(tally.byCode[code] == devices.count, "\(code)") }
        #expect(tally.hasErrors)
        #expect(tally.byTenant["t1"]?.findings["token-shared"] == 1)
        for f in findings {
            #expect(!f.message.contains(Self.token(10)), "no whole token in \(f.message)")
            #expect(f.message.contains(f.deviceID), "the message names the enrollment: \(f.message)")
            #expect(!f.fix.isEmpty)
            #expect(FleetAuditCatalog.entry(f.code)?.severity == f.severity, "\(f.code)")
        }
        let shared = findings.first { $0.code == "token-shared" }
        #expect(shared?.tokenPrefix == Redaction.prefix(Self.token(10)))
    }

    @Test("the server's override: misrouted builds are server-env-override errors, the routing table counts groups")
    func serverOverride() {
        let fleet = [
            Self.e("dev", hw: Self.hw(1), token: Self.token(1), build: "development"),
            Self.e("prod", hw: Self.hw(2), token: Self.token(2), build: "production"),
            Self.e("signed", hw: Self.hw(3), token: Self.token(3), build: "production", aps: "development"),
        ]
        let (findings, tally) = FleetAudit.audit(fleet, settings: ServerAPNsSettings(forceEnv: "production"))
        #expect(Set(findings.filter { $0.code == "server-env-override" }.map(\.deviceID)) == ["dev", "signed"])
        let misrouted = tally.routing.filter { $0.key.misrouted }.values.reduce(0, +)
        #expect(misrouted == 2)
        #expect(tally.routing.keys.allSatisfy { $0.decidedBy == .forceEnv && $0.pushEnvironment == .production })
        let (none, _) = FleetAudit.audit(fleet, settings: ServerAPNsSettings(legacyAPNSEnv: "Sandbox"))
        #expect(none.isEmpty, "an ignored value is not a finding of each enrollment")
    }

    @Test("filters: --tenant reports that tenant's side of a cross-tenant finding, --finding one code")
    func filters() {
        let fleet = Self.planted.map(\.0)
        let (t1, tally) = FleetAudit.audit(fleet, tenant: "t1")
        #expect(Set(t1.map(\.deviceID)) == ["shared-1", "switch-1", "teams-1"])
        #expect(tally.scanned == fleet.filter { $0.tenantSlug == "t1" }.count)
        let (onlyShared, _) = FleetAudit.audit(fleet, codes: ["token-shared"])
        #expect(Set(onlyShared.map(\.deviceID)) == ["shared-1", "shared-2"])
    }

    @Test("groups are judged one at a time: the accumulators flush when the key changes")
    func accumulators() {
        var tokens = TokenGroupAccumulator()
        #expect(tokens.add(Self.e("x", hw: Self.hw(1), token: Self.token(1))).isEmpty)
        #expect(tokens.add(Self.e("y", hw: Self.hw(2), token: Self.token(1))).isEmpty)
        let flushed = tokens.add(Self.e("z", hw: Self.hw(3), token: Self.token(2)))
        #expect(flushed.map(\.deviceID) == ["x", "y"])
        #expect(tokens.finish().isEmpty)

        var phones = HardwareGroupAccumulator()
        _ = phones.add(Self.e("p", hw: "AAAA", token: Self.token(1), build: "development"))
        _ = phones.add(Self.e("q", hw: "aaaa", token: Self.token(1), build: "production"))
        let closed = phones.add(Self.e("r", hw: "BBBB", token: Self.token(3)))
        #expect(Set(closed.map(\.deviceID)) == ["p", "q"], "identifiers compared without case")
        #expect(phones.finish().isEmpty)
    }

    @Test("JSON lines carry the documented keys and only a token prefix")
    func jsonLine() throws {
        let (findings, _) = FleetAudit.audit([Self.e("r", hw: Self.hw(1), token: Self.token(77), status: .revoked)])
        try #require(findings.count == 1)
        let out = try JSONEncoder().encode(findings[0])
        let object = try JSONSerialization.jsonObject(with: out) as? [String: Any]
        #expect(
            Set(object?.keys ?? [:].keys) == [
                "finding", "severity", "tenant", "device_id", "hardware_identifier", "token_prefix", "message", "fix",
            ])
        #expect(object?["finding"] as? String == "revoked-with-token")
        #expect(object?["severity"] as? String == "warning" && object?["tenant"] as? String == findings[0].tenant)
        #expect(object?["token_prefix"] as? String == DeviceToken.redacted(Self.token(77)))
        #expect(!String(decoding: out, as: UTF8.self).contains(Self.token(77)))
    }

    @Test("A finding without a token has token_prefix null, not left out")
    func jsonLineWithoutToken() throws {
        let (findings, _) = FleetAudit.audit([Self.e("n", hw: Self.hw(2), token: nil)])
        let finding = try #require(findings.first { $0.code == FleetAuditCode.tokenMissing })
        let object = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(finding)) as? [String: Any])
        #expect(object.keys.contains("token_prefix") && object["token_prefix"] is NSNull)
        #expect(object["device_id"] as? String == "n" && object["hardware_identifier"] as? String == Self.hw(2))
    }
}
