import Foundation
import KKPushCore
import KKPushStore
import KKPushTestSupport
import Testing

@testable import KKPushQueue

/// Confirmed receipts on the push queue, against a real PostgreSQL: schema version 3's columns and push id, a
/// receipt recorded by apns-id or by push id and token, and `kkpush receipts`' counts and silent tokens.
@Suite("The push queue's receipts")
struct QueueReceiptTests {
    static let tokenA = String(repeating: "a1", count: 32)
    static let tokenB = String(repeating: "b2", count: 32)
    static let tokenC = String(repeating: "c3", count: 32)

    static func database(_ name: String) async throws -> PostgresURL {
        let server = try await PostgresServer.sharedServer()
        return try PostgresURL(parsing: server.url(try await server.newDatabase(name)))
    }

    /// Ends row `id` as the worker does for a 200, `ago` seconds ago.
    static func accept(_ store: PushQueueStore, _ id: Int64, apnsID: String, ago: Double) async throws {
        _ = try await store.exec(
            """
            UPDATE \(PushQueueSchema.table) SET state = 'accepted', apns_id = $2, status = 200,
                updated_at = now() - make_interval(secs => $3::float8) WHERE id = $1::bigint
            """, [String(id), apnsID, String(ago)])
    }

    static func insert(_ token: String, payload: String, type: String = "alert") -> QueueInsert {
        QueueInsert(
            deviceToken: token, topic: "nl.kantinekoning.app", pushType: type, priority: nil, payload: payload,
            environment: .sandbox)
    }

    @Test("An older queue gets the receipt columns by a new step; push_id is filled from the payload's kk_push_id")
    func migrationFromVersionTwo() async throws {
        let url = try await Self.database("receipts_upgrade")
        try await PushQueueStore.withStore(url: url) { store in
            // The queue as kkpush with two steps left it, with a row already in it.
            _ = try await store.exec(
                "CREATE TABLE \(PushQueueSchema.versionsTable) (version int PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for step in PushQueueSchema.migrations.prefix(2) {
                for statement in step.statements { _ = try await store.exec(statement) }
                _ = try await store.exec(
                    "INSERT INTO \(PushQueueSchema.versionsTable) (version, description) VALUES ($1::int, $2)",
                    [String(step.version), step.description])
            }
            let old = try await store.enqueue([Self.insert(Self.tokenA, payload: #"{"aps":{},"kk_push_id":"d-1"}"#)])
            let refused = await #expect(throws: KKPushError.self) {
                try await PushQueueStore.receiptsReport(url: url, since: nil, grace: 0)
            }
            #expect(refused?.code == .queueNotMigrated && refused?.message.contains("receipts need version 3") == true)

            let result = try await PushQueueSchema.migrate(url: url)
            // Step 3 first, then the steps after it (4: Live Activity rows, and later ones).
            #expect(
                result.applied.count == PushQueueSchema.migrations.count - 2
                    && result.applied.first?.hasPrefix("3: receipt columns") == true)
            #expect(result.version == PushQueueSchema.latestVersion)
            let ids = try await store.enqueue([
                Self.insert(Self.tokenA, payload: #"{"aps":{},"kk_push_id":42}"#),
                Self.insert(Self.tokenA, payload: #"{"aps":{"alert":"x"}}"#),
                // Not JSON (a backend's own INSERT): the row goes in, without a push id.
                Self.insert(Self.tokenA, payload: "not json"),
            ])
            let rows = try await store.exec(
                "SELECT id, push_id FROM \(PushQueueSchema.table) ORDER BY id", [])
            let pushIDs = Dictionary(
                uniqueKeysWithValues: rows.rows.map { (Int64($0[0] ?? "0") ?? 0, $0[1] ?? "NULL") })
            #expect(pushIDs[old[0]] == "d-1" && pushIDs[ids[0]] == "42")
            #expect(pushIDs[ids[1]] == "NULL" && pushIDs[ids[2]] == "NULL")
        }
    }

    @Test("A receipt marks its row by apns-id (any case), or by push id for the posting token only")
    func recordReceipt() async throws {
        let url = try await Self.database("receipts_record")
        _ = try await PushQueueSchema.migrate(url: url)
        try await PushQueueStore.withStore(url: url) { store in
            let payload = #"{"aps":{"content-available":1},"kk_push_id":"dienst-7"}"#
            let ids = try await store.enqueue([
                Self.insert(Self.tokenA, payload: payload, type: "background"),
                Self.insert(Self.tokenB, payload: payload, type: "background"),
                Self.insert(Self.tokenC, payload: #"{"aps":{"alert":"x"}}"#),
            ])
            let apnsC = "6F1E6B7A-2C44-4E0B-9C1D-0A3B5C7D9E11"
            try await Self.accept(store, ids[0], apnsID: "11111111-2222-3333-4444-555555555555", ago: 10)
            try await Self.accept(store, ids[1], apnsID: "11111111-2222-3333-4444-666666666666", ago: 10)
            try await Self.accept(store, ids[2], apnsID: apnsC, ago: 10)
            let received = Date(timeIntervalSince1970: 1_800_000_000)

            let byPush = try await store.recordReceipt(
                QueueReceipt(
                    pushID: "dienst-7", deviceToken: Self.tokenB.uppercased(), receivedAt: received,
                    handled: "refreshed", appVersion: "2.4.0", appBuild: "240"))
            #expect(byPush == [ids[1]])
            let byAPNs = try await store.recordReceipt(
                QueueReceipt(apnsID: apnsC.lowercased(), receivedAt: received, handled: "shown"))
            #expect(byAPNs == [ids[2]])
            // The app's later receipt (refreshed on open) replaces what was handled; received_at keeps the first.
            _ = try await store.recordReceipt(
                QueueReceipt(
                    apnsID: apnsC, receivedAt: received.addingTimeInterval(60),
                    handledAt: received.addingTimeInterval(90),
                    handled: "refreshed"))
            let row = try await store.exec(
                """
                SELECT extract(epoch FROM received_at)::bigint, handled, extract(epoch FROM handled_at)::bigint,
                    history -> -1 ->> 'outcome'
                FROM \(PushQueueSchema.table) WHERE id = $1::bigint
                """, [String(ids[2])])
            #expect(row.rows.first == ["1800000000", "refreshed", "1800000090", "receipt"])
            let unknown = try await store.recordReceipt(
                QueueReceipt(
                    pushID: "dienst-7", deviceToken: String(repeating: "00", count: 32), receivedAt: received,
                    handled: "shown"))
            #expect(unknown.isEmpty)

            let noToken = await #expect(throws: KKPushError.self) {
                try await store.recordReceipt(QueueReceipt(pushID: "dienst-7", receivedAt: received, handled: "shown"))
            }
            #expect(noToken?.code == .queueReceiptInvalid && noToken?.message.contains("(deviceToken)") == true)
            let badHandled = await #expect(throws: KKPushError.self) {
                try await store.recordReceipt(QueueReceipt(apnsID: apnsC, receivedAt: received, handled: "opened"))
            }
            #expect(badHandled?.code == .queueReceiptInvalid && badHandled?.message.contains("'opened'") == true)
        }
    }

    @Test("The report: accepted vs received vs handled by group, and the token that accepts but never receives")
    func report() async throws {
        let url = try await Self.database("receipts_report")
        _ = try await PushQueueSchema.migrate(url: url)
        try await PushQueueStore.withStore(url: url) { store in
            let background = #"{"aps":{"content-available":1},"kk_push_id":"d-9"}"#
            let ids = try await store.enqueue([
                Self.insert(Self.tokenA, payload: background, type: "background"),
                Self.insert(Self.tokenA, payload: #"{"aps":{"alert":"a"}}"#),
                Self.insert(Self.tokenB, payload: background, type: "background"),
                Self.insert(Self.tokenC, payload: #"{"aps":{"alert":"c"}}"#),
            ])
            for (i, id) in ids.enumerated() {
                // Row 3 (token C) was accepted a moment ago: within the grace, not yet "not received".
                try await Self.accept(
                    store, id, apnsID: "11111111-2222-3333-4444-00000000000\(i)", ago: i == 3 ? 5 : 7200)
            }
            // Before any receipt: nothing received, and no token named (the app may post none at all).
            let before = try await PushQueueStore.receiptsReport(url: url, since: nil, grace: 3600)
            #expect(!before.receiptsSeen && before.neverReceived.isEmpty && before.totals.accepted == 4)
            #expect(before.totals.notReceived == 3 && before.totals.awaiting == 1)

            _ = try await store.recordReceipt(
                QueueReceipt(
                    pushID: "d-9", deviceToken: Self.tokenA, receivedAt: Date(), handled: "refreshed",
                    appVersion: "2.4.0", appBuild: "240"))
            let report = try await PushQueueStore.receiptsReport(url: url, since: nil, grace: 3600)
            #expect(report.receiptsSeen)
            let backgroundA = try #require(
                report.groups.first { $0.pushType == "background" && $0.appVersion == "2.4.0" })
            #expect(backgroundA.priority == 5 && backgroundA.environment == "sandbox")
            #expect(backgroundA.accepted == 1 && backgroundA.received == 1 && backgroundA.refreshed == 1)
            #expect(backgroundA.handled == 1 && backgroundA.notReceived == 0)
            // Token A's alert has no receipt of its own but takes A's app version.
            let alertA = try #require(report.groups.first { $0.pushType == "alert" && $0.appVersion == "2.4.0" })
            #expect(alertA.priority == 10 && alertA.accepted == 1 && alertA.received == 0 && alertA.notReceived == 1)
            #expect(report.totals.accepted == 4 && report.totals.received == 1 && report.totals.awaiting == 1)
            // Token B accepted and never received; token C is within the grace; token A sent a receipt.
            #expect(report.neverReceived.map(\.deviceToken) == [Self.tokenB] && report.neverReceivedTotal == 1)
            #expect(report.neverReceived.first?.accepted == 1 && report.neverReceived.first?.appVersion == nil)

            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let object = try #require(
                try JSONSerialization.jsonObject(with: encoder.encode(report)) as? [String: Any])
            #expect(
                Set(object.keys) == [
                    "since", "grace_seconds", "groups", "totals", "never_received", "never_received_total",
                    "receipts_seen",
                ])
            #expect(object["since"] is NSNull)

            let later = try await PushQueueStore.receiptsReport(
                url: url, since: Date().addingTimeInterval(3600), grace: 3600)
            #expect(later.groups.isEmpty && later.neverReceived.isEmpty)
        }
    }

    @Test("PushQueue.md's receipt UPDATE is the statement recordReceipt runs")
    func guideStatement() throws {
        let guide = try String(
            contentsOf: Repository.root.appendingPathComponent("Sources/kkpush/kkpush.docc/PushQueue.md"),
            encoding: .utf8)
        let section = try #require(guide.range(of: "## Receipts"))
        let rest = guide[section.upperBound...]
        let open = try #require(rest.range(of: "```sql\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        let shown = String(rest[open.upperBound..<close.lowerBound])
        #expect(shown == PushQueueSchema.recordReceiptSQL + ";\n")
    }
}
