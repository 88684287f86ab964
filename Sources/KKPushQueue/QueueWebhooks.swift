package import Foundation
import KKPushAuth
package import KKPushCore
import KKPushStore
import Prometheus
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The webhook's signature, Stripe's scheme: `X-KKPush-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>">` under the shared secret. A receiver recomputes the HMAC over the timestamp, a dot and the raw
/// body as received, compares it in constant time, and refuses a timestamp too far from its clock (a replay).
package enum QueueWebhookSignature {
    /// The signature header.
    package static let header = "X-KKPush-Signature"
    /// The event's id: the same on every retry of one event, so a receiver drops what it has seen.
    package static let idHeader = "X-KKPush-Webhook-Id"

    /// `t=<timestamp>,v1=<hex>` for `body` at `timestamp`.
    package static func sign(body: [UInt8], secret: [UInt8], timestamp: Int) throws -> String {
        let mac = try HMACSHA256.mac(key: secret, data: Array("\(timestamp).".utf8) + body)
        return "t=\(timestamp),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `value` (the header) signs `body` under `secret`, with a timestamp at most `tolerance` seconds from
    /// `now`: what a receiver checks.
    package static func verify(
        _ value: String, body: [UInt8], secret: [UInt8], now: Date = Date(), tolerance: Double = 300
    ) -> Bool {
        var timestamp: Int?
        var signatures: [String] = []
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance,
            let expected = try? sign(body: body, secret: secret, timestamp: timestamp),
            let mark = expected.range(of: ",v1=")
        else { return false }
        let hex = Array(expected[mark.upperBound...].utf8)
        return signatures.contains { HMACSHA256.constantTimeEqual(Array($0.utf8), hex) }
    }
}

/// How a worker delivers the outbox's events.
package struct QueueWebhookConfiguration: Sendable {
    /// Where events are POSTed (http or https; https with the system's trust store).
    package var url: URL
    /// The HMAC key (the secret file's bytes, a trailing newline dropped).
    package var secret: [UInt8]
    /// Deliveries of one event before it ends `failed`.
    package var maxAttempts: Int
    /// The wait after a failed delivery: `base` doubled each attempt, at most `maximum` (seconds), times 0.5 to 1.
    package var backoff: QueueVerdict.Backoff
    /// Seconds one POST may take, connecting included.
    package var timeout: Double
    /// Events claimed at once (and POSTs in flight at once).
    package var batchSize: Int
    /// Seconds between looks at the outbox when nothing was due.
    package var pollInterval: Double
    /// This worker's name on the events it holds.
    package var owner: String

    package init(
        url: URL, secret: [UInt8], owner: String, maxAttempts: Int = 15,
        backoff: QueueVerdict.Backoff = .init(base: 1, maximum: 600), timeout: Double = 10, batchSize: Int = 8,
        pollInterval: Double = 1
    ) {
        self.url = url
        self.secret = secret
        self.owner = owner
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.timeout = timeout
        self.batchSize = batchSize
        self.pollInterval = pollInterval
    }
}

/// What the outbox holds, by state (`queue status`).
package struct QueueWebhookCounts: Sendable, Equatable, Encodable {
    package var pending = 0
    package var delivered = 0
    package var failed = 0
    package init() {}
}

/// Delivers the webhook outbox (``QueueLedgerSchema/outboxTable``) in the background: claims due events under a
/// short lease (`FOR UPDATE SKIP LOCKED`, so several workers deliver side by side and no event is POSTed by two at
/// once), POSTs each body as stored (the same bytes on every retry) with its signature and id, and marks it
/// `delivered` (a 2xx), or due again after a back-off, or `failed` after `maxAttempts`. It runs on a database
/// connection of its own and its own tasks: a receiver that is down or slow never holds up a claim or a send.
///
/// The POSTs go through Foundation's `URLSession` (a choice: it speaks http and https with the system's trust
/// store and takes the signature and id headers; the APNs client's libcurl transfers are HTTP/2 to APNs and
/// internal to KKPushClient, and KKPushHTTP's client speaks plain http only): one session per delivery, whose
/// connections to the receiver are kept between POSTs, at most a batch's worth.
package final class QueueWebhookDelivery: Sendable {
    /// What the delivery reports.
    package enum Event: Sendable {
        /// A delivery failed: the event id, the attempt, why, and whether the event is now `failed` for good.
        case deliveryFailed(id: String, attempt: Int, reason: String, final: Bool)
        /// A database error; the loop tries again after its poll interval.
        case databaseError(String)
    }

    package let configuration: QueueWebhookConfiguration
    private let store: PushQueueStore
    private let onEvent: @Sendable (Event) -> Void
    private let doorbell = Doorbell()
    private let stopped = Mutex(false)
    private let delivered: Counter
    private let retried: Counter
    private let failed: Counter
    /// One session for every POST of this delivery, so its connections to the receiver are kept and reused: a
    /// session per POST cost every event a TCP (and TLS) handshake of its own, and left the receiver a closed
    /// connection per event. Invalidated when ``run()`` returns.
    private let session: URLSession

    /// `store`: a store of its own (one connection is enough). `metrics`: the worker's registry, which gains
    /// `kkpush_queue_webhooks_total{result}` (delivered, retry, failed).
    package init(
        store: PushQueueStore, configuration: QueueWebhookConfiguration, metrics: QueueMetrics,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.store = store
        self.configuration = configuration
        self.onEvent = onEvent
        let descriptor = QueueMetrics.metric(
            "webhooks", unit: "total",
            "Webhook deliveries by result: delivered (2xx), retry (failed, due again after a back-off), failed (given up)."
        )
        delivered = metrics.registry.makeCounter(descriptor: descriptor, labels: [("result", "delivered")])
        retried = metrics.registry.makeCounter(descriptor: descriptor, labels: [("result", "retry")])
        failed = metrics.registry.makeCounter(descriptor: descriptor, labels: [("result", "failed")])
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        // A batch's POSTs go at once: as many connections as a batch, no more.
        sessionConfiguration.httpMaximumConnectionsPerHost = max(1, configuration.batchSize)
        session = URLSession(configuration: sessionConfiguration)
    }

    /// Turns the outbox on: from now on every final outcome and receipt of the queue is kept as an event (the
    /// trigger of schema step 6 writes nothing while no worker has a webhook).
    package func enable() async throws {
        _ = try await store.exec(
            "UPDATE \(QueueLedgerSchema.settingsTable) SET enabled = true, updated_at = now() WHERE id = 1")
    }

    /// Ends ``run()`` (the POSTs in flight finish, at most `timeout` seconds; their events are marked).
    package func stop() {
        stopped.withLock { $0 = true }
        doorbell.ring()
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    /// Delivers until ``stop()``; then its session's connections close.
    package func run() async {
        defer { session.finishTasksAndInvalidate() }
        while !isStopped {
            let seen = doorbell.generation
            let batch: [(id: Int64, eventID: String, body: String, attempt: Int)]
            do {
                batch = try await claim()
            } catch {
                onEvent(.databaseError((error as? KKPushError)?.message ?? "\(error)"))
                await doorbell.wait(after: seen, seconds: max(1, configuration.pollInterval))
                continue
            }
            if batch.isEmpty {
                await doorbell.wait(after: seen, seconds: configuration.pollInterval)
                continue
            }
            let results = await withTaskGroup(of: Mark.self) { group in
                for item in batch {
                    group.addTask { await self.deliver(item) }
                }
                var marks: [Mark] = []
                for await mark in group { marks.append(mark) }
                return marks
            }
            do {
                try await write(results)
            } catch {
                // Left leased: claimed again (and POSTed again, same id) when the lease passes.
                onEvent(.databaseError((error as? KKPushError)?.message ?? "\(error)"))
            }
        }
    }

    // MARK: -

    private struct Mark: Encodable {
        var id: Int64
        var state: String
        var status: Int?
        var error: String?
        var delay: Double?
    }

    private func claim() async throws -> [(id: Int64, eventID: String, body: String, attempt: Int)] {
        // The lease outlasts a POST's timeout: an event is never POSTed by two workers at once.
        let lease = configuration.timeout * 2 + 5
        let rows = try await store.exec(
            """
            WITH picked AS (
                SELECT id FROM \(QueueLedgerSchema.outboxTable)
                WHERE state = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
                ORDER BY id LIMIT $2::int FOR UPDATE SKIP LOCKED)
            UPDATE \(QueueLedgerSchema.outboxTable) o SET lease_owner = $1,
                lease_until = now() + make_interval(secs => $3::float8), attempts = o.attempts + 1, updated_at = now()
            FROM picked WHERE o.id = picked.id
            RETURNING o.id, o.event_id, o.body, o.attempts
            """, [configuration.owner, String(configuration.batchSize), String(lease)])
        return rows.rows.compactMap { r in
            guard let id = r[0].flatMap({ Int64($0) }), let eventID = r[1], let body = r[2] else { return nil }
            return (id, eventID, body, Int(r[3] ?? "1") ?? 1)
        }
    }

    private func deliver(_ item: (id: Int64, eventID: String, body: String, attempt: Int)) async -> Mark {
        let body = Array(item.body.utf8)
        let failure: (status: Int?, error: String)
        do {
            let signature = try QueueWebhookSignature.sign(
                body: body, secret: configuration.secret, timestamp: Int(Date().timeIntervalSince1970))
            var request = URLRequest(url: configuration.url, timeoutInterval: configuration.timeout)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(signature, forHTTPHeaderField: QueueWebhookSignature.header)
            request.setValue(item.eventID, forHTTPHeaderField: QueueWebhookSignature.idHeader)
            request.setValue(String(item.attempt), forHTTPHeaderField: "X-KKPush-Webhook-Attempt")
            request.httpBody = Data(body)
            let (_, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if (200..<300).contains(status) {
                delivered.increment()
                return Mark(id: item.id, state: "delivered", status: status)
            }
            failure = (status, "HTTP \(status)")
        } catch {
            failure = (nil, (error as? KKPushError)?.message ?? error.localizedDescription)
        }
        let final = item.attempt >= configuration.maxAttempts
        onEvent(.deliveryFailed(id: item.eventID, attempt: item.attempt, reason: failure.error, final: final))
        if final {
            failed.increment()
            return Mark(id: item.id, state: "failed", status: failure.status, error: String(failure.error.prefix(300)))
        }
        retried.increment()
        let delay = configuration.backoff.delay(claims: item.attempt) * Double.random(in: 0.5...1)
        return Mark(
            id: item.id, state: "pending", status: failure.status, error: String(failure.error.prefix(300)),
            delay: (delay * 1000).rounded() / 1000)
    }

    private func write(_ marks: [Mark]) async throws {
        guard !marks.isEmpty else { return }
        let json = String(decoding: try JSONEncoder().encode(marks), as: UTF8.self)
        _ = try await store.exec(
            """
            UPDATE \(QueueLedgerSchema.outboxTable) o SET state = v.state, last_status = v.status,
                last_error = v.error, delivered_at = CASE WHEN v.state = 'delivered' THEN now() END,
                next_attempt_at = now() + make_interval(secs => coalesce(v.delay, 0)),
                lease_owner = NULL, lease_until = NULL, updated_at = now()
            FROM jsonb_to_recordset($1::jsonb) AS v(id bigint, state text, status int, error text, delay float8)
            WHERE o.id = v.id
            """, [json])
    }
}

extension PushQueueStore {
    /// The webhook outbox by state (all 0 before schema step 6).
    package func webhookCounts() async throws -> QueueWebhookCounts {
        var counts = QueueWebhookCounts()
        let exists = try await exec(
            "SELECT to_regclass($1) IS NOT NULL", [QueueLedgerSchema.outboxTable], grant: PushQueueErrors.statusGrant)
        guard exists.rows.first?.first == "t" else { return counts }
        let rows = try await exec(
            "SELECT state, count(*) FROM \(QueueLedgerSchema.outboxTable) GROUP BY state",
            grant: "GRANT SELECT ON \(QueueLedgerSchema.outboxTable) TO {user}")
        for row in rows.rows {
            let n = Int(row[1] ?? "0") ?? 0
            switch row[0] {
            case "pending": counts.pending = n
            case "delivered": counts.delivered = n
            case "failed": counts.failed = n
            default: break
            }
        }
        return counts
    }

    /// Refuses a worker user that lacks what the ledger and the outbox need (schema step 6): `queue-permission-denied`
    /// with the GRANT, before anything is claimed.
    package func checkLedgerPrivileges() async throws {
        let rows = try await exec(
            """
            SELECT has_table_privilege($1, 'INSERT'), has_table_privilege($1, 'DELETE'),
                has_table_privilege($2, 'SELECT'), has_table_privilege($2, 'UPDATE'), has_table_privilege($2, 'DELETE'),
                has_table_privilege($3, 'UPDATE'), has_sequence_privilege($4, 'USAGE')
            """,
            [
                QueueLedgerSchema.attemptsTable, QueueLedgerSchema.outboxTable, QueueLedgerSchema.settingsTable,
                "public.kkpush_push_attempts_id_seq",
            ])
        let row = rows.rows.first ?? []
        let names = [
            "INSERT on \(QueueLedgerSchema.attemptsTable)", "DELETE on \(QueueLedgerSchema.attemptsTable)",
            "SELECT on \(QueueLedgerSchema.outboxTable)", "UPDATE on \(QueueLedgerSchema.outboxTable)",
            "DELETE on \(QueueLedgerSchema.outboxTable)", "UPDATE on \(QueueLedgerSchema.settingsTable)",
            "USAGE on sequence public.kkpush_push_attempts_id_seq",
        ]
        let missing = zip(names, row).filter { $0.1 != "t" }.map(\.0)
        guard !missing.isEmpty else { return }
        throw PushQueueErrors.permissionDenied(
            "it lacks \(missing.joined(separator: ", ")), which a worker needs to write the attempt ledger and deliver webhooks",
            url: url, grant: PushQueueErrors.workerGrant, underlying: nil)
    }
}
