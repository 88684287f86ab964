import Foundation
import KKPushBackend
import KKPushCore
import KKPushMock
import KKPushSimulator
import KantineKoning
import Testing

/// After the 200: the simulated phone runs the dienst refresh only as iOS would for the push's type and the app's
/// state (the mock's device side), against the real mock, client and backend.
@Suite("Simulated phones after the 200: app states, connectivity, what ran the refresh")
struct DeviceSideScenarioTests {
    /// The pushes of an outcome's facts: state, ran_by, refreshed, waits_for_open per push, in order.
    static func pushes(_ o: ScenarioOutcome) -> [(state: String, ranBy: String?, refreshed: Bool)] {
        (o.facts["pushes"]?.arrayValue ?? []).map {
            ($0["state"]?.stringValue ?? "", $0["ran_by"]?.stringValue, $0["refreshed"]?.boolValue == true)
        }
    }

    @Test("A foreground phone refreshes on the backend's background push, as before (will not change the default run)")
    func foregroundRefreshes() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Ouder JO11-3", build: AppBuild(scheme: .release),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)])
            let change = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            #expect(change.accepted == 1)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            let d = try #require(await app.deliveries.first)
            #expect(d.ranBy == "background-handler" && d.refreshed && d.appState == .foreground)
            #expect(await app.handled.count == 1)
        }
    }

    @Test("silent-push-throttled: three run in the background, the fourth waits for the budget and runs on open")
    func throttled() async throws {
        let o = try await Scenarios.run(.silentPushThrottled, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.count == 4)
        #expect(p.prefix(3).allSatisfy { $0.state == "delivered" && $0.ranBy == "background-handler" && $0.refreshed })
        // After opening, the deferred one was handed over (delivered) and ran in the foreground.
        #expect(p.last?.state == "delivered" && p.last?.refreshed == true)
        #expect(o.details.contains { $0.contains("deferred: background budget") })
        #expect(o.fix.contains("two or three") && o.fix.contains("apns-priority 5"))
    }

    @Test("alert-refresh-on-open: shown without app code, refreshed only when opened; content-available fixes it")
    func alertOnOpen() async throws {
        let o = try await Scenarios.run(.alertRefreshOnOpen, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.count == 2)
        #expect(p.first?.ranBy == "did-receive (opened)" && p.first?.refreshed == true)
        #expect(p.last?.ranBy == "background-handler" && p.last?.refreshed == true)
        #expect(o.details.contains { $0.contains("the refresh waits until the person opens it") })
        #expect(o.fix.contains("content-available"))
    }

    @Test("offline-coalescing: of three pushes to an offline phone only the last arrives, and it brings all changes")
    func coalescing() async throws {
        let o = try await Scenarios.run(.offlineCoalescing, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(
            p.map(\.state) == [
                "discarded: replaced by a newer push", "discarded: replaced by a newer push", "delivered",
            ])
        #expect(p.map(\.refreshed) == [false, false, true])
        #expect(o.observed.contains("Sanne") && o.observed.contains("Ahmed") && o.observed.contains("Noor"))
    }

    @Test("expiration-zero-offline: apns-expiration 0 is discarded; an hour ahead is stored and delivered")
    func expirationZero() async throws {
        let o = try await Scenarios.run(.expirationZeroOffline, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.map(\.state) == ["discarded: expired", "delivered"])
        #expect(p.map(\.refreshed) == [false, true])
        #expect(o.fix.contains("nonzero apns-expiration"))
    }

    @Test("collapse-id-update: a shared collapse id replaces the older alert; one per dienst keeps both")
    func collapse() async throws {
        let o = try await Scenarios.run(.collapseIDUpdate, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        #expect(Self.pushes(o).map(\.state) == ["replaced: same collapse id", "delivered", "delivered", "delivered"])
        #expect(o.fix.contains("dienst-<id>"))
    }

    @Test("force-quit-app: the background push is not run; the alert waits; opening refreshes")
    func forceQuit() async throws {
        let o = try await Scenarios.run(.forceQuitApp, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.first?.state == "not run: app force-quit" && p.first?.ranBy == nil && p.first?.refreshed == false)
        #expect(p.last?.state == "delivered" && p.last?.ranBy == "did-receive (opened)" && p.last?.refreshed == true)
        #expect(o.fix.contains("apns-push-type alert"))
    }
}
