import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Synchronization
import Testing

/// The worker engine (`QueueWorker` on `PushQueueStore`) in this process, against a real PostgreSQL server and the
/// mock over TLS: two workers sharing a queue, the guide's INSERT drained as written, a database outage waited out
/// with a doubling back-off, and the priorities, counters and retry timing of what it sends. `kkpush queue` and
/// `kkpush worker` as commands are tested in KKPushCLITests (PushQueueWorkerTests, PushQueueContractTests).
@Suite("The push queue's worker engine (PostgreSQL, the mock)", .serialized)
struct QueueWorkerTests {
    typealias Q = PushQueueFixtures
    static let topic = Q.topic
    static let payload = Q.payload

    @Test("Two workers in one process share a queue: every row sent once, by one of them")
    func twoWorkers() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(300)
            try await Q.enqueue(tokens, url: url)
            async let a = Q.drain(server, url: url, owner: "w-a", batch: 20)
            async let b = Q.drain(server, url: url, owner: "w-b", batch: 20)
            let (first, second) = try await (a, b)
            #expect(first.counts.accepted + second.counts.accepted == 300)
            #expect(first.counts.leaseLost == 0 && second.counts.leaseLost == 0)
            var delivered: [String: Int] = [:]
            for d in server.deliveries(limit: 10_000) { delivered[d.token, default: 0] += 1 }
            #expect(delivered.count == 300 && delivered.values.allSatisfy { $0 == 1 })
            let owners = try await Q.rows(pg, database, "state, lease_owner")
            #expect(owners.allSatisfy { $0[0] == "accepted" && ["w-a", "w-b"].contains($0[1]) })
            print(
                "two workers: w-a \(first.counts.accepted), w-b \(second.counts.accepted) of 300 (claims of 20, 2 lanes each)"
            )
        }
    }

    // MARK: The guide's INSERT, verbatim

    /// The SQL block under "Enqueue from the backend" in PushQueue.md, as the guide shows it.
    static func guideInsert() throws -> String {
        let guide = try String(
            contentsOf: Repository.root.appendingPathComponent("Sources/kkpush/kkpush.docc/PushQueue.md"),
            encoding: .utf8)
        let section = try #require(guide.range(of: "## Enqueue from the backend"))
        let rest = guide[section.upperBound...]
        let open = try #require(rest.range(of: "```sql\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test("PushQueue.md's INSERT runs verbatim through psql in a backend's transaction, with every NULL it allows")
    func guideInsertVerbatim() async throws {
        let statement = try Self.guideInsert()
        #expect(statement.contains("INSERT INTO public.kkpush_push_queue") && statement.contains("$10"))
        #expect(
            statement.trimmingCharacters(in: .whitespacesAndNewlines) == PushQueueSchema.enqueueSQL + ";",
            "the guide's statement is not the one kkpush documents in code")
        let (pg, database, url) = try await Q.migratedDatabase()
        let token = TestTokens.random()
        let body = statement.trimmingCharacters(in: .whitespacesAndNewlines).dropLast()
        // $3, $4, $7 to $10 NULL, as the guide says they may be; the backend's own row in the same transaction.
        try await pg.runSQL(
            """
            CREATE TABLE backend_matches (id int);
            BEGIN;
            INSERT INTO backend_matches VALUES (1);
            PREPARE kkpush_enqueue AS \(body);
            EXECUTE kkpush_enqueue('\(token)', '\(Self.topic)', NULL, NULL, '\(Self.payload)', 'sandbox', NULL, NULL,
                NULL, NULL);
            COMMIT;
            """, database: database)
        let rows = try await Q.rows(pg, database, "device_token, push_type, state, coalesce(priority::text, 'null')")
        #expect(rows == [[token, "alert", "queued", "null"]])
        try await withMockServer(configuration: .forTests()) { server in
            let ending = try await Q.drain(server, url: url, owner: "w-guide")
            #expect(ending.counts.accepted == 1)
        }
    }

    @Test("A database outage: the worker waits with a doubling back-off, then drains the queue when it is back")
    func outageBacksOff() async throws {
        let pg = try await PostgresServer.startOwn()
        defer { pg.destroy() }
        let database = try await pg.newDatabase("queue")
        let url = try PostgresURL(parsing: pg.url(database))
        _ = try await PushQueueSchema.migrate(url: url)
        try await Q.insert(TestTokens.random(10), url: url)
        try await withMockServer(configuration: .forTests()) { server in
            let store = PushQueueStore(url: url, connections: 3)
            let waits = Mutex<[Double]>([])
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)),
                configuration: QueueWorkerConfiguration(
                    owner: "w-outage", batchSize: 10, lanes: 1, lease: 30, pollInterval: 0.2, exitWhenEmpty: true,
                    grace: 1, progressInterval: 60),
                onEvent: { event in
                    if case .databaseError(_, let wait) = event { waits.withLock { $0.append(wait) } }
                })
            try await pg.stopServer()
            let run = Task { await worker.run() }
            try await Task.sleep(for: .seconds(4))
            try await pg.startAgain()
            let watchdog = Task {
                try await Task.sleep(for: .seconds(90))
                Issue.record("the worker did not drain the queue in 90 s after the server came back")
                worker.stop()
            }
            let ending = await run.value
            watchdog.cancel()
            await store.close()
            #expect(ending.failure == nil && ending.emptied, "\(String(describing: ending.failure))")
            #expect(ending.counts.accepted == 10)
            let seen = waits.withLock { $0 }
            // 4 s down: about 0.5 + 1 + 2 (+ the LISTEN connection's own), not a try every second or faster.
            #expect(seen.count >= 2 && seen.count <= 10, "\(seen)")
            #expect((seen.max() ?? 0) >= 2, "the back-off did not grow: \(seen)")
        }
    }

    // MARK: Priority, counters, retry timing

    @Test("A background row with NULL priority goes out at 5, an alert row at 10")
    func backgroundPriority() async throws {
        let (_, _, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(2)
            _ = try await PushQueueStore.withStore(url: url) {
                try await $0.enqueue([
                    QueueInsert(
                        deviceToken: tokens[0], topic: Self.topic, pushType: "background", priority: nil,
                        payload: #"{"aps":{"content-available":1}}"#, environment: .sandbox),
                    QueueInsert(
                        deviceToken: tokens[1], topic: Self.topic, pushType: "alert", priority: nil,
                        payload: Self.payload, environment: .sandbox),
                ])
            }
            let ending = try await Q.drain(server, url: url, owner: "w-priority")
            #expect(ending.counts.accepted == 2)
            #expect(server.deliveries(token: tokens[0]).map(\.priority) == [5])
            #expect(server.deliveries(token: tokens[1]).map(\.priority) == [10])
        }
    }

    @Test("Counters: a flagged row is not 'reclaimed' but its copy is possibly duplicated; a LeaseExpired end is dead")
    func counters() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(3)
            try await Q.insert(tokens, url: url)
            // Row 1: flagged by an earlier run (returned possibly sent), queued again. Row 2: an expired lease at
            // its last claim (maxAttempts 3 in drain). Row 3: plain.
            try await pg.runSQL(
                """
                UPDATE public.kkpush_push_queue SET possibly_duplicated = true WHERE device_token = '\(tokens[0])';
                UPDATE public.kkpush_push_queue SET state = 'leased', lease_owner = 'w-gone', attempts = 3,
                    lease_until = now() - interval '1 minute' WHERE device_token = '\(tokens[1])';
                """, database: database)
            let ending = try await Q.drain(server, url: url, owner: "w-counters")
            #expect(ending.counts.reclaimed == 0, "\(ending.counts)")
            #expect(ending.counts.possiblyDuplicated == 1, "\(ending.counts)")
            #expect(ending.counts.accepted == 2 && ending.counts.dead == 1, "\(ending.counts)")
            #expect(ending.counts.reasons["LeaseExpired"] == 1, "\(ending.counts)")
            let states = try await Q.rows(pg, database, "device_token, state, coalesce(reason, '')")
            #expect(states.contains([tokens[1], "dead", "LeaseExpired"]), "\(states)")
        }
    }

    @Test("A retry comes due after its back-off, not the poll interval; per_second is over busy time")
    func retryWakesAtBackoff() async throws {
        let (_, _, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let token = TestTokens.random()
            _ = try server.addFault(.failNext(1, status: 503, scope: .token(token)))
            try await Q.insert([token], url: url)
            let store = PushQueueStore(url: url, connections: 3)
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)),
                configuration: QueueWorkerConfiguration(
                    owner: "w-due", batchSize: 10, lanes: 1, lease: 30, maxAttempts: 3,
                    backoff: .init(base: 0.3, maximum: 0.3), pollInterval: 8, exitWhenEmpty: true, grace: 1,
                    progressInterval: 60))
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                Issue.record("the worker did not empty the queue in 60 s")
                worker.stop()
            }
            let ending = await worker.run()
            watchdog.cancel()
            await store.close()
            #expect(ending.counts.accepted == 1 && ending.counts.retry == 1)
            // Back-off 0.15 to 0.3 s: well before the 8 s poll.
            #expect(ending.elapsed < .seconds(4), "took \(ending.elapsed)")
            #expect(ending.counts.busySeconds > 0 && ending.counts.busySeconds < ending.elapsed.seconds)
            #expect(ending.counts.perBusySecond > Double(ending.counts.written) / ending.elapsed.seconds)
        }
    }
}
