import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Testing

/// The push queue in a real PostgreSQL server and `kkpush worker` against the mock over TLS: the migration, outcomes
/// written per row, a worker process killed with SIGKILL (its rows sent again by another worker once the lease
/// expires, flagged possibly_duplicated) and one stopped with SIGTERM. The worker engine alone (two workers sharing a
/// queue, and more) is tested in KKPushQueueTests (QueueWorkerTests).
@Suite("The push queue and kkpush worker (PostgreSQL, the mock)", .serialized)
struct PushQueueWorkerTests {
    typealias Q = PushQueueFixtures
    static let topic = Q.topic
    static var key: String { Q.key }
    static let payload = Q.payload

    @Test("queue migrate: the table, indexes and trigger once; a second run changes nothing; queue status reads it")
    func migrateIdempotent() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase("queue")
        let url = server.url(database)
        let first = try await CLI.run(["queue", "migrate", "--db", url, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try first.json()["changed"] as? Bool == true)
        #expect(try first.json()["version"] as? Int == PushQueueSchema.latestVersion)
        let second = try await CLI.run(["queue", "migrate", "--db", url, "--json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try second.json()["changed"] as? Bool == false)
        #expect((try second.json()["applied"] as? [Any])?.isEmpty == true)
        let objects = try await server.runSQL(
            """
            SELECT (SELECT count(*) FROM pg_indexes WHERE tablename = 'kkpush_push_queue'),
                (SELECT count(*) FROM pg_trigger WHERE tgname IN ('kkpush_push_queue_notify',
                    'kkpush_push_queue_defaults')),
                (SELECT count(*) FROM public.kkpush_push_queue_versions)
            """, database: database)
        // Indexes: the primary key, the claiming two, the token's, (step 3) the receipts' push id and apns-id,
        // (step 4) the Live Activity rows' activity key, (step 5) the idempotency key's and the due rows'; triggers:
        // NOTIFY and the defaults; one row per step.
        #expect(
            objects.trimmingCharacters(in: .whitespacesAndNewlines) == "9|2|\(PushQueueSchema.latestVersion)",
            "\(objects)")
        let status = try await CLI.run(["queue", "status", "--db", url, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(try status.json()["waiting"] as? Int == 0)
        #expect(try status.json()["oldest_waiting_seconds"] is NSNull)

        // Before the migration: a clear error naming the migration, exit 2.
        let bare = try await server.newDatabase("queue")
        let missing = try await CLI.run(["queue", "status", "--db", server.url(bare)])
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(missing.stderr.contains("kkpush queue migrate"), "\(missing.stderr)")
    }

    @Test("Enqueue and drain: accepted rows keep their apns-id, Unregistered its 410 timestamp, a 503 is retried")
    func outcomesWritten() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let devices = (0..<30).map { _ in server.mintDevice(environment: .sandbox, topic: Self.topic) }
            let gone = Date(timeIntervalSince1970: 1_800_000_000)
            try server.unregister(token: devices[3].token, at: gone)
            try server.unregister(token: devices[7].token, at: gone)
            _ = try server.addFault(.failNext(1, status: 503, scope: .token(devices[11].token)))
            // A row the backend inserts with the documented statement, through psql.
            try await Q.enqueue(devices.dropLast().map(\.token), url: url)
            try await pg.runSQL(
                """
                INSERT INTO public.kkpush_push_queue (device_token, topic, push_type, priority, payload, environment,
                    credential, collapse_id, expiration, enrollment_id)
                VALUES ('\(devices[29].token)', '\(Self.topic)', 'alert', 10, '\(Self.payload)', 'sandbox', NULL,
                    NULL, NULL, 'enr-backend');
                """, database: database)

            let ending = try await Q.drain(server, url: url, owner: "w-outcomes")
            #expect(ending.emptied)
            #expect(ending.counts.accepted == 28 && ending.counts.rejected == 2 && ending.counts.retry == 1)
            let rows = try await Q.rows(
                pg, database,
                "device_token, state, coalesce(apns_id, ''), coalesce(status::text, ''), coalesce(reason, ''), coalesce(extract(epoch FROM apns_timestamp)::bigint::text, ''), attempts, jsonb_array_length(history), possibly_duplicated, lease_until IS NULL"
            )
            #expect(rows.count == 30)
            for row in rows {
                let token = row[0]
                #expect(row[9] == "t", "a lease left on \(row)")
                #expect(row[8] == "f", "flagged: \(row)")
                if token == devices[3].token || token == devices[7].token {
                    #expect(row[1] == "rejected" && row[3] == "410" && row[4] == "Unregistered", "\(row)")
                    #expect(row[5] == "1800000000", "\(row)")
                } else if token == devices[11].token {
                    #expect(row[1] == "accepted" && row[6] == "2" && row[7] == "2", "\(row)")
                } else {
                    #expect(row[1] == "accepted" && !row[2].isEmpty && row[6] == "1" && row[7] == "1", "\(row)")
                }
            }
            for (i, device) in devices.enumerated() {
                let n = server.deliveries(token: device.token, limit: 10).count
                #expect(n == (i == 3 || i == 7 ? 0 : 1), "device \(i) got \(n) deliveries")
            }
            let status = try await CLI.run(["queue", "status", "--db", pg.url(database), "--json"])
            let counts = try #require(try status.json()["counts"] as? [String: Int])
            #expect(counts["accepted"] == 28 && counts["rejected"] == 2 && counts["queued"] == 0, "\(counts)")
        }
    }

    @Test("worker --threads 2: every row accepted, each token delivered once, over one connection per thread")
    func workerTwoLoopThreads() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(300)
            try await Q.enqueue(tokens, url: url)
            let r = try await CLI.run(
                try Self.workerArguments(
                    server, db: pg.url(database),
                    extra: ["--threads", "2", "--batch-size", "50", "--lanes", "2", "--exit-when-empty"]),
                timeout: 120)
            #expect(r.status == 0, "\(r.stderr)")
            let states = try await Q.rows(pg, database, "state")
            #expect(states.count == 300 && states.allSatisfy { $0[0] == "accepted" })
            var delivered: [String: Int] = [:]
            for d in server.deliveries(limit: 10_000) { delivered[d.token, default: 0] += 1 }
            #expect(Set(delivered.keys) == Set(tokens) && delivered.values.allSatisfy { $0 == 1 })
            #expect(server.acceptedConnections == 2)
        }
    }

    @Test(
        "worker --credentials: rows of 3 teams, 5 keys and 4 topics, each signed by its own key; out of scope never sent, never ended"
    )
    func credentialsAcrossTeams() async throws {
        let fleet = try await TestCredentialFleet.make()
        defer { fleet.remove() }
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            for key in try MockKey.loadRegistry(at: fleet.registryPath) { try server.registerKey(key) }
            var inserts: [QueueInsert] = []
            var expectedTopic: [String: String] = [:]
            for topic in TestCredentialFleet.topics {
                for token in TestTokens.random(5) {
                    inserts.append(
                        QueueInsert(
                            deviceToken: token, topic: topic, pushType: "alert", priority: 10, payload: Self.payload,
                            environment: .sandbox))
                    expectedTopic[token] = topic
                }
            }
            // Named: b2 (team B's sandbox-only key) for nl.voetbal.app.
            for token in TestTokens.random(5) {
                inserts.append(
                    QueueInsert(
                        deviceToken: token, topic: "nl.voetbal.app", pushType: "alert", priority: 10,
                        payload: Self.payload, environment: .sandbox, credential: "b2"))
                expectedTopic[token] = "nl.voetbal.app"
            }
            // Out of scope: a1 may not serve the kassa app; no credential is called "nope".
            let outOfScope = TestTokens.random(2)
            inserts.append(
                QueueInsert(
                    deviceToken: outOfScope[0], topic: "nl.kantinekoning.kassa", pushType: "alert", priority: 10,
                    payload: Self.payload, environment: .sandbox, credential: "a1"))
            inserts.append(
                QueueInsert(
                    deviceToken: outOfScope[1], topic: "nl.voetbal.app", pushType: "alert", priority: 10,
                    payload: Self.payload, environment: .sandbox, credential: "nope"))
            _ = try await PushQueueStore.withStore(url: url) { try await $0.enqueue(inserts) }

            let r = try await CLI.run(
                [
                    "worker", "--db", pg.url(database), "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                    try #require(server.caFile), "--credentials", fleet.credentialsPath, "--max-claims", "2",
                    "--retry-base", "0.05", "--poll-interval", "0.2", "--exit-when-empty", "--json",
                    "--credential-failure-limit", "6",
                ], timeout: 120)
            // Once the rows it may serve are sent, only the two it may not are left: held again and again (claims
            // not counted), until the limit stops the worker (exit 77) with them waiting in the queue.
            #expect(r.status == 77, "\(r.stderr)")
            #expect(r.stdout.contains("queue-credential-refused") && r.stdout.contains("--credentials"), "\(r.stdout)")
            #expect(r.stderr.contains("credential-topic"), "\(r.stderr)")
            #expect(!r.stderr.contains("InvalidProviderToken") && !r.stderr.contains("UnrelatedKeyIdInToken"))
            let rows = try await Q.rows(pg, database, "device_token, state, reason, history::text")
            let byToken = Dictionary(uniqueKeysWithValues: rows.map { ($0[0], $0) })
            for (token, topic) in expectedTopic {
                #expect(byToken[token]?[1] == "accepted", "\(topic): \(byToken[token] ?? [])")
            }
            let deliveries = server.deliveries(limit: 1000)
            #expect(deliveries.count == expectedTopic.count)
            for d in deliveries { #expect(expectedTopic[d.token] == d.topic) }
            for token in outOfScope {
                let row = try #require(byToken[token])
                #expect(row[1] == "retry", "\(row)")
                #expect(server.deliveries(token: token).isEmpty)
            }
            #expect(byToken[outOfScope[0]]?[3].contains("credential-topic") == true, "\(byToken[outOfScope[0]] ?? [])")
            #expect(
                byToken[outOfScope[1]]?[3].contains("unknown-credential") == true, "\(byToken[outOfScope[1]] ?? [])")
        }
    }

    @Test("worker --env is a usage error: each row names its environment")
    func environmentFlagRefused() async throws {
        let r = try await CLI.run([
            "worker", "--db", "postgres://127.0.0.1:9/none", "--key", Self.key, "--key-id", "KKTEST0001", "--team-id",
            "KKTEAM0001", "--env", "production",
        ])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("leave out --env"), "\(r.stderr)")
    }

    static func workerArguments(_ server: MockAPNsServer, db: String, extra: [String]) throws -> [String] {
        [
            "worker", "--db", db, "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
            "--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--max-attempts", "1",
            "--poll-interval", "0.2", "--progress-interval", "0.5", "--json",
        ] + extra
    }

    /// Polls `count(*)` of rows in `state` until it reaches `at least` (every 50 ms, at most `timeout` seconds).
    static func waitForRows(
        _ pg: PostgresServer, _ database: String, where condition: String, atLeast: Int, timeout: TimeInterval
    ) async throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var n = 0
        while Date() < deadline {
            n =
                Int(
                    try await pg.runSQL(
                        "SELECT count(*) FROM public.kkpush_push_queue WHERE \(condition)", database: database
                    ).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            if n >= atLeast { return n }
            try await Task.sleep(for: .milliseconds(50))
        }
        return n
    }

    @Test("A worker process killed with SIGKILL: after its lease, another worker sends its rows, flagged")
    func killedWorker() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        var configuration = MockServerConfiguration.forTests()
        // Every answer takes 3 s: the killed worker's claims are in flight at the mock when it dies.
        configuration.faults = [MockFault(id: "slow", kind: .delay(milliseconds: 3000))]
        try await withMockServer(configuration: configuration) { server in
            let tokens = TestTokens.random(200)
            try await Q.enqueue(tokens, url: url)
            let run = try RunningCLI(
                try Self.workerArguments(
                    server, db: pg.url(database),
                    extra: ["--lease", "2", "--batch-size", "40", "--lanes", "2", "--worker-id", "w-killed"]))
            let leased = try await Self.waitForRows(
                pg, database, where: "state = 'leased' AND lease_owner = 'w-killed'", atLeast: 80, timeout: 60)
            #expect(leased >= 80, "the worker leased \(leased) rows in 60 s")
            // Its requests reach the mock (answers held 3 s), then the worker dies without a word.
            let deadline = Date().addingTimeInterval(30)
            while server.deliveries(limit: 10_000).isEmpty, Date() < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            run.signal(SIGKILL)
            let killed = await run.finish(timeout: 30)
            #expect(!killed.exitedNormally, "status \(killed.status)")
            server.removeFaults(id: "slow")
            let sentByKilled = server.deliveries(limit: 10_000).count

            let ending = try await Q.drain(server, url: url, owner: "w-second", lease: 30)
            #expect(ending.emptied)
            #expect(ending.counts.reclaimed >= 1, "nothing was reclaimed: \(ending.counts)")
            let rows = try await Q.rows(pg, database, "device_token, state, possibly_duplicated, history::text")
            #expect(rows.count == 200)
            #expect(rows.allSatisfy { $0[1] == "accepted" }, "\(rows.filter { $0[1] != "accepted" })")
            let flagged = Set(rows.filter { $0[2] == "t" }.map { $0[0] })
            #expect(flagged.count == ending.counts.reclaimed)
            // Each reclaimed row was sent again and accepted: a copy that may duplicate the killed worker's.
            #expect(ending.counts.possiblyDuplicated == flagged.count, "\(ending.counts)")
            for row in rows where row[2] == "t" { #expect(row[3].contains("lease-expired"), "\(row)") }

            var delivered: [String: Int] = [:]
            let deliveries = server.deliveries(limit: 10_000)
            for d in deliveries { delivered[d.token, default: 0] += 1 }
            #expect(Set(delivered.keys) == Set(tokens))
            for token in tokens {
                let n = delivered[token, default: 0]
                if flagged.contains(token) {
                    #expect((1...2).contains(n), "flagged token delivered \(n) times")
                } else {
                    #expect(n == 1, "token not flagged, delivered \(n) times")
                }
            }
            // Each delivery is an accepted row, or the first sending of a row flagged possibly_duplicated.
            let twice = delivered.values.filter { $0 == 2 }.count
            #expect(deliveries.count == rows.count + twice)
            #expect(deliveries.count <= rows.count + flagged.count)
            print(
                "SIGKILL: \(leased) leased by the killed worker, \(sentByKilled) reached the mock; reclaimed \(ending.counts.reclaimed) (flagged), delivered twice \(twice); deliveries \(deliveries.count) = 200 accepted + \(twice)"
            )
        }
    }

    @Test("SIGTERM: no new claims, the pushes in flight finish within --grace, the rest stay queued; exit 0")
    func sigtermDrains() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        var configuration = MockServerConfiguration.forTests()
        configuration.faults = [MockFault(kind: .delay(milliseconds: 300))]
        try await withMockServer(configuration: configuration) { server in
            let tokens = TestTokens.random(400)
            try await Q.enqueue(tokens, url: url)
            let metrics = try makeTemporaryDirectory(prefix: "kkpush-queue").appendingPathComponent("worker.prom")
            defer { try? FileManager.default.removeItem(at: metrics.deletingLastPathComponent()) }
            let run = try RunningCLI(
                try Self.workerArguments(
                    server, db: pg.url(database),
                    extra: [
                        "--batch-size", "20", "--lanes", "2", "--grace", "20", "--worker-id", "w-term",
                        "--metrics-file", metrics.path,
                    ]))
            let accepted = try await Self.waitForRows(
                pg, database, where: "state = 'accepted'", atLeast: 40, timeout: 60)
            #expect(accepted >= 40)
            run.signal(SIGTERM)
            let r = await run.finish(timeout: 60)
            #expect(r.status == 0, "stderr: \(r.stderr)")
            #expect(r.stderr.contains("SIGTERM: no new claims"), "\(r.stderr)")
            let last = try #require(r.stdout.split(separator: "\n").last.map(String.init))
            let final = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(final["event"] as? String == "stopped")
            #expect(final["in_flight"] as? Int == 0)
            let rows = try await Q.rows(
                pg, database, "device_token, state, possibly_duplicated, lease_until IS NULL")
            #expect(rows.allSatisfy { ["accepted", "queued"].contains($0[1]) && $0[2] == "f" && $0[3] == "t" })
            let acceptedTokens = Set(rows.filter { $0[1] == "accepted" }.map { $0[0] })
            #expect(acceptedTokens.count < 400, "the queue emptied before the signal")
            #expect(final["accepted"] as? Int == acceptedTokens.count)
            let delivered = server.deliveries(limit: 10_000).map(\.token)
            #expect(delivered.count == acceptedTokens.count && Set(delivered) == acceptedTokens)
            let text = try String(contentsOf: metrics, encoding: .utf8)
            let exposition = try PrometheusExposition(parsing: text)
            // The rows are alert pushes at priority 10: Apple's breakdown labels say so.
            #expect(
                exposition.value(
                    "kkpush_queue_pushes_total",
                    ["outcome": "accepted", "reason": "", "push_type": "alert", "priority": "10"])
                    == Double(acceptedTokens.count), "\(text)")
            #expect(
                exposition.sum("kkpush_queue_pushes_total", matching: ["outcome": "accepted"])
                    == Double(acceptedTokens.count), "\(text)")
        }
    }
}
