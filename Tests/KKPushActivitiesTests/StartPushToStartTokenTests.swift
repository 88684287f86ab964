import Foundation
import KKPushActivities
import KKPushCore
import KKPushTestSupport
import Testing

/// A push-to-start token given with a start (`pushToStartToken`): recorded as the device's current one only when the
/// start is planned to send, and refused, as the stored one is, when the registry holds it as dead.
@Suite("The activity registry: a push-to-start token given with the start")
struct StartPushToStartTokenTests {
    typealias F = Fixtures

    static func start(_ key: String, token: String, overBudget: ActivityOverBudget = .defer) -> ActivityStartRequest {
        var request = F.start(key, overBudget: overBudget)
        request.pushToStartToken = token
        return request
    }

    @Test(
        "A start the budget defers or refuses, or that exists, records nothing of its given token; a sent one does",
        arguments: RegistryBackend.allCases)
    func recordedOnlyWhenSent(backend: RegistryBackend) async throws {
        try await backend.withRegistry(ActivityRegistrySettings(startBudgetCount: 1, startBudgetWindow: 60)) { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            _ = try F.send(try await r.planStart(F.start("g-1"), at: F.t0))
            let before = try await r.pushToStartTokens(device: "phone-1")
            #expect(before.map(\.token) == [F.pushToStart] && before.first?.history.count == 1)

            let deferred = try await r.planStart(
                Self.start("g-2", token: F.newerPushToStart), at: F.t0.addingTimeInterval(1))
            guard case .deferred = deferred else {
                Issue.record("expected .deferred, got \(deferred)")
                return
            }
            let error = try F.refused(
                try await r.planStart(
                    Self.start("g-2", token: F.newerPushToStart, overBudget: .refuse), at: F.t0.addingTimeInterval(2)))
            #expect(error.code.rawValue == "activity-start-budget")
            let existing = try await r.planStart(
                Self.start("g-1", token: F.newerPushToStart), at: F.t0.addingTimeInterval(3))
            guard case .existing = existing else {
                Issue.record("expected .existing, got \(existing)")
                return
            }
            let bad = try F.refused(
                try await r.planStart(
                    Self.start("g-3", token: "zz-not-hex"), at: F.t0.addingTimeInterval(4)))
            #expect(bad.code.rawValue == "activity-input-invalid" && bad.message.contains("(pushToStartToken)"))
            // Nothing recorded: the stored token, its last-seen time and its history are as before.
            #expect(try await r.pushToStartTokens(device: "phone-1") == before)
            #expect(try await r.activity(key: "g-2") == nil)

            // After the window the start is sent: now the given token is the device's current one.
            let sent = try F.send(
                try await r.planStart(Self.start("g-2", token: F.newerPushToStart), at: F.t0.addingTimeInterval(61)))
            #expect(sent.token == F.newerPushToStart && sent.tokenStatus == .good)
            let after = try await r.pushToStartTokens(device: "phone-1")
            #expect(after.map(\.token) == [F.newerPushToStart])
            #expect(after.first?.source == "start")
            #expect(after.first?.history.map(\.outcome) == [.accepted, .accepted])
        }
    }

    @Test(
        "A given token the registry holds as dead is refused as the stored one is; a new given token starts",
        arguments: RegistryBackend.allCases)
    func deadGivenTokenRefused(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let first = try F.send(try await r.planStart(F.start("d-1"), at: F.t0))
            try await r.recordAnswer(first.answer(status: 410, reason: "Unregistered", at: F.t0))
            let dead = try await r.pushToStartTokens(device: "phone-1")
            #expect(dead.first?.status == .dead)

            // The dead token given with the start, in another spelling: refused, not sent marked good.
            let error = try F.refused(
                try await r.planStart(
                    Self.start("d-2", token: F.pushToStart.uppercased()), at: F.t0.addingTimeInterval(1)))
            #expect(error.code.rawValue == "activity-no-push-to-start-token")
            #expect(error.message.contains("(pushToStartToken)") && error.message.contains("dead"), "\(error)")
            #expect(error.message.contains("phone-1") && error.fix?.contains("push_to_start_tokens") == true)
            #expect(!error.message.contains(F.pushToStart), "a whole token in the message")
            #expect(try await r.pushToStartTokens(device: "phone-1") == dead)
            #expect(try await r.activity(key: "d-2") == nil)

            // A new token given with the start replaces the dead one.
            let fresh = try F.send(
                try await r.planStart(Self.start("d-2", token: F.newerPushToStart), at: F.t0.addingTimeInterval(2)))
            #expect(fresh.token == F.newerPushToStart && fresh.tokenStatus == .good)
            #expect(try await r.pushToStartTokens(device: "phone-1").first?.status == .good)
        }
    }

    @Test(
        "A given token the registry holds as suspect is sent marked suspect, with the note",
        arguments: RegistryBackend.allCases)
    func suspectGivenToken(backend: RegistryBackend) async throws {
        try await backend.withRegistry(ActivityRegistrySettings(staleTimeout: 60)) { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let first = try F.send(try await r.planStart(F.start("s-1"), at: F.t0))
            try await r.recordAnswer(first.answer(status: 200, reason: nil, at: F.t0))
            _ = try await r.sweepStale(at: F.t0.addingTimeInterval(60))
            #expect(try await r.pushToStartTokens(device: "phone-1").first?.status == .suspect)
            let next = try F.send(
                try await r.planStart(Self.start("s-2", token: F.pushToStart), at: F.t0.addingTimeInterval(61)))
            #expect(next.tokenStatus == .suspect)
            #expect(next.notes.contains { $0.contains("suspect") })
        }
    }
}
