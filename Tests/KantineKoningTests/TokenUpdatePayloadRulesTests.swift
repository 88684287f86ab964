import Foundation
import KKPushCore
import KKPushTestSupport
import KantineKoning
import Testing

/// The phones and tokens of the token-update rules' tests.
enum TokenUpdateFixtures {
    static let phoneA = "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"

    static func token(_ seed: UInt8) -> String {
        (0..<32).map { String(format: "%02x", UInt8(truncatingIfNeeded: Int($0) &* 7 &+ Int(seed))) }.joined()
    }
}

/// The rules of a token-update body (KantineKoning's `TokenUpdateRules`): the captured table's verdicts, the typed
/// update, and what an enrollment's history contradicts.
@Suite("Token-update payload rules")
struct TokenUpdatePayloadRulesTests {
    @Test("The fixture table is loaded")
    func tableLoads() {
        #expect(TokenUpdateCase.all().count >= 30)
    }

    @Test("Each payload gets its verdict, codes and resolved environment", arguments: TokenUpdateCase.all())
    func table(_ c: TokenUpdateCase) {
        let settings = ServerAPNsSettings(forceEnv: c.forceEnv, legacyAPNSEnv: c.legacyEnv)
        let context = TokenUpdateContext(
            knownEnvironment: c.knownEnvironment.flatMap(APNsEnvironment.init(rawValue:)), settings: settings)
        let report = TokenUpdateRules.check(body: c.data(), context: context)
        #expect(report.valid == c.valid, "\(c.name): \(report.problems)")
        #expect(Set(report.problems.errors.map(\.code.rawValue)) == Set(c.errors), "\(c.name): \(report.problems)")
        for code in c.warnings {
            #expect(report.problems.warnings.map(\.code.rawValue).contains(code), "\(c.name) lacks warning \(code)")
        }
        for code in c.infos {
            #expect(
                report.problems.contains { $0.severity == .info && $0.code.rawValue == code },
                "\(c.name) lacks info \(code)")
        }
        #expect(report.resolvedEnvironment?.rawValue == c.resolvedEnvironment, "\(c.name)")
        for p in report.problems {
            #expect(!p.message.isEmpty && !p.fix.isEmpty, "\(c.name): \(p.code) needs a message and a fix")
        }
    }

    @Test("A valid body decodes into the typed update")
    func typed() throws {
        let report = TokenUpdateRules.check(body: TokenUpdateCase.named("valid-development").data())
        let update = try #require(report.update)
        #expect(update.buildEnvironment == "development")
        #expect(update.hardwareIdentifier == TokenUpdateFixtures.phoneA)
        #expect(update.isNewToken == true)
        // And the typed form round-trips through the same checks.
        #expect(TokenUpdateRules.check(update).valid)
    }

    @Test("An enrollment that registered the same token as production contradicts a development update")
    func contradictionFromEnrollment() throws {
        let token = TokenUpdateFixtures.token(1)
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: TokenUpdateFixtures.phoneA, apnsToken: token, buildEnvironment: "production",
            appVersion: "1.4.1", updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let update = TokenUpdate(
            token: token, buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: TokenUpdateFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        #expect(report.codes.contains("build-environment-contradicts-token"))
        #expect(!report.valid)
        // A new token carries no history: no contradiction.
        var fresh = update
        fresh.token = TokenUpdateFixtures.token(2)
        #expect(TokenUpdateRules.check(fresh, context: TokenUpdateContext(enrollment: enrollment)).valid)
    }

    @Test("aps_environment: decoded into the typed update, encoded only when present, preferred by the resolution")
    func apsEnvironment() throws {
        let body = TokenUpdateCase.named("aps-production-debug-configuration-on-testflight").data()
        let report = TokenUpdateRules.check(body: body)
        let update = try #require(report.update)
        #expect(update.apsEnvironment == "production" && update.buildEnvironment == "development")
        #expect(report.resolvedEnvironment == .production && report.resolution?.decidedBy == .apsEnvironment)
        #expect(report.valid && report.codes == ["build-environment-contradicts-signature"])
        let encoded = try #require(try JSONSerialization.jsonObject(with: update.jsonData()) as? [String: Any])
        #expect(encoded["aps_environment"] as? String == "production")
        var without = update
        without.apsEnvironment = nil
        #expect(!String(decoding: try without.jsonData(), as: UTF8.self).contains("aps_environment"))
        #expect(TokenUpdate.optionalFields.contains("aps_environment"))

        // A value that is not the entitlement's is an error naming the field and the fix.
        let wrong = TokenUpdateRules.check(
            body: TokenUpdateCase.named("aps-sandbox-is-not-an-entitlement-value").data())
        let p = try #require(wrong.problems.first { $0.code.rawValue == "aps-environment-unknown" })
        #expect(p.severity == .error && p.message.contains("'aps_environment'") && p.message.contains("\"sandbox\""))
        #expect(p.fix.hasPrefix("Send the entitlement's value: development or production"))
        #expect(wrong.resolution?.decidedBy == .fallback)
    }

    @Test("An enrollment that registered the same token signed for production contradicts a sandbox push")
    func contradictionFromSignedEnrollment() throws {
        let token = TokenUpdateFixtures.token(4)
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: TokenUpdateFixtures.phoneA, apnsToken: token, buildEnvironment: "development",
            apsEnvironment: "production", appVersion: "1.4.1", updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
        // The same token again without aps_environment: the backend falls back to build_environment (sandbox), but
        // the enrollment knows the token is a production one.
        let update = TokenUpdate(
            token: token, buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: TokenUpdateFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        let p = try #require(report.problems.first { $0.code.rawValue == "build-environment-contradicts-token" })
        #expect(p.severity == .error && p.message.contains("signed for aps_environment 'production'"))
        // With the field, it resolves to production: no contradiction.
        var signed = update
        signed.apsEnvironment = "production"
        let fixed = TokenUpdateRules.check(signed, context: TokenUpdateContext(enrollment: enrollment))
        #expect(fixed.valid && fixed.resolvedEnvironment == .production, "\(fixed.problems)")
    }

    @Test("A test-user enrollment resolves to sandbox")
    func testUser() {
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "agovv", teamCodes: ["JO10-5"], role: .member,
            hardwareIdentifier: TokenUpdateFixtures.phoneA, isTestUser: true, updatedAt: Date())
        let update = TokenUpdate(
            token: TokenUpdateFixtures.token(3), buildEnvironment: "development", appVersion: "1.0",
            hardwareIdentifier: TokenUpdateFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        #expect(report.resolvedEnvironment == .sandbox)
        #expect(report.resolution?.decidedBy == .testUser)
    }
}
