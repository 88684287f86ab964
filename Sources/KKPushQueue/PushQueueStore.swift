import Foundation
package import KKPushCore
package import KKPushStore

/// One row a worker claimed: what to send, and how often it was claimed.
package struct QueuedPush: Sendable, Equatable {
    package var id: Int64
    package var deviceToken: String
    package var topic: String
    package var pushType: String
    package var priority: Int?
    package var payload: String
    package var environment: APNsEnvironment
    /// The credential's name (a key of a credentials file), for the client router; nil: the default one.
    package var credential: String?
    package var collapseID: String?
    /// UNIX seconds.
    package var expiration: Int?
    /// Claims so far, this one included.
    package var attempts: Int
    /// Whether an earlier claim may have sent it (an expired lease, an answer that never came).
    package var possiblyDuplicated: Bool
    /// Whether this claim took it over from another worker's expired lease (counted once, as `reclaimed`).
    package var reclaimed: Bool
    /// The state and lease owner the claim found a ready row in (nil: taken over from an expired lease, or not
    /// from a claim): what ``PushQueueStore/release(owner:_:)`` puts back.
    package var priorState: String?
    package var priorOwner: String?
    /// Whether the claim read the row's own `quiet_hours` (schema step 5) into ``quietHours``: then
    /// ``PushQueueStore/admit(_:policy:owner:)`` needs no statement of its own to read it.
    package var quietHoursRead = false
    /// The row's own quiet window as written (`Europe/Amsterdam=22:00-07:00`, `none`), nil if it has none.
    package var quietHours: String?
    /// Whether the row has an `activity_key` (schema step 4), as the claim read it; nil: the claim did not read it
    /// (a queue before step 5), so the Live Activity plan looks it up.
    package var isActivityRow: Bool?

    package init(
        id: Int64, deviceToken: String, topic: String, pushType: String, priority: Int?, payload: String,
        environment: APNsEnvironment, credential: String?, collapseID: String?, expiration: Int?, attempts: Int,
        possiblyDuplicated: Bool, reclaimed: Bool = false
    ) {
        self.reclaimed = reclaimed
        self.id = id
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.payload = payload
        self.environment = environment
        self.credential = credential
        self.collapseID = collapseID
        self.expiration = expiration
        self.attempts = attempts
        self.possiblyDuplicated = possiblyDuplicated
    }
}

/// What a worker writes back for one row: its next state and the attempt's record for `history`.
package struct QueueWrite: Sendable, Equatable, Encodable {
    package var id: Int64
    /// `accepted`, `rejected`, `retry` or `dead`.
    package var state: String
    package var apnsID: String?
    package var status: Int?
    package var reason: String?
    /// Apple's timestamp of a 410, ISO 8601.
    package var apnsTimestamp: String?
    /// Seconds until a `retry` row may be claimed again.
    package var delay: Double?
    /// Added to `attempts`: -1 for a push returned to the queue unsent (its claim does not count).
    package var attemptsDelta: Int
    /// Whether this attempt may have been delivered without an answer.
    package var duplicated: Bool
    /// The attempt's entry of `history` (the time is added by the server).
    package var event: [String: JSONValue]

    enum CodingKeys: String, CodingKey {
        case id, state, status, reason, delay, duplicated, event
        case apnsID = "apns_id"
        case apnsTimestamp = "apns_timestamp"
        case attemptsDelta = "attempts_delta"
    }

    /// `writes` as the JSON array ``PushQueueStore/complete(owner:_:attempts:)`` sends: the same members as the
    /// `Encodable` form (an absent value as `null`), written by ``JSONValue``'s writer. Not JSONEncoder: a claim's
    /// outcomes are encoded for every push the worker sends, and JSONEncoder (its dictionaries of `event`
    /// above all) was about a tenth of the worker's CPU per push.
    static func json(_ writes: [QueueWrite]) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(writes.count * 256)
        for (index, write) in writes.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let optional: (String?) -> JSONValue = { $0.map(JSONValue.string) ?? .null }
            JSONValue.writeOrderedObject(
                [
                    ("id", .int(Int(write.id))), ("state", .string(write.state)), ("apns_id", optional(write.apnsID)),
                    ("status", write.status.map(JSONValue.int) ?? .null), ("reason", optional(write.reason)),
                    ("apns_timestamp", optional(write.apnsTimestamp)),
                    ("delay", write.delay.map(JSONValue.double) ?? .null),
                    ("attempts_delta", .int(write.attemptsDelta)),
                    ("duplicated", .bool(write.duplicated)), ("event", .object(write.event)),
                ], to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }
}

/// The queue's counts (`queue status`).
package struct PushQueueStatus: Sendable, Equatable {
    /// Rows by state (every state listed, 0 where none).
    package var counts: [String: Int]
    /// Seconds the oldest row not yet final (queued, retry, leased) has waited since it was enqueued.
    package var oldestWaitingSeconds: Double?
    /// Rows flagged possibly_duplicated.
    package var possiblyDuplicated: Int
    /// Leases past their time (a worker that died; the next claim takes them).
    package var expiredLeases: Int
    /// The schema version.
    package var version: Int

    /// The states in the order they are shown.
    package static let states = ["queued", "scheduled", "leased", "retry", "accepted", "rejected", "dead", "collapsed"]
    /// The states a row ends in.
    package static let finalStates: Set<String> = ["accepted", "rejected", "dead", "collapsed"]
    /// What waits for a time, by reason (`scheduled`, `quiet-hours`, `device-cap`, `rate`, `retry`).
    package var waits: [QueueWait] = []
    /// Rows not final yet.
    package var waiting: Int { counts.filter { !Self.finalStates.contains($0.key) }.values.reduce(0, +) }
}

/// One push for ``PushQueueStore/enqueue(_:)``.
package struct QueueInsert: Sendable, Encodable {
    package var deviceToken: String
    package var topic: String
    package var pushType: String
    package var priority: Int?
    package var payload: String
    package var environment: String
    package var credential: String?
    package var collapseID: String?
    package var enrollmentID: String?
    /// Unique per topic and device while kept (schema step 5): a repeat is not inserted.
    package var idempotencyKey: String?
    /// The send time (ISO 8601, ``LocalTime``): not claimed before it.
    package var notBefore: String?
    /// The row's own quiet window (`Europe/Amsterdam=22:00-07:00`, or `none`).
    package var quietHours: String?

    package init(
        deviceToken: String, topic: String, pushType: String, priority: Int?, payload: String,
        environment: APNsEnvironment, credential: String? = nil, collapseID: String? = nil,
        enrollmentID: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.payload = payload
        self.environment = environment.rawValue
        self.credential = credential
        self.collapseID = collapseID
        self.enrollmentID = enrollmentID
    }

    enum CodingKeys: String, CodingKey {
        case topic, priority, payload, environment, credential
        case deviceToken = "device_token"
        case pushType = "push_type"
        case collapseID = "collapse_id"
        case enrollmentID = "enrollment_id"
        case idempotencyKey = "idempotency_key"
        case notBefore = "not_before"
        case quietHours = "quiet_hours"
    }
}

/// Rows waiting for a time, for one reason (``PushQueueStore/waits()``): how many, and the earliest and latest
/// time they wait for (ISO 8601, UTC).
package struct QueueWait: Sendable, Equatable, Encodable {
    package var reason: String
    package var rows: Int
    package var earliest: String
    package var latest: String

    package init(reason: String, rows: Int, earliest: String, latest: String) {
        self.reason = reason
        self.rows = rows
        self.earliest = earliest
        self.latest = latest
    }
}

/// Who uses the queue, for the GRANT an error names: a worker, an enqueuer, a reader of its status.
package enum QueueGrant: Sendable {
    case worker, enqueue, status

    var statement: String {
        switch self {
        case .worker: PushQueueErrors.workerGrant
        case .enqueue: PushQueueErrors.enqueueGrant
        case .status: PushQueueErrors.statusGrant
        }
    }
}

/// What one claim got: the rows to send, and the rows it ended `dead` instead (expired leases at `maxAttempts`).
package struct QueueClaim: Sendable, Equatable {
    package var rows: [QueuedPush]
    /// Rows whose expired lease had had every claim: ended `dead` with reason `LeaseExpired`, by this claim.
    package var endedDead: Int

    package init(rows: [QueuedPush], endedDead: Int = 0) {
        self.rows = rows
        self.endedDead = endedDead
    }
}

/// The queue's statements on a small pool of libpq connections (KKPushStore's `PQPool`: reconnects by itself).
package final class PushQueueStore: Sendable {
    package let url: PostgresURL
    private let pool: PQPool
    /// Whether the queue has schema step 5's columns (``admit(_:policy:owner:)``), looked up once per store: a
    /// worker on an older queue (usable, with a warning) claims as before, reading no `quiet_hours`.
    let policyColumns = QueueColumnCheck(column: "quiet_hours", remembersAbsence: true)
    private static let table = PushQueueSchema.table

    /// `connections`: at most this many open at once.
    package init(url: PostgresURL, connections: Int = 2) {
        self.url = url
        pool = PQPool(url: url, readOnly: false, size: connections)
    }

    /// Closes the connections.
    package func close() async { await pool.close() }

    /// Opens a store, runs `body` with it, and closes it (also when `body` throws).
    package static func withStore<T: Sendable>(
        url: PostgresURL, connections: Int = 1, _ body: (PushQueueStore) async throws -> T
    ) async throws -> T {
        let store = PushQueueStore(url: url, connections: connections)
        do {
            let result = try await body(store)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }

    /// Runs `body`'s statements on one connection in one transaction, rolled back if it throws; errors as
    /// ``exec(_:_:grant:)``'s.
    func transaction<T: Sendable>(
        grant: String = PushQueueErrors.workerGrant, _ body: @escaping @Sendable (PQConnection) throws -> T
    ) async throws -> T {
        do {
            return try await pool.withConnection { c in try await c.run { c in try c.transaction { try body(c) } } }
        } catch {
            throw PushQueueErrors.map(error, url: url, grant: grant)
        }
    }

    /// `grant`: what the URL's user needs for this statement, named if the server refuses a privilege.
    func exec(_ sql: String, _ parameters: [String?] = [], grant: String = PushQueueErrors.workerGrant)
        async throws -> PQRows
    {
        do {
            return try await pool.withConnection { c in try await c.run { try $0.exec(sql, parameters) } }
        } catch {
            throw PushQueueErrors.map(error, url: url, grant: grant)
        }
    }

    /// Checks the database holds a queue this kkpush can use (see ``PushQueueSchema/inspect(_:url:)``): throws
    /// `queue-not-migrated`, `queue-table-foreign` or `queue-schema-newer`; an older version comes back with a
    /// warning. `status`, `enqueue` and the worker call it before anything else, each with the GRANT it needs
    /// (named if the user may not read the versions).
    package func checkSchema(grant: QueueGrant = .status) async throws -> PushQueueSchema.Inspection {
        let url = self.url
        do {
            return try await pool.withConnection { c in
                try await c.run { c in try PushQueueSchema.inspect({ try c.exec($0, $1) }, url: url) }
            }
        } catch {
            throw PushQueueErrors.map(error, url: url, grant: grant.statement)
        }
    }

    /// Refuses a user that lacks what a worker needs (SELECT and UPDATE on the queue, SELECT on its versions):
    /// `queue-permission-denied` with the GRANT, before anything is claimed or sent.
    package func checkWorkerPrivileges() async throws {
        let table = Self.table
        let versions = PushQueueSchema.versionsTable
        let rows = try await exec(
            """
            SELECT has_table_privilege($1, 'SELECT'), has_table_privilege($1, 'UPDATE'),
                has_table_privilege($2, 'SELECT')
            """, [table, versions])
        let row = rows.rows.first ?? []
        let missing = zip(["SELECT on \(table)", "UPDATE on \(table)", "SELECT on \(versions)"], row)
            .filter { $0.1 != "t" }.map(\.0)
        guard !missing.isEmpty else { return }
        throw PushQueueErrors.permissionDenied(
            "it lacks \(missing.joined(separator: ", ")), which a worker needs to claim rows and write their outcomes",
            url: url, grant: PushQueueErrors.workerGrant, underlying: nil)
    }

    /// Seconds until the earliest `retry` or `scheduled` row (or a `queued` one with a send time) comes due or the earliest lease expires (nil: none waits); a lane
    /// with nothing to claim sleeps until then, or its poll interval if that is sooner.
    package func secondsUntilNextDue() async throws -> Double? {
        let rows = try await exec(
            """
            SELECT extract(epoch FROM least(
                (SELECT min(not_before) FROM \(Self.table)
                    WHERE state IN ('queued', 'retry', 'scheduled') AND not_before IS NOT NULL),
                (SELECT min(lease_until) FROM \(Self.table) WHERE state = 'leased')) - now())
            """)
        return rows.rows.first?.first.flatMap { $0 }.flatMap(Double.init)
    }

    private static let returned = """
        q.id, q.device_token, q.topic, q.push_type, q.priority, q.payload, q.environment, q.credential,
        q.collapse_id, extract(epoch FROM q.expiration)::bigint, q.attempts, q.possibly_duplicated
        """

    /// Claims up to `limit` rows for `owner` until `lease` seconds from now: first leases that expired (their
    /// worker died; claimed again flagged `possibly_duplicated`, since it may have sent them), then ready rows in
    /// id order (`queued`, `retry` or `scheduled`, past `not_before` if they have one). `FOR UPDATE SKIP LOCKED`: workers never wait on each
    /// other's rows, and no row is claimed twice. An expired lease on a row that has had `maxAttempts` claims
    /// ends `dead` instead (a push that kills its worker every time).
    ///
    /// The claim also returns what the claim path needs next, so that it costs no statement of its own: each
    /// ready row's state and lease owner before the claim (``QueuedPush/priorState``, for ``release(owner:_:)``)
    /// and, on a queue with schema step 5, the row's own `quiet_hours` (for ``admit(_:policy:owner:)``).
    package func claim(owner: String, limit: Int, lease: Double, maxAttempts: Int) async throws -> QueueClaim {
        let interval = "make_interval(secs => $3::float8)"
        let readsPolicyColumns = try await policyColumns.present(self)
        // Step 5's quiet_hours, and whether the row is a Live Activity row (step 4, which step 5 follows), so
        // that a claim with none costs the Live Activity plan no statement (QueueLiveActivity.columns(_:)).
        let extra = readsPolicyColumns ? ", q.quiet_hours, q.activity_key IS NOT NULL" : ""
        let (endedDead, expiredRows, readyRows) = try await transaction { c -> (Int, [[String?]], [[String?]]) in
            // Every statement of the claim reads the queue through an index: the ready rows through
            // `kkpush_push_queue_ready` in id order, stopping at the limit; the leases through
            // `kkpush_push_queue_leases`; each row it updates by primary key. Left to its statistics, PostgreSQL
            // plans a queue whose last ANALYZE saw few ready rows (one drained a while ago, or mid-drain) as a read
            // of every ready row, by bitmap or by sequential scan, sorted, on every claim: a burst of N rows then
            // costs O(N²) to drain. SET LOCAL: only this transaction's statements (checked by
            // QueueWorkerPaceTests.claimReadsTheReadyIndex). JIT off with them: a path turned off is costed at
            // 10¹⁰, above jit_above_cost, and the one-row read of the webhook settings in the outbox's trigger (which
            // has no other path) was then compiled on every claim, 7 to 60 ms each.
            try c.exec(
                """
                SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
                    set_config('jit', 'off', true)
                """)
            let ended = try c.exec(
                """
                UPDATE \(Self.table) q SET state = 'dead', reason = 'LeaseExpired', lease_until = NULL,
                    possibly_duplicated = true, updated_at = now(),
                    history = q.history || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', q.attempts,
                        'worker', q.lease_owner, 'outcome', 'dead', 'reason', 'LeaseExpired'))
                WHERE q.id IN (SELECT id FROM \(Self.table) WHERE state = 'leased' AND lease_until < now()
                    AND attempts >= $1::int FOR UPDATE SKIP LOCKED)
                """, [String(maxAttempts)])
            let expired = try c.exec(
                """
                WITH picked AS (
                    SELECT id FROM \(Self.table) WHERE state = 'leased' AND lease_until < now()
                    ORDER BY lease_until LIMIT $2::int FOR UPDATE SKIP LOCKED)
                UPDATE \(Self.table) q SET lease_owner = $1, lease_until = now() + \(interval),
                    attempts = q.attempts + 1, possibly_duplicated = true, updated_at = now(),
                    history = q.history || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', q.attempts,
                        'worker', q.lease_owner, 'outcome', 'lease-expired', 'possibly_duplicated', true))
                FROM picked WHERE q.id = picked.id
                RETURNING \(Self.returned), NULL, NULL\(extra)
                """, [owner, String(limit), String(lease)])
            guard expired.rows.count < limit else { return (ended.affected, expired.rows, []) }
            let ready = try c.exec(
                """
                WITH picked AS (
                    SELECT id, state, lease_owner FROM \(Self.table)
                    WHERE state IN ('queued', 'retry', 'scheduled') AND (not_before IS NULL OR not_before <= now())
                    ORDER BY id LIMIT $2::int FOR UPDATE SKIP LOCKED)
                UPDATE \(Self.table) q SET state = 'leased', lease_owner = $1, lease_until = now() + \(interval),
                    attempts = q.attempts + 1, updated_at = now()
                FROM picked WHERE q.id = picked.id
                RETURNING \(Self.returned), picked.state, picked.lease_owner\(extra)
                """, [owner, String(limit - expired.rows.count), String(lease)])
            return (ended.affected, expired.rows, ready.rows)
        }
        var rows = try expiredRows.map { try Self.decodeClaimed($0, policyColumns: readsPolicyColumns) }.map {
            row -> QueuedPush in
            var row = row
            row.reclaimed = true
            return row
        }
        rows += try readyRows.map { try Self.decodeClaimed($0, policyColumns: readsPolicyColumns) }
        return QueueClaim(rows: rows.sorted { $0.id < $1.id }, endedDead: endedDead)
    }

    /// Hands rows `owner` claimed and did not send back as the claim found them: their state and lease owner as
    /// they were, their claim not counted, no history entry (the claim as if it never happened). Only rows with
    /// a ``QueuedPush/priorState`` (not those taken over from an expired lease: an earlier claim may have sent
    /// them). The ids written; a row whose lease another worker took meanwhile is not written.
    package func release(owner: String, _ rows: [QueuedPush]) async throws -> Set<Int64> {
        struct Prior: Encodable {
            var id: Int64
            var state: String
            var owner: String?
        }
        let prior = rows.compactMap { row in
            row.priorState.map { Prior(id: row.id, state: $0, owner: row.priorOwner) }
        }
        guard !prior.isEmpty else { return [] }
        let json = String(decoding: try JSONEncoder().encode(prior), as: UTF8.self)
        // The lease check inside `coalesce(…, false)` for the plan's sake, as in complete(owner:_:attempts:).
        let result = try await exec(
            """
            UPDATE \(Self.table) q SET state = v.state, lease_owner = v.owner, lease_until = NULL,
                attempts = q.attempts - 1, updated_at = now()
            FROM jsonb_to_recordset($2::jsonb) AS v(id bigint, state text, owner text)
            WHERE q.id = v.id AND coalesce(q.state = 'leased' AND q.lease_owner = $1, false)
            RETURNING q.id
            """, [owner, json])
        return Set(result.rows.compactMap { $0.first.flatMap { $0 }.flatMap { Int64($0) } })
    }

    /// Moves the leases of `owner`'s rows `ids` to `lease` seconds from now; how many it moved. Only the rows the
    /// worker holds: a row leased under its name that it lost track of keeps its lease only until it expires.
    @discardableResult
    package func extendLeases(owner: String, ids: [Int64], lease: Double) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await exec(
            """
            UPDATE \(Self.table) SET lease_until = now() + make_interval(secs => $2::float8)
            WHERE id = ANY($3::bigint[]) AND state = 'leased' AND lease_owner = $1
            """, [owner, String(lease), Self.idArray(ids)]
        ).affected
    }

    /// Row ids as a PostgreSQL array literal (`{1,2,3}`), for a `$n::bigint[]` parameter.
    static func idArray(_ ids: some Sequence<Int64>) -> String {
        "{" + ids.map(String.init).joined(separator: ",") + "}"
    }

    /// The outcomes' statement of ``complete(owner:_:attempts:)``: `$1` the owner, `$2` the writes as a JSON array.
    ///
    /// The lease check is inside `coalesce(…, false)` (the same rows as without it): PostgreSQL's statistics of a
    /// queue being drained say almost no row is `leased`, so with a plain `state = 'leased'` it reads the leased
    /// rows first and evaluates jsonb_to_recordset once per leased row (a claim of 200: 40,000 records, most of
    /// the statement's time; 5,000: seconds). Wrapped, the check is an opaque filter PostgreSQL does not expect
    /// to narrow the rows much: it reads the outcomes once and looks each row up by primary key.
    package static let completeSQL = """
        UPDATE \(PushQueueStore.table) q SET state = v.state,
            apns_id = coalesce(v.apns_id, q.apns_id), status = v.status, reason = v.reason,
            apns_timestamp = v.apns_timestamp,
            not_before = CASE WHEN v.delay IS NULL THEN NULL ELSE now() + make_interval(secs => v.delay) END,
            attempts = q.attempts + v.attempts_delta,
            possibly_duplicated = q.possibly_duplicated OR v.duplicated,
            lease_until = NULL, updated_at = now(),
            history = q.history || jsonb_build_array(jsonb_build_object('at', now()) || v.event)
        FROM jsonb_to_recordset($2::jsonb) AS v(id bigint, state text, apns_id text, status int, reason text,
            apns_timestamp timestamptz, delay float8, attempts_delta int, duplicated boolean, event jsonb)
        WHERE q.id = v.id AND coalesce(q.state = 'leased' AND q.lease_owner = $1, false)
        RETURNING q.id
        """

    /// Writes the outcomes of `owner`'s rows, in one statement; the ids written. A row whose lease another worker
    /// took meanwhile (this worker was too slow and its lease expired) is not written: that worker sends it again.
    /// `attempts` (schema step 6): the attempt ledger's rows, inserted by the same statement (``QueueAttempt``).
    package func complete(owner: String, _ writes: [QueueWrite], attempts: [QueueAttempt] = []) async throws
        -> Set<Int64>
    {
        guard !writes.isEmpty else { return [] }
        let json = QueueWrite.json(writes)
        let update = Self.completeSQL
        let result =
            attempts.isEmpty
            ? try await exec(update, [owner, json])
            : try await exec(
                QueueAttempt.recordingSQL(update: update),
                [owner, json, QueueAttempt.json(attempts)])
        return Set(result.rows.compactMap { $0.first.flatMap { $0 }.flatMap { Int64($0) } })
    }

    /// Whether rows are still to be sent or in someone's lease (queued, retry, scheduled, leased).
    package func hasWork() async throws -> Bool {
        let rows = try await exec(
            "SELECT EXISTS (SELECT 1 FROM \(Self.table) WHERE state IN ('queued', 'retry', 'scheduled', 'leased'))")
        return rows.rows.first?.first == "t"
    }

    /// The counts of `queue status`.
    package func status() async throws -> PushQueueStatus {
        let rows = try await exec(
            """
            SELECT state, count(*), count(*) FILTER (WHERE possibly_duplicated),
                extract(epoch FROM now() - min(enqueued_at)),
                count(*) FILTER (WHERE state = 'leased' AND lease_until < now())
            FROM \(Self.table) GROUP BY state
            """, grant: PushQueueErrors.statusGrant)
        var status = PushQueueStatus(
            counts: Dictionary(uniqueKeysWithValues: PushQueueStatus.states.map { ($0, 0) }),
            oldestWaitingSeconds: nil, possiblyDuplicated: 0, expiredLeases: 0, version: 0)
        for row in rows.rows {
            guard let state = row[0] else { continue }
            status.counts[state] = Int(row[1] ?? "0") ?? 0
            status.possiblyDuplicated += Int(row[2] ?? "0") ?? 0
            status.expiredLeases += Int(row[4] ?? "0") ?? 0
            if !PushQueueStatus.finalStates.contains(state), let age = row[3].flatMap(Double.init) {
                status.oldestWaitingSeconds = max(status.oldestWaitingSeconds ?? 0, age)
            }
        }
        let version = try await exec(
            "SELECT coalesce(max(version), 0) FROM \(PushQueueSchema.versionsTable)", grant: PushQueueErrors.statusGrant
        )
        status.version = Int(version.rows.first?.first.flatMap { $0 } ?? "0") ?? 0
        status.waits = try await waits()
        return status
    }

    /// The rows waiting for a time (`not_before` in the future), by why: `scheduled` (a send time, or a `scheduled`
    /// row without a reason), `quiet-hours`, `device-cap`, `rate` (held back at claim), `retry` (after a failure).
    package func waits() async throws -> [QueueWait] {
        let utc = #"'YYYY-MM-DD"T"HH24:MI:SS"Z"'"#
        let rows = try await exec(
            """
            SELECT why, count(*), to_char(min(not_before) AT TIME ZONE 'UTC', \(utc)),
                to_char(max(not_before) AT TIME ZONE 'UTC', \(utc))
            FROM (SELECT not_before, CASE WHEN state = 'retry' THEN 'retry'
                    WHEN state = 'scheduled' THEN coalesce(reason, 'scheduled') ELSE 'scheduled' END AS why
                FROM \(Self.table) WHERE state IN ('queued', 'retry', 'scheduled') AND not_before > now()) w
            GROUP BY why ORDER BY why
            """, grant: PushQueueErrors.statusGrant)
        return rows.rows.map {
            QueueWait(reason: $0[0] ?? "", rows: Int($0[1] ?? "0") ?? 0, earliest: $0[2] ?? "", latest: $0[3] ?? "")
        }
    }

    /// Inserts `pushes` (one statement per 1,000), each `queued` (a row with a send time waits until it); the ids
    /// of the rows inserted, in order. A push whose idempotency key its topic and device already have (kept, not
    /// pruned) is not inserted: ``enqueueCounting(_:)`` says how many were.
    @discardableResult
    package func enqueue(_ pushes: [QueueInsert]) async throws -> [Int64] {
        try await enqueueCounting(pushes).ids
    }

    /// ``enqueue(_:)``, and how many pushes were repeats of a kept idempotency key (not inserted).
    package func enqueueCounting(_ pushes: [QueueInsert]) async throws -> (ids: [Int64], repeated: Int) {
        var ids: [Int64] = []
        var repeated = 0
        var start = 0
        while start < pushes.count {
            let chunk = Array(pushes[start..<min(start + 1000, pushes.count)])
            start += chunk.count
            let json = String(decoding: try JSONEncoder().encode(chunk), as: UTF8.self)
            // Rows without a key, a send time or quiet hours use the statement an older schema knows too.
            let policy = chunk.contains { $0.idempotencyKey != nil || $0.notBefore != nil || $0.quietHours != nil }
            let rows = try await exec(
                policy
                    ? """
                    INSERT INTO \(Self.table) (device_token, topic, push_type, priority, payload, environment,
                        credential, collapse_id, enrollment_id, idempotency_key, not_before, quiet_hours)
                    SELECT device_token, topic, push_type, priority, payload, environment, credential, collapse_id,
                        enrollment_id, idempotency_key, not_before, quiet_hours
                    FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(item, n),
                        jsonb_to_record(e.item) AS v(device_token text, topic text, push_type text, priority int,
                            payload text, environment text, credential text, collapse_id text, enrollment_id text,
                            idempotency_key text, not_before timestamptz, quiet_hours text)
                    ORDER BY e.n
                    ON CONFLICT (topic, device_token, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                    RETURNING id
                    """
                    : """
                    INSERT INTO \(Self.table) (device_token, topic, push_type, priority, payload, environment,
                        credential, collapse_id, enrollment_id)
                    SELECT device_token, topic, push_type, priority, payload, environment, credential, collapse_id,
                        enrollment_id
                    FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(item, n),
                        jsonb_to_record(e.item) AS v(device_token text, topic text, push_type text, priority int,
                            payload text, environment text, credential text, collapse_id text, enrollment_id text)
                    ORDER BY e.n
                    RETURNING id
                    """, [json], grant: PushQueueErrors.enqueueGrant)
            let inserted = rows.rows.compactMap { $0.first.flatMap { $0 }.flatMap { Int64($0) } }
            repeated += chunk.count - inserted.count
            ids += inserted
        }
        return (ids, repeated)
    }

    /// A claimed row: ``decode(_:)``'s columns, then the state and lease owner before the claim, then (if
    /// `quietHours`) the row's own `quiet_hours`.
    private static func decodeClaimed(_ row: [String?], policyColumns: Bool) throws -> QueuedPush {
        var push = try decode(row)
        if row.count > 13 {
            push.priorState = row[12]
            push.priorOwner = row[13]
        }
        if policyColumns, row.count > 15 {
            push.quietHoursRead = true
            push.quietHours = row[14]
            push.isActivityRow = row[15] == "t"
        }
        return push
    }

    private static func decode(_ row: [String?]) throws -> QueuedPush {
        func invalid(_ what: String) -> KKPushError {
            KKPushError(
                code: .queueRowInvalid, message: "A push queue row has an unusable \(what): \(row[0] ?? "?").",
                fix: "Check the row (its environment must be sandbox or production).")
        }
        guard let idText = row[0], let id = Int64(idText) else { throw invalid("id") }
        guard let token = row[1], let topic = row[2], let type = row[3], let payload = row[5] else {
            throw invalid("column")
        }
        guard let environment = row[6].flatMap(APNsEnvironment.init(rawValue:)) else { throw invalid("environment") }
        return QueuedPush(
            id: id, deviceToken: token, topic: topic, pushType: type, priority: row[4].flatMap { Int($0) },
            payload: payload, environment: environment, credential: row[7], collapseID: row[8],
            expiration: row[9].flatMap { Int($0) }, attempts: Int(row[10] ?? "1") ?? 1,
            possiblyDuplicated: row[11] == "t")
    }
}
