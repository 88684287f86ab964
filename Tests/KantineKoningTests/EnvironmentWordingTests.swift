import Foundation
import KKPushCore
import Testing

@testable import KantineKoning

/// The environment model worded once (`EnvironmentModel`): build_environment is a claim, the signature decides, a
/// fix is worded by distribution, and the audit's routing table marks what it inferred and lets the probe win.
@Suite("Environment wording")
struct EnvironmentWordingTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let token = String(repeating: "ab", count: 32)

    @Test("An override against build_environment \"production\": the value is a claim, not what makes the token")
    func overrideWordsAClaim() throws {
        let r = EnvironmentResolver.resolve(
            buildEnvironment: "production", settings: ServerAPNsSettings(legacyAPNSEnv: "sandbox"))
        let w = try #require(r.warnings.first { $0.code.rawValue == "server-env-override" })
        #expect(w.message.contains("build_environment \"production\" claims a production build"))
        #expect(w.message.contains("the build's signature (aps-environment) decides"))
        #expect(!w.message.contains("means its token is a production token"))
    }

    @Test("A test user on a build claiming production: the fix is worded by distribution, not by scheme")
    func testUserFixByDistribution() throws {
        let r = EnvironmentResolver.resolve(buildEnvironment: "production", isTestUser: true)
        let w = try #require(r.warnings.first { $0.code.rawValue == "test-user-production-build" })
        #expect(w.message.contains("claims a production build"))
        #expect(!w.fix.contains("Release Testing build"))
        #expect(w.fix.contains("development-signed build"))
        #expect(w.fix.contains("TestFlight and ad hoc builds are production-signed"))

        var f = DiagnosisFacts(now: Self.now)
        f.enrollment = Enrollment(
            deviceID: "tester", tenantSlug: "vvwilhelmus", teamCodes: ["A"], role: .member,
            hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000001", apnsToken: Self.token,
            buildEnvironment: "production", apsEnvironment: nil, appVersion: "1.4.2", isTestUser: true,
            status: .active, updatedAt: Self.now)
        let d = Diagnoser.diagnose(f)
        let mismatch = try #require(d.findings.first { $0.code == DiagnosisCode.environmentMismatch })
        #expect(!mismatch.message.contains("makes the token"))
        #expect(mismatch.message.contains("claims a production build"))
        #expect(!mismatch.fix.contains("Release Testing build"))
        #expect(mismatch.fix.contains(EnvironmentModel.installFix(for: .sandbox)))
    }

    @Test("The audit's routing table marks an inferred environment, and the probe's answer replaces it")
    func auditRoutingProbeWins() throws {
        let e = Enrollment(
            deviceID: "claims-dev", tenantSlug: "vvwilhelmus", teamCodes: ["A"], role: .member,
            hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000002", apnsToken: Self.token,
            buildEnvironment: "development", apsEnvironment: nil, appVersion: "1.4.2", isTestUser: false,
            status: .active, updatedAt: Self.now)
        var audit = FleetAudit(settings: ServerAPNsSettings())
        _ = audit.tokenPass(e)
        _ = audit.finishTokenPass()
        _ = audit.hardwarePass(e)
        _ = audit.finishHardwarePass()
        let inferred = FleetAuditTally.RoutingGroup(
            tokenEnvironment: .sandbox, pushEnvironment: .sandbox, decidedBy: .buildEnvironment,
            tokenEvidence: .inferred)
        #expect(audit.tally.effectiveRouting == [inferred: 1])

        // The probe: sandbox does not know the token, production does. A TestFlight build reporting "development".
        let found = audit.probeFindings(
            [e], sandbox: .rejected(status: 400, reason: .badDeviceToken, timestamp: nil), production: .accepted)
        #expect(found.map(\.code) == [FleetAuditCode.tokenWrongEnvironment])
        let proved = FleetAuditTally.RoutingGroup(
            tokenEnvironment: .production, pushEnvironment: .sandbox, decidedBy: .buildEnvironment,
            tokenEvidence: .proved)
        #expect(audit.tally.effectiveRouting == [proved: 1])
        #expect(proved.misrouted)
        let json = try JSONValue(encoding: audit.tally.summary(settings: ServerAPNsSettings()))
        guard case .object(let summary) = json, case .array(let groups)? = summary["routing"],
            case .object(let group)? = groups.first
        else {
            Issue.record("no routing in \(json)")
            return
        }
        #expect(group["token_evidence"] == .string("proved"))
        #expect(group["token_environment"] == .string("production"))
    }

    @Test("Judging a missing build_environment names development-signed builds, not a scheme")
    func missingValueWordsTheSignature() throws {
        var f = DiagnosisFacts(now: Self.now)
        f.enrollment = Enrollment(
            deviceID: "silent", tenantSlug: "vvwilhelmus", teamCodes: ["A"], role: .member,
            hardwareIdentifier: "6F1C2A8E-0000-4000-8000-000000000003", apnsToken: Self.token,
            buildEnvironment: nil, apsEnvironment: nil, appVersion: "1.4.2", isTestUser: false, status: .active,
            updatedAt: Self.now)
        let missing = try #require(
            Diagnoser.diagnose(f).findings.first { $0.code.rawValue == "build-environment-missing" })
        #expect(missing.why.contains(EnvironmentModel.builds(of: .sandbox)))
        #expect(!missing.why.contains("Release Testing build's sandbox token"))
    }

    @Test("The labels and the rule say the model")
    func labels() {
        #expect(EnvironmentModel.label(.production, .inferred) == "production (inferred)")
        #expect(EnvironmentModel.label(.sandbox, .proved) == "sandbox (proved)")
        #expect(EnvironmentModel.label(nil, nil) == "unknown")
        #expect(EnvironmentModel.rule.contains("only development-signed builds"))
    }
}
