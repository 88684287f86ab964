import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

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
