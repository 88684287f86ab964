package import Foundation
package import KKPushCore
import KKPushStore
import Synchronization

// Claim-time decisions (<doc:PushQueue#Rates-caps-and-quiet-hours>): after a claim and before anything is sent, a
// worker's ``QueuePolicy`` decides for each row whether it goes now. A row that does not goes back to the queue as
// `scheduled` with `not_before` and its reason in `reason` (`quiet-hours`, `device-cap`, `rate`), its claim not
// counted; an older push a newer one of the same kind supersedes at a device's cap ends `collapsed`. Nothing is
// dropped without its row saying why.

/// A send rate shared by the fleet: a token bucket per topic or per credential, whose state is a row of
/// `public.kkpush_push_queue_rates` that every worker takes from in one locked statement.
package struct QueueRate: Sendable, Equatable, CustomStringConvertible {
    /// `topic` or `credential`.
    package var scope: String
    /// The topic, or the credential's name (`default`: rows without a `credential`).
    package var key: String
    /// Pushes per second.
    package var perSecond: Double
    /// The burst the bucket holds: a tenth of a second's pushes, at least 1. Small on purpose: a bucket left full
    /// while the queue was empty lets out at most that many at once, so a measured rate stays within a few
    /// percent of the limit over seconds.
    package var capacity: Double { max(1, (perSecond / 10).rounded(.down)) }

    package init(scope: String, key: String, perSecond: Double) {
        self.scope = scope
        self.key = key
        self.perSecond = perSecond
    }

    /// Parses `topic=nl.kantinekoning.app:100/s` or `credential=KEYID:600/m` (`/s`, `/m`); `field` names the input.
    package init(parsing text: String, field: String) throws {
        func invalid(_ why: String) -> KKPushError {
            KKPushError(
                code: .queueRateInvalid, message: "The rate '\(text)' (\(field)) \(why).",
                fix:
                    "Give topic=TOPIC:N/s or credential=NAME:N/m, such as topic=nl.kantinekoning.app:100/s (N pushes a second or a minute, shared by every worker)."
            )
        }
        let halves = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard halves.count == 2, ["topic", "credential"].contains(halves[0]) else {
            throw invalid("does not start with topic= or credential=")
        }
        guard let colon = halves[1].lastIndex(of: ":") else { throw invalid("has no :N/s or :N/m after its name") }
        let key = String(halves[1][..<colon])
        let amount = halves[1][halves[1].index(after: colon)...].split(separator: "/").map(String.init)
        guard !key.isEmpty else { throw invalid("names no \(halves[0])") }
        guard amount.count == 2, let n = Double(amount[0]), n.isFinite, n > 0, n <= 1_000_000 else {
            throw invalid("does not give a number of pushes above 0 (up to 1000000) and a unit, as in :100/s")
        }
        let perSecond: Double
        switch amount[1] {
        case "s": perSecond = n
        case "m", "min": perSecond = n / 60
        default: throw invalid("has the unit '\(amount[1])'; the units are s and m")
        }
        self.init(scope: halves[0], key: key, perSecond: perSecond)
    }

    /// Whether `row` takes from this bucket.
    func applies(to row: QueuedPush) -> Bool {
        scope == "topic" ? row.topic == key : (row.credential ?? "default") == key
    }

    package var description: String { "\(scope)=\(key):\(perSecond.formatted(.number.grouping(.never)))/s" }
}

/// At most `count` pushes per device in `period` seconds (`--device-cap 3/1h`).
package struct DeviceCap: Sendable, Equatable {
    package var count: Int
    package var period: Double

    package init(count: Int, period: Double) {
        self.count = count
        self.period = period
    }

    /// Parses `N/PERIOD`: `3/1h`, `5/30m`, `10/1d`, `2/90s` (or `3/h`).
    package init(parsing text: String, field: String) throws {
        let invalid = KKPushError(
            code: .queueRateInvalid, message: "The device cap '\(text)' (\(field)) is not N/PERIOD.",
            fix:
                "Give pushes per device and a period, such as 3/1h (units s, m, h, d; 1 to 10000 pushes, up to 30 days)."
        )
        let parts = text.split(separator: "/").map(String.init)
        guard parts.count == 2, let n = Int(parts[0]), (1...10_000).contains(n), let unit = parts[1].last else {
            throw invalid
        }
        let number = parts[1].dropLast()
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let scale = units[unit], let amount = number.isEmpty ? 1 : Double(number), amount > 0,
            amount * scale <= 30 * 86_400
        else { throw invalid }
        self.init(count: n, period: amount * scale)
    }
}

/// What a worker decides at claim time (none of it by default: every claimed row is sent).
package struct QueuePolicy: Sendable {
    /// The fleet's send rates (the same on every worker: each take updates the bucket's rate to the taker's).
    package var rates: [QueueRate] = []
    package var deviceCap: DeviceCap?
    /// The window for rows whose `quiet_hours` is NULL (a row's own wins; `none` opts a row out).
    package var quietHours: QuietHours?
    /// Seconds an idempotency key is kept after its row ended (nil: never pruned by this worker).
    package var idempotencyRetention: Double? = 30 * 86_400
    /// The clock quiet hours are judged by (injected by tests; the worker's own otherwise).
    package var now: @Sendable () -> Date = { Date() }

    package init() {}
}

/// Whether the queue table has a column that a later schema step added, read from the catalog. A column found is
/// remembered; a missing one is remembered only if `remembersAbsence`, else looked up again at the next call.
final class QueueColumnCheck: Sendable {
    let column: String
    let remembersAbsence: Bool
    private let known = Mutex<Bool?>(nil)

    init(column: String, remembersAbsence: Bool) {
        self.column = column
        self.remembersAbsence = remembersAbsence
    }

    func present(_ store: PushQueueStore) async throws -> Bool {
        if let value = known.withLock({ $0 }) { return value }
        let rows = try await store.exec(
            """
            SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2
                AND NOT attisdropped)
            """, [PushQueueSchema.table, column])
        let value = rows.rows.first?.first == "t"
        if value || remembersAbsence { known.withLock { $0 = value } }
        return value
    }
}

/// A row a claim hands back instead of sending: `scheduled` until `until` (or `delay` seconds from the database's
/// now), or `collapsed` (final).
struct QueueDeferral: Sendable, Encodable {
    var id: Int64
    var state: String
    var reason: String
    var until: String?
    var delay: Double?
    /// The history entry (nil for a rate wait: those are not attempts, and a busy bucket would grow the history).
    var event: [String: JSONValue]?
}

extension PushQueueStore {
    /// The claim-time decisions of `policy` on `rows` (claimed by `owner`): the rows to send now, in order. The
    /// others are written back in one statement: quiet hours first (the time-critical go through), then the
    /// device cap (collapse or wait), then the rates (tokens taken from the shared buckets; the rows left over
    /// wait spread at the rate).
    package func admit(_ rows: [QueuedPush], policy: QueuePolicy, owner: String) async throws -> [QueuedPush] {
        try await admission(rows, policy: policy, owner: owner).rows
    }

    /// What ``admit(_:policy:owner:)`` decided: the rows to send now, and how many it wrote back.
    package struct Admission: Sendable {
        /// The rows to send now, in order.
        package var rows: [QueuedPush]
        /// Rows held back to wait (`scheduled` or `retry`): quiet hours, the device cap, a rate.
        package var deferred = 0
        /// Rows ended `collapsed` at the device cap (a newer push of the same kind waits).
        package var collapsed = 0
    }

    /// ``admit(_:policy:owner:)``, with the counts of the rows it wrote back.
    package func admission(_ rows: [QueuedPush], policy: QueuePolicy, owner: String) async throws -> Admission {
        guard !rows.isEmpty, try await policyColumns.present(self) else { return Admission(rows: rows) }
        var send: [QueuedPush] = []
        var deferred: [QueueDeferral] = []
        // A claim always looks at the rows' own quiet hours, whatever the worker's flags: as the claim read them
        // (no statement of its own: the claim path's cost when no policy is set), else read here.
        let ownWindows =
            rows.allSatisfy(\.quietHoursRead)
            ? Self.windows(rows.compactMap { row in row.quietHours.map { (row.id, $0) } })
            : try await quietHours(of: rows)
        let now = policy.now()
        // The worker's own window ends at one time for the whole claim: worked out once, not per row.
        let workerEnd = policy.quietHours?.end(containing: now)
        for row in rows {
            let (window, end): (QuietHours?, Date?)
            switch ownWindows[row.id] {
            case .some(.some(let own)): (window, end) = (own, own.end(containing: now))
            case .some(.none): (window, end) = (nil, nil)
            case .none: (window, end) = (policy.quietHours, workerEnd)
            }
            if let window, let end,
                !QuietHours.isTimeCritical(pushType: row.pushType, payload: row.payload)
            {
                let until = QueueVerdict.iso8601(end)
                deferred.append(
                    QueueDeferral(
                        id: row.id, state: "scheduled", reason: "quiet-hours", until: until,
                        event: [
                            "worker": .string(owner), "outcome": .string("scheduled"), "reason": .string("quiet-hours"),
                            "until": .string(until), "quiet_hours": .string(window.description),
                        ]))
            } else {
                send.append(row)
            }
        }
        if let cap = policy.deviceCap, !send.isEmpty { send = try await capDevices(send, cap, owner, &deferred) }
        if !policy.rates.isEmpty, !send.isEmpty { send = try await takeTokens(send, policy.rates, &deferred) }
        // Counted as written: a row whose lease another worker took meanwhile is that worker's.
        let written = deferred.isEmpty ? (deferred: 0, collapsed: 0) : try await writeDeferrals(owner: owner, deferred)
        return Admission(rows: send, deferred: written.deferred, collapsed: written.collapsed)
    }

    /// Each row's own `quiet_hours` (rows without one are absent): its window, or `.some(nil)` for `none`.
    private func quietHours(of rows: [QueuedPush]) async throws -> [Int64: QuietHours?] {
        let result = try await exec(
            """
            SELECT id, quiet_hours FROM \(PushQueueSchema.table)
            WHERE id = ANY($1::bigint[]) AND quiet_hours IS NOT NULL
            """, [Self.idArray(rows.map(\.id))])
        return Self.windows(
            result.rows.compactMap { row in
                guard let id = row[0].flatMap({ Int64($0) }), let text = row[1] else { return nil }
                return (id, text)
            })
    }

    /// The windows of rows' `quiet_hours` texts (by row id).
    private static func windows(_ texts: [(id: Int64, text: String)]) -> [Int64: QuietHours?] {
        var windows: [Int64: QuietHours?] = [:]
        for (id, text) in texts {
            // `none`: this row has no quiet hours. A window kkpush cannot read is not guessed at: the row is sent
            // under the worker's window, and the worker's (or `queue enqueue`'s) parser refuses it up front.
            if text.trimmingCharacters(in: .whitespaces).lowercased() == "none" {
                windows[id] = .some(nil)
            } else if let window = try? QuietHours(parsing: text, field: "quiet_hours") {
                windows[id] = window
            }
        }
        return windows
    }

    /// The device cap: per device, the pushes accepted within the period plus those of this claim before it. A
    /// row over the cap ends `collapsed` when a newer push of the same kind for the device waits (same collapse
    /// id, or without one the same push type and topic, enqueued within the period after it): the newer one says
    /// it all. Otherwise it waits (`scheduled`, `device-cap`) until the oldest of the window's pushes leaves it.
    private func capDevices(_ rows: [QueuedPush], _ cap: DeviceCap, _ owner: String, _ deferred: inout [QueueDeferral])
        async throws -> [QueuedPush]
    {
        let tokens = Array(Set(rows.map(\.deviceToken)))
        let recent = try await exec(
            """
            SELECT device_token, count(*), extract(epoch FROM min(updated_at) + make_interval(secs => $2::float8) - now())
            FROM \(PushQueueSchema.table)
            WHERE device_token = ANY($1::text[]) AND state = 'accepted'
                AND updated_at > now() - make_interval(secs => $2::float8)
            GROUP BY device_token
            """, [PostgresText.array(tokens), String(cap.period)])
        var sent: [String: (count: Int, frees: Double)] = [:]
        for row in recent.rows {
            guard let token = row[0] else { continue }
            sent[token] = (Int(row[1] ?? "0") ?? 0, max(1, Double(row[2] ?? "") ?? cap.period))
        }
        var send: [QueuedPush] = []
        var over: [QueuedPush] = []
        for row in rows {
            let seen = sent[row.deviceToken] ?? (0, cap.period)
            if seen.count < cap.count {
                send.append(row)
                sent[row.deviceToken] = (seen.count + 1, seen.frees)
            } else {
                over.append(row)
            }
        }
        guard !over.isEmpty else { return send }
        let newer = try await exec(
            """
            SELECT o.id, max(n.id) FROM \(PushQueueSchema.table) o JOIN \(PushQueueSchema.table) n
                ON n.device_token = o.device_token AND n.id > o.id
                AND n.state IN ('queued', 'retry', 'scheduled', 'leased')
                AND n.enqueued_at <= o.enqueued_at + make_interval(secs => $2::float8)
                AND ((o.collapse_id IS NOT NULL AND n.collapse_id = o.collapse_id)
                    OR (o.collapse_id IS NULL AND n.collapse_id IS NULL AND n.push_type = o.push_type
                        AND n.topic = o.topic))
            WHERE o.id = ANY($1::bigint[])
            GROUP BY o.id
            """, [Self.idArray(over.map(\.id)), String(cap.period)])
        var supersededBy: [Int64: String] = [:]
        for row in newer.rows {
            if let id = row[0].flatMap({ Int64($0) }), let by = row[1] { supersededBy[id] = by }
        }
        for row in over {
            let base: [String: JSONValue] = [
                "worker": .string(owner), "device_cap": .string("\(cap.count)/\(Int(cap.period))s"),
            ]
            if let by = supersededBy[row.id] {
                deferred.append(
                    QueueDeferral(
                        id: row.id, state: "collapsed", reason: "collapsed",
                        event: base.merging(
                            [
                                "outcome": .string("collapsed"), "reason": .string("collapsed"),
                                "superseded_by": .string(by),
                            ]
                        ) { a, _ in a }))
            } else {
                let wait = sent[row.deviceToken]?.frees ?? cap.period
                deferred.append(
                    QueueDeferral(
                        id: row.id, state: "scheduled", reason: "device-cap", delay: wait,
                        event: base.merging(
                            [
                                "outcome": .string("scheduled"), "reason": .string("device-cap"),
                                "retry_in_s": .double(wait),
                            ]
                        ) { a, _ in a }))
            }
        }
        return send
    }

    /// The rates: rows grouped by the buckets they take from; each group takes what its buckets grant, in one
    /// locked statement (``QueuePolicySchema/takeFunctionSQL``); the rest wait `scheduled` (`rate`), in the next free
    /// slots, one push apart at the slowest of their rates.
    private func takeTokens(_ rows: [QueuedPush], _ rates: [QueueRate], _ deferred: inout [QueueDeferral])
        async throws -> [QueuedPush]
    {
        var groups: [[Int]: [QueuedPush]] = [:]
        var order: [[Int]] = []
        for row in rows {
            let buckets = rates.indices.filter { rates[$0].applies(to: row) }
            if groups[buckets] == nil { order.append(buckets) }
            groups[buckets, default: []].append(row)
        }
        var send: [QueuedPush] = []
        for buckets in order {
            let group = groups[buckets] ?? []
            guard !buckets.isEmpty else {
                send += group
                continue
            }
            let chosen = buckets.map { rates[$0] }
            // `{granted,seconds}`: how many go now, and when the slots of the others begin.
            let answer =
                try await exec(
                    "SELECT public.kkpush_push_queue_take($1::text[], $2::text[], $3::float8[], $4::float8[], $5::int)",
                    [
                        PostgresText.array(chosen.map(\.scope)), PostgresText.array(chosen.map(\.key)),
                        PostgresText.array(chosen.map { String($0.perSecond) }),
                        PostgresText.array(chosen.map { String($0.capacity) }), String(group.count),
                    ]
                ).rows.first?.first.flatMap { $0 } ?? "{0,0}"
            let numbers = answer.trimmingCharacters(in: CharacterSet(charactersIn: "{}")).split(separator: ",")
                .compactMap { Double($0) }
            let granted = max(0, min(group.count, Int(numbers.first ?? 0)))
            let slotsFrom = numbers.count > 1 ? max(0, numbers[1]) : 0
            let slowest = chosen.map(\.perSecond).min() ?? 1
            send += group.prefix(granted)
            for (i, row) in group.dropFirst(granted).enumerated() {
                deferred.append(
                    QueueDeferral(
                        id: row.id, state: "scheduled", reason: "rate", delay: slotsFrom + Double(i + 1) / slowest,
                        event: nil))
            }
        }
        return send.sorted { $0.id < $1.id }
    }

    /// Writes the rows a claim hands back: their claim not counted, the lease ended, `not_before` set. The lease
    /// check is inside `coalesce(…, false)` for the plan's sake, as in ``PushQueueStore/complete(owner:_:attempts:)``.
    /// Writes the held-back rows still in `owner`'s lease; how many it wrote as waiting and as collapsed.
    private func writeDeferrals(owner: String, _ deferred: [QueueDeferral]) async throws -> (
        deferred: Int, collapsed: Int
    ) {
        let json = String(decoding: try JSONEncoder().encode(deferred), as: UTF8.self)
        let written = try await exec(
            """
            UPDATE \(PushQueueSchema.table) q SET state = v.state, reason = v.reason,
                not_before = CASE WHEN v.state = 'collapsed' THEN q.not_before
                    ELSE coalesce(v.until, now() + make_interval(secs => coalesce(v.delay, 0))) END,
                attempts = q.attempts - 1, lease_until = NULL, updated_at = now(),
                history = CASE WHEN v.event IS NULL THEN q.history
                    ELSE q.history || jsonb_build_array(jsonb_build_object('at', now(), 'attempt', q.attempts - 1) || v.event) END
            FROM jsonb_to_recordset($2::jsonb) AS v(id bigint, state text, reason text, until timestamptz,
                delay float8, event jsonb)
            WHERE q.id = v.id AND coalesce(q.state = 'leased' AND q.lease_owner = $1, false)
            RETURNING v.state = 'collapsed'
            """, [owner, json])
        let collapsed = written.rows.count { $0.first.flatMap { $0 } == "t" }
        return (written.rows.count - collapsed, collapsed)
    }

    /// Clears the idempotency keys of rows that ended (a final state) more than `retention` seconds ago: the key
    /// may be used again; the row, its outcome and history stay. How many keys it cleared.
    @discardableResult
    package func pruneIdempotencyKeys(retention: Double) async throws -> Int {
        try await exec(
            """
            UPDATE \(PushQueueSchema.table) SET idempotency_key = NULL
            WHERE idempotency_key IS NOT NULL AND state IN ('accepted', 'rejected', 'dead', 'collapsed')
                AND coalesce(updated_at, enqueued_at) < now() - make_interval(secs => $1::float8)
            """, [String(retention)]
        ).affected
    }
}

/// Version 5 of the queue's schema: idempotency keys, scheduled and collapsed rows, per-row quiet hours, and the
/// fleet's rate buckets.
package enum QueuePolicySchema {
    /// The buckets of the send rates: one row per `(scope, key)`, taken from by every worker.
    package static let ratesTable = "public.kkpush_push_queue_rates"

    package static let migration = PushQueueSchema.Migration(
        version: 5,
        description:
            "idempotency_key (unique per topic and device while kept), quiet_hours, states scheduled and collapsed, rate buckets",
        statements: [
            """
            ALTER TABLE \(PushQueueSchema.table) ADD COLUMN IF NOT EXISTS idempotency_key text,
                ADD COLUMN IF NOT EXISTS quiet_hours text
            """,
            // The state's CHECK gains `scheduled` (held back until not_before: a quiet window, a device cap, a rate)
            // and `collapsed` (final: a newer push of the same kind for the device superseded it at its cap).
            "ALTER TABLE \(PushQueueSchema.table) DROP CONSTRAINT IF EXISTS kkpush_push_queue_state_check",
            """
            ALTER TABLE \(PushQueueSchema.table) ADD CONSTRAINT kkpush_push_queue_state_check CHECK (state IN
                ('queued', 'leased', 'accepted', 'rejected', 'retry', 'dead', 'scheduled', 'collapsed'))
            """,
            // A key is unique per app (topic) and device: a backend reuses one event's key for every device of its
            // fan-out, and a retried INSERT of that fan-out conflicts row by row. Partial: rows without a key, and
            // rows whose key retention cleared, never conflict.
            """
            CREATE UNIQUE INDEX IF NOT EXISTS kkpush_push_queue_idempotency
                ON \(PushQueueSchema.table) (topic, device_token, idempotency_key) WHERE idempotency_key IS NOT NULL
            """,
            // The claim's index now covers scheduled rows too; the due times by not_before for an idle worker.
            "DROP INDEX IF EXISTS public.kkpush_push_queue_ready",
            """
            CREATE INDEX IF NOT EXISTS kkpush_push_queue_ready ON \(PushQueueSchema.table) (id)
                WHERE state IN ('queued', 'retry', 'scheduled')
            """,
            """
            CREATE INDEX IF NOT EXISTS kkpush_push_queue_due ON \(PushQueueSchema.table) (not_before)
                WHERE state IN ('queued', 'retry', 'scheduled') AND not_before IS NOT NULL
            """,
            """
            CREATE TABLE IF NOT EXISTS \(ratesTable) (
                scope text NOT NULL CHECK (scope IN ('topic', 'credential')),
                key text NOT NULL,
                rate float8 NOT NULL CHECK (rate > 0),
                capacity float8 NOT NULL CHECK (capacity >= 1),
                tokens float8 NOT NULL,
                refilled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                reserved_until timestamptz,
                PRIMARY KEY (scope, key))
            """,
            takeFunctionSQL,
        ])

    /// The documented INSERT with an idempotency key ($11): a repeat of a kept key for the same topic and device
    /// inserts nothing and returns no id, which the backend sees. The partial index's predicate is in ON CONFLICT:
    /// PostgreSQL infers a partial unique index only when the statement names it.
    package static let idempotentEnqueueSQL = """
        INSERT INTO public.kkpush_push_queue
            (device_token, topic, push_type, priority, payload, environment, credential, collapse_id, expiration,
             enrollment_id, idempotency_key)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (topic, device_token, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id
        """

    /// Takes `wanted` tokens from every bucket named (`scopes[i]`, `keys[i]`, made full at `capacities[i]` if new)
    /// and returns how many it granted (the same number from each, at most what the emptiest holds) and the
    /// seconds from now at which the slots of the rest begin: each bucket keeps `reserved_until`, the end of the
    /// slots already promised to rows held back, so the rows of several workers are spread one after the other
    /// at the rate, not all made due at once (each taking a token and handing the others back again). The buckets are
    /// locked in one order (two workers never deadlock), refilled by `rates[i]` per second since their last take
    /// (the taker's rate and capacity become the bucket's), then debited. `clock_timestamp()` after the lock: a
    /// taker that waited for another sees the time that one wrote, never an earlier one.
    package static let takeFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_take(scopes text[], keys text[], rates float8[],
            capacities float8[], wanted int) RETURNS float8[] LANGUAGE plpgsql AS $$
        DECLARE
            granted int := wanted;
            taken_at timestamptz;
            slots_from timestamptz;
            b record;
        BEGIN
            INSERT INTO \(ratesTable) (scope, key, rate, capacity, tokens)
                SELECT u.scope, u.key, u.rate, u.capacity, u.capacity
                FROM unnest(scopes, keys, rates, capacities) AS u(scope, key, rate, capacity)
                ON CONFLICT (scope, key) DO NOTHING;
            PERFORM 1 FROM \(ratesTable) r JOIN unnest(scopes, keys) AS u(scope, key) USING (scope, key)
                ORDER BY r.scope, r.key FOR UPDATE OF r;
            taken_at := clock_timestamp();
            FOR b IN SELECT r.tokens, r.refilled_at, u.rate, u.capacity
                FROM \(ratesTable) r JOIN unnest(scopes, keys, rates, capacities) AS u(scope, key, rate, capacity)
                    USING (scope, key)
            LOOP
                granted := least(granted, floor(least(b.capacity,
                    b.tokens + b.rate * greatest(0, extract(epoch FROM taken_at - b.refilled_at))))::int);
            END LOOP;
            granted := greatest(granted, 0);
            UPDATE \(ratesTable) r SET rate = u.rate, capacity = u.capacity,
                tokens = least(u.capacity, r.tokens + u.rate * greatest(0, extract(epoch FROM taken_at - r.refilled_at)))
                    - granted,
                refilled_at = greatest(r.refilled_at, taken_at)
            FROM unnest(scopes, keys, rates, capacities) AS u(scope, key, rate, capacity)
            WHERE r.scope = u.scope AND r.key = u.key;
            IF granted >= wanted THEN RETURN ARRAY[granted, 0]; END IF;
            -- The rest wait for slots after those already promised to other workers' rows.
            SELECT greatest(taken_at, coalesce(max(r.reserved_until), taken_at)) INTO slots_from
                FROM \(ratesTable) r JOIN unnest(scopes, keys) AS u(scope, key) USING (scope, key);
            UPDATE \(ratesTable) r SET reserved_until = slots_from
                + make_interval(secs => (wanted - granted) / (SELECT min(x) FROM unnest(rates) AS x))
            FROM unnest(scopes, keys) AS u(scope, key)
            WHERE r.scope = u.scope AND r.key = u.key;
            RETURN ARRAY[granted, extract(epoch FROM slots_from - taken_at)];
        END
        $$
        """
}
