package import Foundation
package import KKPushCore
package import KKPushStore

// Confirmed receipts on the push queue (schema version 3): the app's receipt recorded on the row of the push it
// confirms, and `kkpush receipts`' report of accepted vs received vs handled.

/// One receipt for ``PushQueueStore/recordReceipt(_:)``: the push it confirms (its apns-id, or the payload's
/// `kk_push_id` with the device token that received it), when it arrived and what the app did.
package struct QueueReceipt: Sendable, Equatable {
    package var apnsID: String?
    package var pushID: String?
    /// The token of the device that posted the receipt; required with a push id alone (one push id names every row
    /// of a fan-out), checked against the row with an apns-id.
    package var deviceToken: String?
    package var receivedAt: Date
    package var handledAt: Date?
    /// `refreshed`, `shown` or `dropped`.
    package var handled: String
    package var appVersion: String?
    package var appBuild: String?

    package init(
        apnsID: String? = nil, pushID: String? = nil, deviceToken: String? = nil, receivedAt: Date,
        handledAt: Date? = nil, handled: String, appVersion: String? = nil, appBuild: String? = nil
    ) {
        self.apnsID = apnsID
        self.pushID = pushID
        self.deviceToken = deviceToken
        self.receivedAt = receivedAt
        self.handledAt = handledAt
        self.handled = handled
        self.appVersion = appVersion
        self.appBuild = appBuild
    }
}

extension PushQueueSchema {
    /// The schema version that has the receipt columns.
    package static let receiptsVersion = 3

    /// The one statement a backend runs to record a receipt on its queue row ($1 apns-id or NULL, $2 push id (the
    /// payload's `kk_push_id`) or NULL, $3 the posting device's token or NULL (required with a push id alone),
    /// $4 received at, $5 handled at or NULL, $6 `refreshed`/`shown`/`dropped`, $7 app version or NULL, $8 build
    /// or NULL); it returns the ids of the rows it marked. `received_at` keeps the earliest receipt; `handled` the
    /// one handled last (a Notification Service Extension's `shown`, then the app's `refreshed` on open). The user
    /// needs UPDATE on the table.
    package static let recordReceiptSQL = """
        UPDATE public.kkpush_push_queue q SET
            received_at = least(coalesce(q.received_at, $4::timestamptz), $4::timestamptz),
            handled = CASE WHEN q.handled_at IS NULL OR coalesce($5::timestamptz, $4::timestamptz) >= q.handled_at
                THEN $6 ELSE q.handled END,
            handled_at = greatest(q.handled_at, coalesce($5::timestamptz, $4::timestamptz)),
            app_version = coalesce($7, q.app_version), app_build = coalesce($8, q.app_build),
            history = q.history || jsonb_build_array(jsonb_build_object('at', now(), 'outcome', 'receipt',
                'handled', $6::text, 'received_at', $4::timestamptz))
        WHERE (($1::text IS NOT NULL AND lower(q.apns_id) = lower($1::text))
                OR ($1::text IS NULL AND $2::text IS NOT NULL AND q.push_id = $2::text))
            AND ($3::text IS NULL OR lower(q.device_token) = lower($3::text))
        RETURNING q.id
        """
}

extension PushQueueStore {
    /// Records `receipt` on the rows of its push (``PushQueueSchema/recordReceiptSQL``); the ids marked (none: no
    /// row has that apns-id, or that push id for that token). A receipt that names no push, a push id without a
    /// device token, or an unknown `handled` is refused (`receipt-invalid`) before the database is touched.
    package func recordReceipt(_ receipt: QueueReceipt) async throws -> [Int64] {
        func invalid(_ message: String, _ fix: String) -> KKPushError {
            KKPushError(code: .queueReceiptInvalid, message: message, fix: fix)
        }
        if receipt.apnsID == nil, receipt.pushID == nil {
            throw invalid(
                "The receipt names no push (apnsID and pushID are both missing).",
                "Give the push's apns-id (apnsID), or the payload's kk_push_id (pushID) with the device token.")
        }
        if receipt.apnsID == nil, receipt.deviceToken == nil {
            throw invalid(
                "A receipt by push id (pushID) needs the device token (deviceToken): one push id names every row of a fan-out.",
                "Give the token of the device that posted the receipt (deviceToken).")
        }
        guard ["refreshed", "shown", "dropped"].contains(receipt.handled) else {
            throw invalid(
                "The receipt's handled '\(receipt.handled)' is not refreshed, shown or dropped.",
                "Give handled as refreshed, shown or dropped.")
        }
        let schema = try await checkSchema(grant: .worker)
        try Self.requireReceipts(schema, url: url)
        let rows = try await exec(
            PushQueueSchema.recordReceiptSQL,
            [
                receipt.apnsID, receipt.pushID, receipt.deviceToken, Self.sqlTime(receipt.receivedAt),
                receipt.handledAt.map(Self.sqlTime), receipt.handled, receipt.appVersion, receipt.appBuild,
            ])
        return rows.rows.compactMap { $0.first.flatMap { $0 }.flatMap { Int64($0) } }
    }

    /// A time as a `timestamptz` parameter: ISO 8601 in UTC with milliseconds.
    static func sqlTime(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }

    /// Refuses a queue older than version 3 (no receipt columns yet): `queue-not-migrated`, with the migration.
    package static func requireReceipts(_ schema: PushQueueSchema.Inspection, url: PostgresURL) throws {
        guard schema.version < PushQueueSchema.receiptsVersion else { return }
        throw KKPushError(
            code: .queueNotMigrated,
            message:
                "The push queue in \(url.named) is at schema version \(schema.version); receipts need version \(PushQueueSchema.receiptsVersion) (the received_at, handled_at and handled columns).",
            fix: "Run the queue's migration (queueMigrateCommand) on the same database: it adds them.")
    }

    /// `kkpush receipts`' engine: the rows enqueued since `since` (nil: all), grouped by push type, priority (the
    /// worker's: 5 for a background push without one, else 10), environment, app version and build (a row without
    /// a receipt takes its token's latest receipt's), with accepted, received and handled counts; and the tokens
    /// with pushes accepted more than `grace` seconds ago and no receipt at all in the window (at most `limit`).
    /// Such tokens are named only when some receipt came in the window: without any, the app posts none and no
    /// token can be told apart.
    package static func receiptsReport(url: PostgresURL, since: Date?, grace: Double, limit: Int = 1000)
        async throws -> QueueReceiptsReport
    {
        try await withStore(url: url) { store in
            let schema = try await store.checkSchema()
            try requireReceipts(schema, url: url)
            let from = since.map(sqlTime)
            let window = "($1::timestamptz IS NULL OR q.enqueued_at >= $1::timestamptz)"
            let latest = """
                SELECT DISTINCT ON (device_token) device_token, app_version, app_build FROM \(PushQueueSchema.table)
                WHERE received_at IS NOT NULL AND (app_version IS NOT NULL OR app_build IS NOT NULL)
                ORDER BY device_token, received_at DESC
                """
            let grouped = try await store.exec(
                """
                WITH latest AS (\(latest))
                SELECT q.push_type, coalesce(q.priority, CASE WHEN q.push_type = 'background' THEN 5 ELSE 10 END),
                    q.environment, coalesce(q.app_version, l.app_version), coalesce(q.app_build, l.app_build),
                    count(*) FILTER (WHERE q.state = 'accepted'),
                    count(*) FILTER (WHERE q.received_at IS NOT NULL),
                    count(*) FILTER (WHERE q.handled = 'refreshed'),
                    count(*) FILTER (WHERE q.handled = 'shown'),
                    count(*) FILTER (WHERE q.handled = 'dropped'),
                    count(*) FILTER (WHERE q.state = 'accepted' AND q.received_at IS NULL
                        AND q.updated_at < now() - make_interval(secs => $2::float8)),
                    count(*) FILTER (WHERE q.state = 'accepted' AND q.received_at IS NULL
                        AND q.updated_at >= now() - make_interval(secs => $2::float8))
                FROM \(PushQueueSchema.table) q LEFT JOIN latest l ON l.device_token = q.device_token
                WHERE \(window) AND (q.state = 'accepted' OR q.received_at IS NOT NULL)
                GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4 NULLS LAST, 5 NULLS LAST
                """, [from, String(grace)], grant: PushQueueErrors.statusGrant)
            let groups = grouped.rows.map { r in
                let n = { (i: Int) in Int(r[i] ?? "0") ?? 0 }
                return QueueReceiptsReport.Group(
                    pushType: r[0] ?? "alert", priority: n(1), environment: r[2] ?? "", appVersion: r[3],
                    appBuild: r[4], accepted: n(5), received: n(6), refreshed: n(7), shown: n(8), dropped: n(9),
                    notReceived: n(10), awaiting: n(11))
            }
            var silent: [QueueReceiptsReport.SilentToken] = []
            var silentTotal = 0
            let receiptsSeen = groups.contains { $0.received > 0 }
            if receiptsSeen {
                let tokens = try await store.exec(
                    """
                    WITH latest AS (\(latest))
                    SELECT q.device_token, q.environment,
                        count(*) FILTER (WHERE q.updated_at < now() - make_interval(secs => $2::float8)),
                        extract(epoch FROM max(q.updated_at)), max(l.app_version), max(l.app_build),
                        count(*) OVER ()
                    FROM \(PushQueueSchema.table) q LEFT JOIN latest l ON l.device_token = q.device_token
                    WHERE \(window) AND q.state = 'accepted'
                    GROUP BY q.device_token, q.environment
                    HAVING count(*) FILTER (WHERE q.received_at IS NOT NULL) = 0
                        AND count(*) FILTER (WHERE q.updated_at < now() - make_interval(secs => $2::float8)) > 0
                    ORDER BY 3 DESC, 1 LIMIT $3::int
                    """, [from, String(grace), String(limit)], grant: PushQueueErrors.statusGrant)
                silent = tokens.rows.map { r in
                    QueueReceiptsReport.SilentToken(
                        deviceToken: r[0] ?? "", environment: r[1] ?? "", accepted: Int(r[2] ?? "0") ?? 0,
                        lastAcceptedAt: r[3].flatMap(Double.init).map { Date(timeIntervalSince1970: $0) },
                        appVersion: r[4], appBuild: r[5])
                }
                silentTotal = tokens.rows.first.flatMap { $0[6] }.flatMap { Int($0) } ?? 0
            }
            return QueueReceiptsReport(
                since: since, graceSeconds: grace, groups: groups, neverReceived: silent,
                neverReceivedTotal: silentTotal, receiptsSeen: receiptsSeen,
                warnings: schema.olderWarning.map { [$0] } ?? [])
        }
    }
}

/// `kkpush receipts`' report: accepted vs received vs handled per group, and the tokens that accept but never
/// receive (the stale token APNs does not report: it answers 200 for a token whose app is gone or never opened).
package struct QueueReceiptsReport: Encodable, Sendable {
    /// One group: a push type, priority, environment, app version and build.
    package struct Group: Encodable, Sendable, Equatable {
        package var pushType: String
        package var priority: Int
        package var environment: String
        /// The app version and build its receipts (or its tokens' latest receipts) name; nil: none known.
        package var appVersion: String?
        package var appBuild: String?
        /// Rows APNs accepted.
        package var accepted: Int
        /// Rows with a receipt.
        package var received: Int
        /// Receipts by what the app did.
        package var refreshed: Int
        package var shown: Int
        package var dropped: Int
        /// Accepted longer than the grace ago and no receipt.
        package var notReceived: Int
        /// Accepted within the grace, no receipt yet.
        package var awaiting: Int
        /// Received and acted on: refreshed or shown.
        package var handled: Int { refreshed + shown }

        enum CodingKeys: String, CodingKey {
            case priority, environment, accepted, received, handled, refreshed, shown, dropped, awaiting
            case pushType = "push_type"
            case appVersion = "app_version"
            case appBuild = "app_build"
            case notReceived = "not_received"
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(pushType, forKey: .pushType)
            try c.encode(priority, forKey: .priority)
            try c.encode(environment, forKey: .environment)
            try c.encode(appVersion, forKey: .appVersion)
            try c.encode(appBuild, forKey: .appBuild)
            try c.encode(accepted, forKey: .accepted)
            try c.encode(received, forKey: .received)
            try c.encode(handled, forKey: .handled)
            try c.encode(refreshed, forKey: .refreshed)
            try c.encode(shown, forKey: .shown)
            try c.encode(dropped, forKey: .dropped)
            try c.encode(notReceived, forKey: .notReceived)
            try c.encode(awaiting, forKey: .awaiting)
        }
    }

    /// A token with accepted pushes and no receipt.
    package struct SilentToken: Encodable, Sendable, Equatable {
        package var deviceToken: String
        package var environment: String
        /// Its pushes accepted longer than the grace ago.
        package var accepted: Int
        package var lastAcceptedAt: Date?
        /// The version and build of its last receipt ever (outside the window too); nil: it never posted one.
        package var appVersion: String?
        package var appBuild: String?

        enum CodingKeys: String, CodingKey {
            case environment, accepted
            case deviceToken = "device_token"
            case lastAcceptedAt = "last_accepted_at"
            case appVersion = "app_version"
            case appBuild = "app_build"
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(deviceToken, forKey: .deviceToken)
            try c.encode(environment, forKey: .environment)
            try c.encode(accepted, forKey: .accepted)
            try c.encode(lastAcceptedAt.map(receiptStamp), forKey: .lastAcceptedAt)
            try c.encode(appVersion, forKey: .appVersion)
            try c.encode(appBuild, forKey: .appBuild)
        }
    }

    package var since: Date?
    package var graceSeconds: Double
    package var groups: [Group]
    package var neverReceived: [SilentToken]
    /// Every such token (``neverReceived`` holds at most the report's limit).
    package var neverReceivedTotal: Int
    /// Whether any receipt came in the window.
    package var receiptsSeen: Bool
    /// An older queue's note (said on stderr).
    package var warnings: [String]
    /// What the pushes were read from, for the text ("the push queue", or a send-batch ledger's file).
    package var source: String = "the push queue"
    /// Receipts that matched no push of a send-batch ledger; nil for the queue (it keeps only receipts that matched a
    /// row, so it has none to count).
    package var unmatchedReceipts: Int? = nil

    /// The sums of every group.
    package var totals: Group {
        groups.reduce(
            Group(
                pushType: "all", priority: 0, environment: "all", appVersion: nil, appBuild: nil, accepted: 0,
                received: 0, refreshed: 0, shown: 0, dropped: 0, notReceived: 0, awaiting: 0)
        ) { sum, g in
            var sum = sum
            sum.accepted += g.accepted
            sum.received += g.received
            sum.refreshed += g.refreshed
            sum.shown += g.shown
            sum.dropped += g.dropped
            sum.notReceived += g.notReceived
            sum.awaiting += g.awaiting
            return sum
        }
    }

    enum CodingKeys: String, CodingKey {
        case since, groups, totals
        case graceSeconds = "grace_seconds"
        case neverReceived = "never_received"
        case neverReceivedTotal = "never_received_total"
        case receiptsSeen = "receipts_seen"
        case unmatchedReceipts = "unmatched_receipts"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(since.map(receiptStamp), forKey: .since)
        try c.encode(graceSeconds, forKey: .graceSeconds)
        try c.encode(groups, forKey: .groups)
        let t = totals
        try c.encode(
            [
                "accepted": t.accepted, "received": t.received, "handled": t.handled, "refreshed": t.refreshed,
                "shown": t.shown, "dropped": t.dropped, "not_received": t.notReceived, "awaiting": t.awaiting,
            ], forKey: .totals)
        try c.encode(neverReceived, forKey: .neverReceived)
        try c.encode(neverReceivedTotal, forKey: .neverReceivedTotal)
        try c.encode(receiptsSeen, forKey: .receiptsSeen)
        // Only a ledger's report has the key: the queue's JSON stays as it was.
        try c.encodeIfPresent(unmatchedReceipts, forKey: .unmatchedReceipts)
    }
}

/// A time as the report writes it: ISO 8601 in UTC, whole seconds.
package func receiptStamp(_ date: Date) -> String {
    UTCTimestamp.format(date) ?? String(date.timeIntervalSince1970)
}
