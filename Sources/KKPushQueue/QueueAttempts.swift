import Foundation
package import KKPushClient
package import KKPushCore
package import KKPushStore

/// The attempt ledger and the webhook outbox (schema step 6): `public.kkpush_push_attempts`, one row per attempt a
/// worker made, written in the statement that writes the row's outcome (``PushQueueStore/complete(owner:_:attempts:)``:
/// no round trip of its own), and `public.kkpush_webhook_outbox`, one row per final outcome or receipt, filled by
/// a trigger in the transaction that ends the row (see ``QueueWebhooks``).
///
/// The queue's `history` column stays: it is the row's own story (claims, lease expiries, receipts, in one JSON
/// array), read with the row; the ledger is the same attempts as rows of their own, indexed by queue row, token
/// and time, pruned by retention, for questions across rows ("what did APNs answer this token last week").
package enum QueueLedgerSchema {
    /// The attempt ledger.
    package static let attemptsTable = "public.kkpush_push_attempts"
    /// The webhook outbox.
    package static let outboxTable = "public.kkpush_webhook_outbox"
    /// One row: whether the outbox is filled (a worker with a webhook turns it on).
    package static let settingsTable = "public.kkpush_webhook_settings"
    /// The schema version that made them.
    package static let version = 6

    /// What a worker needs on them, appended to the queue's worker GRANT: it writes and prunes the ledger, claims,
    /// marks and prunes the outbox, and turns the outbox on.
    static let workerGrant =
        "GRANT SELECT, INSERT, DELETE ON \(attemptsTable), \(outboxTable) TO {user}; GRANT UPDATE ON \(outboxTable), \(settingsTable) TO {user}; GRANT SELECT ON \(settingsTable) TO {user}; GRANT USAGE ON SEQUENCE public.kkpush_push_attempts_id_seq TO {user}"

    /// Step 6. New tables and a trigger: the backend's INSERT and older workers are unchanged.
    package static let migration = PushQueueSchema.Migration(
        version: version,
        description: "attempt ledger (\(attemptsTable)), webhook outbox (\(outboxTable)) and its trigger",
        statements: [
            """
            CREATE TABLE IF NOT EXISTS \(attemptsTable) (
                id bigserial PRIMARY KEY,
                at timestamptz NOT NULL DEFAULT now(),
                worker text NOT NULL,
                connection_id bigint,
                queue_id bigint NOT NULL,
                attempt int,
                device_token text NOT NULL,
                environment text,
                apns_id text,
                status int,
                reason text,
                latency_ms double precision,
                outcome text NOT NULL
                    CHECK (outcome IN ('accepted', 'rejected', 'retry', 'dead', 'held', 'returned', 'lease_lost')),
                possibly_duplicated boolean NOT NULL DEFAULT false
            )
            """,
            // Lookups by queue row, by token (any case) and by time; the time index also serves retention.
            "CREATE INDEX IF NOT EXISTS kkpush_push_attempts_queue_id ON \(attemptsTable) (queue_id, at)",
            "CREATE INDEX IF NOT EXISTS kkpush_push_attempts_token ON \(attemptsTable) (lower(device_token), at)",
            "CREATE INDEX IF NOT EXISTS kkpush_push_attempts_at ON \(attemptsTable) (at)",
            """
            CREATE TABLE IF NOT EXISTS \(outboxTable) (
                id bigserial PRIMARY KEY,
                event_id text NOT NULL UNIQUE,
                queue_id bigint NOT NULL,
                event text NOT NULL,
                body text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
                attempts int NOT NULL DEFAULT 0,
                next_attempt_at timestamptz NOT NULL DEFAULT now(),
                lease_owner text,
                lease_until timestamptz,
                last_status int,
                last_error text,
                delivered_at timestamptz,
                updated_at timestamptz
            )
            """,
            "CREATE INDEX IF NOT EXISTS kkpush_webhook_outbox_due ON \(outboxTable) (next_attempt_at) WHERE state = 'pending'",
            "CREATE INDEX IF NOT EXISTS kkpush_webhook_outbox_created ON \(outboxTable) (created_at)",
            """
            CREATE TABLE IF NOT EXISTS \(settingsTable) (
                id int PRIMARY KEY CHECK (id = 1), enabled boolean NOT NULL DEFAULT false, updated_at timestamptz)
            """,
            "INSERT INTO \(settingsTable) (id, enabled) VALUES (1, false) ON CONFLICT (id) DO NOTHING",
            outboxFunctionSQL,
            "DROP TRIGGER IF EXISTS kkpush_push_queue_webhooks ON \(PushQueueSchema.table)",
            // Only transitions into a final state (step 5's `collapsed` included: a push superseded by a newer one
            // of its kind, never sent), and receipts: the WHEN clause is checked without calling the function, so a
            // retry or a claim costs nothing.
            """
            CREATE TRIGGER kkpush_push_queue_webhooks AFTER UPDATE ON \(PushQueueSchema.table) FOR EACH ROW
                WHEN ((NEW.state IS DISTINCT FROM OLD.state
                        AND NEW.state IN ('accepted', 'rejected', 'dead', 'collapsed'))
                    OR NEW.received_at IS DISTINCT FROM OLD.received_at OR NEW.handled IS DISTINCT FROM OLD.handled)
                EXECUTE FUNCTION public.kkpush_webhook_outbox_fill()
            """,
        ])

    /// Step 7. The outbox's trigger once per statement instead of once per row: the step-6 trigger called its
    /// function for every row a statement ended, about 9 µs each (a plpgsql call with its SECURITY DEFINER and
    /// search_path switch), most of it only to learn that no worker has a webhook. This one runs once per UPDATE
    /// and reads the statement's old and new rows (transition tables): one look at the settings, and with webhooks
    /// on one INSERT of every event. The same events, in the same transaction; each row's own event id.
    package static let statementTrigger = PushQueueSchema.Migration(
        version: 7,
        description: "the webhook outbox's trigger once per statement (transition tables), not once per row",
        statements: [
            outboxStatementFunctionSQL,
            "DROP TRIGGER IF EXISTS kkpush_push_queue_webhooks ON \(PushQueueSchema.table)",
            """
            CREATE TRIGGER kkpush_push_queue_webhooks AFTER UPDATE ON \(PushQueueSchema.table)
                REFERENCING OLD TABLE AS kkpush_old NEW TABLE AS kkpush_new
                FOR EACH STATEMENT EXECUTE FUNCTION public.kkpush_webhook_outbox_fill_statement()
            """,
            "DROP FUNCTION IF EXISTS public.kkpush_webhook_outbox_fill()",
        ])

    /// A webhook event's body as SQL: its id, type and time, and the queue row `row` as it ends (step 6's trigger
    /// and step 7's write the same body).
    static func eventBodySQL(row: String, id: String, kind: String) -> String {
        let columns = [
            "id", "state", "device_token", "topic", "push_type", "environment", "credential", "enrollment_id",
            "push_id", "apns_id", "status", "reason", "apns_timestamp", "attempts", "possibly_duplicated",
            "received_at", "handled", "handled_at", "app_version", "app_build",
        ]
        let push = columns.map { "'\($0)', \(row).\($0)" }.joined(separator: ", ")
        return
            "jsonb_build_object('id', \(id), 'type', \(kind), 'created_at', now(), 'push', jsonb_build_object(\(push)))::text"
    }

    /// Step 7's trigger function: for each row of the statement that moved into a final state (`accepted`,
    /// `rejected`, `dead`, `collapsed`) or had a receipt recorded, its event into the outbox, as step 6's did row
    /// by row (the rows in id order). `SECURITY DEFINER` with a fixed search_path, as step 6's.
    static let outboxStatementFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_webhook_outbox_fill_statement() RETURNS trigger LANGUAGE plpgsql
            SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM public.kkpush_webhook_settings WHERE enabled) THEN RETURN NULL; END IF;
            INSERT INTO public.kkpush_webhook_outbox (event_id, queue_id, event, body)
            SELECT e.eid, n.id, e.kind, \(eventBodySQL(row: "n", id: "e.eid", kind: "e.kind"))
            FROM kkpush_new n JOIN kkpush_old o ON o.id = n.id
            CROSS JOIN LATERAL (SELECT gen_random_uuid()::text AS eid,
                CASE WHEN n.state IS DISTINCT FROM o.state AND n.state IN ('accepted', 'rejected', 'dead', 'collapsed')
                    THEN 'push.' || n.state ELSE 'push.receipt' END AS kind) e
            WHERE (n.state IS DISTINCT FROM o.state AND n.state IN ('accepted', 'rejected', 'dead', 'collapsed'))
                OR n.received_at IS DISTINCT FROM o.received_at OR n.handled IS DISTINCT FROM o.handled
            ORDER BY n.id;
            RETURN NULL;
        END
        $$
        """

    /// The trigger function: the webhook's event (its id, type, and the row as it ends) into the outbox, in the
    /// transaction that ends the row, so an outcome written is an event kept, whatever happens to the worker next.
    /// `SECURITY DEFINER`: a backend recording a receipt or a worker ending a row needs no privilege on the outbox
    /// for it. Nothing is written while no worker has a webhook (``settingsTable``).
    static let outboxFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_webhook_outbox_fill() RETURNS trigger LANGUAGE plpgsql
            SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        DECLARE
            kind text;
            eid text;
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM public.kkpush_webhook_settings WHERE enabled) THEN RETURN NULL; END IF;
            IF NEW.state IS DISTINCT FROM OLD.state AND NEW.state IN ('accepted', 'rejected', 'dead', 'collapsed') THEN
                kind := 'push.' || NEW.state;
            ELSE
                kind := 'push.receipt';
            END IF;
            eid := gen_random_uuid()::text;
            INSERT INTO public.kkpush_webhook_outbox (event_id, queue_id, event, body)
            VALUES (eid, NEW.id, kind, \(eventBodySQL(row: "NEW", id: "eid", kind: "kind")));
            RETURN NULL;
        END
        $$
        """
}

/// One attempt of a worker, for the ledger: what was sent to whom, and what came of it.
package struct QueueAttempt: Sendable, Equatable {
    /// The queue row.
    package var queueID: Int64
    package var attempt: Int
    package var deviceToken: String
    package var environment: String
    package var apnsID: String?
    package var status: Int?
    package var reason: String?
    /// The attempt's time, retries of the client included, in milliseconds.
    package var latencyMilliseconds: Double
    /// The row's next state as the verdict says (`accepted`, `rejected`, `retry`, `dead`, `held`, `returned`); the
    /// ledger says `lease_lost` instead when the outcome was not written (another worker had taken the row).
    package var outcome: String
    package var possiblyDuplicated: Bool
    /// The number of the worker's connection the attempt's last request went on (``PushOutcome/connection``); nil
    /// when none was sent.
    package var connection: Int?

    /// The attempt of `row` that `verdict` judged.
    package init(row: QueuedPush, outcome: PushOutcome, verdict: QueueVerdict) {
        queueID = row.id
        attempt = row.attempts
        deviceToken = row.deviceToken
        environment = row.environment.rawValue
        apnsID = verdict.write.apnsID
        status = verdict.write.status
        reason = verdict.write.reason
        latencyMilliseconds = (outcome.durationMilliseconds * 10).rounded() / 10
        self.outcome = verdict.outcome
        possiblyDuplicated = verdict.mayHaveDuplicated
        connection = outcome.connection
    }

    /// `attempts` as the JSON array ``PushQueueStore/complete(owner:_:attempts:)`` sends (`$3`; an absent value as
    /// `null`), written by ``JSONValue``'s writer as the outcomes are (``QueueWrite/json(_:)``): one per push sent.
    static func json(_ attempts: [QueueAttempt]) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(attempts.count * 224)
        for (index, a) in attempts.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeOrderedObject(
                [
                    ("queue_id", .int(Int(a.queueID))), ("attempt", .int(a.attempt)),
                    ("device_token", .string(a.deviceToken)), ("environment", .string(a.environment)),
                    ("apns_id", a.apnsID.map(JSONValue.string) ?? .null),
                    ("status", a.status.map(JSONValue.int) ?? .null),
                    ("reason", a.reason.map(JSONValue.string) ?? .null), ("latency_ms", .double(a.latencyMilliseconds)),
                    ("outcome", .string(a.outcome)), ("possibly_duplicated", .bool(a.possiblyDuplicated)),
                    ("connection_id", a.connection.map(JSONValue.int) ?? .null),
                ], to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The ledger's insert, as data-modifying CTEs around the outcome's `UPDATE … RETURNING q.id` (`update`): one
    /// statement, so the attempts and the outcomes commit together and no push costs a round trip of its own. `$1`
    /// is the owner (the worker), `$3` the attempts as a JSON array. The connection id is the worker's number of the
    /// connection (``PushOutcome/connection``): within one run of the worker it names one connection.
    static func recordingSQL(update: String) -> String {
        """
        WITH done AS (\(update)),
        ledger AS (
            INSERT INTO \(QueueLedgerSchema.attemptsTable) (worker, connection_id, queue_id, attempt, device_token,
                environment, apns_id, status, reason, latency_ms, outcome, possibly_duplicated)
            SELECT $1, a.connection_id, a.queue_id, a.attempt, a.device_token, a.environment, a.apns_id, a.status,
                a.reason, a.latency_ms, CASE WHEN done.id IS NULL THEN 'lease_lost' ELSE a.outcome END,
                a.possibly_duplicated
            FROM jsonb_to_recordset($3::jsonb) AS a(queue_id bigint, attempt int, device_token text,
                environment text, apns_id text, status int, reason text, latency_ms float8, outcome text,
                possibly_duplicated boolean, connection_id bigint)
            LEFT JOIN done ON done.id = a.queue_id)
        SELECT id FROM done
        """
    }
}

/// One row of the ledger as `queue history` shows it.
package struct QueueAttemptRecord: Sendable, Equatable, Encodable {
    package var id: Int64
    /// ISO 8601, UTC.
    package var at: String
    package var worker: String
    package var connectionID: Int64?
    package var queueID: Int64
    package var attempt: Int?
    package var deviceToken: String
    package var environment: String?
    package var apnsID: String?
    package var status: Int?
    package var reason: String?
    package var latencyMilliseconds: Double?
    package var outcome: String
    package var possiblyDuplicated: Bool

    enum CodingKeys: String, CodingKey {
        case id, at, worker, attempt, environment, status, reason, outcome
        case connectionID = "connection_id"
        case queueID = "queue_id"
        case deviceToken = "device_token"
        case apnsID = "apns_id"
        case latencyMilliseconds = "latency_ms"
        case possiblyDuplicated = "possibly_duplicated"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(at, forKey: .at)
        try c.encode(worker, forKey: .worker)
        try c.encode(connectionID, forKey: .connectionID)
        try c.encode(queueID, forKey: .queueID)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(deviceToken, forKey: .deviceToken)
        try c.encode(environment, forKey: .environment)
        try c.encode(apnsID, forKey: .apnsID)
        try c.encode(status, forKey: .status)
        try c.encode(reason, forKey: .reason)
        try c.encode(latencyMilliseconds, forKey: .latencyMilliseconds)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(possiblyDuplicated, forKey: .possiblyDuplicated)
    }
}

/// What `queue history` asks the ledger: every filter optional, newest first.
package struct QueueHistoryQuery: Sendable, Equatable {
    /// The queue row's id.
    package var queueID: Int64?
    /// A device token (hex, any case).
    package var deviceToken: String?
    /// UNIX seconds, inclusive.
    package var since: Double?
    /// UNIX seconds, exclusive.
    package var until: Double?
    package var limit: Int

    package init(
        queueID: Int64? = nil, deviceToken: String? = nil, since: Double? = nil, until: Double? = nil,
        limit: Int = 100
    ) {
        self.queueID = queueID
        self.deviceToken = deviceToken
        self.since = since
        self.until = until
        self.limit = limit
    }
}

/// `queue history`'s report: the attempts found, newest first.
package struct QueueHistoryReport: Sendable, Encodable {
    package var attempts: [QueueAttemptRecord]
    /// Whether more matched than `limit`.
    package var truncated: Bool

    /// One line per attempt: time, row, token prefix, outcome, status and reason, latency, worker and connection.
    package var textLines: [String] {
        guard !attempts.isEmpty else { return ["no attempts found"] }
        var lines = attempts.map { a -> String in
            var words = ["\(a.at)  push \(a.queueID)", "token \(a.deviceToken.prefix(12))…", a.outcome]
            if let attempt = a.attempt { words[1] += " (attempt \(attempt))" }
            if let status = a.status { words.append("\(status)") }
            if let reason = a.reason { words.append(reason) }
            if let id = a.apnsID { words.append("apns-id \(id)") }
            if let ms = a.latencyMilliseconds { words.append(String(format: "%.1f ms", ms)) }
            words.append("worker \(a.worker)" + (a.connectionID.map { " connection \($0)" } ?? ""))
            return words.joined(separator: "  ")
        }
        if truncated { lines.append("(more attempts match: raise the limit or narrow the time window)") }
        return lines
    }
}

extension PushQueueStore {
    /// The ledger's rows matching `query`, newest first (at most `limit`, and whether more matched). Needs the
    /// queue at version 6 (`queue-not-migrated` otherwise).
    package func attempts(_ query: QueueHistoryQuery) async throws -> QueueHistoryReport {
        let inspection = try await checkSchema(grant: .status)
        guard inspection.version >= QueueLedgerSchema.version else {
            throw KKPushError(
                code: .queueNotMigrated,
                message:
                    "The push queue in \(url.named) is at schema version \(inspection.version): its attempt ledger comes with version \(QueueLedgerSchema.version).",
                fix: "Run the queue's migration (queueMigrateCommand) on the same database.")
        }
        let rows = try await exec(
            """
            SELECT id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), worker, connection_id,
                queue_id, attempt, device_token, environment, apns_id, status, reason, latency_ms, outcome,
                possibly_duplicated
            FROM \(QueueLedgerSchema.attemptsTable)
            WHERE ($1::bigint IS NULL OR queue_id = $1::bigint)
                AND ($2::text IS NULL OR lower(device_token) = lower($2::text))
                AND ($3::float8 IS NULL OR at >= to_timestamp($3::float8))
                AND ($4::float8 IS NULL OR at < to_timestamp($4::float8))
            ORDER BY at DESC, id DESC LIMIT $5::int
            """,
            [
                query.queueID.map(String.init), query.deviceToken, query.since.map { String($0) },
                query.until.map { String($0) }, String(query.limit + 1),
            ], grant: "GRANT SELECT ON \(QueueLedgerSchema.attemptsTable) TO {user}")
        let records = rows.rows.prefix(query.limit).map { r in
            QueueAttemptRecord(
                id: Int64(r[0] ?? "") ?? 0, at: r[1] ?? "", worker: r[2] ?? "",
                connectionID: r[3].flatMap { Int64($0) },
                queueID: Int64(r[4] ?? "") ?? 0, attempt: r[5].flatMap { Int($0) }, deviceToken: r[6] ?? "",
                environment: r[7], apnsID: r[8], status: r[9].flatMap { Int($0) }, reason: r[10],
                latencyMilliseconds: r[11].flatMap { Double($0) }, outcome: r[12] ?? "",
                possiblyDuplicated: r[13] == "t")
        }
        return QueueHistoryReport(attempts: Array(records), truncated: rows.rows.count > query.limit)
    }

    /// Deletes ledger rows, and delivered or failed outbox rows, older than `retention` seconds: at most 10,000 of
    /// each per statement, at most 20 statements a call (a short lock at a time; the next call takes the rest).
    /// How many rows it deleted.
    @discardableResult
    package func pruneAttempts(olderThan retention: Double) async throws -> Int {
        var deleted = 0
        for table in [QueueLedgerSchema.attemptsTable, QueueLedgerSchema.outboxTable] {
            let time = table == QueueLedgerSchema.attemptsTable ? "at" : "created_at"
            let finished = table == QueueLedgerSchema.outboxTable ? "AND state IN ('delivered', 'failed')" : ""
            for _ in 0..<20 {
                let n = try await exec(
                    """
                    DELETE FROM \(table) WHERE id IN (SELECT id FROM \(table)
                        WHERE \(time) < now() - make_interval(secs => $1::float8) \(finished) LIMIT 10000)
                    """, [String(retention)]
                ).affected
                deleted += n
                if n < 10000 { break }
            }
        }
        return deleted
    }

    /// The schema version recorded (0: none).
    package func schemaVersion() async throws -> Int {
        let rows = try await exec("SELECT coalesce(max(version), 0) FROM \(PushQueueSchema.versionsTable)")
        return Int(rows.rows.first?.first.flatMap { $0 } ?? "0") ?? 0
    }
}
