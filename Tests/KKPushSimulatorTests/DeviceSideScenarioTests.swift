import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushSimulator
import KantineKoning
import KantineKoningReceipts
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

    /// The receipts the backend got per push, from the facts: `handled/handler` each, in order.
    static func receipts(_ o: ScenarioOutcome) -> [[String]] {
        (o.facts["pushes"]?.arrayValue ?? []).map { push in
            (push["receipts"]?.arrayValue ?? []).map {
                "\($0["handled"]?.stringValue ?? "?")/\($0["handler"]?.stringValue ?? "?")"
            }
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
            // Receipts are off by default (the fleet scenarios): the backend got none.
            #expect(await world.backend.router.receipts.all().isEmpty)
        }
    }

    @Test("A phone that posts receipts: will-present in the foreground, the extension's 'shown' for mutable-content")
    func foregroundAndExtensionReceipts() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let app = try await world.makeApp(
                name: "Ouder JO11-3", build: AppBuild(scheme: .release),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)],
                postsReceipts: true)
            let token = await app.deviceToken ?? ""
            func send(_ payload: String) async throws -> String {
                let outcome = await world.client.send(
                    NotificationRequest(
                        deviceToken: token, topic: app.bundleID, pushType: .alert, priority: 10,
                        payload: Array(payload.utf8)),
                    environment: app.build.tokenEnvironment)
                guard case .accepted(let id?, _) = outcome.result else {
                    throw KKPushError(code: .simulateRequestFailed, message: "\(outcome.result)")
                }
                return id.lowercased()
            }
            let foreground = try await send(#"{"aps":{"alert":"Dienst gewijzigd"},"type":"dienst_update"}"#)
            #expect(await app.waitForDeliveries(1, timeout: .seconds(20)))
            try await app.setDeviceState(app: .background)
            let extended = try await send(
                #"{"aps":{"alert":"Dienst gewijzigd","mutable-content":1},"type":"dienst_update","kk_push_id":"p-7"}"#)
            #expect(await app.waitForDeliveries(2, timeout: .seconds(20)))
            let book = world.backend.router.receipts
            let first = await book.all(apnsID: foreground).map {
                "\($0.receipt.handled.rawValue)/\($0.receipt.handler ?? "")"
            }
            #expect(first == ["refreshed/will-present"])
            // The extension ran (shown); the app's code did not, so no refreshed receipt until it is opened.
            let second = await book.all(apnsID: extended)
            #expect(second.map(\.receipt.handled) == [.shown] && second.first?.receipt.pushID == "p-7")
            #expect(second.first?.receipt.handler == "service-extension")
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
        // Each push that ran the background handler posted its receipt, the deferred one once it ran.
        #expect(Self.receipts(o) == Array(repeating: ["refreshed/background-handler"], count: 4))
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
        #expect(Self.receipts(o) == [["refreshed/on-open"], ["refreshed/background-handler"]])
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
        // The two pushes APNs discarded never reached the app: no receipt.
        #expect(Self.receipts(o) == [[], [], ["refreshed/background-handler"]])
        #expect(o.observed.contains("Sanne") && o.observed.contains("Ahmed") && o.observed.contains("Noor"))
    }

    @Test("expiration-zero-offline: apns-expiration 0 is discarded; an hour ahead is stored and delivered")
    func expirationZero() async throws {
        let o = try await Scenarios.run(.expirationZeroOffline, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.map(\.state) == ["discarded: expired", "delivered"])
        #expect(p.map(\.refreshed) == [false, true])
        #expect(Self.receipts(o) == [[], ["refreshed/background-handler"]])
        #expect(o.fix.contains("nonzero apns-expiration"))
    }

    @Test("collapse-id-update: a shared collapse id replaces the older alert; one per dienst keeps both")
    func collapse() async throws {
        let o = try await Scenarios.run(.collapseIDUpdate, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        #expect(Self.pushes(o).map(\.state) == ["replaced: same collapse id", "delivered", "delivered", "delivered"])
        // Alerts to a backgrounded app that nobody opened ran no code: no receipts.
        #expect(Self.receipts(o) == [[], [], [], []])
        #expect(o.details.contains { $0.contains("receipts the backend got: none") })
        #expect(o.fix.contains("dienst-<id>"))
    }

    @Test("force-quit-app: the background push is not run; the alert waits; opening refreshes")
    func forceQuit() async throws {
        let o = try await Scenarios.run(.forceQuitApp, configuration: SimulatorFixtures.configuration())
        #expect(o.reproduced, "\(o.observed)")
        let p = Self.pushes(o)
        #expect(p.first?.state == "not run: app force-quit" && p.first?.ranBy == nil && p.first?.refreshed == false)
        #expect(p.last?.state == "delivered" && p.last?.ranBy == "did-receive (opened)" && p.last?.refreshed == true)
        #expect(Self.receipts(o) == [[], ["refreshed/on-open"]])
        #expect(o.fix.contains("apns-push-type alert"))
    }
}
