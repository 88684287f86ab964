import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

@Suite("Token-update checks")
struct TokenUpdateCheckTests {
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
        #expect(Set(report.problems.errors.map(\.code)) == Set(c.errors), "\(c.name): \(report.problems)")
        for code in c.warnings {
            #expect(report.problems.warnings.map(\.code).contains(code), "\(c.name) lacks warning \(code)")
        }
        for code in c.infos {
            #expect(
                report.problems.contains { $0.severity == .info && $0.code == code }, "\(c.name) lacks info \(code)")
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
        #expect(update.hardwareIdentifier == BackendFixtures.phoneA)
        #expect(update.isNewToken == true)
        // And the typed form round-trips through the same checks.
        #expect(TokenUpdateRules.check(update).valid)
    }

    @Test("An enrollment that registered the same token as production contradicts a development update")
    func contradictionFromEnrollment() throws {
        let token = BackendFixtures.token(1)
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, apnsToken: token, buildEnvironment: "production",
            appVersion: "1.4.1", updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let update = TokenUpdate(
            token: token, buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: BackendFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        #expect(report.codes.contains("build-environment-contradicts-token"))
        #expect(!report.valid)
        // A new token carries no history: no contradiction.
        var fresh = update
        fresh.token = BackendFixtures.token(2)
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
        let p = try #require(wrong.problems.first { $0.code == "aps-environment-unknown" })
        #expect(p.severity == .error && p.message.contains("'aps_environment'") && p.message.contains("\"sandbox\""))
        #expect(p.fix.hasPrefix("Send the entitlement's value: development or production"))
        #expect(wrong.resolution?.decidedBy == .fallback)
    }

    @Test("An enrollment that registered the same token signed for production contradicts a sandbox push")
    func contradictionFromSignedEnrollment() throws {
        let token = BackendFixtures.token(4)
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, apnsToken: token, buildEnvironment: "development",
            apsEnvironment: "production", appVersion: "1.4.1", updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
        // The same token again without aps_environment: the backend falls back to build_environment (sandbox), but
        // the enrollment knows the token is a production one.
        let update = TokenUpdate(
            token: token, buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: BackendFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        let p = try #require(report.problems.first { $0.code == "build-environment-contradicts-token" })
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
            hardwareIdentifier: BackendFixtures.phoneA, isTestUser: true, updatedAt: Date())
        let update = TokenUpdate(
            token: BackendFixtures.token(3), buildEnvironment: "development", appVersion: "1.0",
            hardwareIdentifier: BackendFixtures.phoneA)
        let report = TokenUpdateRules.check(update, context: TokenUpdateContext(enrollment: enrollment))
        #expect(report.resolvedEnvironment == .sandbox)
        #expect(report.resolution?.decidedBy == .testUser)
    }
}

@Suite("Token-update bearer checks")
struct TokenUpdateBearerTests {
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))

    func enrollment(_ device: String = "dev-a1", tenant: String = "vvwilhelmus", phone: String = BackendFixtures.phoneA)
        -> Enrollment
    {
        Enrollment(
            deviceID: device, tenantSlug: tenant, teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: phone, updatedAt: clock.now())
    }

    func body(phone: String = BackendFixtures.phoneA) throws -> Data {
        try TokenUpdate(
            token: BackendFixtures.token(9), buildEnvironment: "production", appVersion: "1.4.2",
            hardwareIdentifier: phone
        ).jsonData()
    }

    @Test("A bearer matching its enrollment passes")
    func matching() async throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let e = enrollment()
        let report = await TokenUpdateVerifier(jwt: jwt).verify(
            body: try body(), bearer: try jwt.issue(for: e), enrollment: e)
        #expect(report.valid, "\(report.problems)")
        #expect(report.resolvedEnvironment == .production)
    }

    @Test("The bearer of another tenant, another enrollment or another phone is reported")
    func mismatches() async throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let verifier = TokenUpdateVerifier(jwt: jwt)
        let target = enrollment()

        let otherTenant = try jwt.issue(for: enrollment("dev-a1", tenant: "agovv"))
        let r1 = await verifier.verify(body: try body(), bearer: otherTenant, enrollment: target)
        #expect(r1.codes.contains("jwt-wrong-tenant"))
        #expect(r1.codes.filter { $0 == "jwt-wrong-tenant" }.count == 1)

        let otherDevice = try jwt.issue(for: enrollment("dev-a2"))
        let r2 = await verifier.verify(body: try body(), bearer: otherDevice, enrollment: target)
        #expect(r2.codes.contains("jwt-device-mismatch"))

        let otherPhone = try jwt.issue(for: enrollment("dev-a1", phone: BackendFixtures.phoneB))
        let r3 = await verifier.verify(body: try body(), bearer: otherPhone, enrollment: target)
        #expect(r3.codes.contains("jwt-hardware-mismatch"))

        // The body from the other phone, with the right bearer: the body does not match the enrollment.
        let r4 = await verifier.verify(
            body: try body(phone: BackendFixtures.phoneB), bearer: try jwt.issue(for: target), enrollment: target)
        #expect(r4.codes.contains("hardware-identifier-mismatch"))
        for r in [r1, r2, r3, r4] { #expect(!r.valid) }
    }

    @Test("An expired bearer is reported, with and without the secret")
    func expired() async throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock, lifetime: 3600)
        let e = enrollment()
        let bearer = try jwt.issue(for: e)
        clock.advance(by: 3600 + 61)
        let withSecret = await TokenUpdateVerifier(jwt: jwt).verify(body: try body(), bearer: bearer, enrollment: e)
        #expect(withSecret.codes.contains("jwt-expired"))
        let withoutSecret = await TokenUpdateVerifier(jwt: nil, clock: clock).verify(
            body: try body(), bearer: bearer, enrollment: e)
        #expect(withoutSecret.codes.contains("jwt-expired"))
        #expect(withoutSecret.codes.contains("jwt-unverified"))
    }

    @Test("A bearer signed with another secret is a bad signature; a lookup finds the enrollment")
    func badSignatureAndLookup() async throws {
        let ours = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let theirs = try DeviceJWT(secret: "another-secret-of-sufficient-length", clock: clock)
        let e = enrollment()
        let store: any EnrollmentStore = InMemoryEnrollmentStore([e])
        let report = await TokenUpdateVerifier(jwt: ours).verify(
            body: try body(), bearer: "Bearer " + (try theirs.issue(for: e)),
            lookup: { key in try await store.get(deviceID: key.deviceID, tenant: key.tenantSlug) })
        #expect(report.codes.first == "jwt-bad-signature")
        let missing = await TokenUpdateVerifier(jwt: ours).verify(
            body: try body(), bearer: try ours.issue(for: enrollment("dev-unknown")),
            lookup: { key in try await store.get(deviceID: key.deviceID, tenant: key.tenantSlug) })
        #expect(missing.codes.contains("enrollment-not-found"))
    }
}
