import Foundation
import KKPushBackend
import KKPushCore
import KKPushSimulator
import Testing

@Suite("Each README failure reproduced in-process (real mock, client and backend)")
struct ScenarioTests {
    @Test("scenario reproduces", arguments: SimulationScenario.allCases)
    func reproduces(_ scenario: SimulationScenario) async throws {
        let outcome = try await Scenarios.run(scenario, configuration: SimulatorFixtures.configuration())
        #expect(outcome.scenario == scenario)
        #expect(outcome.reproduced, "\(scenario.rawValue): \(outcome.observed)")
        #expect(!outcome.why.isEmpty && !outcome.fix.isEmpty)
        switch scenario {
        case .serverAPNsEnvOverride, .wrongBuildScheme:
            #expect(outcome.observed.contains("400 BadDeviceToken"))
        case .unregisteredDevice:
            #expect(outcome.observed.contains("410 Unregistered"))
            #expect(outcome.observed.contains("no push to the old token"))
        case .expiredProviderToken:
            #expect(outcome.observed.contains("forced token refreshes 1"))
        case .primaryToken:
            #expect(outcome.observed.contains("403 jwt-wrong-tenant"))
        case .vendorIDChange:
            let before = outcome.facts["before_sync"]?["deliveries"]?.arrayValue ?? []
            let after = outcome.facts["after_sync"]?["deliveries"]?.arrayValue ?? []
            #expect(before.count == 2 && after.count == 1)
            // Both builds are App Store Connect distribution: production tokens, old and new.
            #expect(before.contains { $0["environment"]?.stringValue == "production" && $0["handled_by"] == .null })
            #expect(outcome.facts["sync"]?["enrollments_revoked"]?.intValue == 2)
            #expect(after.first?["environment"]?.stringValue == "production")
        case .testFlightDebugBuild, .xcodeReleaseBuild:
            // Today's app: BadDeviceToken in the environment its report picks; the fixed app: accepted where its
            // token belongs, and handled.
            let token = scenario == .testFlightDebugBuild ? "production" : "sandbox"
            let wrong = scenario == .testFlightDebugBuild ? "sandbox" : "production"
            #expect(outcome.observed.contains("400 BadDeviceToken"))
            #expect(outcome.facts["token_environment"]?.stringValue == token)
            #expect(outcome.facts["today"]?["environment"]?.stringValue == wrong)
            #expect(outcome.facts["today"]?["reason"]?.stringValue == "BadDeviceToken")
            #expect(outcome.facts["fixed"]?["environment"]?.stringValue == token)
            #expect(outcome.facts["fixed"]?["apns_status"]?.intValue == 200)
            #expect(outcome.facts["fixed"]?["handled_by"]?.stringValue?.contains("fixed app") == true)
            #expect(outcome.fix.contains("aps_environment"))
        case .silentPushThrottled, .alertRefreshOnOpen, .offlineCoalescing, .expirationZeroOffline,
            .collapseIDUpdate, .forceQuitApp:
            // Judged push by push in DeviceSideScenarioTests.
            let pushes = outcome.facts["pushes"]?.arrayValue ?? []
            #expect(pushes.count >= 2)
        case .liveActivity:
            // One broadcast, exactly the four subscribed activities; each mistake answered as Apple answers it.
            #expect(outcome.facts["broadcast_copies"]?.intValue == 4)
            let checks = outcome.facts["checks"]?.arrayValue ?? []
            #expect(checks.count == 11 && checks.allSatisfy { $0["ok"] == .bool(true) }, "\(checks)")
            #expect(outcome.observed.contains("400 ChannelNotRegistered"))
            #expect(outcome.observed.contains("400 BadDeviceToken"))
            #expect(outcome.observed.contains("not started: no aps.attributes-type"))
            // The silent failure: 200 from APNs, the phone cannot decode the content-state into the app's type.
            #expect(outcome.observed.contains("undecodable update: 200 accepted"), "\(outcome.observed)")
            #expect(outcome.observed.contains("aps.content-state.volunteers"), "\(outcome.observed)")
            let steps = outcome.facts["steps"]?.arrayValue ?? []
            let last = try #require(steps.last?["phones"]?.objectValue)
            #expect(last.count == 5 && last.values.allSatisfy { $0.stringValue?.hasPrefix("ended ") == true })
        case .liveActivityKilledApp, .liveActivityRetriedStart, .liveActivityStalePushToStart,
            .liveActivityStartBudget:
            // Judged step by step in LiveActivityRegistryScenarioTests.
            let checks = outcome.facts["checks"]?.arrayValue ?? []
            #expect(checks.count >= 2 && checks.allSatisfy { $0["ok"] == .bool(true) }, "\(checks)")
        }
    }
}

@Suite("End to end: kkpush simulate's main job")
struct EndToEndTests {
    @Test("five phones: every push accepted, every app refreshed")
    func standardRun() async throws {
        let report = try await Simulation.run(deviceCount: 5, configuration: SimulatorFixtures.configuration())
        #expect(report.succeeded)
        #expect(report.devices.count == 5)
        #expect(report.devices.map(\.name) == Fleet.standard.map(\.name))
        #expect(Set(report.devices.map(\.tokenEnvironment)) == [.sandbox, .production])
        #expect(report.changes.count == 2)
        let pushed = report.devices.reduce(0) { $0 + $1.pushesAccepted }
        #expect(pushed == report.expectedHandled)
        #expect(report.handled == report.expectedHandled)
        #expect(report.latency.count == report.expectedHandled)
        // The README's phone follows both changed teams: two pushes, three requests per refresh.
        let phone = try #require(report.devices.first)
        #expect(phone.pushesAccepted == 2)
        #expect(phone.refreshed == 2)
        #expect(Set(phone.upcoming.map(\.tenantSlug)) == ["vvwilhelmus", "agovv"])
        #expect(Set(phone.upcoming.map(\.teamCode)) == ["JO11-3", "JO11-5", "JO13-1", "JO10-5"])
        for change in report.changes {
            #expect(phone.upcoming.first { $0.id == change.dienst.id }?.volunteers == change.dienst.volunteers)
        }
    }

    @Test("more phones than the standard five cycle through the same profiles")
    func fleet() {
        let fleet = Fleet.make(count: 12)
        #expect(fleet.count == 12)
        #expect(fleet[5].name == "Device 0006")
        #expect(
            fleet.allSatisfy { p in
                p.enrollments.contains { e in
                    Fleet.changedTeams.contains { $0.tenant == e.tenant && e.teams.contains($0.team) }
                }
            })
    }
}
