import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Testing

/// The worker's pace (Performance.md, "The queue worker's pace"), against a real PostgreSQL server and the mock over
/// TLS: a lane claims its next batch while the one before is in flight (one claim ahead, no more), a stop hands the
/// claim ahead back as it was, the outcomes' statement finds its rows by primary key whatever PostgreSQL's
/// statistics say about leased rows, and with no policy set a claim is admitted without a statement of its own.
@Suite("The queue worker's pace (PostgreSQL, the mock)", .serialized)
struct QueueWorkerPaceTests {
    typealias Q = PushQueueFixtures

    /// The rows leased now, through psql.
    static func leased(_ pg: PostgresServer, _ database: String) async throws -> Int {
        let text = try await pg.runSQL(
            "SELECT count(*) FROM public.kkpush_push_queue WHERE state = 'leased'", database: database)
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// A worker of one lane claiming `batch` rows at a time.
    static func worker(_ server: MockAPNsServer, url: PostgresURL, owner: String, batch: Int) throws -> (
        QueueWorker, PushQueueStore
    ) {
        let store = PushQueueStore(url: url, connections: 3)
        let worker = QueueWorker(
            store: store, router: SingleClientRouter(client: try Q.client(server)),
            configuration: QueueWorkerConfiguration(
                owner: owner, batchSize: batch, lanes: 1, lease: 30, maxAttempts: 3,
                backoff: .init(base: 0.05, maximum: 0.2), pollInterval: 0.2, exitWhenEmpty: true, grace: 10,
                progressInterval: 60))
        return (worker, store)
    }

    @Test("A lane claims its next batch while the one before is in flight: one claim ahead at most, each row sent once")
    func claimAhead() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        var configuration = MockServerConfiguration.forTests()
        // Every answer 300 ms late: a batch is in flight long enough to see what the lane holds meanwhile.
        configuration.faults = [MockFault(kind: .delay(milliseconds: 300))]
        try await withMockServer(configuration: configuration) { server in
            let tokens = TestTokens.random(40)
            try await Q.insert(tokens, url: url)
            let (worker, store) = try Self.worker(server, url: url, owner: "w-ahead", batch: 10)
            let run = Task { await worker.run() }
            // Bounded: 600 looks at most (each a psql run), until the worker ends.
            var most = 0
            var looks = 0
            for _ in 0..<600 {
                most = max(most, try await Self.leased(pg, database))
                looks += 1
                if worker.counts.written == 40 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            let ending = await run.value
            await store.close()
            // One lane, batches of 10: 10 in flight and 10 claimed ahead; never a third claim.
            #expect(most == 20, "at most \(most) rows leased at once over \(looks) looks")
            #expect(ending.counts.accepted == 40 && ending.counts.claimed == 40, "\(ending.counts)")
            #expect(ending.counts.leaseLost == 0 && ending.counts.returned == 0, "\(ending.counts)")
            var delivered: [String: Int] = [:]
            for d in server.deliveries(limit: 1000) { delivered[d.token, default: 0] += 1 }
            #expect(delivered.count == 40 && delivered.values.allSatisfy { $0 == 1 })
            let rows = try await Q.rows(pg, database, "state, attempts")
            #expect(rows.count == 40 && rows.allSatisfy { $0 == ["accepted", "1"] }, "\(rows)")
        }
    }

    @Test("A stop with a claim ahead: the batch in flight is answered, the claim ahead goes back as it was")
    func stopHandsBackTheClaimAhead() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        var configuration = MockServerConfiguration.forTests()
        configuration.faults = [MockFault(kind: .delay(milliseconds: 500))]
        try await withMockServer(configuration: configuration) { server in
            let tokens = TestTokens.random(30)
            try await Q.insert(tokens, url: url)
            let (worker, store) = try Self.worker(server, url: url, owner: "w-stop", batch: 10)
            let run = Task { await worker.run() }
            // Bounded: until the first batch is in flight with its claim ahead (20 leased), at most 10 s.
            var leased = 0
            for _ in 0..<1000 {
                leased = try await Self.leased(pg, database)
                if leased == 20 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(leased == 20, "the lane never held a claim ahead")
            worker.stop()
            let ending = await run.value
            await store.close()
            #expect(ending.counts.accepted == 10 && ending.counts.returned == 10, "\(ending.counts)")
            #expect(ending.counts.inFlight == 0 && ending.counts.leaseLost == 0, "\(ending.counts)")
            #expect(server.deliveries(limit: 1000).count == 10)
            // The claim ahead as if it never was: queued, no claim counted, no lease, no owner, no history.
            let rows = try await Q.rows(
                pg, database, "state, attempts, lease_until IS NULL, coalesce(lease_owner, '-'), history::text")
            #expect(rows.filter { $0[0] == "accepted" }.count == 10, "\(rows)")
            #expect(rows.filter { $0 == ["queued", "0", "t", "-", "[]"] }.count == 20, "\(rows)")
        }
    }

    /// The join of the outcomes' statement, as PostgreSQL plans it: the node types of its outer and inner side.
    static func joinSides(_ explained: String) throws -> (outer: String, inner: String)? {
        func find(_ node: [String: Any]) -> (String, String)? {
            let children = node["Plans"] as? [[String: Any]] ?? []
            if node["Node Type"] as? String == "Nested Loop", children.count == 2,
                let outer = children[0]["Node Type"] as? String, let inner = children[1]["Node Type"] as? String
            {
                return (outer, inner)
            }
            return children.lazy.compactMap(find).first
        }
        let json = try JSONSerialization.jsonObject(with: Data(explained.utf8)) as? [[String: Any]]
        return (json?.first?["Plan"] as? [String: Any]).flatMap(find)
    }

    @Test("Outcomes are written by primary key, though the statistics say no row is leased (the plan, then 5,000 rows)")
    func outcomesByPrimaryKey() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let count = 5000
        try await Q.insert(TestTokens.random(count), url: url)
        // Statistics taken while nothing is leased, as on a queue being drained: PostgreSQL then expects almost
        // no leased row. Whether it then hashes the outcomes or loops over them is a close call on costs that
        // vary with the table's history (the benchmark's drain got the loop); this database takes the hash and
        // merge joins out of the choice, so the row estimates alone decide, as they did there. Led by the
        // leased rows, the statement read the outcomes once per row (5,000 × 5,000 records: seconds); led by
        // the outcomes, one primary-key lookup each. The plan says which, whatever the machine's load.
        _ = try await pg.runSQL(
            """
            ANALYZE public.kkpush_push_queue;
            ALTER DATABASE "\(database)" SET enable_hashjoin = off;
            ALTER DATABASE "\(database)" SET enable_mergejoin = off;
            """, database: database)
        let outcome = #"[{"id":1,"state":"retry","attempts_delta":1,"duplicated":false,"event":{}}]"#
        func explain(_ sql: String) async throws -> (outer: String, inner: String)? {
            try Self.joinSides(
                try await pg.runSQL(
                    """
                    PREPARE outcomes(text, jsonb) AS \(sql);
                    EXPLAIN (FORMAT JSON) EXECUTE outcomes('w-pk', '\(outcome)');
                    """, database: database))
        }
        let shipped = try #require(try await explain(PushQueueStore.completeSQL))
        #expect(shipped.outer == "Function Scan" && shipped.inner.hasPrefix("Index"), "\(shipped)")
        // The statement with a plain lease check, for comparison (printed: how PostgreSQL plans it is its choice).
        let plain = try await explain(
            PushQueueStore.completeSQL.replacingOccurrences(
                of: "coalesce(q.state = 'leased' AND q.lease_owner = $1, false)",
                with: "q.state = 'leased' AND q.lease_owner = $1"))
        print("outcomes' join: shipped \(shipped), with a plain lease check \(String(describing: plain))")

        let store = PushQueueStore(url: url, connections: 1)
        let claim = try await store.claim(owner: "w-pk", limit: count, lease: 60, maxAttempts: 3)
        #expect(claim.rows.count == count)
        let writes = claim.rows.map { row in
            QueueVerdict.decide(
                row: row,
                outcome: PushOutcome(
                    result: .failed(PushFailure(kind: .interrupted, message: "test")), duration: .zero,
                    attempts: 0, endpoint: APNsEndpoint.apple(row.environment)),
                maxAttempts: 3, backoff: .init(), worker: "w-pk"
            ).write
        }
        let written = try await store.complete(owner: "w-pk", writes)
        await store.close()
        #expect(written.count == count)
        let states = try await pg.runSQL(
            "SELECT state || ' ' || count(*) FROM public.kkpush_push_queue GROUP BY state", database: database)
        #expect(states.trimmingCharacters(in: .whitespacesAndNewlines) == "retry \(count)")
    }

    @Test(
        "A row leased under the worker's name that it does not hold is not kept leased: its lease runs out, it is sent")
    func leaseOfARowNotHeldRunsOut() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let token = TestTokens.random(1)[0]
            try await Q.insert([token], url: url)
            // As a worker of this name leaves a row whose admission or outcome it could not write: leased to it.
            _ = try await pg.runSQL(
                """
                UPDATE public.kkpush_push_queue SET state = 'leased', lease_owner = 'w-lost', attempts = 1,
                    lease_until = now() + interval '1 second'
                """, database: database)
            let store = PushQueueStore(url: url, connections: 3)
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)),
                configuration: QueueWorkerConfiguration(
                    owner: "w-lost", batchSize: 10, lanes: 1, lease: 1.5, maxAttempts: 3,
                    backoff: .init(base: 0.05, maximum: 0.2), pollInterval: 0.1, exitWhenEmpty: true, grace: 5,
                    progressInterval: 60))
            let run = Task { await worker.run() }
            // Bounded: 15 s. Before, the worker extended every lease of its name, this one too, for as long as it
            // ran: the row never came due and the worker never emptied the queue.
            for _ in 0..<150 where worker.counts.written == 0 { try await Task.sleep(for: .milliseconds(100)) }
            worker.stop()
            let ending = await run.value
            await store.close()
            #expect(ending.counts.accepted == 1 && ending.counts.reclaimed == 1, "\(ending.counts)")
            let rows = try await Q.rows(pg, database, "state, possibly_duplicated")
            #expect(rows == [["accepted", "t"]], "\(rows)")
            #expect(server.deliveries(token: token).count == 1)
        }
    }

    @Test("With no policy set, a claim is admitted without a statement of its own: the claim read the quiet hours")
    func admitWithoutAStatement() async throws {
        let (_, _, url) = try await Q.migratedDatabase()
        let tokens = TestTokens.random(3)
        var inserts = tokens.map {
            QueueInsert(
                deviceToken: $0, topic: Q.topic, pushType: "alert", priority: 10, payload: Q.payload,
                environment: .sandbox)
        }
        inserts[0].quietHours = "none"
        _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue(inserts) }
        let store = PushQueueStore(url: url, connections: 1)
        let claim = try await store.claim(owner: "w-admit", limit: 10, lease: 60, maxAttempts: 3)
        #expect(claim.rows.count == 3 && claim.rows.allSatisfy(\.quietHoursRead))
        #expect(claim.rows.map(\.quietHours) == ["none", nil, nil])
        // The claim also read that none is a Live Activity row.
        #expect(claim.rows.allSatisfy { $0.isActivityRow == false })
        // Closed: any statement admit or the Live Activity plan made now would throw store-closed.
        await store.close()
        let admitted = try await store.admit(claim.rows, policy: QueuePolicy(), owner: "w-admit")
        #expect(admitted.map(\.id) == claim.rows.map(\.id))
        let plan = try await QueueActivities(registry: nil, store: store).plan(
            claim.rows, owner: "w-admit", maxAttempts: 3, backoff: .init(), heldDelay: 1)
        #expect(plan.requests.isEmpty && plan.pushes.isEmpty && plan.decided.isEmpty)
    }

    @Test("A claim reads the ready rows by index in id order, though the statistics say few are ready (200 of 5,100)")
    func claimReadsTheReadyIndex() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        // Statistics taken mid-drain (2,000 rows, 1,900 ended), then a burst of 5,000 rows: PostgreSQL expects
        // about 224 ready rows where there are 5,100. Planned on that, the claim read every ready row (by bitmap,
        // or by a sequential scan with the whole table joined by hash) and sorted them, on every claim: a drain of
        // N rows cost O(N²). By the index in id order it stops at its limit. The rows it read from the table tell
        // which, whatever the machine's load.
        try await Q.insert(TestTokens.random(2000), url: url)
        _ = try await pg.runSQL(
            """
            ALTER TABLE public.kkpush_push_queue SET (autovacuum_enabled = false);
            UPDATE public.kkpush_push_queue SET state = 'accepted' WHERE id <= 1900;
            VACUUM ANALYZE public.kkpush_push_queue;
            """, database: database)
        try await Q.insert(TestTokens.random(5000), url: url)
        func rowsRead() async throws -> Int {
            let text = try await pg.runSQL(
                """
                SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables
                WHERE relname = 'kkpush_push_queue'
                """, database: database)
            return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let before = try await rowsRead()
        let store = PushQueueStore(url: url, connections: 1)
        let claim = try await store.claim(owner: "w-index", limit: 200, lease: 60, maxAttempts: 3)
        await store.close()
        #expect(claim.rows.count == 200 && claim.rows.first?.id == 1901 && claim.rows.last?.id == 2100)
        // A backend's counts reach the statistics when it ends: bounded, 10 s.
        var read = 0
        for _ in 0..<100 {
            read = try await rowsRead() - before
            if read > 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        // 200 ready rows, then each by primary key for the update: about 400; a read of every ready row, 5,100+.
        #expect(read >= 200 && read < 1500, "the claim read \(read) rows of the table to claim 200")
    }
}
