import Foundation
import KKPushActivities
import KKPushCore
import KKPushStore
import KKPushTestSupport
import Testing

/// Where a test's registry lives: an SQLite file in a temporary folder, or a new database of the tests' real
/// PostgreSQL. Every lifecycle test runs against both.
enum RegistryBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres
    var testDescription: String { rawValue }

    /// The location ``ActivityRegistries/open(_:settings:origin:)`` takes.
    func location() async throws -> (location: String, cleanup: @Sendable () -> Void) {
        switch self {
        case .sqlite:
            let folder = try makeTemporaryDirectory(prefix: "kkpush-activities")
            return (
                folder.appendingPathComponent("registry.sqlite").path,
                { try? FileManager.default.removeItem(at: folder) }
            )
        case .postgres:
            let server = try await PostgresServer.sharedServer()
            return (server.url(try await server.newDatabase("activities")), {})
        }
    }

    func withRegistry<T: Sendable>(
        _ settings: ActivityRegistrySettings = .defaults, _ body: (any ActivityRegistry) async throws -> T
    ) async throws -> T {
        let (location, cleanup) = try await location()
        defer { cleanup() }
        let registry = try await ActivityRegistries.open(location, settings: settings)
        do {
            let result = try await body(registry)
            await registry.close()
            return result
        } catch {
            await registry.close()
            throw error
        }
    }
}

/// Fixtures of the registry's tests.
enum Fixtures {
    static let pushToStart = String(repeating: "a1", count: 32)
    static let newerPushToStart = String(repeating: "b2", count: 32)
    static let updateToken = String(repeating: "c3", count: 32)
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let type = "DienstAttributes"

    static func start(_ key: String, device: String = "phone-1", overBudget: ActivityOverBudget = .defer)
        -> ActivityStartRequest
    {
        ActivityStartRequest(
            key: key, device: device, topic: "nl.kantinekoning.app", attributesType: type,
            attributes: ["dienst": "Bar"], contentState: ["signedUp": 1], alert: .text("Dienst gestart"),
            overBudget: overBudget)
    }

    static func tokens(_ token: String?) -> ActivityTokenReport {
        ActivityTokenReport(pushToStartTokens: [PushToStartTokenReport(attributesType: type, token: token)])
    }

    static func send(_ plan: ActivityStartPlan, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> ActivityPush
    {
        guard case .send(let push) = plan else {
            Issue.record("expected .send, got \(plan)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return push
    }

    static func send(_ plan: ActivityPushPlan, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> ActivityPush
    {
        guard case .send(let push) = plan else {
            Issue.record("expected .send, got \(plan)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return push
    }

    static func refused(_ plan: ActivityStartPlan, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> KKPushError
    {
        guard case .refused(let error) = plan else {
            Issue.record("expected .refused, got \(plan)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        return error
    }

    static func refusal(_ plan: ActivityPushPlan) -> String? {
        if case .refused(let e) = plan { return e.code.rawValue }
        return nil
    }
}

@Suite("The activity registry")
struct ActivityRegistryTests {
    typealias F = Fixtures

    @Test(
        "A second start with the same key answers with the first activity and sends nothing",
        arguments: RegistryBackend.allCases)
    func idempotentStart(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let push = try F.send(try await r.planStart(F.start("dienst-kk-1"), at: F.t0))
            #expect(push.token == F.pushToStart)
            #expect(push.tokenKind == .pushToStart)
            #expect(push.tokenStatus == .good)
            try await r.recordAnswer(push.answer(status: 200, reason: nil, at: F.t0.addingTimeInterval(1)))
            let again = try await r.planStart(F.start("dienst-kk-1"), at: F.t0.addingTimeInterval(5))
            guard case .existing(let record) = again else {
                Issue.record("expected .existing, got \(again)")
                return
            }
            #expect(record.state == .requested)
            #expect(record.startApnsID == push.request.apnsID)
            #expect(record.startStatus == 200)
            #expect(record.startAcceptedAt == F.t0.addingTimeInterval(1))
            #expect(try await r.activities(.all).count == 1)
        }
    }

    @Test("The start push carries the key in its attributes, input-push-token 1 and the alert")
    func startPayload() throws {
        let request = try ActivityPushes.start(
            F.start("dienst-kk-2"), token: F.pushToStart, apnsID: "0a7a4ae4-6f5e-4a52-9d43-8d2f1f0e9b10", at: F.t0)
        #expect(request.pushType == .liveactivity)
        #expect(request.topic == "nl.kantinekoning.app.push-type.liveactivity")
        #expect(request.priority == 10)
        let aps = try #require(try Payload(parsing: request.payload).aps)
        #expect(aps.event == .start)
        #expect(aps.inputPushToken)
        #expect(aps.attributesType == F.type)
        #expect(aps.attributes == ["dienst": "Bar", "kk_activity_key": "dienst-kk-2"])
        #expect(aps.alert == .text("Dienst gestart"))
        #expect(aps.timestamp == 1_800_000_000)
        var own = F.start("dienst-kk-2")
        own.attributes = ["kk_activity_key": "other"]
        #expect(throws: KKPushError.self) {
            try ActivityPushes.start(own, token: F.pushToStart, apnsID: "x", at: F.t0)
        }
    }

    @Test("Bad keys are refused by name", arguments: ["", String(repeating: "k", count: 201), "dienst\n1", "dienst-ü"])
    func badKeys(key: String) throws {
        #expect {
            try ActivityPushes.checkKey(key)
        } throws: { ($0 as? KKPushError)?.code.rawValue == "activity-key-invalid" }
        try ActivityPushes.checkKey(String(repeating: "k", count: 200))
    }

    @Test(
        "A start without a device or topic is refused by name, and nothing is recorded",
        arguments: RegistryBackend.allCases)
    func emptyInputs(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            var noDevice = F.start("e-1")
            noDevice.device = " "
            var noTopic = F.start("e-2")
            noTopic.topic = ""
            for (request, name) in [(noDevice, "(device)"), (noTopic, "(topic)")] {
                let plan = try await r.planStart(request, at: F.t0)
                guard case .refused(let error) = plan else {
                    Issue.record("expected .refused, got \(plan)")
                    continue
                }
                #expect(error.code.rawValue == "activity-input-invalid")
                #expect(error.message.contains(name))
            }
            #expect(try await r.activities(.all).isEmpty)
        }
    }

    @Test(
        "A nil, empty or malformed rotation never replaces a good push-to-start token",
        arguments: RegistryBackend.allCases)
    func rotations(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            let first = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            #expect(first.rotations.map(\.outcome) == [.accepted])
            for (i, bad) in [nil, "", "  ", "zz-not-hex"].enumerated() {
                let result = try await r.recordReport(
                    F.tokens(bad), device: "phone-1", at: F.t0.addingTimeInterval(Double(i + 1)))
                #expect(result.rotations.map(\.outcome) == [.refused])
                #expect(result.rotations.first?.reason?.contains("kept") == true)
            }
            let same = try await r.recordReport(
                F.tokens(F.pushToStart), device: "phone-1", at: F.t0.addingTimeInterval(10))
            #expect(same.rotations.map(\.outcome) == [.unchanged])
            var tokens = try await r.pushToStartTokens(device: "phone-1")
            #expect(tokens.map(\.token) == [F.pushToStart])
            #expect(tokens.first?.lastSeen == F.t0.addingTimeInterval(10))
            #expect(
                tokens.first?.history.map(\.outcome) == [.accepted, .refused, .refused, .refused, .refused, .unchanged])
            #expect(tokens.first?.history[1].token == nil)
            _ = try await r.recordReport(
                F.tokens(F.newerPushToStart), device: "phone-1", at: F.t0.addingTimeInterval(20))
            tokens = try await r.pushToStartTokens(device: "phone-1")
            #expect(tokens.map(\.token) == [F.newerPushToStart])
            #expect(tokens.first?.firstSeen == F.t0.addingTimeInterval(20))
        }
    }

    @Test("No push-to-start token: the start is refused with the fix", arguments: RegistryBackend.allCases)
    func noToken(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            let plan = try await r.planStart(F.start("dienst-kk-3"), at: F.t0)
            guard case .refused(let error) = plan else {
                Issue.record("expected .refused, got \(plan)")
                return
            }
            #expect(error.code.rawValue == "activity-no-push-to-start-token")
            #expect(error.fix?.contains("push_to_start_tokens") == true)
            #expect(try await r.activities(.all).isEmpty)
        }
    }

    @Test("Update before the token, the token, update, end, end again", arguments: RegistryBackend.allCases)
    func lifecycle(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let start = try F.send(try await r.planStart(F.start("dienst-kk-4"), at: F.t0))
            try await r.recordAnswer(start.answer(status: 200, reason: nil, at: F.t0))
            let early = try await r.planUpdate(
                ActivityUpdateRequest(key: "dienst-kk-4", contentState: ["signedUp": 2]), at: F.t0)
            #expect(F.refusal(early) == "activity-no-update-token")
            let report = ActivityTokenReport(activityTokens: [
                ActivityUpdateTokenReport(
                    activityKey: "dienst-kk-4", activityID: "A-1", attributesType: F.type, token: F.updateToken)
            ])
            let recorded = try await r.recordReport(report, device: "phone-1", at: F.t0.addingTimeInterval(3))
            #expect(recorded.activities.map(\.state) == [.active])
            let update = try F.send(
                try await r.planUpdate(
                    ActivityUpdateRequest(key: "dienst-kk-4", contentState: ["signedUp": 2]), at: F.t0))
            #expect(update.token == F.updateToken)
            #expect(update.request.topic == "nl.kantinekoning.app.push-type.liveactivity")
            #expect(try Payload(parsing: update.request.payload).aps?.event == .update)
            try await r.recordAnswer(update.answer(status: 200, reason: nil, at: F.t0.addingTimeInterval(4)))
            #expect(try await r.activity(key: "dienst-kk-4")?.state == .active)
            let end = try F.send(
                try await r.planEnd(ActivityEndRequest(key: "dienst-kk-4", dismissalDate: 1_800_000_600), at: F.t0))
            let ended = try await r.recordAnswer(end.answer(status: 200, reason: nil, at: F.t0.addingTimeInterval(5)))
            #expect(ended?.state == .ended)
            #expect(ended?.activityID == "A-1")
            #expect(ended?.endedAt == F.t0.addingTimeInterval(5))
            #expect(
                F.refusal(try await r.planEnd(ActivityEndRequest(key: "dienst-kk-4"), at: F.t0)) == "activity-ended")
            #expect(
                F.refusal(
                    try await r.planUpdate(ActivityUpdateRequest(key: "dienst-kk-4", contentState: [:]), at: F.t0))
                    == "activity-ended")
            #expect(F.refusal(try await r.planEnd(ActivityEndRequest(key: "nope"), at: F.t0)) == "activity-unknown")
            // The dismissal date passes: dismissed.
            let swept = try await r.sweepStale(at: Date(timeIntervalSince1970: 1_800_000_601))
            #expect(swept.map(\.state) == [.dismissed])
        }
    }

    @Test(
        "Past the start budget a start is deferred to when the budget frees, or refused",
        arguments: RegistryBackend.allCases)
    func budget(backend: RegistryBackend) async throws {
        let settings = ActivityRegistrySettings(startBudgetCount: 2, startBudgetWindow: 60)
        try await backend.withRegistry(settings) { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            _ = try F.send(try await r.planStart(F.start("b-1"), at: F.t0))
            let second = try F.send(try await r.planStart(F.start("b-2"), at: F.t0.addingTimeInterval(10)))
            let deferred = try await r.planStart(F.start("b-3"), at: F.t0.addingTimeInterval(20))
            guard case .deferred(let until, let reason) = deferred else {
                Issue.record("expected .deferred, got \(deferred)")
                return
            }
            #expect(until == F.t0.addingTimeInterval(60))
            #expect(reason.contains("2 starts"))
            #expect(try await r.activity(key: "b-3") == nil)
            let refused = try await r.planStart(F.start("b-3", overBudget: .refuse), at: F.t0.addingTimeInterval(20))
            guard case .refused(let error) = refused else {
                Issue.record("expected .refused, got \(refused)")
                return
            }
            #expect(error.code.rawValue == "activity-start-budget")
            // Another device has its own budget.
            _ = try await r.recordReport(F.tokens(F.newerPushToStart), device: "phone-2", at: F.t0)
            _ = try F.send(try await r.planStart(F.start("b-4", device: "phone-2"), at: F.t0.addingTimeInterval(20)))
            // A start APNs rejected never reached the device: its place is free again.
            try await r.recordAnswer(second.answer(status: 400, reason: "BadPriority", at: F.t0.addingTimeInterval(21)))
            _ = try F.send(try await r.planStart(F.start("b-3"), at: F.t0.addingTimeInterval(22)))
            // After the window: free again.
            _ = try F.send(try await r.planStart(F.start("b-5"), at: F.t0.addingTimeInterval(61)))
        }
    }

    @Test("A start rejected by APNs may start again under its key", arguments: RegistryBackend.allCases)
    func rejectedStartRetries(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let first = try F.send(try await r.planStart(F.start("r-1"), at: F.t0))
            let after = try await r.recordAnswer(first.answer(status: 410, reason: "Unregistered", at: F.t0))
            #expect(after?.state == .requested)
            #expect(after?.startStatus == 410)
            // The push-to-start token is dead: refused until a new one comes.
            let dead = try await r.planStart(F.start("r-1"), at: F.t0.addingTimeInterval(1))
            guard case .refused(let error) = dead else {
                Issue.record("expected .refused, got \(dead)")
                return
            }
            #expect(error.code.rawValue == "activity-no-push-to-start-token")
            #expect(try await r.pushToStartTokens(device: "phone-1").first?.status == .dead)
            _ = try await r.recordReport(
                F.tokens(F.newerPushToStart), device: "phone-1", at: F.t0.addingTimeInterval(2))
            let second = try F.send(try await r.planStart(F.start("r-1"), at: F.t0.addingTimeInterval(3)))
            #expect(second.token == F.newerPushToStart)
            #expect(second.request.apnsID != first.request.apnsID)
            #expect(try await r.activities(.all).count == 1)
        }
    }

    @Test(
        "A start with no update token within the stale timeout goes stale and its token suspect",
        arguments: RegistryBackend.allCases)
    func stale(backend: RegistryBackend) async throws {
        try await backend.withRegistry(ActivityRegistrySettings(staleTimeout: 120)) { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let start = try F.send(try await r.planStart(F.start("s-1"), at: F.t0))
            try await r.recordAnswer(start.answer(status: 200, reason: nil, at: F.t0))
            #expect(try await r.sweepStale(at: F.t0.addingTimeInterval(119)).isEmpty)
            let swept = try await r.sweepStale(at: F.t0.addingTimeInterval(120))
            #expect(swept.map(\.key) == ["s-1"])
            #expect(swept.first?.state == .stale)
            #expect(try await r.pushToStartTokens(device: "phone-1").first?.status == .suspect)
            #expect(
                F.refusal(try await r.planUpdate(ActivityUpdateRequest(key: "s-1", contentState: [:]), at: F.t0))
                    == "activity-no-update-token")
            // The suspect token is still used while nothing newer arrives, and the plan says so.
            let next = try F.send(try await r.planStart(F.start("s-2"), at: F.t0.addingTimeInterval(200)))
            #expect(next.tokenStatus == .suspect)
            #expect(next.notes.contains { $0.contains("suspect") })
            // A newer token is good again.
            _ = try await r.recordReport(
                F.tokens(F.newerPushToStart), device: "phone-1", at: F.t0.addingTimeInterval(300))
            let third = try F.send(try await r.planStart(F.start("s-3"), at: F.t0.addingTimeInterval(301)))
            #expect(third.tokenStatus == .good)
            // The stale activity's token comes back late: it is active after all.
            let late = try await r.recordReport(
                ActivityTokenReport(activityTokens: [
                    ActivityUpdateTokenReport(activityKey: "s-1", token: F.updateToken)
                ]),
                device: "phone-1", at: F.t0.addingTimeInterval(400))
            #expect(late.activities.map(\.state) == [.active])
        }
    }

    @Test(
        "A start planned with no APNs answer recorded goes stale after the timeout; its token is not suspected",
        arguments: RegistryBackend.allCases)
    func unansweredStart(backend: RegistryBackend) async throws {
        try await backend.withRegistry(ActivityRegistrySettings(staleTimeout: 60)) { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            let push = try F.send(try await r.planStart(F.start("u-1"), at: F.t0))
            // No answer: the network failed, the push may have arrived.
            let after = try await r.recordAnswer(push.answer(status: nil, reason: nil, at: F.t0))
            #expect(after?.state == .requested)
            #expect(try await r.sweepStale(at: F.t0.addingTimeInterval(59)).isEmpty)
            let swept = try await r.sweepStale(at: F.t0.addingTimeInterval(60))
            #expect(swept.map(\.state) == [.stale])
            #expect(swept.first?.note?.contains("no APNs answer") == true)
            #expect(try await r.pushToStartTokens(device: "phone-1").first?.status == .good)
            // The key stays the first activity's: a retry does not start a second one.
            guard case .existing(let record) = try await r.planStart(F.start("u-1"), at: F.t0.addingTimeInterval(61))
            else {
                Issue.record("expected .existing")
                return
            }
            #expect(record.state == .stale)
        }
    }

    @Test(
        "APNs' 410 on an update token dismisses the activity; the app's reported states are taken",
        arguments: RegistryBackend.allCases)
    func answersAndAppStates(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            for key in ["a-1", "a-2"] {
                let start = try F.send(try await r.planStart(F.start(key), at: F.t0))
                try await r.recordAnswer(start.answer(status: 200, reason: nil, at: F.t0))
            }
            let other = String(repeating: "d4", count: 32)
            _ = try await r.recordReport(
                ActivityTokenReport(
                    activityTokens: [
                        ActivityUpdateTokenReport(activityKey: "a-1", token: F.updateToken),
                        ActivityUpdateTokenReport(activityKey: "a-2", token: other),
                        ActivityUpdateTokenReport(activityKey: "unknown-no-type", token: other),
                    ]), device: "phone-1", at: F.t0)
            let update = try F.send(
                try await r.planUpdate(ActivityUpdateRequest(key: "a-1", contentState: [:]), at: F.t0))
            let gone = try await r.recordAnswer(
                update.answer(status: 410, reason: "Unregistered", at: F.t0.addingTimeInterval(1)))
            #expect(gone?.state == .dismissed)
            let states = try await r.recordReport(
                ActivityTokenReport(activityStates: [
                    ActivityStateReport(activityKey: "a-2", state: .ended),
                    ActivityStateReport(activityKey: "nope", state: .dismissed),
                ]), device: "phone-1", at: F.t0.addingTimeInterval(2))
            #expect(states.activities.map(\.state) == [.ended])
            #expect(states.ignored.count == 1)
            // An activity the app started on its own, reported with its type and the app's topic: recorded active.
            let own = try await r.recordReport(
                ActivityTokenReport(
                    activityTokens: [
                        ActivityUpdateTokenReport(activityKey: "app-own", attributesType: F.type, token: other)
                    ], topic: "nl.kantinekoning.app"), device: "phone-1", at: F.t0)
            #expect(own.activities.map(\.state) == [.active])
            #expect(try await r.activity(key: "unknown-no-type") == nil)
        }
    }

    @Test("Settings out of range are refused by name")
    func settings() {
        for bad in [
            ActivityRegistrySettings(startBudgetCount: 0), ActivityRegistrySettings(startBudgetWindow: 0),
            ActivityRegistrySettings(staleTimeout: .infinity),
        ] {
            #expect {
                try bad.validated()
            } throws: { ($0 as? KKPushError)?.code.rawValue == "activity-settings-invalid" }
        }
        #expect(ActivityRegistrySettings.defaults.startBudgetCount == 10)
        #expect(ActivityRegistrySettings.defaults.startBudgetWindow == 3600)
        #expect(ActivityRegistrySettings.defaults.staleTimeout == 120)
    }
}

@Suite("The activity registry in PostgreSQL")
struct PostgresActivityRegistryTests {
    typealias F = Fixtures

    @Test("Two processes starting one key at once make one activity; one device's budget holds under concurrent starts")
    func concurrentStarts() async throws {
        let (location, _) = try await RegistryBackend.postgres.location()
        let url = try PostgresURL(parsing: location)
        let settings = ActivityRegistrySettings(startBudgetCount: 3, startBudgetWindow: 3600)
        // Two registries, two pools: as two processes.
        let a = try await PostgresActivityRegistry.open(url: url, settings: settings)
        let b = try await PostgresActivityRegistry.open(url: url, settings: settings)
        _ = try await a.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
        let plans = try await withThrowingTaskGroup(of: ActivityStartPlan.self) { group in
            for i in 0..<12 {
                let r: any ActivityRegistry = i % 2 == 0 ? a : b
                group.addTask { try await r.planStart(F.start("same-key"), at: F.t0) }
            }
            var all: [ActivityStartPlan] = []
            for try await plan in group { all.append(plan) }
            return all
        }
        let sends = plans.filter { if case .send = $0 { true } else { false } }
        let existing = plans.filter { if case .existing = $0 { true } else { false } }
        #expect(sends.count == 1)
        #expect(existing.count == 11)
        // Different keys, one device, budget 3 (1 used): exactly 2 more are sent, the rest deferred.
        let more = try await withThrowingTaskGroup(of: ActivityStartPlan.self) { group in
            for i in 0..<8 {
                let r: any ActivityRegistry = i % 2 == 0 ? a : b
                group.addTask { try await r.planStart(F.start("key-\(i)"), at: F.t0.addingTimeInterval(1)) }
            }
            var all: [ActivityStartPlan] = []
            for try await plan in group { all.append(plan) }
            return all
        }
        #expect(more.filter { if case .send = $0 { true } else { false } }.count == 2)
        #expect(more.filter { if case .deferred = $0 { true } else { false } }.count == 6)
        #expect(try await a.activities(.all).count == 3)
        await a.close()
        await b.close()
    }

    @Test("The migration is idempotent; a registry migrated by a newer kkpush is refused")
    func migration() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase("activities")
        let url = try PostgresURL(parsing: server.url(database))
        let registry = try await PostgresActivityRegistry.open(url: url)
        #expect(try await registry.migrate().applied.isEmpty)
        await registry.close()
        let tables = try await offThread {
            try server.psql(
                "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE tablename LIKE 'kkpush_%'",
                database: database)
        }
        #expect(
            tables.trimmingCharacters(in: .whitespacesAndNewlines)
                == "kkpush_activities,kkpush_activities_versions,kkpush_activity_starts,kkpush_push_to_start_history,kkpush_push_to_start_tokens"
        )
        try await offThread {
            try server.psql(
                "INSERT INTO public.kkpush_activities_versions VALUES (99, 'from the future', 0)", database: database)
        }
        await #expect {
            _ = try await PostgresActivityRegistry.open(url: url)
        } throws: { ($0 as? KKPushError)?.code.rawValue == "activity-registry-newer" }
    }
}

@Suite("The activity registry in an SQLite file")
struct SQLiteActivityRegistryTests {
    typealias F = Fixtures

    @Test("Two connections to one file starting one key at once make one activity (BEGIN IMMEDIATE)")
    func concurrentStarts() async throws {
        let (path, cleanup) = try await RegistryBackend.sqlite.location()
        defer { cleanup() }
        let a = try await SQLiteActivityRegistry.open(path: path)
        let b = try await SQLiteActivityRegistry.open(path: path)
        _ = try await a.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
        let plans = try await withThrowingTaskGroup(of: ActivityStartPlan.self) { group in
            for i in 0..<12 {
                let r: any ActivityRegistry = i % 2 == 0 ? a : b
                group.addTask { try await r.planStart(F.start("same-key"), at: F.t0) }
            }
            var all: [ActivityStartPlan] = []
            for try await plan in group { all.append(plan) }
            return all
        }
        #expect(plans.filter { if case .send = $0 { true } else { false } }.count == 1)
        #expect(try await b.activities(.all).count == 1)
        await a.close()
        await b.close()
        await #expect {
            _ = try await a.activity(key: "same-key")
        } throws: { ($0 as? KKPushError)?.code.rawValue == "activity-registry-closed" }
    }
}
