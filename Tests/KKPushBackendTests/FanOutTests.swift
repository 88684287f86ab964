import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

@Suite("Team fan-out rules")
struct FanOutTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// Phone A: a manager enrollment (JO11-3, JO11-5) and a member enrollment (JO11-3, JO13-1) in vvwilhelmus,
    /// plus agovv; phone B: a member of JO11-3 on a development build; phone C: revoked; phone D: no token yet.
    static func enrollments() -> [Enrollment] {
        let a = BackendFixtures.token(1)
        let b = BackendFixtures.token(2)
        let c = BackendFixtures.token(3)
        return [
            Enrollment(
                deviceID: "a-manager", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3", "JO11-5"], role: .manager,
                hardwareIdentifier: BackendFixtures.phoneA, apnsToken: a, buildEnvironment: "production",
                appVersion: "1.4.2",
                teamManagerEmail: "jan@example.nl", updatedAt: t0),
            Enrollment(
                deviceID: "a-member", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3", "JO13-1"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneA, apnsToken: a, buildEnvironment: "production",
                appVersion: "1.4.2",
                updatedAt: t0),
            Enrollment(
                deviceID: "a-agovv", tenantSlug: "agovv", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneA, apnsToken: a, buildEnvironment: "production",
                appVersion: "1.4.2",
                updatedAt: t0),
            Enrollment(
                deviceID: "b-member", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: BackendFixtures.phoneB, apnsToken: b, buildEnvironment: "development",
                appVersion: "1.5",
                updatedAt: t0),
            Enrollment(
                deviceID: "c-revoked", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: UUID().uuidString, apnsToken: c, buildEnvironment: "production", appVersion: "1.4",
                status: .revoked, updatedAt: t0),
            Enrollment(
                deviceID: "d-no-token", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
                hardwareIdentifier: UUID().uuidString, updatedAt: t0),
        ]
    }

    @Test("One push per device token, not per enrollment; each in its resolved environment")
    func onePushPerDevice() async throws {
        let store: any EnrollmentStore = InMemoryEnrollmentStore(Self.enrollments())
        let sender = RecordingSender()
        let fanOut = TeamFanOut(store: store, sender: sender, clock: ManualWallClock(Self.t0))
        let report = try await fanOut.send(tenant: "vvwilhelmus", team: "JO11-3") { token in
            try! KantineKoningPush.dienstUpdateRequest(
                deviceToken: token, bundleID: BackendFixtures.bundleID,
                tenant: "vvwilhelmus", dienstID: "d1")
        }
        let sent = sender.requests
        #expect(sent.count == 2)
        #expect(Set(sent.map(\.request.deviceToken)).count == sent.count)
        #expect(
            Dictionary(uniqueKeysWithValues: sent.map { ($0.request.deviceToken, $0.environment) }) == [
                BackendFixtures.token(1): .production, BackendFixtures.token(2): .sandbox,
            ])
        #expect(report.enrollmentCount == 3)
        #expect(report.deliveries.count == 2)
        #expect(
            report.deliveries.first { $0.token == BackendFixtures.token(1) }?.deviceIDs == ["a-manager", "a-member"])
        #expect(report.accepted == 2)
        // The payload is the dienst update the app acts on.
        #expect(
            KantineKoningPush.parse(sent[0].request.payload) == .dienstUpdate(tenant: "vvwilhelmus", dienstID: "d1"))
    }

    @Test(
        "The server's APNS_FORCE_ENV and APNS_ENV decide every enrollment's environment",
        arguments: [
            (ServerAPNsSettings(), [APNsEnvironment.production, .sandbox]),
            (ServerAPNsSettings(forceEnv: "sandbox"), [.sandbox, .sandbox]),
            (ServerAPNsSettings(legacyAPNSEnv: "production"), [.production, .production]),
            (ServerAPNsSettings(forceEnv: "Sandbox"), [.production, .sandbox]),
        ])
    func serverSettings(_ settings: ServerAPNsSettings, _ expected: [APNsEnvironment]) {
        let targets = TeamFanOutPlan.targets(
            enrollments: Self.enrollments(), tenant: "vvwilhelmus", team: "JO11-3", settings: settings)
        #expect(targets.map(\.token) == [BackendFixtures.token(1), BackendFixtures.token(2)])
        #expect(targets.map(\.environment) == expected)
    }

    @Test("A 410 clears the token from every enrollment that holds it")
    func unregisteredClears() async throws {
        let store: any EnrollmentStore = InMemoryEnrollmentStore(Self.enrollments())
        let sender = RecordingSender(answers: [
            BackendFixtures.token(1): .rejected(status: 410, reason: .unregistered, timestamp: Self.t0)
        ])
        let clock = ManualWallClock(Self.t0.addingTimeInterval(3600))
        let report = try await TeamFanOut(store: store, sender: sender, clock: clock).send(
            tenant: "vvwilhelmus", team: "JO11-3"
        ) {
            NotificationRequest(deviceToken: $0, topic: BackendFixtures.bundleID, payload: Array(#"{"aps":{}}"#.utf8))
        }
        #expect(report.rejected == 1 && report.accepted == 1)
        #expect(report.deliveries.first { $0.token == BackendFixtures.token(1) }?.clearedEnrollments == 3)
        #expect(try await store.find(apnsToken: BackendFixtures.token(1)).isEmpty)
        let manager = try #require(try await store.get(deviceID: "a-manager", tenant: "vvwilhelmus"))
        #expect(manager.apnsToken == nil && manager.updatedAt == clock.now())
        // The next fan-out sends only to phone B.
        let again = try await TeamFanOut(store: store, sender: sender, clock: clock).send(
            tenant: "vvwilhelmus", team: "JO11-3"
        ) {
            NotificationRequest(deviceToken: $0, topic: BackendFixtures.bundleID, payload: Array(#"{"aps":{}}"#.utf8))
        }
        #expect(again.deliveries.map(\.token) == [BackendFixtures.token(2)])
    }

    @Test("Enrollments of one phone that disagree: the most recent decides, with a warning")
    func conflict() {
        var list = Self.enrollments()
        list[1].isTestUser = true
        list[1].updatedAt = Self.t0.addingTimeInterval(10)
        let target = TeamFanOutPlan.targets(
            enrollments: list, tenant: "vvwilhelmus", team: "JO11-3", settings: ServerAPNsSettings())[0]
        #expect(target.environment == .sandbox)
        #expect(target.problems.map(\.code.rawValue).contains("fanout-environment-conflict"))
    }
}

@Suite("Token-update policy (the app side)")
struct TokenUpdatePolicyTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("Every enrollment gets its own update with its own JWT; fresh ones are skipped until 24 h pass")
    func perEnrollment() {
        let token = BackendFixtures.token(5)
        let states = [
            AppEnrollmentState(
                tenantSlug: "vvwilhelmus", deviceID: "m", signedDeviceToken: "jwt-m", lastSentToken: token,
                lastSentAt: Self.t0),
            AppEnrollmentState(
                tenantSlug: "vvwilhelmus", deviceID: "l", signedDeviceToken: "jwt-l",
                lastSentToken: BackendFixtures.token(4), lastSentAt: Self.t0),
            AppEnrollmentState(tenantSlug: "agovv", deviceID: "a", signedDeviceToken: "jwt-a"),
        ]
        let policy = TokenUpdatePolicy()
        let now = Self.t0.addingTimeInterval(3600)
        let planned = policy.updates(token: token, enrollments: states, now: now)
        #expect(planned.map(\.enrollment.deviceID) == ["l", "a"])
        #expect(planned.map(\.bearer) == ["jwt-l", "jwt-a"])
        #expect(planned.map(\.reason) == ["new-token", "never-sent"])
        #expect(planned.allSatisfy { $0.isNewToken })
        let later = policy.updates(
            token: token, enrollments: states, now: Self.t0.addingTimeInterval(TokenUpdatePolicy.defaultThreshold))
        #expect(later.map(\.enrollment.deviceID) == ["m", "l", "a"])
        #expect(later[0].reason == "stale" && !later[0].isNewToken)
    }

    @Test("One primary token for every enrollment is the README's mistake")
    func primaryToken() {
        let primary = DeviceClaims(
            deviceID: "m", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .manager, issuedAt: 0, expiresAt: 1)
        let keys = [
            EnrollmentKey(tenantSlug: "vvwilhelmus", deviceID: "m"), EnrollmentKey(tenantSlug: "agovv", deviceID: "a"),
        ]
        let problems = TokenUpdatePolicy.audit(sentWith: [primary, primary], enrollments: keys)
        #expect(Set(problems.map(\.code.rawValue)) == ["primary-token-reused", "enrollment-not-updated"])
        let agovv = DeviceClaims(
            deviceID: "a", tenantSlug: "agovv", teamCodes: ["JO10-5"], role: .member, issuedAt: 0, expiresAt: 1)
        #expect(TokenUpdatePolicy.audit(sentWith: [primary, agovv], enrollments: keys).isEmpty)
    }
}
