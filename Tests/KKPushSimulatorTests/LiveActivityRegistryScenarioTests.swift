import Foundation
import KKPushCore
import KKPushSimulator
import Testing

/// The Live Activity scenarios through kkpush's activity registry (SQLite in a temporary folder), against the real
/// mock over TLS on loopback and the real client: what the registry holds per activity at the end, and what the
/// mock's device side did with each start.
@Suite("Live Activity scenarios through the activity registry: killed app, retried start, stale token, start budget")
struct LiveActivityRegistryScenarioTests {
    static func run(_ scenario: SimulationScenario) async throws -> ScenarioOutcome {
        let outcome = try await Scenarios.run(scenario, configuration: SimulatorFixtures.configuration())
        #expect(outcome.reproduced, "\(outcome.observed)\n\(outcome.details.joined(separator: "\n"))")
        return outcome
    }

    /// The registry's activities at the end: key → state.
    static func states(_ outcome: ScenarioOutcome) -> [String: String] {
        var states: [String: String] = [:]
        for a in outcome.facts["activities"]?.arrayValue ?? [] {
            if let key = a["key"]?.stringValue, let state = a["state"]?.stringValue { states[key] = state }
        }
        return states
    }

    @Test("live-activity-killed-app: the running app's activity ends; a killed app's is stale, then active or stale")
    func killedApp() async throws {
        let outcome = try await Self.run(.liveActivityKilledApp)
        #expect(
            Self.states(outcome) == [
                "dienst-sanne-812": "ended", "dienst-daan-812": "active", "dienst-fleur-812": "stale",
            ])
        #expect(outcome.details.contains { $0.contains("refused activity-no-update-token") })
        #expect(outcome.details.contains { $0.contains("refused activity-ended") })
    }

    @Test("live-activity-retried-start: one key, one activity, one push")
    func retriedStart() async throws {
        let outcome = try await Self.run(.liveActivityRetriedStart)
        #expect(Self.states(outcome) == ["dienst-vvwilhelmus-812": "active"])
        #expect(outcome.details.filter { $0.contains("existing activity") }.count == 2)
    }

    @Test("live-activity-stale-push-to-start: stale and suspect, a nil rotation refused, the new token used")
    func stalePushToStart() async throws {
        let outcome = try await Self.run(.liveActivityStalePushToStart)
        #expect(
            Self.states(outcome) == ["dienst-vvwilhelmus-812": "stale", "dienst-vvwilhelmus-812-b": "active"])
        #expect(outcome.details.contains { $0.contains("discarded: stale-push-to-start-token") })
    }

    @Test("live-activity-start-budget: the registry defers past the budget; the device drops what is sent anyway")
    func startBudget() async throws {
        let outcome = try await Self.run(.liveActivityStartBudget)
        let states = Self.states(outcome)
        #expect(states.count == 10 && states.values.allSatisfy { $0 == "active" }, "\(states)")
        #expect(outcome.details.filter { $0.contains("→ deferred until") }.count == 2)
        #expect(outcome.details.contains { $0.contains("2 discarded: start-budget") })
    }
}
