import Foundation
import KKPushActivities
import KKPushCore
import KKPushStore
import KKPushTestSupport
import Testing

/// An activity the app started itself (its update token reported for a key the registry never started) is recorded
/// under the reporting app's topic, so its updates and ends go to `<bundle id>.push-type.liveactivity`; a report
/// without one records nothing; an activity stored without a topic (by an older kkpush) is refused by name until the
/// app's report gives it one.
@Suite("The activity registry: activities the app started itself")
struct AppStartedActivityTests {
    typealias F = Fixtures
    static let liveTopic = "nl.kantinekoning.app.push-type.liveactivity"

    static func appStarted(_ key: String, topic: String?) -> ActivityTokenReport {
        ActivityTokenReport(
            activityTokens: [ActivityUpdateTokenReport(activityKey: key, attributesType: F.type, token: F.updateToken)],
            topic: topic)
    }

    /// A registry of `backend` and a way to run a statement on its database beside it (a row an older kkpush wrote).
    static func withRegistry(
        _ backend: RegistryBackend,
        _ body: (any ActivityRegistry, _ sql: @escaping @Sendable (String) async throws -> Void) async throws -> Void
    ) async throws {
        let sql: @Sendable (String) async throws -> Void
        let location: String
        var cleanup: @Sendable () -> Void = {}
        switch backend {
        case .sqlite:
            let folder = try makeTemporaryDirectory(prefix: "kkpush-activities")
            cleanup = { try? FileManager.default.removeItem(at: folder) }
            location = folder.appendingPathComponent("registry.sqlite").path
            sql = { statement in
                let connection = try await SQLiteConnection.open(path: location)
                do {
                    _ = try await connection.query("PRAGMA busy_timeout = 5000")
                    _ = try await connection.query(statement)
                } catch {
                    await connection.close()
                    throw error
                }
                await connection.close()
            }
        case .postgres:
            let server = try await PostgresServer.sharedServer()
            let database = try await server.newDatabase("activities")
            location = server.url(database)
            sql = { statement in try await server.runSQL(statement, database: database) }
        }
        defer { cleanup() }
        let registry = try await ActivityRegistries.open(location)
        do {
            try await body(registry, sql)
        } catch {
            await registry.close()
            throw error
        }
        await registry.close()
    }

    @Test(
        "Recorded under the report's topic (a bundle id or the full topic): its update and end go to <bundle id>.push-type.liveactivity",
        arguments: RegistryBackend.allCases)
    func recordedUnderTheAppsTopic(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            for (key, topic) in [("own-1", "nl.kantinekoning.app"), ("own-2", " \(Self.liveTopic) ")] {
                let result = try await r.recordReport(Self.appStarted(key, topic: topic), device: "phone-1", at: F.t0)
                #expect(result.ignored.isEmpty, "\(result.ignored)")
                #expect(result.activities.map(\.state) == [.active])
                #expect(result.activities.first?.topic == Self.liveTopic)
                let update = try F.send(
                    try await r.planUpdate(ActivityUpdateRequest(key: key, contentState: ["signedUp": 2]), at: F.t0))
                #expect(update.token == F.updateToken)
                #expect(update.request.topic == Self.liveTopic)
                let end = try F.send(try await r.planEnd(ActivityEndRequest(key: key), at: F.t0))
                #expect(end.request.topic == Self.liveTopic)
            }
        }
    }

    @Test(
        "Without the app's topic the activity is not recorded: the reason names the key and the missing field",
        arguments: RegistryBackend.allCases)
    func notRecordedWithoutATopic(backend: RegistryBackend) async throws {
        try await backend.withRegistry { r in
            for (i, topic) in [nil, "", "   "].enumerated() {
                let key = "bare-\(i)"
                let result = try await r.recordReport(Self.appStarted(key, topic: topic), device: "phone-1", at: F.t0)
                #expect(result.activities.isEmpty)
                #expect(result.ignored.count == 1)
                let reason = result.ignored.first ?? ""
                #expect(reason.contains("'\(key)'") && reason.contains("(topic)"), "\(reason)")
                #expect(reason.contains("activity-topic-missing"), "\(reason)")
                #expect(try await r.activity(key: key) == nil)
                #expect(
                    F.refusal(try await r.planUpdate(ActivityUpdateRequest(key: key, contentState: [:]), at: F.t0))
                        == "activity-unknown")
            }
            // A started activity's token needs no topic in the report: the start's own is kept.
            _ = try await r.recordReport(F.tokens(F.pushToStart), device: "phone-1", at: F.t0)
            _ = try F.send(try await r.planStart(F.start("planned-1"), at: F.t0))
            let planned = try await r.recordReport(
                Self.appStarted("planned-1", topic: nil), device: "phone-1", at: F.t0)
            #expect(planned.ignored.isEmpty && planned.activities.first?.topic == Self.liveTopic)
        }
    }

    @Test(
        "An activity stored without a topic is refused by name, never sent to .push-type.liveactivity; the app's report gives it one",
        arguments: RegistryBackend.allCases)
    func storedWithoutATopic(backend: RegistryBackend) async throws {
        try await Self.withRegistry(backend) { r, sql in
            _ = try await r.recordReport(Self.appStarted("old-1", topic: "nl.kantinekoning.app"), device: "p", at: F.t0)
            try await sql("UPDATE kkpush_activities SET topic = '' WHERE key = 'old-1'")
            #expect(try await r.activity(key: "old-1")?.topic == "")
            let update = try await r.planUpdate(ActivityUpdateRequest(key: "old-1", contentState: [:]), at: F.t0)
            let end = try await r.planEnd(ActivityEndRequest(key: "old-1"), at: F.t0)
            for plan in [update, end] {
                guard case .refused(let error) = plan else {
                    Issue.record("expected .refused, got \(plan)")
                    continue
                }
                #expect(error.code.rawValue == "activity-topic-missing")
                #expect(error.message.contains("'old-1'") && error.message.contains(".push-type.liveactivity"))
                #expect(error.fix?.contains("(topic)") == true, "\(error)")
            }
            // The end was refused before it recorded anything (its dismissal date is kept only for a planned end).
            #expect(try await r.activity(key: "old-1")?.state == .active)
            // A report without a topic leaves it as it is; one with the app's bundle id gives it its topic.
            _ = try await r.recordReport(Self.appStarted("old-1", topic: nil), device: "p", at: F.t0)
            #expect(try await r.activity(key: "old-1")?.topic == "")
            _ = try await r.recordReport(Self.appStarted("old-1", topic: "nl.kantinekoning.app"), device: "p", at: F.t0)
            let sent = try F.send(
                try await r.planUpdate(ActivityUpdateRequest(key: "old-1", contentState: [:]), at: F.t0))
            #expect(sent.request.topic == Self.liveTopic)
            // A known activity's topic is never replaced by a report's.
            _ = try await r.recordReport(Self.appStarted("old-1", topic: "nl.other.app"), device: "p", at: F.t0)
            #expect(try await r.activity(key: "old-1")?.topic == Self.liveTopic)
        }
    }
}
