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

/// Webhooks on final outcomes (schema step 6's outbox, `QueueWebhookDelivery`) against a real PostgreSQL server,
/// the mock, and a real HTTP receiver on 127.0.0.1 that is down for a while, then up.
@Suite("The push queue's webhooks (PostgreSQL, the mock, an HTTP receiver)", .serialized)
struct QueueWebhookTests {
    typealias Q = PushQueueFixtures
    static let secret = Array("whsec-test-5b1f0c2e".utf8)

    /// What the receiver got: each request's id header, signature header and body.
    final class Inbox: Sendable {
        struct Delivery: Sendable {
            var id: String
            var signature: String
            var body: [UInt8]
        }
        let all = Mutex<[Delivery]>([])
        func add(_ d: Delivery) { all.withLock { $0.append(d) } }
        var deliveries: [Delivery] { all.withLock { $0 } }
    }

    static func receiver(port: Int, inbox: Inbox) async throws -> HTTP1Server {
        try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: port), logger: Logger(label: "test.webhook.receiver")
        ) { request in
            inbox.add(
                .init(
                    id: request.headers.first(name: QueueWebhookSignature.idHeader) ?? "",
                    signature: request.headers.first(name: QueueWebhookSignature.header) ?? "", body: request.body))
            return .json(.object(["ok": .bool(true)]))
        }
    }

    /// A free loopback port: a listener opened and closed (nothing listens there until the receiver starts).
    static func freePort() async throws -> Int {
        let probe = try await HTTP1Server.start(
            .init(host: "127.0.0.1", port: 0), logger: Logger(label: "test.webhook.port")
        ) { _ in .json(.null) }
        let port = probe.port
        await probe.stop()
        await probe.wait()
        return port
    }

    /// A delivery to `path` on 127.0.0.1:`port`, on a store of its own, enabled and running: its store, itself and
    /// its task (stop it, await the task, close the store).
    static func startDelivery(
        url: PostgresURL, port: Int, path: String = "/hooks/kkpush", owner: String = "w-hooks", maxAttempts: Int,
        backoff: QueueVerdict.Backoff = .init(base: 0.2, maximum: 0.8), timeout: Double, batchSize: Int,
        metrics: QueueMetrics = QueueMetrics()
    ) async throws -> (store: PushQueueStore, delivery: QueueWebhookDelivery, running: Task<Void, Never>) {
        let store = PushQueueStore(url: url, connections: 1)
        let delivery = QueueWebhookDelivery(
            store: store,
            configuration: QueueWebhookConfiguration(
                url: URL(string: "http://127.0.0.1:\(port)\(path)")!, secret: secret, owner: owner,
                maxAttempts: maxAttempts, backoff: backoff, timeout: timeout, batchSize: batchSize, pollInterval: 0.1),
            metrics: metrics)
        try await delivery.enable()
        return (store, delivery, Task { await delivery.run() })
    }

    static func outbox(_ pg: PostgresServer, _ database: String) async throws -> [[String]] {
        let text = try await pg.runSQL(
            "SELECT event, state, attempts, coalesce(last_error, '') FROM public.kkpush_webhook_outbox ORDER BY id",
            database: database)
        return text.split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
    }

    @Test("The signature is HMAC-SHA256 of \"t.body\" in hex, as openssl computes it; verify refuses a change")
    func signatureMatchesOpenSSL() async throws {
        let body = Array(#"{"id":"e1","type":"push.accepted"}"#.utf8)
        let header = try QueueWebhookSignature.sign(body: body, secret: Self.secret, timestamp: 1_767_225_600)
        let openssl = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["openssl", "dgst", "-sha256", "-hmac", String(decoding: Self.secret, as: UTF8.self), "-r"],
            stdin: Data("1767225600.".utf8 + body), timeout: 30)
        let hex = try #require(
            String(decoding: openssl.stdout, as: UTF8.self).split(separator: " ").first.map(String.init))
        #expect(header == "t=1767225600,v1=\(hex)")
        let at = Date(timeIntervalSince1970: 1_767_225_600)
        #expect(QueueWebhookSignature.verify(header, body: body, secret: Self.secret, now: at))
        #expect(!QueueWebhookSignature.verify(header, body: body + [32], secret: Self.secret, now: at))
        #expect(!QueueWebhookSignature.verify(header, body: body, secret: Array("other".utf8), now: at))
        // A replay ten minutes later is refused by the timestamp.
        #expect(!QueueWebhookSignature.verify(header, body: body, secret: Self.secret, now: at + 600))
    }

    @Test(
        "Final outcomes and a receipt reach a receiver that was down for a while: each once by id, signed, never blocking sends"
    )
    func deliveredOnceAfterOutage() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let port = try await Self.freePort()
        let (side, delivery, running) = try await Self.startDelivery(
            url: url, port: port, maxAttempts: 50, timeout: 2, batchSize: 4)
        let inbox = Inbox()
        var receiver: HTTP1Server?
        try await withMockServer(configuration: .forTests()) { server in
            let tokens = TestTokens.random(5)
            _ = try server.addFault(
                MockFault(scope: .token(tokens[3]), kind: .respond(status: 410, reason: .unregistered), remaining: 1))
            _ = try server.addFault(.failNext(10, status: 503, scope: .token(tokens[4])))
            try await Q.insert(tokens, url: url)
            // The receiver is down: the queue drains all the same.
            let ending = try await Q.drain(server, url: url, owner: "w-send")
            #expect(ending.counts.accepted == 3 && ending.counts.rejected == 1 && ending.counts.dead == 1)
            #expect(ending.elapsed < .seconds(30), "sending waited for the webhook: \(ending.elapsed)")
            // A receipt on an accepted row, recorded with the library's statement.
            let apnsID = try #require(
                try await Q.rows(pg, database, "device_token, apns_id").first { $0[0] == tokens[0] }?[1])
            _ = try await PushQueueStore.withStore(url: url) {
                try await $0.recordReceipt(QueueReceipt(apnsID: apnsID, receivedAt: Date(), handled: "shown"))
            }
        }
        // Down for a while: every event failed at least twice before the receiver comes up.
        var outbox: [[String]] = []
        for _ in 0..<200 {
            outbox = try await Self.outbox(pg, database)
            if outbox.count == 6, outbox.allSatisfy({ (Int($0[2]) ?? 0) >= 2 }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(outbox.count == 6 && outbox.allSatisfy { (Int($0[2]) ?? 0) >= 2 && !$0[3].isEmpty }, "\(outbox)")
        #expect(inbox.deliveries.isEmpty)
        receiver = try await Self.receiver(port: port, inbox: inbox)
        for _ in 0..<300 {
            if try await side.webhookCounts().delivered == 6 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        delivery.stop()
        _ = await running.value
        let counts = try await side.webhookCounts()
        await side.close()
        if let receiver {
            await receiver.stop()
            await receiver.wait()
        }
        #expect(counts.delivered == 6 && counts.pending == 0 && counts.failed == 0, "\(counts)")

        // Each final outcome once (by id), every signature good, the id header the body's id.
        var byID: [String: [String: Any]] = [:]
        for d in inbox.deliveries {
            #expect(
                QueueWebhookSignature.verify(d.signature, body: d.body, secret: Self.secret),
                "bad signature \(d.signature)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(d.body)) as? [String: Any])
            #expect(object["id"] as? String == d.id)
            byID[d.id] = object
        }
        let events = byID.values.map { $0["type"] as? String ?? "" }.sorted()
        #expect(
            events == [
                "push.accepted", "push.accepted", "push.accepted", "push.dead", "push.receipt", "push.rejected",
            ],
            "\(events)")
        let finals = byID.values.filter { $0["type"] as? String != "push.receipt" }
        let rows = finals.compactMap { ($0["push"] as? [String: Any])?["id"] as? Int }
        #expect(Set(rows).count == 5, "a row's final outcome came twice or not at all: \(rows)")
        let rejected = try #require(byID.values.first { $0["type"] as? String == "push.rejected" })
        #expect((rejected["push"] as? [String: Any])?["reason"] as? String == "Unregistered")
        let receipt = try #require(byID.values.first { $0["type"] as? String == "push.receipt" })
        #expect((receipt["push"] as? [String: Any])?["handled"] as? String == "shown")
    }

    @Test("Webhook POSTs reuse their connections: 40 events over at most a batch's worth of connections")
    func connectionsReused() async throws {
        let (_, _, url) = try await Q.migratedDatabase()
        let port = try await Self.freePort()
        let inbox = Inbox()
        let receiver = try await Self.receiver(port: port, inbox: inbox)
        let (side, delivery, running) = try await Self.startDelivery(
            url: url, port: port, maxAttempts: 5, timeout: 5, batchSize: 4)
        try await withMockServer(configuration: .forTests()) { server in
            try await Q.insert(TestTokens.random(40), url: url)
            let ending = try await Q.drain(server, url: url, owner: "w-send")
            #expect(ending.counts.accepted == 40)
        }
        for _ in 0..<300 {
            if try await side.webhookCounts().delivered == 40 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        delivery.stop()
        _ = await running.value
        let counts = try await side.webhookCounts()
        await side.close()
        let connections = receiver.connections.total
        await receiver.stop()
        await receiver.wait()
        #expect(counts.delivered == 40 && inbox.deliveries.count == 40, "\(counts)")
        // A session per POST opened one connection per event (40).
        #expect(connections <= 4, "\(connections) connections for 40 POSTs")
    }

    @Test("A receiver that never answers: events end failed after their attempts, counted in status and metrics")
    func failedAfterAttempts() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        let port = try await Self.freePort()
        let metrics = QueueMetrics()
        let (side, delivery, running) = try await Self.startDelivery(
            url: url, port: port, path: "/down", owner: "w-fail", maxAttempts: 2,
            backoff: .init(base: 0.1, maximum: 0.1), timeout: 2, batchSize: 8, metrics: metrics)
        try await withMockServer(configuration: .forTests()) { server in
            try await Q.insert(TestTokens.random(3), url: url)
            _ = try await Q.drain(server, url: url, owner: "w-send")
        }
        var counts = QueueWebhookCounts()
        for _ in 0..<200 {
            counts = try await side.webhookCounts()
            if counts.failed == 3 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        delivery.stop()
        _ = await running.value
        await side.close()
        #expect(counts.failed == 3 && counts.pending == 0, "\(counts)")
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"kkpush_queue_webhooks_total{result="failed"} 3"#), "\(text)")
        #expect(text.contains(#"kkpush_queue_webhooks_total{result="retry"} 3"#), "\(text)")
        let status = try await PushQueueStore.statusReport(url: url)
        #expect(status.webhooks?.failed == 3, "\(String(describing: status.webhooks))")
        let states = try await Self.outbox(pg, database)
        #expect(states.allSatisfy { $0[1] == "failed" && $0[2] == "2" }, "\(states)")
    }

    @Test(
        "The outbox's trigger: one event per transition into a final state (collapsed included), none for claims, retries or a repeated receipt, none while off"
    )
    func triggerEvents() async throws {
        let (pg, database, url) = try await Q.migratedDatabase()
        try await Q.insert(TestTokens.random(8), url: url)
        func set(_ assignments: String, _ id: Int) async throws {
            _ = try await pg.runSQL(
                "UPDATE public.kkpush_push_queue SET \(assignments) WHERE id = \(id)", database: database)
        }
        try await set("state = 'accepted', apns_id = 'a1'", 1)  // before any worker turned webhooks on
        let side = PushQueueStore(url: url, connections: 1)
        let delivery = QueueWebhookDelivery(
            store: side,
            configuration: QueueWebhookConfiguration(
                url: URL(string: "http://127.0.0.1:9/unused")!, secret: Self.secret, owner: "w-trigger"),
            metrics: QueueMetrics())
        try await delivery.enable()
        await side.close()
        try await set("state = 'leased', lease_owner = 'w', attempts = 1", 2)
        try await set("state = 'retry', status = 503", 2)
        try await set("state = 'accepted', apns_id = 'a2'", 2)
        try await set("state = 'rejected', status = 400, reason = 'BadDeviceToken'", 3)
        try await set("state = 'dead', reason = 'ServiceUnavailable'", 4)
        try await set("state = 'collapsed'", 5)
        try await set("received_at = '2026-12-05 10:00:00+00', handled = 'shown'", 2)
        try await set("received_at = '2026-12-05 10:00:00+00', handled = 'shown'", 2)
        // One statement ending two rows and retrying a third, as a worker's outcomes are written: one event for
        // each row it ended, each with its own id (the trigger runs once for the statement).
        _ = try await pg.runSQL(
            """
            UPDATE public.kkpush_push_queue SET state = CASE id WHEN 7 THEN 'retry' ELSE 'accepted' END
            WHERE id IN (6, 7, 8)
            """, database: database)
        let events = try await pg.runSQL(
            """
            SELECT queue_id, event, body::jsonb ->> 'type', body::jsonb -> 'push' ->> 'state',
                (body::jsonb ->> 'id') = event_id
            FROM public.kkpush_webhook_outbox ORDER BY id
            """, database: database)
        #expect(
            events.split(separator: "\n") == [
                "2|push.accepted|push.accepted|accepted|t", "3|push.rejected|push.rejected|rejected|t",
                "4|push.dead|push.dead|dead|t", "5|push.collapsed|push.collapsed|collapsed|t",
                "2|push.receipt|push.receipt|accepted|t", "6|push.accepted|push.accepted|accepted|t",
                "8|push.accepted|push.accepted|accepted|t",
            ], "\(events)")
        let ids = try await pg.runSQL(
            "SELECT count(DISTINCT event_id) FROM public.kkpush_webhook_outbox", database: database)
        #expect(ids.trimmingCharacters(in: .whitespacesAndNewlines) == "7")
    }
}
