import Foundation
import KKPushActivities
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushStore
import KKPushTestSupport
import Testing

@testable import KKPushQueue

/// Live Activity rows of the push queue (schema step 4) against a real PostgreSQL and the mock over TLS: the guide's
/// INSERT as written, a start sent once per key, an update that waits for the activity's update token and goes to it,
/// an end after the end refused, and a worker without a registry holding such rows.
@Suite("The push queue's Live Activity rows (PostgreSQL, the mock)", .serialized)
struct QueueLiveActivityTests {
    typealias Q = PushQueueFixtures
    static let device = "vvwilhelmus/dev-1"
    static let startPayload =
        #"{"aps":{"attributes-type":"DienstAttributes","attributes":{"dienst":"Bar"},"content-state":{"volunteers":1},"alert":{"title":"Dienst","body":"Bardienst"}}}"#
    static let updatePayload = #"{"aps":{"content-state":{"volunteers":2}}}"#
    static let endPayload = #"{"aps":{"content-state":{"volunteers":3},"dismissal-date":1900000000}}"#

    /// The SQL block under "Live Activity rows" in PushQueue.md, as the guide shows it.
    static func guideInsert() throws -> String {
        let guide = try String(
            contentsOf: Repository.root.appendingPathComponent("Sources/kkpush/kkpush.docc/PushQueue.md"),
            encoding: .utf8)
        let section = try #require(guide.range(of: "## Live Activity rows"))
        let rest = guide[section.upperBound...]
        let open = try #require(rest.range(of: "```sql\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    /// Inserts one Live Activity row with the guide's statement through psql (`token`: NULL when nil).
    static func insert(
        _ pg: PostgresServer, _ database: String, key: String, event: String, payload: String, token: String? = nil
    ) async throws {
        let body = try guideInsert().trimmingCharacters(in: .whitespacesAndNewlines).dropLast()
        try await pg.runSQL(
            """
            PREPARE kkpush_activity AS \(body);
            EXECUTE kkpush_activity('\(key)', '\(event)', '\(Q.topic)', '\(payload)', 'sandbox', '\(device)',
                \(token.map { "'\($0)'" } ?? "NULL"));
            """, database: database)
    }

    /// A worker in this process with `registry` (nil: none), running until stopped.
    static func worker(_ server: MockAPNsServer, url: PostgresURL, registry: (any ActivityRegistry)?) throws -> (
        QueueWorker, PushQueueStore
    ) {
        let store = PushQueueStore(url: url, connections: 3)
        var configuration = QueueWorkerConfiguration(
            owner: "la-worker", batchSize: 20, lanes: 1, lease: 30, maxAttempts: 3,
            backoff: .init(base: 0.05, maximum: 0.2), pollInterval: 0.1, exitWhenEmpty: false, grace: 5,
            progressInterval: 60)
        configuration.activityRegistry = registry
        configuration.recordAttempts = false
        let worker = QueueWorker(
            store: store, router: SingleClientRouter(client: try Q.client(server)), configuration: configuration)
        return (worker, store)
    }

    /// Waits (at most `seconds`, polling every 100 ms) until the rows satisfy `done`; the last rows read.
    static func waitFor(
        _ pg: PostgresServer, _ database: String, _ columns: String, seconds: Double = 30,
        _ done: ([[String]]) -> Bool
    ) async throws -> [[String]] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var rows = try await Q.rows(pg, database, columns)
        while !done(rows), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            rows = try await Q.rows(pg, database, columns)
        }
        return rows
    }

    @Test("Step 4: a Live Activity row may leave device_token NULL (it becomes ''), a push row may not")
    func migration() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        #expect(PushQueueSchema.migrations.contains { $0.version == 4 })
        let statement = try Self.guideInsert().trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(statement == QueueActivitySchema.enqueueSQL + ";", "the guide's statement is not the one in code")
        try await Self.insert(pg, database, key: "k-1", event: "update", payload: Self.updatePayload)
        let rows = try await Q.rows(pg, database, "device_token, push_type, activity_key, activity_event, state")
        #expect(rows == [["", "liveactivity", "k-1", "update", "queued"]])
        // A plain push row still needs its token; an event without a key (or an unknown event) is refused.
        await #expect(throws: (any Error).self) {
            try await pg.runSQL(
                "INSERT INTO public.kkpush_push_queue (topic, payload, environment) VALUES ('t', '{}', 'sandbox')",
                database: database)
        }
        await #expect(throws: (any Error).self) {
            try await pg.runSQL(
                "INSERT INTO public.kkpush_push_queue (device_token, topic, payload, environment, activity_event) VALUES ('ab', 't', '{}', 'sandbox', 'start')",
                database: database)
        }
        await #expect(throws: (any Error).self) {
            try await pg.runSQL(
                "INSERT INTO public.kkpush_push_queue (topic, payload, environment, activity_key, activity_event) VALUES ('t', '{}', 'sandbox', 'k', 'stop')",
                database: database)
        }
        _ = url
    }

    @Test("Start once per key, update after the token came back (never before), end, and an end after the end refused")
    func lifecycle() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let registry = try await PostgresActivityRegistry.open(url: url)
        let pushToStart = TestTokens.random()
        let updateToken = TestTokens.random()
        _ = try await registry.recordReport(
            ActivityTokenReport(pushToStartTokens: [
                PushToStartTokenReport(attributesType: "DienstAttributes", token: pushToStart)
            ]), device: Self.device, at: Date())
        try await withMockServer(configuration: .forTests()) { server in
            // Two starts of one key (a retried INSERT), then an update before the app reported the update token.
            try await Self.insert(pg, database, key: "dienst-vvwilhelmus-1", event: "start", payload: Self.startPayload)
            try await Self.insert(pg, database, key: "dienst-vvwilhelmus-1", event: "start", payload: Self.startPayload)
            try await Self.insert(
                pg, database, key: "dienst-vvwilhelmus-1", event: "update", payload: Self.updatePayload)
            let (worker, store) = try Self.worker(server, url: url, registry: registry)
            let run = Task { await worker.run() }
            let columns = "id, state, device_token, coalesce(reason, ''), coalesce(apns_id, ''), history::text"
            var rows = try await Self.waitFor(pg, database, columns) {
                $0.count == 3 && $0[0][1] == "accepted" && $0[1][1] == "accepted" && $0[2][1] == "retry"
                    && $0[2][3] == "activity-no-update-token"
            }
            #expect(rows.map { $0[1] } == ["accepted", "accepted", "retry"], "\(rows)")
            // The first start went to the push-to-start token; the second sent nothing and names the first push.
            #expect(rows[0][2] == pushToStart && !rows[0][4].isEmpty)
            #expect(rows[1][3] == "" && rows[1][4] == "")
            #expect(rows[1][5].contains("activity-exists") && rows[1][5].contains(rows[0][4]))
            #expect(rows[1][5].contains("nothing sent"))
            // The update waits: not sent anywhere, its token column still empty.
            #expect(rows[2][2] == "")
            var deliveries = server.deliveries(limit: 100)
            #expect(deliveries.map(\.token) == [pushToStart], "\(deliveries.map(\.token))")
            let started = try #require(try await registry.activity(key: "dienst-vvwilhelmus-1"))
            #expect(started.state == .requested && started.startAcceptedAt != nil)

            // The app reports the activity's update token: the waiting update goes to it.
            _ = try await registry.recordReport(
                ActivityTokenReport(activityTokens: [
                    ActivityUpdateTokenReport(
                        activityKey: "dienst-vvwilhelmus-1", attributesType: "DienstAttributes", token: updateToken)
                ]), device: Self.device, at: Date())
            rows = try await Self.waitFor(pg, database, columns) { $0.count == 3 && $0[2][1] == "accepted" }
            #expect(rows[2][1] == "accepted" && rows[2][2] == updateToken, "\(rows)")

            // An end, then another end: the second is refused, never sent.
            try await Self.insert(pg, database, key: "dienst-vvwilhelmus-1", event: "end", payload: Self.endPayload)
            rows = try await Self.waitFor(pg, database, columns) { $0.count == 4 && $0[3][1] == "accepted" }
            #expect(rows[3][1] == "accepted" && rows[3][2] == updateToken, "\(rows)")
            try await Self.insert(pg, database, key: "dienst-vvwilhelmus-1", event: "end", payload: Self.endPayload)
            rows = try await Self.waitFor(pg, database, columns) { $0.count == 5 && $0[4][1] == "rejected" }
            #expect(rows[4][1] == "rejected" && rows[4][3] == "activity-ended", "\(rows)")
            deliveries = server.deliveries(limit: 100)
            #expect(deliveries.map(\.token) == [pushToStart, updateToken, updateToken])
            let ended = try #require(try await registry.activity(key: "dienst-vvwilhelmus-1"))
            #expect(ended.state == .ended)
            worker.stop()
            _ = await run.value
            await store.close()
        }
        await registry.close()
    }

    @Test("A worker without a registry holds Live Activity rows: back to retry, claims not counted, nothing sent")
    func withoutRegistry() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            try await Self.insert(
                pg, database, key: "dienst-x", event: "start", payload: Self.startPayload, token: TestTokens.random())
            let (worker, store) = try Self.worker(server, url: url, registry: nil)
            let run = Task { await worker.run() }
            let rows = try await Self.waitFor(pg, database, "state, attempts, coalesce(reason, ''), history::text") {
                $0.first?[0] == "retry" && $0.first?[3].contains("activityRegistry") == true
            }
            #expect(rows.first?[0] == "retry" && rows.first?[1] == "0" && rows.first?[2] == "client", "\(rows)")
            #expect(server.deliveries(limit: 100).isEmpty)
            worker.stop()
            let ending = await run.value
            #expect(ending.counts.held >= 1 && ending.counts.accepted == 0)
            // What `kkpush worker` without --activity-registry warns of at start.
            #expect(try await QueueActivities(registry: nil, store: store).waitingRows() == 1)
            await store.close()
        }
    }

    @Test(
        "A Live Activity row held back by quiet hours (scheduled) counts among the rows a worker without a registry warns of"
    )
    func scheduledRowsWait() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await Self.insert(pg, database, key: "dienst-quiet", event: "update", payload: Self.updatePayload)
        let store = PushQueueStore(url: url, connections: 2)
        let waiting = QueueActivities(registry: nil, store: store)
        #expect(try await waiting.waitingRows() == 1)
        // A claim at 23:40 in Amsterdam: the update is not time-critical, so quiet hours hold it back (scheduled).
        var policy = QueuePolicy()
        policy.quietHours = try QuietHours(parsing: "Europe/Amsterdam=22:00-07:00", field: "quietHours")
        let night = try #require(ISO8601DateFormatter().date(from: "2026-03-28T22:40:00Z"))
        policy.now = { night }
        let claim = try await store.claim(owner: "la-quiet", limit: 10, lease: 30, maxAttempts: 3)
        let admitted = try await store.admit(claim.rows, policy: policy, owner: "la-quiet")
        #expect(admitted.isEmpty)
        let rows = try await Q.rows(pg, database, "state, coalesce(reason, ''), activity_key")
        #expect(rows == [["scheduled", "quiet-hours", "dienst-quiet"]], "\(rows)")
        #expect(try await waiting.waitingRows() == 1)
        // A row in a final state waits for nothing.
        try await pg.runSQL("UPDATE public.kkpush_push_queue SET state = 'rejected'", database: database)
        #expect(try await waiting.waitingRows() == 0)
        await store.close()
    }

    @Test(
        "A worker without a registry that holds Live Activity rows past its limit stops naming the registry, not a key")
    func withoutRegistryStopsNamingIt() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            try await Self.insert(
                pg, database, key: "dienst-y", event: "start", payload: Self.startPayload, token: TestTokens.random())
            let store = PushQueueStore(url: url, connections: 3)
            var configuration = QueueWorkerConfiguration(
                owner: "la-worker", batchSize: 20, lanes: 1, lease: 30, maxAttempts: 3,
                backoff: .init(base: 0.01, maximum: 0.05), pollInterval: 0.05, exitWhenEmpty: false, grace: 5,
                progressInterval: 60)
            configuration.configurationFailureLimit = 2
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)), configuration: configuration)
            // Bounded: the worker stops by itself after two holds; stopped here after 20 s if it does not.
            let run = Task { await worker.run() }
            let guardStop = Task {
                try await Task.sleep(for: .seconds(20))
                worker.stop()
            }
            let ending = await run.value
            guardStop.cancel()
            await store.close()
            let failure = try #require(ending.failure, "the worker did not stop by itself")
            #expect(failure.code.rawValue == "queue-credential-refused")
            let fix = failure.fix ?? ""
            #expect(fix.contains("(activityRegistry)"), "\(fix)")
            #expect(!fix.contains("(keyID)"), "\(fix)")
            #expect(server.deliveries(limit: 100).isEmpty)
            let rows = try await Q.rows(pg, database, "state, attempts")
            #expect(rows == [["retry", "0"]], "\(rows)")
        }
    }
}
