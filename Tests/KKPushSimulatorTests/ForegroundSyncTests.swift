import Foundation
import KKPushBackend
import KKPushCore
import KKPushSimulator
import KantineKoning
import Testing

/// The simulated app's foreground step: tenant info refresh, team code mapping, then the sync.
@Suite("The app's foreground sync (tenant info refresh first, abort on failures)")
struct ForegroundSyncTests {
    @Test("nothing to clean up: synced, nothing revoked; again within the hour: the app skips it")
    func syncsAndThrottles() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone)
            let first = await app.foreground()
            #expect(first.synced && first.status == 200 && first.enrollmentsRevoked == 0 && first.teamsRemoved == 0)
            #expect(Set(first.tenants.map(\.slug)) == ["vvwilhelmus", "agovv"])
            let second = await app.foreground()
            #expect(!second.synced && second.status == 0)
            #expect(second.abortedBecause?.contains("throttled") == true)
            let stored = try await world.api.allEnrollments()
            #expect(stored.count == 3 && stored.allSatisfy { $0.status == .active })
        }
    }

    @Test("a team the tenant no longer lists: team code mapping fails, no sync is sent, nothing changes")
    func mappingFails() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone)
            let change = try await world.api.send(
                "POST", "/admin/tenants/vvwilhelmus",
                body: Data(#"{"teams": ["JO11-3", "JO13-1"]}"#.utf8))
            #expect(change.status == 200)
            let result = await app.foreground()
            #expect(!result.synced && result.status == 0)
            #expect(result.abortedBecause?.contains("team code mapping failed") == true)
            #expect(result.abortedBecause?.contains("JO11-5") == true)
            #expect(world.backend.router.syncThrottle.lastSync(app.hardwareIdentifier.uuidString) == nil)
            #expect(await app.log.contains { $0.hasPrefix("⛔️ Enrollment sync aborted") })
        }
    }

    @Test("a tenant whose info cannot be refreshed: the sync is aborted")
    func tenantInfoFails() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Club phone", build: AppBuild(scheme: .release),
                enrollments: [
                    EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member),
                    EnrollmentSpec(tenant: "hfc", teams: ["JO9-1"], role: .member),
                ])
            let result = await app.foreground()
            #expect(!result.synced && result.status == 0)
            #expect(
                result.abortedBecause?.contains("tenant info refresh for hfc failed (HTTP 404 tenant-not-found)")
                    == true)
            #expect(world.backend.router.syncThrottle.lastSync(app.hardwareIdentifier.uuidString) == nil)
        }
    }
}
