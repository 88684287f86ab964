import Foundation
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Testing

/// Idempotency keys of the push queue (schema step 5) on a real PostgreSQL server: the guide's ON CONFLICT
/// statement run verbatim through psql, a repeated key sent once, and the retention that clears keys, not rows.
@Suite("The push queue's idempotency keys (PostgreSQL, the mock)", .serialized)
struct QueueIdempotencyTests {
    typealias Q = PushQueueFixtures

    /// The first SQL block under "Idempotency keys" in PushQueue.md, as the guide shows it.
    static func guideStatement() throws -> String {
        let guide = try String(
            contentsOf: Repository.root.appendingPathComponent("Sources/kkpush/kkpush.docc/PushQueue.md"),
            encoding: .utf8)
        let section = try #require(guide.range(of: "## Idempotency keys"))
        let rest = guide[section.upperBound...]
        let open = try #require(rest.range(of: "```sql\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test(
        "The guide's INSERT … ON CONFLICT runs verbatim through psql: a retried insert returns no id, and is sent once")
    func guideStatementVerbatim() async throws {
        let statement = try Self.guideStatement()
        #expect(
            statement.trimmingCharacters(in: .whitespacesAndNewlines) == QueuePolicySchema.idempotentEnqueueSQL + ";",
            "the guide's statement is not the one kkpush documents in code")
        let (pg, database, url) = try await Q.migratedDatabase()
        let token = TestTokens.random()
        let body = statement.trimmingCharacters(in: .whitespacesAndNewlines).dropLast()
        let execute =
            "EXECUTE kkpush_enqueue('\(token)', '\(Q.topic)', NULL, NULL, '\(Q.payload)', 'sandbox', NULL, NULL, NULL, NULL, 'dienst-9-v3');"
        // The backend's transaction, then its retry after a lost answer: the same statement, the same key.
        let output = try await pg.runSQL(
            """
            PREPARE kkpush_enqueue AS \(body);
            BEGIN;
            \(execute)
            COMMIT;
            SELECT 'retry';
            BEGIN;
            \(execute)
            COMMIT;
            """, database: database)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && Int64(lines[0]) != nil && lines[1] == "retry", "psql said: \(lines)")
        // A NULL key never conflicts: the same statement without one queues each time.
        _ = try await pg.runSQL(
            """
            PREPARE kkpush_plain AS \(body);
            EXECUTE kkpush_plain('\(token)', '\(Q.topic)', NULL, NULL, '\(Q.payload)', 'sandbox', NULL, NULL, NULL, NULL, NULL);
            EXECUTE kkpush_plain('\(token)', '\(Q.topic)', NULL, NULL, '\(Q.payload)', 'sandbox', NULL, NULL, NULL, NULL, NULL);
            """, database: database)
        #expect(
            try await Q.rows(pg, database, "coalesce(idempotency_key, '-')").map { $0[0] } == ["dienst-9-v3", "-", "-"])
        try await withMockServer(configuration: .forTests()) { server in
            let ending = try await Q.drain(server, url: url, owner: "w-idem")
            #expect(ending.counts.accepted == 3)
            let keyed = try await Q.rows(pg, database, "id").first?.first
            #expect(keyed == lines.first)
        }
    }

    @Test("enqueue: a key repeated for the same topic and device is not queued (counted), another device's is")
    func enqueueCountsRepeats() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let tokens = TestTokens.random(2)
        func push(_ token: String, key: String?, topic: String = Q.topic) -> QueueInsert {
            var insert = QueueInsert(
                deviceToken: token, topic: topic, pushType: "alert", priority: 10, payload: Q.payload,
                environment: .sandbox)
            insert.idempotencyKey = key
            return insert
        }
        let (first, firstRepeats) = try await PushQueueStore.withStore(url: url) { store in
            try await store.enqueueCounting([push(tokens[0], key: "k1"), push(tokens[1], key: "k1")])
        }
        #expect(first.count == 2 && firstRepeats == 0)
        // The retry of the whole fan-out, one repeat inside the same statement, and another app's same key.
        let (second, repeats) = try await PushQueueStore.withStore(url: url) { store in
            try await store.enqueueCounting([
                push(tokens[0], key: "k1"), push(tokens[1], key: "k1"), push(tokens[0], key: "k2"),
                push(tokens[0], key: "k2"), push(tokens[0], key: "k1", topic: "nl.kantinekoning.other"),
            ])
        }
        #expect(second.count == 2 && repeats == 3)
        let rows = try await Q.rows(pg, database, "device_token, topic, idempotency_key")
        #expect(rows.count == 4)
        #expect(Set(rows.map { "\($0[0].prefix(4))|\($0[1])|\($0[2])" }).count == 4)
    }

    @Test("Retention clears the key of a row ended before it (its outcome stays); the key then queues again")
    func retentionPrunesKeys() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let token = TestTokens.random()
        var insert = QueueInsert(
            deviceToken: token, topic: Q.topic, pushType: "alert", priority: 10, payload: Q.payload,
            environment: .sandbox)
        insert.idempotencyKey = "old-key"
        _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue([insert]) }
        var waiting = insert
        waiting.idempotencyKey = "waiting-key"
        _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue([waiting]) }
        // The first row ended 31 days ago; the second still waits, however old: its key is kept.
        _ = try await pg.runSQL(
            """
            UPDATE public.kkpush_push_queue SET state = 'accepted', apns_id = 'A1', updated_at = now() - interval '31 days'
            WHERE idempotency_key = 'old-key';
            UPDATE public.kkpush_push_queue SET enqueued_at = now() - interval '40 days' WHERE idempotency_key = 'waiting-key';
            """, database: database)
        let kept = try await PushQueueStore.withStore(url: url) {
            try await $0.pruneIdempotencyKeys(retention: 32 * 86_400)
        }
        #expect(kept == 0)
        let pruned = try await PushQueueStore.withStore(url: url) {
            try await $0.pruneIdempotencyKeys(retention: 30 * 86_400)
        }
        #expect(pruned == 1)
        let rows = try await Q.rows(pg, database, "state, coalesce(apns_id, '-'), coalesce(idempotency_key, 'NULL')")
        #expect(rows == [["accepted", "A1", "NULL"], ["queued", "-", "waiting-key"]])
        let (ids, repeats) = try await PushQueueStore.withStore(url: url) {
            try await $0.enqueueCounting([insert, waiting])
        }
        #expect(ids.count == 1 && repeats == 1)
    }
}
