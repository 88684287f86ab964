import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Testing

/// The attempt ledger (schema step 6, `public.kkpush_push_attempts`) against a real PostgreSQL server and the mock:
/// one row per attempt, written with the row's outcome, read back by push, token and time, pruned by retention.
@Suite("The push queue's attempt ledger (PostgreSQL, the mock)", .serialized)
struct QueueAttemptLedgerTests {
    typealias Q = PushQueueFixtures

    /// Five rows: accepted at once, a 503 then accepted, a 400 rejected, 503 until dead (3 claims), accepted.
    static func drainWithFaults(_ server: MockAPNsServer, url: PostgresURL) async throws -> [String] {
        let tokens = TestTokens.random(5)
        _ = try server.addFault(.failNext(1, status: 503, scope: .token(tokens[1])))
        _ = try server.addFault(
            MockFault(scope: .token(tokens[2]), kind: .respond(status: 400, reason: .badDeviceToken), remaining: 1))
        _ = try server.addFault(.failNext(10, status: 503, scope: .token(tokens[3])))
        try await Q.insert(tokens, url: url)
        let ending = try await Q.drain(server, url: url, owner: "w-ledger")
        #expect(
            ending.counts.accepted == 3 && ending.counts.rejected == 1 && ending.counts.dead == 1, "\(ending.counts)")
        return tokens
    }

    @Test("Each attempt is a ledger row with the row's outcome: worker, row, token, apns-id, status, reason, latency")
    func everyAttemptRecorded() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = try await Self.drainWithFaults(server, url: url)
            // Through psql, not kkpush: what the table holds.
            let text = try await pg.runSQL(
                """
                SELECT a.device_token, a.outcome, coalesce(a.status::text, ''), coalesce(a.reason, ''),
                    coalesce(a.apns_id, ''), a.worker, (a.queue_id = q.id)::text, (a.latency_ms > 0)::text,
                    coalesce(a.connection_id::text, 'null'), coalesce(q.apns_id, ''), a.attempt
                FROM public.kkpush_push_attempts a JOIN public.kkpush_push_queue q ON q.id = a.queue_id
                ORDER BY a.id
                """, database: database)
            let rows = text.split(separator: "\n").map {
                $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            }
            func of(_ token: String) -> [[String]] { rows.filter { $0[0] == token } }
            #expect(of(tokens[0]).map { $0[1] } == ["accepted"], "\(of(tokens[0]))")
            #expect(of(tokens[1]).map { $0[1] } == ["retry", "accepted"], "\(of(tokens[1]))")
            #expect(of(tokens[1]).first?[2] == "503" && of(tokens[1]).first?[3] == "ServiceUnavailable")
            #expect(of(tokens[2]).map { $0[1] } == ["rejected"] && of(tokens[2]).first?[3] == "BadDeviceToken")
            #expect(of(tokens[3]).map { $0[1] } == ["retry", "retry", "dead"], "\(of(tokens[3]))")
            #expect(of(tokens[3]).map { $0[10] } == ["1", "2", "3"], "\(of(tokens[3]))")
            for row in rows {
                #expect(row[5] == "w-ledger" && row[6] == "true" && row[7] == "true", "\(row)")
                // Every attempt was sent: it names its connection.
                #expect(row[8] != "null", "\(row)")
                if row[1] == "accepted" { #expect(!row[4].isEmpty && row[4] == row[9], "\(row)") }
            }
            // No worker has a webhook: the outbox's trigger wrote nothing.
            let events = try await pg.runSQL("SELECT count(*) FROM public.kkpush_webhook_outbox", database: database)
            #expect(events.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
            // The history column holds the same attempts, one entry each.
            let history = try await Q.rows(pg, database, "device_token, jsonb_array_length(history)")
            for entry in history {
                #expect(Int(entry[1]) == of(entry[0]).count, "\(entry) against \(of(entry[0]))")
            }
        }
    }

    @Test("Each attempt names its connection: one the server closed, then the new one the retry went on")
    func connectionOfEachAttempt() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(4)
            _ = try server.addFault(MockFault(scope: .token(tokens[3]), kind: .closeConnection, remaining: 1))
            try await Q.insert(tokens, url: url)
            let ending = try await Q.drain(server, url: url, owner: "w-conn")
            #expect(ending.counts.accepted == 4, "\(ending.counts)")
            let text = try await pg.runSQL(
                """
                SELECT device_token, outcome, coalesce(connection_id::text, 'null')
                FROM public.kkpush_push_attempts ORDER BY id
                """, database: database)
            let rows = text.split(separator: "\n").map {
                $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            }
            // The first row goes alone on the first connection; the closed push's first attempt was on it too, its
            // retry on a new one.
            let first = try #require(rows.first { $0[0] == tokens[0] })
            let closed = rows.filter { $0[0] == tokens[3] }
            #expect(closed.map { $0[1] } == ["retry", "accepted"], "\(rows)")
            #expect(first[2] != "null" && closed.first?[2] == first[2], "\(rows)")
            #expect(closed.last?[2] != "null" && closed.last?[2] != first[2], "\(rows)")
            #expect(server.acceptedConnections >= 2)
        }
    }

    @Test("queue history's engine: by push, by token in any case, by time, newest first, limited")
    func historyQueries() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = try await Self.drainWithFaults(server, url: url)
            try await PushQueueStore.withStore(url: url) { store in
                let byToken = try await store.attempts(QueueHistoryQuery(deviceToken: tokens[3].uppercased()))
                #expect(byToken.attempts.map(\.outcome) == ["dead", "retry", "retry"], "\(byToken.attempts)")
                #expect(!byToken.truncated)
                let id = try #require(byToken.attempts.first?.queueID)
                let byPush = try await store.attempts(QueueHistoryQuery(queueID: id, limit: 2))
                #expect(byPush.attempts.count == 2 && byPush.truncated)
                #expect(byPush.attempts.allSatisfy { $0.deviceToken == tokens[3] })
                let all = try await store.attempts(QueueHistoryQuery())
                #expect(all.attempts.count == 8, "\(all.attempts.map(\.outcome))")
                // Move two attempts an hour back: a window ending 30 minutes ago finds exactly them.
                _ = try await pg.runSQL(
                    """
                    UPDATE public.kkpush_push_attempts SET at = at - interval '1 hour'
                    WHERE id IN (SELECT id FROM public.kkpush_push_attempts ORDER BY id LIMIT 2)
                    """, database: database)
                let now = Date().timeIntervalSince1970
                let old = try await store.attempts(QueueHistoryQuery(until: now - 1800))
                #expect(old.attempts.count == 2, "\(old.attempts)")
                let recent = try await store.attempts(QueueHistoryQuery(since: now - 1800))
                #expect(recent.attempts.count == 6)
                #expect(zip(all.attempts, all.attempts.dropFirst()).allSatisfy { $0.at >= $1.at })
            }
        }
    }

    @Test("Retention prunes ledger rows older than it and keeps the rest")
    func retentionPrunes() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            _ = try await Self.drainWithFaults(server, url: url)
            _ = try await pg.runSQL(
                """
                UPDATE public.kkpush_push_attempts SET at = now() - interval '31 days'
                WHERE id IN (SELECT id FROM public.kkpush_push_attempts ORDER BY id LIMIT 3)
                """, database: database)
            let deleted = try await PushQueueStore.withStore(url: url) {
                try await $0.pruneAttempts(olderThan: 30 * 86_400)
            }
            #expect(deleted == 3)
            let left = try await pg.runSQL(
                "SELECT count(*), min(at) > now() - interval '1 day' FROM public.kkpush_push_attempts",
                database: database)
            #expect(left.trimmingCharacters(in: .whitespacesAndNewlines) == "5|t", "\(left)")
        }
    }

    @Test("A worker on a queue before step 6 writes no ledger (recordAttempts off) and still drains it")
    func olderQueueWithoutLedger() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        _ = try await pg.runSQL(
            "DROP TABLE public.kkpush_push_attempts; DELETE FROM public.kkpush_push_queue_versions WHERE version >= 6;",
            database: database)
        try await withMockServer(configuration: .forTests()) { server in
            try await Q.insert(TestTokens.random(3), url: url)
            let store = PushQueueStore(url: url, connections: 3)
            #expect(try await store.schemaVersion() < QueueLedgerSchema.version)
            var configuration = QueueWorkerConfiguration(
                owner: "w-old", batchSize: 10, lanes: 1, lease: 30, maxAttempts: 3, pollInterval: 0.2,
                exitWhenEmpty: true, grace: 1, progressInterval: 60)
            configuration.recordAttempts = false
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)), configuration: configuration)
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                Issue.record("the worker did not empty the queue in 60 s")
                worker.stop()
            }
            let ending = await worker.run()
            watchdog.cancel()
            await store.close()
            #expect(ending.failure == nil && ending.counts.accepted == 3, "\(String(describing: ending.failure))")
        }
    }

    @Test("An attempt whose row another worker took meanwhile is in the ledger as lease_lost; the row is not written")
    func leaseLostRecorded() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let token = TestTokens.random()
        try await Q.insert([token], url: url)
        try await PushQueueStore.withStore(url: url) { store in
            let claim = try await store.claim(owner: "w-slow", limit: 10, lease: 30, maxAttempts: 5)
            let row = try #require(claim.rows.first)
            // Its lease passed to another worker (as after an expiry and a reclaim).
            _ = try await pg.runSQL(
                "UPDATE public.kkpush_push_queue SET lease_owner = 'w-other' WHERE id = \(row.id)", database: database)
            let outcome = PushOutcome(
                result: .accepted(apnsID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", apnsUniqueID: nil),
                duration: .milliseconds(12), attempts: 1, endpoint: APNsEndpoint.apple(.sandbox))
            let verdict = QueueVerdict.decide(
                row: row, outcome: outcome, maxAttempts: 5, backoff: .init(), worker: "w-slow")
            let written = try await store.complete(
                owner: "w-slow", [verdict.write],
                attempts: [QueueAttempt(row: row, outcome: outcome, verdict: verdict)])
            #expect(written.isEmpty)
        }
        let ledger = try await pg.runSQL(
            "SELECT worker, outcome, apns_id, latency_ms FROM public.kkpush_push_attempts", database: database)
        #expect(
            ledger.trimmingCharacters(in: .whitespacesAndNewlines)
                == "w-slow|lease_lost|0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0|12", "\(ledger)")
        let row = try await Q.rows(pg, database, "state, lease_owner")
        #expect(row == [["leased", "w-other"]])
    }
}
