import Foundation
import KKPushCore
import KKPushDiagnosis
import KKPushTestSupport
import Testing

/// `kkpush token prune` weighs APNs' acceptances against its dead answers: a push accepted after a 410 (a later line
/// of the ledger, a line of a later ledger, a later accepted row of the push queue) keeps the token, and the plan
/// says why; tokens are matched whatever their case in the ledger, the queue, the probe state and the store.
@Suite("token prune: later acceptances and token case")
struct TokenPruneAcceptedCLITests {
    static func token(_ pair: String) -> String { String(repeating: pair, count: 32) }

    // Every enrollment is registered 2027-01-10 08:00:00, before every answer below.
    static let ledgerLater = token("1a")  // 410 at line 1, accepted at line 3: kept
    static let ledgerEarlier = token("2b")  // accepted at line 2, 410 at line 4: dead
    static let nextFile = token("3c")  // 410 in the first ledger, accepted in the second: kept
    static let queueLater = token("4d")  // queue: 410 row, then an accepted row: kept
    static let queueEarlier = token("5e")  // queue: an accepted row, then a 410 row: dead
    static let upperKept = token("6f")  // ledger 410 in lowercase, accepted later in capitals, stored mixed: kept
    static let queueUpperDead = token("7a")  // stored lowercase, the queue's 410 row in capitals: dead
    static let queueUpperKept = token("8b")  // queue 410 in lowercase, a later accepted row in capitals: kept
    static let probeUpper = token("9c")  // stored in capitals; the probe state hashes the lowercase token: dead
    static let orderUnknown = token("ad")  // an accepted ledger line against the queue's 410: kept

    static let firstLedger =
        [
            TokenPruneFixtures.resultLine(
                1, ledgerLater, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.123Z"),
            TokenPruneFixtures.resultLine(2, ledgerEarlier, status: 200, reason: nil, at: nil),
            TokenPruneFixtures.resultLine(3, ledgerLater, status: 200, reason: nil, at: nil),
            TokenPruneFixtures.resultLine(
                4, ledgerEarlier, status: 410, reason: "Unregistered", at: "2027-01-15T09:31:00.000Z"),
            TokenPruneFixtures.resultLine(
                5, nextFile, status: 410, reason: "ExpiredToken", at: "2027-01-15T09:30:00.000Z"),
            TokenPruneFixtures.resultLine(
                6, upperKept, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.000Z"),
            TokenPruneFixtures.resultLine(7, upperKept.uppercased(), status: 200, reason: nil, at: nil),
            TokenPruneFixtures.resultLine(8, orderUnknown, status: 200, reason: nil, at: nil),
        ].joined(separator: "\n") + "\n"

    static let secondLedger = TokenPruneFixtures.resultLine(1, nextFile, status: 200, reason: nil, at: nil) + "\n"

    /// audit --probe's state, written for the lowercase token: BadDeviceToken in both environments.
    static var auditState: String {
        "{\"token_sha256\":\"\(AuditProbeState.key(probeUpper))\",\"sandbox\":{\"status\":400,\"reason\":\"BadDeviceToken\"},\"production\":{\"status\":400,\"reason\":\"BadDeviceToken\"},\"at\":\(TokenPruneFixtures.ms("2027-01-17T08:00:00.000Z"))}\n"
    }

    static func queueRow(_ token: String, _ state: String, _ reason: String?, apns: String?, updated: String)
        -> String
    {
        let status = state == "accepted" ? "200" : "410"
        return
            "('\(token)', 'nl.kantinekoning.app', '{\"aps\":{\"alert\":\"Kantinedienst\"}}', 'production', '\(state)', \(status), \(reason.map { "'\($0)'" } ?? "NULL"), \(apns.map { "'\($0)'" } ?? "NULL"), '\(updated)')"
    }

    /// The push queue's rows, inserted into the table `queue migrate` creates.
    static let queueRows = """
        INSERT INTO public.kkpush_push_queue
            (device_token, topic, payload, environment, state, status, reason, apns_timestamp, updated_at) VALUES
        \([
            queueRow(queueLater, "dead", "Unregistered", apns: "2027-01-16 12:00:00.250+00", updated: "2027-01-16 12:00:01+00"),
            queueRow(queueLater, "accepted", nil, apns: nil, updated: "2027-01-17 08:00:00+00"),
            queueRow(queueEarlier, "accepted", nil, apns: nil, updated: "2027-01-12 08:00:00+00"),
            queueRow(queueEarlier, "rejected", "Unregistered", apns: "2027-01-16 12:00:00+00", updated: "2027-01-16 12:00:01+00"),
            queueRow(queueUpperDead.uppercased(), "dead", "Unregistered", apns: "2027-01-16 12:00:00+00", updated: "2027-01-16 12:00:01+00"),
            queueRow(queueUpperKept, "dead", "ExpiredToken", apns: "2027-01-16 12:00:00+00", updated: "2027-01-16 12:00:01+00"),
            queueRow(queueUpperKept.uppercased(), "accepted", nil, apns: nil, updated: "2027-01-18 08:00:00+00"),
            queueRow(orderUnknown, "dead", "Unregistered", apns: "2027-01-16 12:00:00+00", updated: "2027-01-16 12:00:01+00"),
        ].joined(separator: ",\n"));
        """

    /// The enrollments: (device id, the token as stored).
    static let fleet: [(String, String)] = [
        ("dev-ledger-later", ledgerLater), ("dev-ledger-earlier", ledgerEarlier), ("dev-next-file", nextFile),
        ("dev-queue-later", queueLater), ("dev-queue-earlier", queueEarlier),
        ("dev-upper-kept", String(upperKept.prefix(32)) + upperKept.suffix(32).uppercased()),
        ("dev-queue-upper-dead", queueUpperDead), ("dev-queue-upper-kept", queueUpperKept),
        ("dev-probe-upper", probeUpper.uppercased()), ("dev-order-unknown", orderUnknown),
    ]

    static let expectedDead: Set<String> = [
        "dev-ledger-earlier", "dev-queue-earlier", "dev-queue-upper-dead", "dev-probe-upper",
    ]
    static let expectedKept: [String: String] = [
        "dev-ledger-later": "accepted-later", "dev-next-file": "accepted-later", "dev-upper-kept": "accepted-later",
        "dev-queue-later": "accepted-later", "dev-queue-upper-kept": "accepted-later",
        "dev-order-unknown": "accepted-order-unknown",
    ]

    static func database(_ server: PostgresServer) async throws -> String {
        let database = try await server.newDatabase("prune")
        let migrate = try await CLI.run(["queue", "migrate", "--db", server.url(database)])
        #expect(migrate.status == 0, "\(migrate.stderr)")
        let rows = fleet.map {
            TokenPruneFixtures.pgRow($0.0, "agovv", $0.1, updated: "2027-01-10 08:00:00")
        }
        try await server.runSQL(
            TokenPruneFixtures.backendTable + "INSERT INTO public.device_enrollments VALUES\n"
                + rows.joined(separator: ",\n") + ";\n" + queueRows,
            database: database)
        return database
    }

    @Test("PostgreSQL: a later acceptance (ledger line, later ledger, queue row) keeps the token; case is no matter")
    func laterAcceptanceKeeps() async throws {
        let server = try await PostgresServer.sharedServer()
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = dir.appendingPathComponent("results-1.jsonl").path
        let second = dir.appendingPathComponent("results-2.jsonl").path
        let state = dir.appendingPathComponent("probe.state").path
        try Data(Self.firstLedger.utf8).write(to: URL(fileURLWithPath: first))
        try Data(Self.secondLedger.utf8).write(to: URL(fileURLWithPath: second))
        try Data(Self.auditState.utf8).write(to: URL(fileURLWithPath: state))
        let applied = try await Self.database(server)
        let expected = try await Self.database(server)
        let url = server.url(applied)
        let sources = ["--ledger", first, "--ledger", second, "--audit-state", state, "--queue", url]

        let plan = try await CLI.run(["token", "prune", "--store", url, "--json"] + sources)
        #expect(plan.status == 0, "\(plan.stdout) \(plan.stderr)")
        let json = try plan.json()
        let dead = (json["dead"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }
        #expect(Set(dead) == Self.expectedDead && dead.count == Self.expectedDead.count, "\(dead)")
        let keptRows = json["kept"] as? [[String: Any]] ?? []
        let kept = keptRows.reduce(into: [String: String]()) {
            $0[$1["device_id"] as? String ?? "?"] = $1["why"] as? String
        }
        #expect(kept == Self.expectedKept)
        // The plan says which acceptance keeps each token.
        let explanation = keptRows.reduce(into: [String: String]()) {
            $0[$1["device_id"] as? String ?? "?"] = $1["explanation"] as? String
        }
        #expect(
            explanation["dev-ledger-later"]?.contains(
                "after the dead answer (send-batch ledger results-1.jsonl line 3)") == true, "\(explanation)")
        #expect(explanation["dev-next-file"]?.contains("results-2.jsonl line 1") == true, "\(explanation)")
        #expect(
            explanation["dev-queue-later"]?.contains("push queue kkpush_push_queue (accepted") == true, "\(explanation)"
        )
        #expect(explanation["dev-order-unknown"]?.contains("nothing shows it was before the dead answer") == true)
        #expect(json["unmatched"] as? Int == 0)

        // The text plan says it too, with token prefixes only.
        let text = try await CLI.run(["token", "prune", "--store", url] + sources)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.stdout.contains(
                "agovv/dev-ledger-later  token \(DeviceToken.redacted(Self.ledgerLater))  accepted-later: APNs accepted a push to the token after the dead answer"
            ), "\(text.stdout)")
        #expect(text.stdout.contains("Dead (4)") && text.stdout.contains("Kept (6)"), "\(text.stdout)")

        // --apply clears the dead four (the stored token in its own case) and nothing else.
        let apply = try await CLI.run(["token", "prune", "--store", url, "--apply"] + sources)
        #expect(apply.status == 0, "\(apply.stdout) \(apply.stderr)")
        #expect(apply.stdout.contains("Applied in one transaction: 4 tokens cleared, 0 skipped."), "\(apply.stdout)")
        let cleared = Self.expectedDead.sorted().map { "'\($0)'" }.joined(separator: ", ")
        try await server.runSQL(
            "UPDATE public.device_enrollments SET apns_token = NULL WHERE device_id IN (\(cleared));",
            database: expected)
        #expect(
            try await TokenPruneFixtures.dump(server, applied) == (try await TokenPruneFixtures.dump(server, expected)))
    }

    @Test(
        "SQLite: an accepted line after the 410 keeps the token; one before it does not; a ledger in capitals matches")
    func sqliteLedgerOrder() async throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        try await TokenPruneCLITests.sqliteFleet(db)
        let before = try await TokenPruneCLITests.sqliteDump(db)
        // dev-dead1: 410 then accepted (kept); dev-alive: accepted then 410, the 410's token in capitals (dead).
        let ledger = dir.appendingPathComponent("results.jsonl").path
        try Data(
            [
                TokenPruneFixtures.resultLine(
                    1, TokenPruneFixtures.dead1, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.123Z"),
                TokenPruneFixtures.resultLine(2, TokenPruneFixtures.alive, status: 200, reason: nil, at: nil),
                TokenPruneFixtures.resultLine(3, TokenPruneFixtures.dead1, status: 200, reason: nil, at: nil),
                TokenPruneFixtures.resultLine(
                    4, TokenPruneFixtures.alive.uppercased(), status: 410, reason: "Unregistered",
                    at: "2027-01-15T09:30:00.123Z"),
            ].joined(separator: "\n").utf8
        ).write(to: URL(fileURLWithPath: ledger))

        let r = try await CLI.run(["token", "prune", "--store", db, "--ledger", ledger, "--apply", "--json"])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let json = try r.json()
        #expect((json["dead"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String } == ["dev-alive"])
        let kept = json["kept"] as? [[String: Any]] ?? []
        #expect(kept.count == 1)
        #expect(kept.first?["device_id"] as? String == "dev-dead1")
        #expect(kept.first?["why"] as? String == "accepted-later")
        #expect((json["applied"] as? [String: Any])?["cleared"] as? Int == 1)
        let after = try await TokenPruneCLITests.sqliteDump(db)
        for (b, a) in zip(before.split(separator: "\n"), after.split(separator: "\n")) {
            if b.contains("|dev-alive|") {
                #expect(a.split(separator: "|", omittingEmptySubsequences: false)[5] == "")
            } else {
                #expect(a == b)
            }
        }
    }
}
