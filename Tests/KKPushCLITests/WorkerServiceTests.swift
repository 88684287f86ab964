import Foundation
import KKPushCore
import KKPushHTTP
import KKPushMock
import KKPushQueue
import KKPushStore
import KKPushTestSupport
import Logging
import NIOHTTP1
import Synchronization
import Testing

/// `kkpush worker` as a service, as the binary (a PostgreSQL URL runs as a process: ``CLI/needsProcess``): `--http`
/// scraped by curl, `/readyz` with its database stopped, `--log-format json`, SIGHUP reloading the key file.
@Suite("kkpush worker as a service (PostgreSQL, the mock, curl)", .serialized)
struct WorkerServiceTests {
    typealias Q = PushQueueFixtures

    /// `curl -s` of `url`: the status and the body.
    static func curl(_ url: String) async throws -> (status: Int, body: String) {
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "--max-time", "10", "-w", "\n%{http_code}", url],
            timeout: 30)
        let text = String(decoding: r.stdout, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// The port of the worker's "serving /metrics…" JSON log line.
    static func servingPort(_ run: RunningCLI) async throws -> Int {
        #expect(await run.waitForError(containing: "serving /metrics", timeout: 60), "\(run.errorText)")
        let line = try #require(run.errorText.split(separator: "\n").first { $0.contains("serving /metrics") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let metadata = try #require(object["metadata"] as? [String: String])
        return try #require(metadata["port"].flatMap { Int($0) })
    }

    @Test(
        "--http 127.0.0.1:0: /metrics, /healthz and /readyz answer curl; /readyz is 503 with a reason while the database is stopped; JSON log lines"
    )
    func httpEndpoints() async throws {
        let pg = try await PostgresServer.startOwn()
        defer { pg.destroy() }
        let database = try await pg.newDatabase("queue")
        let url = try PostgresURL(parsing: pg.url(database))
        _ = try await PushQueueSchema.migrate(url: url)
        try await Q.insert(TestTokens.random(20), url: url)
        try await withMockServer(configuration: .forTests()) { server in
            let run = try RunningCLI([
                "worker", "--db", pg.url(database), "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--poll-interval", "0.2", "--progress-interval", "0.5", "--worker-id", "w-http", "--http",
                "127.0.0.1:0", "--log-format", "json",
            ])
            let port = try await Self.servingPort(run)
            let base = "http://127.0.0.1:\(port)"
            let accepted = try await PushQueueWorkerTests.waitForRows(
                pg, database, where: "state = 'accepted'", atLeast: 20, timeout: 60)
            #expect(accepted == 20)

            let metrics = try await Self.curl(base + "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.body.contains("kkpush_queue_claimed_total 20"), "\(metrics.body)")
            #expect(metrics.body.contains(#"kkpush_queue_pushes_total{outcome="accepted""#), "\(metrics.body)")
            let health = try await Self.curl(base + "/healthz")
            #expect(health.status == 200 && health.body.contains(#""status":"ok""#), "\(health)")
            let ready = try await Self.curl(base + "/readyz")
            #expect(ready.status == 200 && ready.body.contains(#""ready":true"#), "\(ready)")

            try await pg.stopServer()
            let down = try await Self.curl(base + "/readyz")
            #expect(down.status == 503, "\(down)")
            let reason = try #require(
                try JSONSerialization.jsonObject(with: Data(down.body.utf8)) as? [String: Any])
            #expect(reason["ready"] as? Bool == false && (reason["reason"] as? String)?.hasPrefix("database:") == true)
            // Alive all the same: the loop runs and waits for the database.
            #expect(try await Self.curl(base + "/healthz").status == 200)
            try await pg.startAgain()
            var back = 0
            for _ in 0..<100 where back != 200 {
                back = try await Self.curl(base + "/readyz").status
                if back != 200 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(back == 200, "/readyz did not come back after the database did")

            run.signal(SIGTERM)
            let finished = await run.finish(timeout: 30)
            #expect(finished.status == 0, "\(run.errorText)")
            // Every line on stderr is one JSON object: time, level, label, message, metadata.
            let lines = run.errorText.split(separator: "\n").filter { !$0.isEmpty }
            #expect(lines.count >= 3)
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(
                    object?["time"] is String && object?["level"] is String && object?["message"] is String
                        && object?["metadata"] is [String: String], "not a JSON log line: \(line)")
            }
            #expect(lines.contains { $0.contains(#""level":"warning""#) && $0.contains("trying again") })
        }
    }

    @Test("SIGHUP reads the key file again: rows held for a wrong key are sent after it, none dropped or sent twice")
    func sighupReloadsKey() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyPath = dir.appendingPathComponent("AuthKey.p8").path
        let wrong = try Data(contentsOf: Repository.certificates.appendingPathComponent("AuthKey_KKTEST0002.p8"))
        let right = try Data(contentsOf: URL(fileURLWithPath: Q.key))
        try wrong.write(to: URL(fileURLWithPath: keyPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let (pg, database, url) = try await Q.migratedDatabase()
        let tokens = TestTokens.random(10)
        try await Q.insert(tokens, url: url)
        try await withMockServer(configuration: .forTests()) { server in
            let run = try RunningCLI([
                "worker", "--db", pg.url(database), "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--key", keyPath, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--poll-interval", "0.2", "--progress-interval", "60", "--retry-base", "0", "--batch-size", "10",
                "--lanes", "1", "--credential-failure-limit", "100000", "--worker-id", "w-hup",
            ])
            #expect(await run.waitForError(containing: "InvalidProviderToken", timeout: 60), "\(run.errorText)")
            // A key file that does not load: the worker says so and keeps the credential it has.
            try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: keyPath), options: .atomic)
            run.signal(SIGHUP)
            #expect(
                await run.waitForError(containing: "could not be loaded again", timeout: 30), "\(run.errorText)")
            #expect(
                try await PushQueueWorkerTests.waitForRows(
                    pg, database, where: "state = 'accepted'", atLeast: 1, timeout: 1) == 0)
            try right.write(to: URL(fileURLWithPath: keyPath), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
            run.signal(SIGHUP)
            #expect(await run.waitForError(containing: "credentials loaded again", timeout: 30), "\(run.errorText)")
            let accepted = try await PushQueueWorkerTests.waitForRows(
                pg, database, where: "state = 'accepted'", atLeast: 10, timeout: 60)
            #expect(accepted == 10, "\(run.errorText)")
            run.signal(SIGTERM)
            let finished = await run.finish(timeout: 30)
            #expect(finished.status == 0, "\(run.errorText)")
            let rows = try await Q.rows(pg, database, "state, attempts, history::text")
            #expect(rows.allSatisfy { $0[0] == "accepted" && $0[1] == "1" && $0[2].contains(#""held""#) }, "\(rows)")
            var delivered: [String: Int] = [:]
            for d in server.deliveries(limit: 1000) { delivered[d.token, default: 0] += 1 }
            #expect(delivered.count == 10 && delivered.values.allSatisfy { $0 == 1 }, "\(delivered)")
            // The ledger has every attempt: the held ones and the accepted one of each row.
            let ledger = try await pg.runSQL(
                "SELECT outcome, count(DISTINCT queue_id) FROM public.kkpush_push_attempts GROUP BY outcome ORDER BY 1",
                database: database)
            #expect(ledger.contains("accepted|10") && ledger.contains("held|10"), "\(ledger)")
        }
    }

    @Test("queue history: by --token and --push, newest first, --json; bad flags are usage errors naming the flag")
    func queueHistoryCommand() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(2)
            _ = try server.addFault(.failNext(1, status: 503, scope: .token(tokens[0])))
            try await Q.insert(tokens, url: url)
            _ = try await Q.drain(server, url: url, owner: "w-history")
        }
        let db = pg.url(database)
        let text = try await CLI.run([
            "queue", "history", "--db", db, "--token", try await Self.firstToken(pg, database),
        ])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].contains("accepted") && lines[1].contains("retry"), "\(text.stdout)")
        #expect(lines[1].contains("503") && lines[1].contains("ServiceUnavailable") && lines[1].contains("w-history"))
        let json = try await CLI.run(["queue", "history", "--db", db, "--push", "1", "--json", "--limit", "1"])
        #expect(json.status == 0, "\(json.stderr)")
        let attempts = try #require(try json.json()["attempts"] as? [[String: Any]])
        #expect(
            attempts.count == 1 && attempts[0]["queue_id"] as? Int == 1
                && attempts[0]["outcome"] as? String == "accepted")
        #expect(try json.json()["truncated"] as? Bool == true)
        // The attempt was sent: it names the worker's connection (numbered from 1), in JSON and on the text line.
        #expect((attempts[0]["connection_id"] as? Int ?? 0) >= 1, "\(attempts[0])")
        #expect(lines[0].contains("connection "), "\(text.stdout)")
        for (flags, named) in [
            (["--since", "yesterday"], "--since 'yesterday'"), (["--limit", "0"], "--limit"),
            (["--token", "xyz"], "--token 'xyz'"), (["--push", "0"], "--push 0"),
        ] {
            let bad = try await CLI.run(["queue", "history", "--db", db] + flags)
            #expect(bad.status == 64 && bad.stderr.contains(named), "\(flags): \(bad.stderr)")
        }
    }

    /// The first token's text, as the rows hold it (the test above inserts two).
    static func firstToken(_ pg: PostgresServer, _ database: String) async throws -> String {
        try await Q.rows(pg, database, "device_token").first?.first ?? ""
    }

    @Test("worker --webhook with --webhook-secret-file: each final outcome POSTed once, signed with the file's secret")
    func workerWebhook() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let secretPath = dir.appendingPathComponent("webhook-secret").path
        try Data("s3cret-for-the-test\n".utf8).write(to: URL(fileURLWithPath: secretPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretPath)
        let received = Mutex<[(String, String, [UInt8])]>([])
        let hook = try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: 0), logger: Logger(label: "test.worker.webhook")
        ) { request in
            received.withLock {
                $0.append(
                    (
                        request.headers.first(name: "X-KKPush-Webhook-Id") ?? "",
                        request.headers.first(name: "X-KKPush-Signature") ?? "", request.body
                    ))
            }
            return .json(.object(["ok": .bool(true)]))
        }
        defer { Task { await hook.stop() } }
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(4)
            _ = try server.addFault(
                MockFault(scope: .token(tokens[0]), kind: .respond(status: 400, reason: .badDeviceToken), remaining: 1))
            try await Q.insert(tokens, url: url)
            let run = try RunningCLI([
                "worker", "--db", pg.url(database), "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--poll-interval", "0.2", "--progress-interval", "60", "--webhook",
                "http://127.0.0.1:\(hook.port)/kkpush", "--webhook-secret-file", secretPath,
            ])
            let deadline = Date().addingTimeInterval(60)
            while received.withLock({ $0.count }) < 4, Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            run.signal(SIGTERM)
            let finished = await run.finish(timeout: 30)
            #expect(finished.status == 0, "\(run.errorText)")
            #expect(!run.errorText.contains("s3cret"), "the secret was printed")
        }
        let deliveries = received.withLock { $0 }
        #expect(deliveries.count == 4, "\(deliveries.map(\.0))")
        #expect(Set(deliveries.map(\.0)).count == 4)
        var types: [String] = []
        for (id, signature, body) in deliveries {
            #expect(
                QueueWebhookSignature.verify(signature, body: body, secret: Array("s3cret-for-the-test".utf8)),
                "\(signature)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            #expect(object["id"] as? String == id)
            types.append(object["type"] as? String ?? "")
        }
        #expect(types.sorted() == ["push.accepted", "push.accepted", "push.accepted", "push.rejected"], "\(types)")
        let status = try await CLI.run(["queue", "status", "--db", pg.url(database), "--json"])
        let webhooks = try #require(try status.json()["webhooks"] as? [String: Int])
        #expect(webhooks == ["pending": 0, "delivered": 4, "failed": 0], "\(status.stdout)")
    }

    @Test("worker --no-attempt-ledger: every row sent and ended, no attempt written to the ledger")
    func noAttemptLedger() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await withMockServer(configuration: .forTests()) { server in
            try await Q.insert(TestTokens.random(5), url: url)
            let r = try await CLI.run([
                "worker", "--db", pg.url(database), "--url", server.sandboxEndpoint.baseURL, "--ca-file",
                try #require(server.caFile), "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                "--exit-when-empty", "--progress-interval", "60", "--no-attempt-ledger",
            ])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(server.deliveries(limit: 100).count == 5)
        }
        let rows = try await Q.rows(pg, database, "state, jsonb_array_length(history)")
        #expect(rows.count == 5 && rows.allSatisfy { $0 == ["accepted", "1"] }, "\(rows)")
        let attempts = try await pg.runSQL("SELECT count(*) FROM public.kkpush_push_attempts", database: database)
        #expect(attempts.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test("Service flags are checked before anything runs: --http, --log-format, --webhook without its secret")
    func serviceFlagErrors() async throws {
        let base = ["worker", "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"]
        for (flags, named) in [
            (["--http", "9464"], "--http '9464'"), (["--http", "127.0.0.1:70000"], "--http"),
            (["--log-format", "xml"], "--log-format 'xml'"),
            (["--webhook", "https://example.invalid/hook"], "--webhook-secret-file"),
            (["--webhook", "ftp://example.invalid/hook", "--webhook-secret-file", "x"], "--webhook 'ftp:"),
            (["--webhook-secret-file", "x"], "--webhook-secret-file is for --webhook"),
            (["--attempt-retention", "0"], "--attempt-retention"), (["--webhook-attempts", "0"], "--webhook-attempts"),
        ] {
            let r = try await CLI.run(base + flags)
            #expect(r.status == 64 && r.stderr.contains(named), "\(flags): \(r.stderr)")
        }
    }

    @Test("--http on a port already taken: exit 64 (worker-http-bind) naming the flag, nothing claimed")
    func httpPortTaken() async throws {
        let taken = try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: 0), logger: Logger(label: "test.worker.taken")
        ) { _ in .json(.null) }
        defer { Task { await taken.stop() } }
        let (pg, database, url) = try await Q.migratedDatabase()
        try await Q.insert(TestTokens.random(2), url: url)
        let r = try await CLI.run([
            "worker", "--db", pg.url(database), "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--url", "https://127.0.0.1:9", "--http", "127.0.0.1:\(taken.port)", "--json",
        ])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(
            r.stdout.contains("worker-http-bind") && r.stdout.contains("--http 127.0.0.1:\(taken.port)"), "\(r.stdout)")
        let rows = try await Q.rows(pg, database, "state, attempts")
        #expect(rows == [["queued", "0"], ["queued", "0"]], "\(rows)")
    }

    @Test("--log-format json: the error a worker stops with is its last JSON line, with its code and fix; exit 2")
    func jsonLogError() async throws {
        let pg = try await PostgresServer.sharedServer()
        let bare = try await pg.newDatabase("queue")
        let r = try await CLI.run([
            "worker", "--db", pg.url(bare), "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--log-format", "json",
        ])
        #expect(r.status == 2, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n").filter { !$0.isEmpty }
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == lines.count && !lines.isEmpty, "not all JSON: \(r.stderr)")
        let last = try #require(objects.last)
        let metadata = try #require(last["metadata"] as? [String: String])
        #expect(last["level"] as? String == "critical" && metadata["code"] == "queue-not-migrated", "\(last)")
        #expect(metadata["fix"]?.contains("kkpush queue migrate") == true, "\(last)")
    }
}
