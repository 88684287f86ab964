package import Foundation
package import KKPushActivities
package import KKPushClient
package import KKPushCore
import KKPushStore
import Synchronization

// The worker's Live Activity rows (schema step 4, <doc:PushQueue#Live-Activity-rows>): a row with an `activity_key` is
// not sent to its `device_token` as it stands. Its start, update or end is planned by the activity registry (in the
// same database, kkpush's own tables), sent as the registry built it, and APNs' answer goes back to the registry.

/// What the worker does with each claimed Live Activity row before and after sending.
///
/// Before sending (``plan(_:owner:maxAttempts:backoff:heldDelay:now:)``):
/// - **start** (`planStart`): `.send` is sent to the push-to-start token the registry chose (the row's
///   `device_token` if it gave one, else the device's current one); a second row with the same key finds
///   `.existing` and ends `accepted` **without sending**, its `detail` naming the first push (its apns-id and the
///   activity's state): the key is the caller's idempotency key, so a second row is a retry of the first, never a
///   second activity; `accepted` rather than `rejected` because the caller's intent (the activity exists) holds (the
///   row's own start claimed again is sent again only when the earlier attempt surely did not reach the device). A
///   start the budget defers goes back to `retry` until the budget frees a place, its claim not counted; a refused
///   start ends `rejected` with the registry's code as `reason`.
/// - **update, end** (`planUpdate`, `planEnd`): sent to the activity's current update token. While the activity has
///   none yet (`requested`: the app has not reported it), the row goes back to `retry` after
///   ``waitForTokenSeconds``, its claim not counted, and is never sent to another token; once the activity went
///   `stale`, ended or is unknown, or after ``maximumWaitSeconds`` since the row was enqueued, it ends `rejected`
///   with the registry's code (`activity-no-update-token`, `activity-ended`, `activity-unknown`).
/// - Before sending, the row's `device_token` and `apns_id` are set to the token and apns-id of the planned push, so
///   the row says where it went even when no answer comes.
///
/// After sending (``record(_:rows:outcomes:now:)``): each answer goes to `recordAnswer` (a 200 on a start sets
/// `start_accepted_at`, on an end ends the activity; 410 or `BadDeviceToken` marks a push-to-start token dead or
/// dismisses the activity).
///
/// A worker without a registry holds Live Activity rows (back to `retry`, claims not counted, as for a credential it
/// lacks): sending one to its `device_token` could reach a wrong or empty token.
package final class QueueActivities: Sendable {
    /// Seconds an update or end waits for the activity's update token before it is claimed again: the app reports the
    /// token on its next token update, seconds after the start in the common case.
    package static let waitForTokenSeconds = 5.0
    /// Seconds after its INSERT a row waiting for an update token ends `rejected` (`activity-no-update-token`): a
    /// start whose answer never came stays `requested` and is never swept stale, so the wait needs a bound of its own;
    /// an hour is kkpush's choice (a Live Activity update older than that is no longer news).
    package static let maximumWaitSeconds = 3600.0

    let registry: (any ActivityRegistry)?
    let store: PushQueueStore
    /// Whether the table has step 4's columns: kept once true; while false it is looked up at each claim (a cheap
    /// catalog read), so a queue migrated while the worker runs has its Live Activity rows planned, never sent to
    /// their empty `device_token`.
    private let activityColumns = QueueColumnCheck(column: "activity_key", remembersAbsence: false)

    /// What a row held for want of a registry says (the worker's stop names the fix by it).
    static let noRegistryWords = "this worker has no activity registry (activityRegistry)"

    package init(registry: (any ActivityRegistry)?, store: PushQueueStore) {
        self.registry = registry
        self.store = store
    }

    /// A claimed row's Live Activity columns.
    struct Columns: Sendable {
        var key: String
        var event: LiveActivityEvent
        var enrollmentID: String?
        var apnsID: String?
        var ageSeconds: Double
    }

    /// What ``plan(_:owner:maxAttempts:backoff:heldDelay:now:)`` decided for a claim.
    package struct Plan: Sendable {
        /// Rows to send with the registry's request instead of the row's own.
        package var requests: [Int64: NotificationRequest] = [:]
        /// The registry's push of each row sent.
        package var pushes: [Int64: ActivityPush] = [:]
        /// Rows decided without sending: their verdict and the outcome the worker counts them by.
        package var decided: [Int64: (verdict: QueueVerdict, outcome: PushOutcome)] = [:]
    }

    /// How many Live Activity rows wait to be sent (queued, retry, scheduled, leased); 0 on a queue before step 4. A
    /// worker started without a registry says so, since it holds them. `scheduled` counts too: a row held back by
    /// quiet hours or a send time is claimed again when its time comes, and then needs the registry as much.
    package func waitingRows() async throws -> Int {
        guard try await hasActivityColumns() else { return 0 }
        let rows = try await store.exec(
            """
            SELECT count(*) FROM \(PushQueueSchema.table)
            WHERE activity_key IS NOT NULL AND state IN ('queued', 'retry', 'scheduled', 'leased')
            """)
        return Int(rows.rows.first?.first.flatMap { $0 } ?? "0") ?? 0
    }

    /// Whether the queue has step 4's columns (see ``activityColumns``).
    func hasActivityColumns() async throws -> Bool { try await activityColumns.present(store) }

    /// The Live Activity columns of `ids` (rows without an `activity_key` are left out); none on a queue before step 4.
    func columns(_ ids: [Int64]) async throws -> [Int64: Columns] {
        guard !ids.isEmpty, try await hasActivityColumns() else { return [:] }
        let list = PushQueueStore.idArray(ids)
        let rows = try await store.exec(
            """
            SELECT id, activity_key, activity_event, enrollment_id, apns_id,
                extract(epoch FROM now() - enqueued_at)::float8
            FROM \(PushQueueSchema.table) WHERE id = ANY($1::bigint[]) AND activity_key IS NOT NULL
            """, [list])
        var out: [Int64: Columns] = [:]
        for row in rows.rows {
            guard let id = row[0].flatMap({ Int64($0) }), let key = row[1] ?? nil,
                let event = (row[2] ?? nil).map(LiveActivityEvent.init(rawValue:))
            else { continue }
            out[id] = Columns(
                key: key, event: event, enrollmentID: row[3] ?? nil, apnsID: row[4] ?? nil,
                ageSeconds: (row[5] ?? nil).flatMap(Double.init) ?? 0)
        }
        return out
    }

    /// Plans the Live Activity rows among `rows` (see the type's comment); other rows are not in the plan.
    package func plan(
        _ rows: [QueuedPush], owner: String, maxAttempts: Int, backoff: QueueVerdict.Backoff, heldDelay: Double,
        now: Date = Date()
    ) async throws -> Plan {
        // Rows the claim read as having no activity key need no look-up (a claim of plain pushes: no statement).
        let columns = try await columns(rows.filter { $0.isActivityRow != false }.map(\.id))
        var plan = Plan()
        guard !columns.isEmpty else { return plan }
        var placed: [(id: Int64, token: String, apnsID: String?)] = []
        var swept = false
        for row in rows {
            guard let c = columns[row.id] else { continue }
            func decide(_ verdict: QueueVerdict) {
                plan.decided[row.id] = (verdict, Self.placeholder(row))
            }
            guard let registry else {
                let outcome = PushOutcome(
                    result: .failed(
                        PushFailure(
                            kind: .client,
                            message:
                                "Live Activity row (activity_key \(c.key)): \(Self.noRegistryWords), so it cannot know the token to send to."
                        )), duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment))
                plan.decided[row.id] = (
                    QueueVerdict.decide(
                        row: row, outcome: outcome, maxAttempts: maxAttempts, backoff: backoff, worker: owner,
                        heldDelay: heldDelay), outcome
                )
                continue
            }
            let payload = Array(row.payload.utf8)
            do {
                switch c.event {
                case .start:
                    let given = row.deviceToken.isEmpty ? nil : row.deviceToken
                    guard let device = c.enrollmentID ?? given else {
                        throw KKPushError(
                            code: .activityInputInvalid,
                            message:
                                "The Live Activity start row (activity_key \(c.key)) names no device: its enrollment_id and device_token are both NULL.",
                            fix:
                                "Give the enrollment's id (enrollment_id: the device the registry knows the push-to-start token of), or the push-to-start token (device_token)."
                        )
                    }
                    let request = try ActivityPayloadRequests.start(
                        key: c.key, device: device, topic: row.topic, payload: payload, pushToStartToken: given)
                    switch try await registry.planStart(request, at: now) {
                    case .send(let push):
                        plan.pushes[row.id] = push
                    case .existing(let record):
                        // This row's own start, claimed again after an attempt that APNs did not accept: sent again
                        // to the same token with the same apns-id, when APNs answered (not 200) or the attempt
                        // surely never left (the row is not flagged possibly_duplicated). An attempt that may have
                        // reached the device without an answer is not sent again: a second start makes a second
                        // activity. Any other row with the key: the first push stands, nothing is sent.
                        if let apnsID = c.apnsID, apnsID == record.startApnsID, record.startAcceptedAt == nil,
                            record.state == .requested, let token = record.pushToStartToken
                        {
                            if record.startStatus != nil || !row.possiblyDuplicated {
                                let again = try ActivityPushes.start(request, token: token, apnsID: apnsID, at: now)
                                plan.pushes[row.id] = ActivityPush(
                                    key: c.key, event: .start, token: token, tokenKind: .pushToStart, request: again)
                            } else {
                                decide(Self.unanswered(row, key: c.key, apnsID: apnsID, owner: owner))
                            }
                        } else {
                            decide(Self.existing(row, record: record, owner: owner))
                        }
                    case .deferred(let until, let reason):
                        decide(
                            Self.wait(
                                row, seconds: max(0.01, until.timeIntervalSince(now)), reason: "activity-deferred",
                                detail: reason, owner: owner))
                    case .refused(let error):
                        decide(Self.rejected(row, error, owner: owner))
                    }
                case .update, .end:
                    let result =
                        c.event == .update
                        ? try await registry.planUpdate(
                            ActivityPayloadRequests.update(key: c.key, payload: payload), at: now)
                        : try await registry.planEnd(ActivityPayloadRequests.end(key: c.key, payload: payload), at: now)
                    switch result {
                    case .send(let push):
                        plan.pushes[row.id] = push
                    case .refused(let error) where error.code == .activityNoUpdateToken:
                        if !swept {
                            swept = true
                            _ = try await registry.sweepStale(at: now)
                        }
                        let state = try await registry.activity(key: c.key)?.state
                        if state == .requested, c.ageSeconds < Self.maximumWaitSeconds {
                            decide(
                                Self.wait(
                                    row, seconds: Self.waitForTokenSeconds, reason: error.code.rawValue,
                                    detail: error.message, owner: owner))
                        } else {
                            decide(Self.rejected(row, error, owner: owner))
                        }
                    case .refused(let error):
                        decide(Self.rejected(row, error, owner: owner))
                    }
                default:
                    continue
                }
            } catch let error as KKPushError
                where error.code == .activityInputInvalid || error.code == .activityKeyInvalid
            {
                decide(Self.rejected(row, error, owner: owner))
                continue
            } catch {
                // The registry's database failed: the row is tried again with the back-off (its claim counted, so a
                // registry that stays down ends it dead), never sent without a plan.
                let words = (error as? KKPushError)?.message ?? "\(error)"
                let outcome = PushOutcome(
                    result: .failed(PushFailure(kind: .connection, message: "activity registry: \(words)")),
                    duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment))
                decide(
                    QueueVerdict.decide(
                        row: row, outcome: outcome, maxAttempts: maxAttempts, backoff: backoff, worker: owner))
                continue
            }
            if let push = plan.pushes[row.id] {
                plan.requests[row.id] = push.request
                placed.append((row.id, push.token, push.request.apnsID))
            }
        }
        // The row says where its push goes before it is sent.
        if !placed.isEmpty {
            let json = JSONValue.array(
                placed.map {
                    .object([
                        "id": .int(Int($0.id)), "token": .string($0.token),
                        "apns_id": $0.apnsID.map(JSONValue.string) ?? .null,
                    ])
                })
            // The lease check inside `coalesce(…, false)`, as in PushQueueStore.completeSQL: looked up by primary key.
            _ = try await store.exec(
                """
                UPDATE \(PushQueueSchema.table) q SET device_token = v.token, apns_id = coalesce(v.apns_id, q.apns_id)
                FROM jsonb_to_recordset($2::jsonb) AS v(id bigint, token text, apns_id text)
                WHERE q.id = v.id AND coalesce(q.state = 'leased' AND q.lease_owner = $1, false)
                """, [owner, json.description])
        }
        return plan
    }

    /// Gives APNs' answers to the pushes of `plan` to the registry (rows not in it are skipped).
    package func record(_ plan: Plan, rows: [QueuedPush], outcomes: [PushOutcome], now: Date = Date()) async throws {
        guard let registry else { return }
        for (row, outcome) in zip(rows, outcomes) {
            guard let push = plan.pushes[row.id] else { continue }
            try await registry.recordAnswer(
                push.answer(
                    status: outcome.httpStatus, reason: outcome.rejection?.reason.rawValue, apnsID: outcome.apnsID,
                    at: now))
        }
    }

    // MARK: - Verdicts without sending

    /// The outcome a row decided without sending is counted by: no answer, no time, never a configuration answer.
    static func placeholder(_ row: QueuedPush) -> PushOutcome {
        PushOutcome(
            result: .failed(PushFailure(kind: .badInput, message: "not sent: decided by the activity registry")),
            duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment))
    }

    static func event(_ row: QueuedPush, owner: String, outcome: String, reason: String?, detail: String)
        -> [String: JSONValue]
    {
        var event: [String: JSONValue] = [
            "attempt": .int(row.attempts), "worker": .string(owner), "outcome": .string(outcome), "requests": .int(0),
            "detail": .string(String(detail.prefix(300))),
        ]
        if let reason { event["reason"] = .string(reason) }
        return event
    }

    /// A second start of a key: `accepted` without sending, the detail naming the first push.
    static func existing(_ row: QueuedPush, record: ActivityRecord, owner: String) -> QueueVerdict {
        let detail =
            "activity \(record.key) exists (state \(record.state.rawValue)): started by push \(record.startApnsID ?? "(no apns-id)")\(record.startAcceptedAt == nil ? "" : ", accepted by APNs"); nothing sent"
        let write = QueueWrite(
            id: row.id, state: "accepted", apnsID: nil, status: nil, reason: nil, apnsTimestamp: nil, delay: nil,
            attemptsDelta: 0, duplicated: false,
            event: event(row, owner: owner, outcome: "accepted", reason: "activity-exists", detail: detail))
        return QueueVerdict(write: write, outcome: "accepted", mayHaveDuplicated: false)
    }

    /// This row's own start, sent by an earlier claim that got no answer and may have reached the device: `rejected`
    /// (`activity-start-unanswered`), not sent again.
    static func unanswered(_ row: QueuedPush, key: String, apnsID: String, owner: String) -> QueueVerdict {
        let detail =
            "activity \(key): the start \(apnsID) got no answer and may have reached the device; it is not sent again (a second start would make a second activity). If the app never reports the activity, end it or start it under a new key."
        let write = QueueWrite(
            id: row.id, state: "rejected", apnsID: nil, status: nil, reason: "activity-start-unanswered",
            apnsTimestamp: nil, delay: nil, attemptsDelta: 0, duplicated: false,
            event: event(row, owner: owner, outcome: "rejected", reason: "activity-start-unanswered", detail: detail))
        return QueueVerdict(write: write, outcome: "rejected", mayHaveDuplicated: false)
    }

    /// A row the registry refused: `rejected`, its reason the registry's code.
    static func rejected(_ row: QueuedPush, _ error: KKPushError, owner: String) -> QueueVerdict {
        let write = QueueWrite(
            id: row.id, state: "rejected", apnsID: nil, status: nil, reason: error.code.rawValue, apnsTimestamp: nil,
            delay: nil, attemptsDelta: 0, duplicated: false,
            event: event(
                row, owner: owner, outcome: "rejected", reason: error.code.rawValue,
                detail: error.message + (error.fix.map { " \($0)" } ?? "")))
        return QueueVerdict(write: write, outcome: "rejected", mayHaveDuplicated: false)
    }

    /// A row that waits (an update token not back yet, a spent start budget): back to `retry` after `seconds`, its
    /// claim not counted.
    static func wait(_ row: QueuedPush, seconds: Double, reason: String, detail: String, owner: String)
        -> QueueVerdict
    {
        let delay = (seconds * 1000).rounded(.up) / 1000
        var event = event(row, owner: owner, outcome: "retry", reason: reason, detail: detail)
        event["retry_in_s"] = .double(delay)
        event["claim_counted"] = .bool(false)
        let write = QueueWrite(
            id: row.id, state: "retry", apnsID: nil, status: nil, reason: reason, apnsTimestamp: nil, delay: delay,
            attemptsDelta: -1, duplicated: false, event: event)
        return QueueVerdict(write: write, outcome: "retry", mayHaveDuplicated: false)
    }
}

extension QueueWorker {
    /// Sends `rows` as ``send(_:requests:)`` does, after planning the Live Activity rows among them
    /// (``QueueActivities``): one outcome per row, in order, and the verdicts of the rows decided without sending
    /// (their outcome is a placeholder the counts skip). APNs' answers to the sent ones go to the registry.
    /// `heldDelay`: seconds, before jitter, a Live Activity row held for the worker's own configuration waits.
    func sendResolvingActivities(_ rows: [QueuedPush], heldDelay: Double) async -> (
        [PushOutcome], [Int64: QueueVerdict]
    ) {
        let plan: QueueActivities.Plan
        do {
            plan = try await activities.plan(
                rows, owner: configuration.owner, maxAttempts: configuration.maxAttempts,
                backoff: configuration.backoff,
                heldDelay: heldDelay)
        } catch {
            // Which rows are Live Activity rows is not known: none of the claim is sent; every row goes back
            // unsent, its claim not counted (the database error is said, as the lanes say theirs).
            let words = (error as? KKPushError)?.message ?? "\(error)"
            onEvent(.databaseError("Live Activity rows: \(words)", retryIn: 0))
            let outcomes = rows.map { row in
                PushOutcome(
                    result: .failed(PushFailure(kind: .interrupted, message: "not sent: \(words)")),
                    duration: .zero, attempts: 0, endpoint: APNsEndpoint.apple(row.environment))
            }
            return (outcomes, [:])
        }
        if plan.decided.isEmpty && plan.requests.isEmpty { return (await send(rows), [:]) }
        let sendable = rows.filter { plan.decided[$0.id] == nil }
        let sent = await send(sendable, requests: plan.requests)
        do {
            try await activities.record(plan, rows: sendable, outcomes: sent)
        } catch {
            // The rows' outcomes are still written; the registry missed an answer (said, never silent).
            let words = (error as? KKPushError)?.message ?? "\(error)"
            onEvent(.databaseError("recording APNs' answers in the activity registry: \(words)", retryIn: 0))
        }
        var byID: [Int64: PushOutcome] = [:]
        for (row, outcome) in zip(sendable, sent) { byID[row.id] = outcome }
        let outcomes = rows.map { row in
            byID[row.id] ?? plan.decided[row.id]?.outcome ?? QueueActivities.placeholder(row)
        }
        return (outcomes, plan.decided.mapValues(\.verdict))
    }
}
