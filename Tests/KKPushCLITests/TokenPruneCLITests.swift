import Foundation
import KKPushCore
import KKPushDiagnosis
import KKPushHTTP
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Logging
import Testing

/// `kkpush token prune` against a real PostgreSQL table shaped as the app's backend makes it (the README's
/// columns, Ecto's `timestamp(0)`), with the push queue's table beside it, and against kkpush's own SQLite store:
/// the plan names exactly the dead tokens, the re-registered ones are kept, and after `--apply` every other row and
/// column is byte for byte what it was. The fleet and APNs' answers are KKPushTestSupport's TokenPruneFixtures; the
/// engine's guarded clear racing a re-registration is tested in KKPushDiagnosisTests (DeadTokenPlanPostgresTests).
@Suite("token prune")
struct TokenPruneCLITests {
    typealias F = TokenPruneFixtures

    @Test(
        "PostgreSQL: the plan names exactly the dead tokens; --apply clears them and nothing else; the SQL is the same")
    func postgres() async throws {
        let server = try await PostgresServer.sharedServer()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ledgerPath, statePath) = try F.writeAnswers(dir)
        let applied = try await F.pgFleetDatabase(server)
        let scripted = try await F.pgFleetDatabase(server)
        let expected = try await F.pgFleetDatabase(server)
        let url = server.url(applied)
        let before = try await F.dump(server, applied)
        let sqlPath = dir.appendingPathComponent("plan.sql").path
        let sources = ["--ledger", ledgerPath, "--audit-state", statePath, "--queue", url]

        // The plan, read-only.
        let plan = try await CLI.run(["token", "prune", "--store", url, "--json", "--sql", sqlPath] + sources)
        #expect(plan.status == 0, "\(plan.stdout) \(plan.stderr)")
        let json = try plan.json()
        let dead = (json["dead"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }
        #expect(Set(dead) == F.expectedDead)
        #expect(dead.count == F.expectedDead.count)
        let kept = (json["kept"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
            $0[$1["device_id"] as? String ?? "?"] = $1["why"] as? String
        }
        #expect(kept == F.expectedKept)
        #expect(json["unmatched"] as? Int == 1)
        #expect(json["applied"] is NSNull)
        for token in [F.dead1, F.dead2, F.badBoth, F.reRegistered, F.badOne] {
            #expect(!plan.stdout.contains(token), "a whole token in the output")
        }
        #expect(try await F.dump(server, applied) == before, "the plan wrote nothing")
        let script = try String(contentsOfFile: sqlPath, encoding: .utf8)
        #expect(script.contains(F.dead1) && !script.contains(F.reRegistered))
        let mode = try FileManager.default.attributesOfItem(atPath: sqlPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // --apply: the dead rows lose their token, nothing else changes.
        let apply = try await CLI.run(["token", "prune", "--store", url, "--apply"] + sources)
        #expect(apply.status == 0, "\(apply.stdout) \(apply.stderr)")
        #expect(apply.stdout.contains("Applied in one transaction: 3 tokens cleared, 0 skipped."), "\(apply.stdout)")
        #expect(!apply.stdout.contains(F.dead1))
        try await server.runSQL(
            "UPDATE public.device_enrollments SET apns_token = NULL WHERE device_id IN ('dev-dead1', 'dev-dead2', 'dev-badboth');",
            database: expected)
        let after = try await F.dump(server, applied)
        #expect(after == (try await F.dump(server, expected)))
        #expect(after != before)

        // The reviewed SQL, run by psql, does the same.
        try await server.runSQL(script, database: scripted)
        #expect(try await F.dump(server, scripted) == after)

        // A second run finds nothing more to clear.
        let again = try await CLI.run(["token", "prune", "--store", url, "--json", "--apply"] + sources)
        #expect(again.status == 0, "\(again.stderr)")
        #expect((try again.json()["dead"] as? [Any])?.isEmpty == true)
        #expect(try await F.dump(server, applied) == after)
    }

    @Test("The push queue without its columns, and no source at all, are refused by name")
    func refusals() async throws {
        let server = try await PostgresServer.sharedServer()
        let database = try await server.newDatabase("prune")
        try await server.runSQL(
            F.backendTable + "CREATE TABLE public.kkpush_push_queue (device_token text, reason text);",
            database: database)
        let url = server.url(database)
        let r = try await CLI.run(["token", "prune", "--store", url, "--queue", url])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("kkpush_push_queue") && r.stderr.contains("apns_timestamp"), "\(r.stderr)")
        let none = try await CLI.run(["token", "prune", "--store", url])
        #expect(none.status == 64, "\(none.stderr)")
    }

    @Test("PostgreSQL through --schema-map: other names, token_updated_at where the row has one, updated_at else")
    func postgresMapped() async throws {
        let server = try await PostgresServer.sharedServer()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let map = dir.appendingPathComponent("map.json").path
        try Data(PostgresSchemaFixtures.theirSchemaMap.utf8).write(to: URL(fileURLWithPath: map))
        let (e1, e2, e3) = (
            String(repeating: "ab", count: 32), String(repeating: "cd", count: 32), String(repeating: "ef", count: 32)
        )
        let ledgerPath = dir.appendingPathComponent("results.jsonl").path
        try Data(
            [e1, e2, e3].enumerated().map {
                F.resultLine(
                    $0.offset + 1, $0.element, status: 410, reason: "Unregistered", at: "2027-02-15T00:00:00.000Z")
            }.joined(separator: "\n").utf8
        ).write(to: URL(fileURLWithPath: ledgerPath))
        let table =
            PostgresSchemaFixtures.theirTable + """
                INSERT INTO app.enrollments VALUES
                  ('e-1', 'agovv', ARRAY['JO10-5'], 'member', 'v1', '\(e1)', 'production', '2.0', false, 'active', NULL,
                   '2027-02-01T12:00:00Z', 1, NULL),
                  ('e-2', 'agovv', ARRAY['JO10-5'], 'member', 'v2', '\(e2)', 'production', '2.0', false, 'active', NULL,
                   '2027-03-01T12:00:00Z', 1, '2027-01-05T10:00:00.250Z'),
                  ('e-3', 'agovv', ARRAY['JO10-5'], 'member', 'v3', '\(e3)', 'production', '2.0', false, 'active', NULL,
                   '2027-02-20T12:00:00Z', 1, '2027-02-20T12:00:00Z');
                """
        let database = try await server.newDatabase("prune")
        let expected = try await server.newDatabase("prune")
        try await server.runSQL(table, database: database)
        try await server.runSQL(table, database: expected)
        let dump = "SELECT t::text FROM app.enrollments t ORDER BY id;"
        let r = try await CLI.run(
            [
                "token", "prune", "--store", server.url(database), "--schema-map", map, "--ledger", ledgerPath,
                "--apply", "--json",
            ])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let json = try r.json()
        let dead = (json["dead"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) {
            $0[$1["device_id"] as? String ?? "?"] = $1["registered_column"] as? String
        }
        #expect(dead == ["e-1": "updated_at", "e-2": "token_updated_at"])
        #expect((json["kept"] as? [[String: Any]])?.first?["device_id"] as? String == "e-3")
        try await server.runSQL(
            "UPDATE app.enrollments SET push_token = NULL, token_at = NULL WHERE id IN ('e-1', 'e-2');",
            database: expected)
        #expect(
            try await server.runSQL(dump, database: database) == (try await server.runSQL(dump, database: expected)))
    }

    // MARK: SQLite

    /// kkpush's own SQLite store, written through the store as the backend writes it: enrolled, then token updates.
    static func sqliteFleet(_ path: String) async throws {
        func date(_ iso: String) -> Date { Date(timeIntervalSince1970: TimeInterval(F.ms(iso)) / 1000) }
        try await SQLiteEnrollmentStore.withStore(path: path) { store in
            let rows: [(String, String, String?, String)] = [
                ("dev-dead1", "vvwilhelmus", F.dead1, "2027-01-10T08:00:00.000Z"),
                ("dev-rereg", "vvwilhelmus", F.reRegistered, "2027-01-10T08:00:00.000Z"),
                ("dev-badone", "agovv", F.badOne, "2027-01-10T08:00:00.000Z"),
                ("dev-badboth", "agovv", F.badBoth, "2027-01-10T08:00:00.000Z"),
                ("dev-alive", "vvwilhelmus", F.alive, "2027-01-10T08:00:00.000Z"),
                ("dev-samesecond", "agovv", F.sameSecond, "2027-01-15T09:30:00.000Z"),
                ("dev-notoken", "agovv", nil, "2027-01-10T08:00:00.000Z"),
            ]
            for (device, tenant, token, at) in rows {
                try await store.upsert(
                    Enrollment(
                        deviceID: device, tenantSlug: tenant, teamCodes: ["JO11-3"], role: .member,
                        hardwareIdentifier: "hw-\(device)", apnsToken: token, buildEnvironment: "production",
                        appVersion: "1.4.2", updatedAt: date(at)))
            }
            // The app registers the same token again, after Apple's 410.
            try await store.updateToken(
                deviceID: "dev-rereg", tenant: "vvwilhelmus", token: F.reRegistered, buildEnvironment: "production",
                appVersion: "1.4.3", at: date("2027-01-20T10:00:00.250Z"))
        }
    }

    /// Every row and column of the SQLite table, as the sqlite3 shell prints it.
    static func sqliteDump(_ path: String) async throws -> String {
        let out = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [path, "SELECT * FROM device_enrollments ORDER BY tenant_slug, device_id;"], timeout: 60)
        #expect(out.status == 0)
        return String(decoding: out.stdout, as: UTF8.self)
    }

    @Test("SQLite: the plan, --apply, the SQL script through sqlite3: the same rows cleared, every other byte kept")
    func sqlite() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ledgerPath, statePath) = try F.writeAnswers(dir)
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let copy = dir.appendingPathComponent("copy.sqlite").path
        try await Self.sqliteFleet(db)
        try await Self.sqliteFleet(copy)
        let before = try await Self.sqliteDump(db)
        #expect(before == (try await Self.sqliteDump(copy)))
        let sqlPath = dir.appendingPathComponent("plan.sql").path
        let sources = ["--ledger", ledgerPath, "--audit-state", statePath]

        let plan = try await CLI.run(["token", "prune", "--store", db, "--sql", sqlPath] + sources)
        #expect(plan.status == 0, "\(plan.stdout) \(plan.stderr)")
        #expect(plan.stdout.contains("Dead (2)"), "\(plan.stdout)")
        #expect(plan.stdout.contains("Kept (3)"))
        #expect(plan.stdout.contains("Nothing written: add --apply to clear 2 tokens."))
        #expect(plan.stderr.contains("note: results.jsonl: 1 line is not a JSON result line (line 7): skipped"))
        #expect(!plan.stdout.contains(F.dead1) && plan.stdout.contains(DeviceToken.redacted(F.dead1)))
        #expect(try await Self.sqliteDump(db) == before)

        let apply = try await CLI.run(["token", "prune", "--store", db, "--apply", "--json"] + sources)
        #expect(apply.status == 0, "\(apply.stdout) \(apply.stderr)")
        let json = try apply.json()
        #expect((json["applied"] as? [String: Any])?["cleared"] as? Int == 2)
        #expect(
            Set((json["dead"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }) == [
                "dev-dead1", "dev-badboth",
            ])
        let after = try await Self.sqliteDump(db)
        let beforeLines = before.split(separator: "\n")
        let afterLines = after.split(separator: "\n")
        #expect(beforeLines.count == afterLines.count)
        for (b, a) in zip(beforeLines, afterLines) {
            if b.contains("|dev-dead1|") || b.contains("|dev-badboth|") {
                // apns_token and token_updated_at emptied, every other column as it was.
                let bs = b.split(separator: "|", omittingEmptySubsequences: false)
                let ast = a.split(separator: "|", omittingEmptySubsequences: false)
                #expect(ast[5] == "" && ast[13] == "")
                var expected = bs
                expected[5] = ""
                expected[13] = ""
                #expect(ast == expected)
            } else {
                #expect(a == b)
            }
        }

        // The script, run by sqlite3 on the copy, gives the same table.
        let run = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [copy],
            stdin: try Data(contentsOf: URL(fileURLWithPath: sqlPath)),
            timeout: 60)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        #expect(try await Self.sqliteDump(copy) == after)
    }

    @Test(
        "--webhook: a dry run posts nothing and says what --apply would; --apply posts each token cleared; a webhook that is down is reported, not fatal"
    )
    func webhook() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ledgerPath, statePath) = try F.writeAnswers(dir)
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        try await Self.sqliteFleet(db)
        let received = Received()
        let server = try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: 0), logger: Logger(label: "test.webhook")
        ) { request in
            received.add(request.body)
            return .json(.object(["ok": .bool(true)]))
        }
        defer { Task { await server.stop() } }
        let hook = ["--webhook", "http://127.0.0.1:\(server.port)/feedback"]
        let sources = ["--ledger", ledgerPath, "--audit-state", statePath]

        // The plan (text, JSON, --sql): nothing posted, and it says how many --apply would post.
        let plan = try await CLI.run(["token", "prune", "--store", db] + sources + hook)
        #expect(plan.status == 0, "\(plan.stdout) \(plan.stderr)")
        #expect(
            plan.stdout.contains(
                "Webhook: nothing posted; with --apply it would be posted for the 2 tokens the transaction clears."),
            "\(plan.stdout)")
        let planJSON = try await CLI.run(
            ["token", "prune", "--store", db, "--json", "--sql", dir.appendingPathComponent("p.sql").path] + sources
                + hook)
        #expect(planJSON.status == 0, "\(planJSON.stderr)")
        let hookJSON = try planJSON.json()["webhook"] as? [String: Any]
        #expect(hookJSON?["would_post"] as? Int == 2 && hookJSON?["posted"] as? Int == 0, "\(planJSON.stdout)")
        #expect(received.all.isEmpty, "a dry run posted \(received.all.count) tokens")

        // --apply: each token cleared is posted, once the transaction has committed.
        let apply = try await CLI.run(["token", "prune", "--store", db, "--apply"] + sources + hook)
        #expect(apply.status == 0, "\(apply.stdout) \(apply.stderr)")
        #expect(apply.stdout.contains("Applied in one transaction: 2 tokens cleared, 0 skipped."), "\(apply.stdout)")
        #expect(apply.stdout.contains("Webhook: 2 posted, 0 failed."), "\(apply.stdout)")
        let bodies = try received.all.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(bodies.compactMap { $0["token"] as? String }.sorted() == [F.dead1, F.badBoth].sorted())
        #expect(bodies.allSatisfy { $0["platform"] as? String == "ios" && $0["tenant"] is String })

        // A second --apply clears nothing, and so posts nothing.
        let again = try await CLI.run(["token", "prune", "--store", db, "--apply"] + sources + hook)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("Webhook: 0 posted, 0 failed."), "\(again.stdout)")
        #expect(received.all.count == 2)

        // Nothing listens: each POST tried twice, reported on stderr, exit 1; the clear still done.
        let other = dir.appendingPathComponent("other.sqlite").path
        try await Self.sqliteFleet(other)
        let closed = try freeLoopbackPort()
        let down = try await CLI.run(
            [
                "token", "prune", "--store", other, "--ledger", ledgerPath, "--apply", "--webhook",
                "http://127.0.0.1:\(closed)/x", "--webhook-attempts", "2", "--webhook-timeout", "2",
            ])
        #expect(down.status == 1, "\(down.stderr)")
        #expect(down.stdout.contains("Dead (1)"))
        #expect(down.stdout.contains("1 token cleared"), "\(down.stdout)")
        #expect(down.stderr.contains("webhook: vvwilhelmus/dev-dead1 token \(DeviceToken.redacted(F.dead1))"))
        #expect(down.stderr.contains("after 2 attempts"))
        #expect(!down.stderr.contains(F.dead1))
    }

    @Test("--webhook with --apply: a row the guarded clear skips (re-registered during the run) is not posted")
    func webhookSkipsWhatTheGuardKept() async throws {
        let server = try await PostgresServer.sharedServer()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (ledgerPath, statePath) = try F.writeAnswers(dir)
        let database = try await F.pgFleetDatabase(server)
        let url = server.url(database)
        let received = Received()
        let hook = try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: 0), logger: Logger(label: "test.webhook")
        ) { request in
            received.add(request.body)
            return .json(.object(["ok": .bool(true)]))
        }
        defer { Task { await hook.stop() } }

        // The app registers dev-dead1's token again while the prune runs: a transaction of its own updates the row
        // (uncommitted, so the plan still reads the old registration) and holds it until the prune's clear waits.
        let app = try await PQConnection.connect(url: try PostgresURL(parsing: url), readOnly: false, pooled: false)
        defer { app.close() }
        let appPID = try await app.run { c in
            try c.exec("BEGIN")
            try c.exec(
                "UPDATE public.device_enrollments SET updated_at = '2027-02-01 08:00:00' WHERE device_id = 'dev-dead1'")
            return try c.exec("SELECT pg_backend_pid()::text").rows.first?.first ?? nil
        }
        let prune = Task {
            try await CLI.run(
                [
                    "token", "prune", "--store", url, "--ledger", ledgerPath, "--audit-state", statePath, "--queue",
                    url, "--apply", "--json", "--webhook", "http://127.0.0.1:\(hook.port)/feedback",
                ])
        }
        // Wait (at most 300 s: a loaded machine running the whole suite can take a minute to start the prune) until
        // the prune's clear is blocked behind the app's row lock, then commit. Watched from a connection of its own:
        // inside the app's transaction pg_stat_activity would stay as first read.
        let watch = try await PQConnection.connect(url: try PostgresURL(parsing: url), readOnly: true, pooled: false)
        defer { watch.close() }
        var blocked = false
        for _ in 0..<3000 where !blocked {
            let waiting = try await watch.run { c in
                try c.exec(
                    "SELECT count(*)::text FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1",
                    [appPID]
                ).rows.first?.first ?? nil
            }
            blocked = (waiting.flatMap { Int($0) } ?? 0) > 0
            if !blocked { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(blocked, "the prune's clear never waited for the row")
        _ = try await app.run { c in try c.exec("COMMIT") }
        let r = try await prune.value

        #expect(r.status == 1, "\(r.stdout) \(r.stderr)")
        let json = try r.json()
        #expect(
            Set((json["dead"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String })
                == F.expectedDead)
        let applied = json["applied"] as? [String: Any]
        #expect(applied?["cleared"] as? Int == 2)
        let skipped = (applied?["skipped"] as? [[String: Any]] ?? []).map {
            "\($0["device_id"] as? String ?? "?") \($0["why"] as? String ?? "?")"
        }
        #expect(skipped == ["dev-dead1 re-registered"])
        #expect((json["webhook"] as? [String: Any])?["posted"] as? Int == 2)
        let posted = try received.all.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])["token"] as? String
        }
        #expect(posted.compactMap { $0 }.sorted() == [F.dead2, F.badBoth].sorted(), "posted: \(posted)")
        #expect(
            try await server.runSQL(
                "SELECT device_id FROM public.device_enrollments WHERE apns_token IS NULL ORDER BY device_id;",
                database: database
            ).contains("dev-dead1") == false)
    }

    @Test("Bad flags and inputs: exit 64 or 2, naming the flag")
    func badInput() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        try await Self.sqliteFleet(db)
        let notJSON = dir.appendingPathComponent("notes.txt").path
        try Data("hello\nworld\n".utf8).write(to: URL(fileURLWithPath: notJSON))
        let empty = dir.appendingPathComponent("empty.jsonl").path
        try Data().write(to: URL(fileURLWithPath: empty))
        let cases: [([String], Int32, String)] = [
            (["token", "prune", "--store", db], 64, "--ledger"),
            (["token", "prune", "--store", db, "--ledger", notJSON], 2, "holds no result line"),
            // A 0-byte ledger is refused as the guide says, never taken as "nothing is dead".
            (["token", "prune", "--store", db, "--ledger", empty], 2, "is empty: it holds no result line"),
            (["token", "prune", "--store", db, "--ledger", dir.appendingPathComponent("none").path], 2, "none"),
            (["token", "prune", "--store", db, "--ledger", notJSON, "--webhook", "ftp://x"], 64, "--webhook"),
            (
                ["token", "prune", "--store", db, "--ledger", notJSON, "--webhook-attempts", "0"], 64,
                "--webhook-attempts"
            ),
            (
                ["token", "prune", "--store", db, "--ledger", notJSON, "--webhook-timeout", "nan"], 64,
                "--webhook-timeout"
            ),
            (["token", "prune", "--store", db, "--queue", "/tmp/x.sqlite"], 64, "--queue"),
        ]
        for (args, status, words) in cases {
            let r = try await CLI.run(args)
            #expect(r.status == status, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
    }
}

/// The webhook's request bodies.
final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var bodies: [[UInt8]] = []
    func add(_ body: [UInt8]) { lock.withLock { bodies.append(body) } }
    var all: [[UInt8]] { lock.withLock { bodies } }
}
