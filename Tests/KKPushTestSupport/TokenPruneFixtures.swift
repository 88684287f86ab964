package import Foundation
import KKPushCore
package import KKPushDiagnosis
import KKPushStore

/// A fleet with dead tokens and the files of APNs' answers about them, as `token prune`'s engine tests
/// (KKPushDiagnosisTests) and the command's tests (KKPushCLITests) both use them: the enrollments in the backend's
/// PostgreSQL table (Ecto's `timestamp(0)`) with the push queue's table beside it, send-batch's result lines and
/// `audit --probe`'s state, and what the plan is expected to say.
package enum TokenPruneFixtures {
    // Tokens: one per enrollment, 64 hex characters.
    package static let dead1 = String(repeating: "a1", count: 32)  // 410 after its registration (ledger)
    package static let reRegistered = String(repeating: "b2", count: 32)  // 410 before its registration (ledger)
    package static let dead2 = String(repeating: "c3", count: 32)  // 410 after its registration (push queue)
    package static let badOne = String(repeating: "d4", count: 32)  // BadDeviceToken from one environment (ledger)
    package static let badBoth = String(repeating: "e5", count: 32)  // BadDeviceToken in both (audit probe state)
    package static let alive = String(repeating: "f6", count: 32)  // accepted
    package static let sameSecond = String(repeating: "a7", count: 32)  // 410 in the second it was registered
    package static let nobody = String(repeating: "b8", count: 32)  // 410 for a token no enrollment holds

    package static func ms(_ iso: String) -> Int {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Int((f.date(from: iso)!.timeIntervalSince1970 * 1000).rounded())
    }

    package static func resultLine(_ index: Int, _ token: String, status: Int, reason: String?, at: String?) -> String {
        var out: [UInt8] = []
        JSONValue.writeOrderedObject(
            [
                ("index", .int(index)), ("token", .string(token)),
                ("status", .string(status == 200 ? "accepted" : "rejected")),
                ("apns_id", .null), ("apns_unique_id", .null), ("reason", reason.map(JSONValue.string) ?? .null),
                ("http_status", .int(status)), ("timestamp", at.map { .int(ms($0)) } ?? .null),
                ("environment", .string("production")), ("duration_ms", .double(3.2)), ("attempts", .int(1)),
                ("possibly_duplicated", .bool(false)),
            ], to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// send-batch's result lines: 410s with Apple's timestamp, a BadDeviceToken, an accepted push, and a line that
    /// is not JSON.
    package static let ledger =
        [
            resultLine(1, dead1, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.123Z"),
            resultLine(2, reRegistered, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.123Z"),
            resultLine(3, badOne, status: 400, reason: "BadDeviceToken", at: nil),
            resultLine(4, alive, status: 200, reason: nil, at: nil),
            resultLine(5, sameSecond, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.500Z"),
            resultLine(6, nobody, status: 410, reason: "Unregistered", at: "2027-01-15T09:30:00.000Z"),
            "this line is not JSON",
        ].joined(separator: "\n") + "\n"

    /// audit --probe's state: BadDeviceToken in both environments, probed after the registration.
    package static var auditState: String {
        "{\"token_sha256\":\"\(AuditProbeState.key(badBoth))\",\"sandbox\":{\"status\":400,\"reason\":\"BadDeviceToken\"},\"production\":{\"status\":400,\"reason\":\"BadDeviceToken\"},\"at\":\(ms("2027-01-17T08:00:00.000Z"))}\n"
    }

    /// The expected plan: dead and kept, by device id.
    package static let expectedDead: Set<String> = ["dev-dead1", "dev-dead2", "dev-badboth"]
    package static let expectedKept: [String: String] = [
        "dev-rereg": "re-registered", "dev-badone": "unconfirmed", "dev-samesecond": "re-registered",
    ]

    // MARK: The report's plan

    /// A plan of one dead token (vvwilhelmus/dev-dead, registered 2027-01-10T08:00:00.000Z, a 410 at
    /// 2027-01-15T09:30:00.123Z) and one kept (vvwilhelmus/dev-notime, a 410 without a time), 3 rows read, 1 unmatched
    /// and a note: what the report's tests (`TokenPruneReportTests`) and its JSON's (`ReportEncodingParityCLITests`)
    /// encode. Built by the plan's own judgement; a row it did not judge is left out (the callers count them).
    package static func reportPlan() -> DeadTokenPlan {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func row(_ device: String, _ token: String, registered: String?) -> RegisteredToken {
            RegisteredToken(
                tenantSlug: "vvwilhelmus", deviceID: device, token: token, status: "active",
                registeredAt: registered.flatMap(f.date(from:)), registeredColumn: "token_updated_at")
        }
        func gone(_ at: String?, line: Int) -> DeadTokenEvidence {
            DeadTokenEvidence(
                kind: .gone, source: .ledger, location: "results.jsonl line \(line)", answer: "410 Unregistered",
                environment: "production", at: at.flatMap(f.date(from:)), order: line)
        }
        var plan = DeadTokenPlan()
        plan.rowsRead = 3
        plan.unmatched = 1
        plan.notes = ["results.jsonl line 4 is not JSON: skipped"]
        let judged = [
            DeadTokenPlan.judge(
                row("dev-dead", String(repeating: "a1", count: 32), registered: "2027-01-10T08:00:00.000Z"),
                [gone("2027-01-15T09:30:00.123Z", line: 1)]),
            DeadTokenPlan.judge(
                row("dev-notime", String(repeating: "c3", count: 32), registered: nil), [gone(nil, line: 2)]),
        ]
        for judgement in judged {
            switch judgement {
            case .dead(let entry): plan.dead.append(entry)
            case .kept(let kept): plan.kept.append(kept)
            case nil: break
            }
        }
        return plan
    }

    // MARK: PostgreSQL

    /// The backend's table as Ecto makes it from the app README's columns (`timestamp(0)`: whole seconds).
    package static let backendTable = """
        CREATE TABLE public.device_enrollments (
            device_id character varying(255) NOT NULL,
            tenant_slug character varying(255) NOT NULL,
            team_codes text[] NOT NULL DEFAULT '{}',
            role character varying(255) NOT NULL,
            hardware_identifier character varying(255) NOT NULL,
            apns_token character varying(255),
            build_environment character varying(255),
            app_version character varying(255),
            is_test_user boolean NOT NULL DEFAULT false,
            status character varying(255) NOT NULL DEFAULT 'active',
            team_manager_email character varying(255),
            inserted_at timestamp(0) without time zone NOT NULL,
            updated_at timestamp(0) without time zone NOT NULL,
            PRIMARY KEY (tenant_slug, device_id));
        """

    /// The push queue's table with the columns the queue work gives it (its real migration comes from that work;
    /// this test creates it as those columns say).
    package static let queueTable = """
        CREATE TABLE public.kkpush_push_queue (
            device_token text NOT NULL, environment text NOT NULL, topic text NOT NULL, enrollment_id text,
            state text NOT NULL, status int, reason text, apns_timestamp timestamptz,
            updated_at timestamptz NOT NULL DEFAULT now());
        """

    package static func pgRow(_ device: String, _ tenant: String, _ token: String?, updated: String) -> String {
        let t = token.map { "'\($0)'" } ?? "NULL"
        return
            "('\(device)', '\(tenant)', '{JO11-3}', 'member', 'hw-\(device)', \(t), 'production', '1.4.2', false, 'active', NULL, '2027-01-01 10:00:00', '\(updated)')"
    }

    package static let pgFleet = """
        INSERT INTO public.device_enrollments VALUES
        \([
            pgRow("dev-dead1", "vvwilhelmus", dead1, updated: "2027-01-10 08:00:00"),
            pgRow("dev-rereg", "vvwilhelmus", reRegistered, updated: "2027-01-20 10:00:00"),
            pgRow("dev-dead2", "agovv", dead2, updated: "2027-01-10 08:00:00"),
            pgRow("dev-badone", "agovv", badOne, updated: "2027-01-10 08:00:00"),
            pgRow("dev-badboth", "agovv", badBoth, updated: "2027-01-10 08:00:00"),
            pgRow("dev-alive", "vvwilhelmus", alive, updated: "2027-01-10 08:00:00"),
            pgRow("dev-samesecond", "agovv", sameSecond, updated: "2027-01-15 09:30:00"),
            pgRow("dev-notoken", "agovv", nil, updated: "2027-01-10 08:00:00"),
        ].joined(separator: ",\n"));
        INSERT INTO public.kkpush_push_queue (device_token, environment, topic, enrollment_id, state, status, reason, apns_timestamp) VALUES
          ('\(dead2)', 'production', 'nl.kantinekoning.app', NULL, 'dead', 410, 'Unregistered', '2027-01-16 12:00:00.250+00'),
          ('\(alive)', 'production', 'nl.kantinekoning.app', 'dev-alive', 'rejected', 429, 'TooManyRequests', NULL);
        """

    /// Every row and column of the enrollment table, as psql prints it.
    package static func dump(_ server: PostgresServer, _ database: String) async throws -> String {
        try await server.runSQL(
            "SELECT t::text FROM public.device_enrollments t ORDER BY device_id;", database: database)
    }

    /// A database holding the fleet, and the files of APNs' answers.
    package static func pgFleetDatabase(_ server: PostgresServer) async throws -> String {
        let database = try await server.newDatabase("prune")
        try await server.runSQL(backendTable + queueTable + pgFleet, database: database)
        return database
    }

    package static func writeAnswers(_ dir: URL) throws -> (ledger: String, state: String) {
        let ledgerPath = dir.appendingPathComponent("results.jsonl").path
        let statePath = dir.appendingPathComponent("probe.state").path
        try Data(ledger.utf8).write(to: URL(fileURLWithPath: ledgerPath))
        try Data(auditState.utf8).write(to: URL(fileURLWithPath: statePath))
        return (ledgerPath, statePath)
    }
}
