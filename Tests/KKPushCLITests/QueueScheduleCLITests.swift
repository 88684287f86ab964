import Foundation
import KKPushCore
import KKPushQueue
import KKPushTestSupport
import Testing

/// `kkpush queue enqueue --at/--time-zone/--idempotency-key/--quiet-hours`, `queue prune-keys`, `queue status`'s
/// waits and the worker's policy flags, as commands against a real PostgreSQL server.
@Suite("kkpush queue: scheduled sends, idempotency keys and policy flags (the command line)", .serialized)
struct QueueScheduleCLITests {
    typealias Q = PushQueueFixtures

    @Test("enqueue --at in a skipped hour waits until 03:00 CEST; the same key again queues nothing; status says so")
    func enqueueAtWithKey() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        let db = pg.url(database)
        let tokens = TestTokens.random(2)
        let args = [
            "queue", "enqueue", "--db", db, "--tokens", "-", "--topic", Q.topic, "--title", "Dienst",
            "--at", "2030-03-31 02:30", "--time-zone", "Europe/Amsterdam", "--idempotency-key", "dienst-9-v3",
            "--quiet-hours", "Europe/Amsterdam=22:00-07:00", "--json",
        ]
        let input = tokens.joined(separator: "\n") + "\n"
        let first = try await CLI.run(args, stdin: input)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try first.json()["enqueued"] as? Int == 2 && first.json()["repeated"] as? Int == 0)
        let again = try await CLI.run(args, stdin: input)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try again.json()["enqueued"] as? Int == 0 && again.json()["repeated"] as? Int == 2)
        let rows = try await Q.rows(
            pg, database,
            "to_char(not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), idempotency_key, quiet_hours, state")
        #expect(
            rows
                == Array(
                    repeating: ["2030-03-31 01:00", "dienst-9-v3", "Europe/Amsterdam=22:00-07:00", "queued"], count: 2))
        let status = try await CLI.run(["queue", "status", "--db", db])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("waiting for scheduled: 2 until 2030-03-31T01:00:00Z"), "\(status.stdout)")
        let json = try await CLI.run(["queue", "status", "--db", db, "--json"])
        let waits = try #require(try json.json()["waits"] as? [[String: Any]])
        #expect(waits.count == 1 && waits[0]["reason"] as? String == "scheduled" && waits[0]["rows"] as? Int == 2)
        // prune-keys: nothing ended, nothing cleared; ended 40 days ago, both keys cleared.
        let none = try await CLI.run(["queue", "prune-keys", "--db", db, "--json"])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(try none.json()["pruned"] as? Int == 0)
        _ = try await pg.runSQL(
            "UPDATE public.kkpush_push_queue SET state = 'accepted', updated_at = now() - interval '40 days'",
            database: database)
        let pruned = try await CLI.run(["queue", "prune-keys", "--db", db])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(pruned.stdout.contains("cleared 2 idempotency keys of rows that ended more than 30 days ago"))
    }

    @Test("A bad send time, zone, window, rate or cap is refused naming its flag (exit 64), nothing queued")
    func badPolicyFlags() async throws {
        let (pg, database, _) = try await Q.migratedDatabase()
        let db = pg.url(database)
        let base = ["queue", "enqueue", "--db", db, "--tokens", "-", "--topic", Q.topic, "--title", "Dienst"]
        let cases: [([String], String)] = [
            (["--at", "2030-03-31 02:30", "--time-zone", "Europe/Atlantis"], "--time-zone"),
            (["--at", "31-03-2030", "--time-zone", "Europe/Amsterdam"], "--at"),
            (["--at", "2030-03-31 02:30"], "--time-zone"),
            (["--quiet-hours", "22:00-07:00"], "--quiet-hours"),
            (["--idempotency-key", " "], "--idempotency-key"),
        ]
        for (extra, flag) in cases {
            let result = try await CLI.run(base + extra, stdin: TestTokens.random() + "\n")
            #expect(result.status == 64, "\(extra): \(result.stderr)")
            #expect(result.stderr.contains(flag), "\(extra): \(result.stderr)")
        }
        for (extra, flag) in [
            (["--rate", "topic=\(Q.topic):fast"], "--rate"), (["--device-cap", "3/1y"], "--device-cap"),
            (["--quiet-hours", "Europe/Amsterdam=22:00"], "--quiet-hours"),
        ] {
            let result = try await CLI.run(
                ["worker", "--db", db, "--key", Q.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"] + extra)
            #expect(result.status == 64, "\(extra): \(result.stderr)")
            #expect(result.stderr.contains(flag) && !result.stderr.contains("(rate)"), "\(extra): \(result.stderr)")
        }
        #expect(try await Q.rows(pg, database, "id").isEmpty)
    }
}
