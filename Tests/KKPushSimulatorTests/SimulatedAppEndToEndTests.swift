import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushSimulator
import KantineKoning
import Testing

@Suite("The simulated app against the real mock APNs, client and backend on loopback")
struct SimulatedAppEndToEndTests {
    /// The diensten the backend holds for `enrollments` within the default window, computed from the
    /// admin listing (independently of the app's refresh).
    static func expectedIDs(_ all: [Dienst], enrollments: [AppEnrollment], now: Date) -> Set<String> {
        let from = now.addingTimeInterval(-365 * 86_400)
        let to = now.addingTimeInterval(60 * 86_400)
        var ids = Set<String>()
        for e in enrollments {
            for d in all
            where d.tenantSlug == e.tenantSlug && e.teamCodes.contains(d.teamCode)
                && d.startTime >= from && d.startTime <= to
            {
                ids.insert(d.id)
            }
        }
        return ids
    }

    @Test("token updates: one per enrollment, each with its own JWT, logged in the README's style")
    func tokenUpdates() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .releaseTesting),
                enrollments: EnrollmentSpec.readmePhone)
            let token = try #require(await app.deviceToken)
            #expect(await app.tokenEnvironment == .sandbox)
            #expect(world.mock.devices.first { $0.token == token }?.environment == .sandbox)
            let enrollments = await app.enrollments
            #expect(enrollments.count == 3)
            #expect(Set(enrollments.map(\.signedDeviceToken)).count == 3)
            // Each JWT names its own enrollment.
            for e in enrollments {
                let claims = try DeviceJWT.decodeUnverified(e.signedDeviceToken)
                #expect(claims.deviceID == e.deviceID)
                #expect(claims.tenantSlug == e.tenantSlug)
                #expect(claims.teamCodes == e.teamCodes)
            }
            // The backend stored the token on every enrollment of the phone.
            let stored = try await world.api.allEnrollments().filter {
                $0.hardwareIdentifier == app.hardwareIdentifier.uuidString
            }
            #expect(stored.count == 3)
            #expect(stored.allSatisfy { $0.apnsToken == token && $0.buildEnvironment == "development" })
            let log = await app.log
            #expect(log.filter { $0 == "🔄 APNS Token Update Request" }.count == 3)
            #expect(log.filter { $0.hasPrefix("✅ APNS token update SUCCESS (took ") }.count == 3)
            #expect(log.contains("  → Build Environment: development"))
            #expect(log.contains("  → Detected APNS Environment: sandbox"))
            #expect(log.contains("  → Final Environment: sandbox"))
            // Prefixes only: never a whole token or JWT.
            for line in log {
                #expect(!line.contains(token))
                for e in enrollments { #expect(!line.contains(e.signedDeviceToken)) }
            }
            // Nothing new to send: the policy sends again only for a new or stale token.
            #expect(await app.sendTokenUpdates().isEmpty)
        }
    }

    @Test("refresh: one request per enrollment with its own JWT, merged, deduplicated, future first")
    func refreshIsPerEnrollment() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            // The README's phone plus a member enrollment for JO11-5, which the manager enrollment
            // also covers: its diensten come back twice and must be kept once.
            let app = try await world.makeApp(
                name: "Overlap", build: AppBuild(scheme: .release),
                enrollments: EnrollmentSpec.readmePhone + [
                    EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-5"], role: .member)
                ])
            let result = await app.refreshDiensten()
            let enrollments = await app.enrollments
            #expect(result.requests.count == enrollments.count)
            #expect(result.isComplete)
            for (request, enrollment) in zip(result.requests, enrollments) {
                #expect(request.tenant == enrollment.tenantSlug)
                #expect(request.deviceID == enrollment.deviceID)
                #expect(enrollment.signedDeviceToken.hasPrefix(request.bearerPrefix.dropLast()))
            }
            #expect(result.tenants == ["vvwilhelmus", "agovv"])
            let now = Date()
            let all = try await world.api.allDiensten()
            let expected = Self.expectedIDs(all, enrollments: enrollments, now: now)
            let upcoming = await app.upcoming
            #expect(Set(upcoming.map(\.id)) == expected)
            #expect(upcoming.count == expected.count)
            let jo115 = all.filter {
                $0.teamCode == "JO11-5" && $0.startTime >= now.addingTimeInterval(-365 * 86_400)
                    && $0.startTime <= now.addingTimeInterval(60 * 86_400)
            }
            #expect(!jo115.isEmpty)
            #expect(result.duplicatesRemoved == jo115.count)
            // Future first (soonest first), then the past (most recent first).
            let future = upcoming.prefix { $0.startTime >= now }
            let past = upcoming.dropFirst(future.count)
            #expect(past.allSatisfy { $0.startTime < now })
            #expect(zip(future, future.dropFirst()).allSatisfy { $0.startTime <= $1.startTime })
            #expect(zip(past, past.dropFirst()).allSatisfy { $0.startTime >= $1.startTime })
            #expect(!future.isEmpty && !past.isEmpty)
        }
    }

    @Test("a dienst change reaches the app as a push, and the refresh shows the change, timed from acceptance")
    func pushRefresh() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone)
            let change = try await world.changeNextDienst(tenant: "agovv", team: "JO10-5", volunteer: "Fatima")
            #expect(change.deliveries.count == 1)
            #expect(change.accepted == 1)
            #expect(await world.collector.wait(forAtLeast: 1, timeout: .seconds(20)))
            let handled = try #require(await app.handled.first)
            #expect(handled.push.kind == .dienstUpdate(tenant: "agovv", dienstID: change.dienst.id))
            let refresh = try #require(handled.refresh)
            let delivery = try #require(world.mock.delivery(apnsID: handled.push.notification.apnsID))
            #expect(refresh.acceptedAt == delivery.time)
            let latency = try #require(refresh.latency)
            #expect(latency > 0 && latency < 20)
            #expect(refresh.tenants == ["vvwilhelmus", "agovv"])
            let shown = try #require(await app.upcoming.first { $0.id == change.dienst.id })
            #expect(shown.volunteers.contains("Fatima"))
            #expect(await app.publishCount == 1)
        }
    }

    @Test("a CTA push stores the pending CTA from its deep link (and refreshes, as any push does)")
    func ctaPush() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Ouder", build: AppBuild(scheme: .releaseTesting),
                enrollments: [EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member)])
            let token = try #require(await app.deviceToken)
            let request = NotificationRequest(
                deviceToken: token, topic: TokenUpdate.defaultBundleID, pushType: .alert, priority: 10,
                payload: try KantineKoningPush.cta(token: "cta-4711").encoded())
            let outcome = await world.client.send(request, environment: .sandbox)
            #expect(outcome.isAccepted)
            #expect(await world.collector.wait(forAtLeast: 1, timeout: .seconds(20)))
            let cta = try #require(await app.pendingCTA)
            #expect(cta.token == "cta-4711")
            #expect(cta.link == "kantinekoning://cta/shift-volunteer?token=cta-4711")
            #expect(cta.apnsID == outcome.apnsID?.lowercased())
            #expect(await app.handled.first?.refresh?.isComplete == true)
            await app.clearPendingCTA()
            #expect(await app.pendingCTA == nil)
        }
    }

    @Test("the deprecated primaryAuthToken refresh loses the other enrollments' diensten")
    func primaryTokenHandler() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone)
            let wrong = await PrimaryTokenRefreshHandler().refresh(app: app, push: nil)
            let wrongIDs = Set(await app.upcoming.map(\.id))
            let right = await app.refreshDiensten()
            let rightIDs = Set(await app.upcoming.map(\.id))
            #expect(!wrong.isComplete)
            #expect(wrong.failedTenants == ["agovv"])
            #expect(wrong.requests.first { $0.tenant == "agovv" }?.errorCode == "jwt-wrong-tenant")
            #expect(wrong.requests.first { $0.tenant == "agovv" }?.status == 403)
            #expect(right.isComplete)
            #expect(wrongIDs.isStrictSubset(of: rightIDs))
            let missing = rightIDs.subtracting(wrongIDs)
            #expect(missing.contains { $0.hasPrefix("agovv-jo10-5-") })
            #expect(missing.contains { $0.hasPrefix("vvwilhelmus-jo13-1-") })
        }
    }
}
