import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Synchronization
import Testing

/// The push queue's contract through its commands, against a real PostgreSQL server and the mock over TLS: a
/// misconfigured worker never ends a row, each row goes to its own environment's endpoint, a queue kkpush cannot use
/// is refused by every command, a database error that needs a person stops the worker, and enqueue checks the push.
/// The worker engine's part of the contract (the guide's INSERT drained verbatim, an outage waited out, priorities,
/// counters, retry timing) is tested in KKPushQueueTests (QueueWorkerTests).
@Suite("The push queue's contract (PostgreSQL, the mock)", .serialized)
struct PushQueueContractTests {
    typealias Q = PushQueueFixtures
    static let topic = Q.topic
    static let payload = Q.payload

    /// A worker command line against `server` with `extra` flags (the repository's test key unless given).
    static func worker(_ server: MockAPNsServer, db: String, _ extra: [String], key: [String]? = nil) throws
        -> [String]
    {
        ["worker", "--db", db, "--ca-file", try #require(server.caFile)]
            + (key ?? ["--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"])
            + ["--max-attempts", "1", "--poll-interval", "0.2", "--progress-interval", "60", "--json"] + extra
    }

    // MARK: - 0. The worker's policy flags reach the worker

    @Test("worker --rate is applied: 4 rows at 2/s go out over more than a second, all accepted")
    func rateFlagIsApplied() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            try await Q.insert(TestTokens.random(4), url: url)
            let r = try await CLI.run(
                try Self.worker(
                    server, db: pg.url(database),
                    ["--url", server.sandboxEndpoint.baseURL, "--exit-when-empty", "--rate", "topic=\(Self.topic):2/s"]),
                timeout: 120)
            #expect(r.status == 0, "\(r.stderr)")
            // The bucket holds 1 at 2 a second: the rows go out at least half a second apart. Before the flags were
            // passed to the worker, all four went at once.
            let span = try await pg.runSQL(
                """
                SELECT count(*) || ' ' || extract(epoch FROM max(updated_at) - min(updated_at))
                FROM public.kkpush_push_queue WHERE state = 'accepted'
                """, database: database)
            let parts = span.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
            #expect(parts.first == "4", "\(span)")
            #expect((parts.last.flatMap { Double($0) } ?? 0) >= 1.0, "\(span)")
        }
    }

    // MARK: - 1. A misconfigured worker holds rows, and stops

    @Test("A wrong team id: every row held (retry, claims not counted), none rejected or dead; the worker exits 77")
    func wrongCredentialHoldsRows() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(20)
            try await Q.insert(tokens, url: url)
            let r = try await CLI.run(
                try Self.worker(
                    server, db: pg.url(database),
                    ["--url", server.sandboxEndpoint.baseURL, "--exit-when-empty", "--batch-size", "20"],
                    key: ["--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0009"]), timeout: 120)
            #expect(r.status == 77, "\(r.stderr)")
            // --json: the warnings on stderr, the final counts and the error object on stdout.
            // The lanes claim at once and may split the 20 rows between them: one warning a claim, 20 in all.
            let held = r.stderr.split(separator: "\n").compactMap { line -> Int? in
                guard let range = line.range(of: #"(\d+) rows? held"#, options: .regularExpression) else { return nil }
                return Int(line[range].prefix { $0.isNumber })
            }
            #expect(held.reduce(0, +) == 20 && r.stderr.contains("InvalidProviderToken"), "\(r.stderr)")
            #expect(r.stdout.contains("\"queue-credential-refused\"") && r.stdout.contains("--team-id"), "\(r.stdout)")
            #expect(r.stdout.contains("none was rejected or ended dead"), "\(r.stdout)")
            let rows = try await Q.rows(pg, database, "state, attempts, reason, history::text")
            #expect(rows.count == 20)
            for row in rows {
                #expect(row[0] == "retry" && row[1] == "0" && row[2] == "InvalidProviderToken", "\(row)")
                #expect(row[3].contains("\"held\"") && row[3].contains("\"claim_counted\": false"), "\(row)")
            }
            #expect(server.deliveries(limit: 100).isEmpty)
            let last = try #require(r.stdout.split(separator: "\n").first { $0.contains("\"event\"") }.map(String.init))
            let final = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(final["event"] as? String == "failed" && final["held"] as? Int == 20, "\(final)")
            #expect(final["rejected"] as? Int == 0 && final["dead"] as? Int == 0)
        }
    }

    @Test("A sandbox-only key and a production row: BadEnvironmentKeyIdInToken holds it; the sandbox rows go out")
    func environmentScopedKeyHoldsRow() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let sandbox = TestTokens.random(5)
            let production = TestTokens.random(1)
            try await Q.insert(sandbox, url: url)
            try await Q.insert(production, environment: .production, url: url)
            let key2 = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0002.p8").path
            let r = try await CLI.run(
                try Self.worker(
                    server, db: pg.url(database),
                    [
                        "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                        server.productionEndpoint.baseURL, "--exit-when-empty", "--credential-failure-limit", "2",
                        "--retry-base", "0.05",
                    ], key: ["--key", key2, "--key-id", "KKTEST0002", "--team-id", "KKTEAM0001"]), timeout: 120)
            #expect(r.status == 77, "\(r.stderr)")
            #expect(r.stderr.contains("BadEnvironmentKeyIdInToken"), "\(r.stderr)")
            let rows = try await Q.rows(pg, database, "device_token, state, attempts, reason")
            for row in rows where production.contains(row[0]) {
                #expect(row[1] == "retry" && row[2] == "0" && row[3] == "BadEnvironmentKeyIdInToken", "\(row)")
            }
            for row in rows where sandbox.contains(row[0]) { #expect(row[1] == "accepted", "\(row)") }
        }
    }

    @Test("queue migrate on a version-1 queue applies the later steps alone; status warns about version 1 before it")
    func migrateFromVersionOne() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        try await pg.runSQL(
            """
            DROP TRIGGER kkpush_push_queue_defaults ON public.kkpush_push_queue;
            DELETE FROM public.kkpush_push_queue_versions WHERE version >= 2;
            """, database: database)
        let status = try await CLI.run(["queue", "status", "--db", pg.url(database)])
        #expect(status.status == 0 && status.stderr.contains("schema version 1"), "\(status.stderr)")
        #expect(status.stderr.contains("kkpush queue migrate"), "\(status.stderr)")
        let r = try await CLI.run(["queue", "migrate", "--db", pg.url(database), "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        // Every later step, in order (2, 3 and whatever steps later versions appended).
        #expect(
            (try r.json()["applied"] as? [String])?.map { String($0.prefix(while: { $0 != ":" })) }
                == PushQueueSchema.migrations.dropFirst().map { String($0.version) }, "\(r.stdout)")
        #expect(try r.json()["version"] as? Int == PushQueueSchema.latestVersion)
        let token = TestTokens.random()
        try await pg.runSQL(
            """
            INSERT INTO public.kkpush_push_queue (device_token, topic, payload, environment, push_type)
            VALUES ('\(token)', '\(Self.topic)', '{}', 'sandbox', NULL);
            """, database: database)
        let rows = try await Q.rows(pg, database, "push_type")
        #expect(rows == [["alert"]])
    }

    // MARK: - 6. Each row's environment, its own endpoint

    @Test("worker --url serves sandbox only: a production row is held, never sent to the sandbox listener")
    func workerURLHoldsProductionRows() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let sandbox = TestTokens.random(3)
            let production = TestTokens.random(2)
            try await Q.insert(sandbox, url: url)
            try await Q.insert(production, environment: .production, url: url)
            let r = try await CLI.run(
                try Self.worker(
                    server, db: pg.url(database),
                    [
                        "--url", server.sandboxEndpoint.baseURL, "--exit-when-empty", "--credential-failure-limit", "2",
                        "--retry-base", "0.05",
                    ]), timeout: 120)
            #expect(r.status == 77, "\(r.stderr)")
            #expect(r.stderr.contains("--production-url"), "\(r.stderr)")
            let delivered = server.deliveries(limit: 100)
            #expect(Set(delivered.map(\.token)) == Set(sandbox))
            #expect(delivered.allSatisfy { $0.environment == .sandbox })
            let rows = try await Q.rows(pg, database, "device_token, state, attempts")
            for row in rows where production.contains(row[0]) {
                #expect(row[1] == "retry" && row[2] == "0", "\(row)")
            }

            // With an endpoint per environment, each row reaches its own listener.
            let fixed = try await CLI.run(
                try Self.worker(
                    server, db: pg.url(database),
                    [
                        "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                        server.productionEndpoint.baseURL, "--exit-when-empty",
                    ]), timeout: 120)
            #expect(fixed.status == 0, "\(fixed.stderr)")
            let all = server.deliveries(limit: 100)
            #expect(Set(all.filter { $0.environment == .production }.map(\.token)) == Set(production))
            let states = try await Q.rows(pg, database, "state")
            #expect(states.allSatisfy { $0 == ["accepted"] }, "\(states)")
        }
    }

    @Test("send-batch --url: a line of the other environment fails bad-input, unsent; --production-url sends it there")
    func sendBatchURLRefusesOtherEnvironment() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let directory = try makeTemporaryDirectory(prefix: "kkpush-batch-env")
            defer { try? FileManager.default.removeItem(at: directory) }
            let sandbox = TestTokens.random()
            let production = TestTokens.random()
            let file = directory.appendingPathComponent("tokens.jsonl")
            try Data(
                """
                \(sandbox)
                {"token": "\(production)", "environment": "production"}

                """.utf8
            ).write(to: file)
            let base = [
                "send-batch", "--tokens", file.path, "--topic", Self.topic, "--title", "Hoi", "--key", Q.key,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--ca-file", try #require(server.caFile),
            ]
            let refused = try await CLI.run(base + ["--url", server.sandboxEndpoint.baseURL])
            #expect(refused.status == 1, "\(refused.stderr)")
            let results = refused.stdout.split(separator: "\n").map(String.init)
            let second = try #require(results.first { $0.contains(production) })
            #expect(second.contains("bad-input") && second.contains("--production-url"), "\(second)")
            #expect(refused.stderr.contains("named an environment --url does not stand in for"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("went to the environment named in the line"))
            #expect(server.deliveries(limit: 10).map(\.token) == [sandbox])

            let both = try await CLI.run(
                base + [
                    "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                    server.productionEndpoint.baseURL,
                ])
            #expect(both.status == 0, "\(both.stderr)")
            #expect(server.deliveries(token: production).map(\.environment) == [.production])

            let clash = try await CLI.run(
                base + ["--url", server.sandboxEndpoint.baseURL, "--production-url", server.productionEndpoint.baseURL])
            #expect(clash.status == 64 && clash.stderr.contains("not both"), "\(clash.stderr)")
        }
    }

    // MARK: - 7, 12. A queue kkpush cannot use

    @Test("A queue migrated by a newer kkpush: enqueue and worker refuse it (exit 2), status warns")
    func newerSchemaRefused() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        try await pg.runSQL(
            "INSERT INTO public.kkpush_push_queue_versions (version, description) VALUES (99, 'future')",
            database: database)
        let db = pg.url(database)
        let tokens = try makeTemporaryDirectory(prefix: "kkpush-newer").appendingPathComponent("t.txt")
        try Data("\(TestTokens.random())\n".utf8).write(to: tokens)
        let enqueue = try await CLI.run([
            "queue", "enqueue", "--db", db, "--tokens", tokens.path, "--topic", Self.topic, "--title", "Hoi", "--json",
        ])
        #expect(enqueue.status == 2 && enqueue.stdout.contains("queue-schema-newer"), "\(enqueue.stdout)")
        let worker = try await CLI.run([
            "worker", "--db", db, "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--exit-when-empty", "--json",
        ])
        #expect(worker.status == 2 && worker.stdout.contains("queue-schema-newer"), "\(worker.stdout)")
        let status = try await CLI.run(["queue", "status", "--db", db])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stderr.contains("schema version 99"), "\(status.stderr)")
        let count = try await pg.runSQL("SELECT count(*) FROM public.kkpush_push_queue", database: database)
        #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("A foreign kkpush_push_queue table: a queue error naming the table and the queue's migration, exit 2")
    func foreignTableRefused() async throws {
        let pg = try await PostgresServer.sharedServer()
        let database = try await pg.newDatabase("queue")
        try await pg.runSQL("CREATE TABLE public.kkpush_push_queue (id int, note text)", database: database)
        let db = pg.url(database)
        let tokens = try makeTemporaryDirectory(prefix: "kkpush-foreign").appendingPathComponent("t.txt")
        try Data("\(TestTokens.random())\n".utf8).write(to: tokens)
        for args in [
            ["queue", "status", "--db", db],
            ["queue", "enqueue", "--db", db, "--tokens", tokens.path, "--topic", Self.topic, "--title", "Hoi"],
            ["queue", "migrate", "--db", db],
            ["worker", "--db", db, "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"],
        ] {
            let r = try await CLI.run(args)
            #expect(r.status == 2, "\(args[0...1]): \(r.stderr)")
            #expect(r.stderr.contains("kkpush's queue migration did not make"), "\(args[0...1]): \(r.stderr)")
            #expect(r.stderr.contains("kkpush queue migrate"), "\(args[0...1]): \(r.stderr)")
            #expect(!r.stderr.contains("backend migrate") && !r.stderr.contains("enrollment table"), "\(r.stderr)")
        }
    }

    @Test("queue enqueue checks the push as send does: JSON, size by push type, priority, topic; nothing queued")
    func enqueueValidates() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        let db = pg.url(database)
        let directory = try makeTemporaryDirectory(prefix: "kkpush-enqueue")
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokens = directory.appendingPathComponent("t.txt")
        try Data("\(TestTokens.random())\n".utf8).write(to: tokens)
        let broken = directory.appendingPathComponent("broken.json")
        try Data(#"{"aps": {"alert": "Hoi"}"#.utf8).write(to: broken)
        let large = directory.appendingPathComponent("large.json")
        try Data(#"{"aps":{"alert":"Hoi"},"x":"\#(String(repeating: "a", count: 5000))"}"#.utf8).write(to: large)
        let base = ["queue", "enqueue", "--db", db, "--tokens", tokens.path]
        let cases: [([String], String)] = [
            (["--topic", Self.topic, "--payload", broken.path], "--payload"),
            (["--topic", Self.topic, "--payload", large.path], "PayloadTooLarge"),
            (["--topic", Self.topic, "--title", "Hoi", "--priority", "7"], "--priority"),
            (["--topic", " ", "--title", "Hoi"], "--topic"),
        ]
        for (extra, named) in cases {
            let r = try await CLI.run(base + extra)
            #expect(r.status == 64, "\(extra): \(r.stderr)")
            #expect(r.stderr.contains(named), "\(extra): \(r.stderr)")
        }
        // The same payload is fine for voip (5120 bytes).
        let voip = try await CLI.run(
            base + ["--topic", Self.topic + ".voip", "--payload", large.path, "--push-type", "voip"])
        #expect(voip.status == 0, "\(voip.stderr)")
        let count = try await pg.runSQL("SELECT count(*) FROM public.kkpush_push_queue", database: database)
        #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    // MARK: - 8. Database errors

    @Test("A database user with only SELECT: the worker exits 77 naming the GRANT, in process and as a library")
    func selectOnlyUser() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        let role = "reader_\(UUID().uuidString.prefix(6).lowercased())"
        try await pg.runSQL(
            """
            CREATE ROLE \(role) LOGIN;
            GRANT SELECT ON public.kkpush_push_queue, public.kkpush_push_queue_versions TO \(role);
            """, database: database)
        let db = pg.url(database).replacingOccurrences(of: "postgres://kkpush@", with: "postgres://\(role)@")
        let readerURL = try PostgresURL(parsing: db)
        try await Q.insert(TestTokens.random(5), url: try PostgresURL(parsing: pg.url(database)))
        let r = try await CLI.run([
            "worker", "--db", db, "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--exit-when-empty",
        ])
        #expect(r.status == 77, "\(r.stderr)")
        #expect(
            r.stderr.contains("GRANT SELECT, UPDATE ON public.kkpush_push_queue TO \"\(role)\""), "\(r.stderr)")

        // The engine itself, past the command's check: the first claim is refused, and the worker stops with it.
        try await withMockServer(configuration: .forTests()) { server in
            let store = PushQueueStore(url: readerURL, connections: 3)
            let events = Mutex<[String]>([])
            let worker = QueueWorker(
                store: store, router: SingleClientRouter(client: try Q.client(server)),
                configuration: QueueWorkerConfiguration(
                    owner: "w-reader", batchSize: 10, lanes: 2, lease: 30, pollInterval: 0.2, exitWhenEmpty: true,
                    grace: 1, progressInterval: 60),
                onEvent: { event in
                    if case .databaseError(let words, _) = event { events.withLock { $0.append(words) } }
                })
            let watchdog = Task {
                try await Task.sleep(for: .seconds(30))
                Issue.record("the worker did not stop in 30 s")
                worker.stop()
            }
            let ending = await worker.run()
            watchdog.cancel()
            await store.close()
            #expect(ending.failure?.code == .queuePermissionDenied, "\(String(describing: ending.failure))")
            #expect(ending.failure?.fix?.contains("GRANT SELECT, UPDATE") == true)
            #expect(events.withLock { $0.count } == 0, "warned instead of stopping: \(events.withLock { $0 })")
        }
    }
}
