import Foundation
import KKPushCore

/// The registry's operations, written once over ``ActivitySQL``: each runs inside one transaction of the database
/// (SQLite `BEGIN IMMEDIATE`, PostgreSQL `BEGIN` with an advisory lock per device for starts), so two processes
/// planning at once see each other's rows. State changes go through ``ActivityTransition`` only.
struct ActivityEngine: Sendable {
    let settings: ActivityRegistrySettings

    /// The columns of an activity, in ``record(_:)``'s order.
    static let columns =
        "key, device, attributes_type, topic, state, update_token, activity_id, push_to_start_token, start_apns_id, start_status, start_reason, requested_at, start_accepted_at, active_at, ended_at, dismissal_date, dismissed_at, stale_at, updated_at, note"

    /// How long an ended activity without a dismissal date stays on the device: up to 4 hours (Apple's "Displaying
    /// live data with Live Activities": the system removes an ended activity after at most four hours).
    static let endedLifetime: TimeInterval = 4 * 3600

    // MARK: Migration

    func migrate(_ sql: ActivitySQL) throws -> ActivityMigrationResult {
        if sql.dialect == .postgres { try sql.query("SELECT pg_advisory_xact_lock(7306589)") }
        let versions = sql.table(ActivitySchema.versions)
        try sql.query(
            "CREATE TABLE IF NOT EXISTS \(versions) (version integer PRIMARY KEY, description text NOT NULL, applied_at bigint NOT NULL)"
        )
        let current =
            Int(try sql.query("SELECT coalesce(max(version), 0) FROM \(versions)").first?.first?.flatMap { $0 } ?? "0")
            ?? 0
        if current > ActivitySchema.latestVersion {
            throw KKPushError(
                code: .activityRegistryNewer,
                message:
                    "The activity registry is at schema version \(current); this kkpush knows versions up to \(ActivitySchema.latestVersion).",
                fix: "Run a kkpush at least as new as the one that migrated it.")
        }
        var applied: [String] = []
        for step in ActivitySchema.migrations where step.version > current {
            for statement in step.statements(sql.dialect) { try sql.query(statement) }
            try sql.query(
                "INSERT INTO \(versions) (version, description, applied_at) VALUES ($1, $2, $3)",
                [.int(Int64(step.version)), .text(step.description), ActivityValue(Date())])
            applied.append("\(step.version): \(step.description)")
        }
        return ActivityMigrationResult(applied: applied, version: max(current, ActivitySchema.latestVersion))
    }

    // MARK: Reads

    func activity(_ sql: ActivitySQL, key: String) throws -> ActivityRecord? {
        try sql.query(
            "SELECT \(Self.columns) FROM \(sql.table(ActivitySchema.activities)) WHERE key = $1", [.text(key)]
        )
        .first.map(Self.record)
    }

    func activities(_ sql: ActivitySQL, _ filter: ActivityFilter) throws -> [ActivityRecord] {
        var clauses: [String] = []
        var binds: [ActivityValue] = []
        func add(_ column: String, _ value: String?) {
            guard let value else { return }
            binds.append(.text(value))
            clauses.append("\(column) = $\(binds.count)")
        }
        add("device", filter.device)
        add("state", filter.state?.rawValue)
        add("attributes_type", filter.attributesType)
        let whereClause = clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND ")
        let limit = filter.limit.map { " LIMIT \(max(0, $0))" } ?? ""
        return try sql.query(
            "SELECT \(Self.columns) FROM \(sql.table(ActivitySchema.activities))\(whereClause) ORDER BY requested_at, key\(limit)",
            binds
        ).map(Self.record)
    }

    func pushToStartTokens(_ sql: ActivitySQL, device: String) throws -> [PushToStartTokenRecord] {
        let rows = try sql.query(
            "SELECT attributes_type, token, status, first_seen, last_seen, source FROM \(sql.table(ActivitySchema.tokens)) WHERE device = $1 ORDER BY attributes_type",
            [.text(device)])
        let history = try sql.query(
            "SELECT attributes_type, token, outcome, reason, source, at FROM \(sql.table(ActivitySchema.history)) WHERE device = $1 ORDER BY id",
            [.text(device)])
        return rows.map { r in
            let type = r[0] ?? ""
            return PushToStartTokenRecord(
                device: device, attributesType: type, token: r[1] ?? "",
                status: PushToStartTokenStatus(rawValue: r[2] ?? "") ?? .good,
                firstSeen: Self.date(r[3]) ?? .distantPast,
                lastSeen: Self.date(r[4]) ?? .distantPast, source: r[5] ?? "",
                history: history.filter { $0[0] == type }.map { h in
                    PushToStartRotation(
                        token: h[1], outcome: PushToStartRotation.Outcome(rawValue: h[2] ?? "") ?? .refused,
                        reason: h[3], source: h[4] ?? "", at: Self.date(h[5]) ?? .distantPast)
                })
        }
    }

    // MARK: The app's report

    func recordReport(_ sql: ActivitySQL, _ report: ActivityTokenReport, device: String, at: Date) throws
        -> ActivityReportResult
    {
        var result = ActivityReportResult()
        for entry in report.pushToStartTokens {
            guard !entry.attributesType.trimmingCharacters(in: .whitespaces).isEmpty else {
                result.ignored.append("A push-to-start token without an attributes type (attributes_type) was ignored.")
                continue
            }
            result.rotations.append(
                try rotate(
                    sql, device: device, type: entry.attributesType, raw: entry.token, source: report.source, at: at))
        }
        for entry in report.activityTokens {
            do {
                try ActivityPushes.checkKey(entry.activityKey)
            } catch {
                result.ignored.append("An activity token was ignored: \(error.message)")
                continue
            }
            let token: String
            do {
                token = try ActivityPushes.checkToken(entry.token, field: "activity_tokens.token")
            } catch {
                result.ignored.append(
                    "The update token of activity '\(entry.activityKey)' was ignored: \(error.message)")
                continue
            }
            guard let current = try activity(sql, key: entry.activityKey) else {
                guard let type = entry.attributesType, !type.isEmpty else {
                    result.ignored.append(
                        "The update token of activity '\(entry.activityKey)' was ignored: the registry does not know the key, and the entry names no attributes type to record the activity under."
                    )
                    continue
                }
                // An activity the app started itself (or whose start the registry never planned): recorded as it
                // is on the device, active with its update token, under the topic of the app that reported it (a
                // planned start's topic comes from its request). kkpush's choice: without that topic the activity is
                // not recorded at all, rather than stored with an empty one whose updates would go to the apns-topic
                // `.push-type.liveactivity`, which APNs refuses; the app's next report with its bundle id records it.
                guard let topic = Self.reportedTopic(report) else {
                    let error = Self.topicMissing(key: entry.activityKey, type: type)
                    result.ignored.append(
                        "The update token of activity '\(entry.activityKey)' was ignored (\(error.code.rawValue)): \(error.message) \(error.fix ?? "")"
                    )
                    continue
                }
                try sql.query(
                    """
                    INSERT INTO \(sql.table(ActivitySchema.activities)) (key, device, attributes_type, topic, state, update_token, activity_id, requested_at, active_at, updated_at, note)
                    VALUES ($1, $2, $3, $4, 'active', $5, $6, $7, $7, $7, $8) ON CONFLICT (key) DO NOTHING
                    """,
                    [
                        .text(entry.activityKey), .text(device), .text(type), .text(topic), .text(token),
                        ActivityValue(entry.activityID), ActivityValue(at),
                        .text("reported by the app with its update token; no start planned by this registry"),
                    ])
                if let record = try activity(sql, key: entry.activityKey) { result.activities.append(record) }
                continue
            }
            guard let next = ActivityTransition.next(from: current.state, on: .updateTokenReported) else {
                result.ignored.append(
                    "The update token of activity '\(entry.activityKey)' was ignored: the activity is \(current.state.rawValue)."
                )
                continue
            }
            // An activity stored without a topic (by an older kkpush) takes the reporting app's: its updates and ends
            // can go out again.
            try sql.query(
                """
                UPDATE \(sql.table(ActivitySchema.activities)) SET state = $2, update_token = $3,
                    activity_id = coalesce($4, activity_id), active_at = coalesce(active_at, $5), updated_at = $5, note = $6,
                    topic = CASE WHEN trim(topic) = '' THEN coalesce($7, topic) ELSE topic END
                WHERE key = $1
                """,
                [
                    .text(current.key), .text(next.rawValue), .text(token), ActivityValue(entry.activityID),
                    ActivityValue(at),
                    .text(
                        current.state == .stale
                            ? "update token reported after the start was marked stale: the device did start it"
                            : current.updateToken == nil ? "update token reported by the app" : "update token rotated"),
                    ActivityValue(Self.reportedTopic(report)),
                ])
            // A late token clears the suspicion its stale start cast on the push-to-start token.
            if current.state == .stale, let pts = current.pushToStartToken {
                try sql.query(
                    "UPDATE \(sql.table(ActivitySchema.tokens)) SET status = 'good' WHERE device = $1 AND attributes_type = $2 AND token = $3 AND status = 'suspect'",
                    [.text(current.device), .text(current.attributesType), .text(pts)])
            }
            if let record = try activity(sql, key: current.key) { result.activities.append(record) }
        }
        for entry in report.activityStates {
            guard let current = try activity(sql, key: entry.activityKey) else {
                result.ignored.append(
                    "The state of activity '\(entry.activityKey)' was ignored: the registry does not know the key.")
                continue
            }
            let event: ActivityTransition.Event = entry.state == .ended ? .appReportedEnded : .appReportedDismissed
            guard let next = ActivityTransition.next(from: current.state, on: event) else {
                result.ignored.append(
                    "The state \(entry.state.rawValue) of activity '\(entry.activityKey)' was ignored: the activity is \(current.state.rawValue)."
                )
                continue
            }
            try setState(sql, current, next, at: at, note: "the app reported it \(entry.state.rawValue)")
            if let record = try activity(sql, key: current.key) { result.activities.append(record) }
        }
        return result
    }

    /// The Live Activity topic of the app that made `report` (`<bundle id>.push-type.liveactivity`), or nil when the
    /// report names none.
    static func reportedTopic(_ report: ActivityTokenReport) -> String? {
        guard let topic = report.topic?.trimmingCharacters(in: .whitespaces), !topic.isEmpty else { return nil }
        return ActivityPushes.liveActivityTopic(topic)
    }

    /// An activity the app started itself, reported without the app's bundle id.
    static func topicMissing(key: String, type: String) -> KKPushError {
        KKPushError(
            code: .activityTopicMissing,
            message:
                "The registry does not know the activity '\(key)' (\(type)), which the app started itself, and the report names no app topic (topic) to record it under: its updates would go to the apns-topic '.push-type.liveactivity', which APNs refuses.",
            fix:
                "Report the app's bundle id with its tokens (topic), e.g. nl.kantinekoning.app: a backend gives the token update's bundle_id, or its own app's."
        )
    }

    /// One push-to-start rotation: a good token replaces the stored one; nil, empty or malformed never does.
    func rotate(_ sql: ActivitySQL, device: String, type: String, raw: String?, source: String, at: Date) throws
        -> PushToStartRotation
    {
        let tokens = sql.table(ActivitySchema.tokens)
        let current = try sql.query(
            "SELECT token, status FROM \(tokens) WHERE device = $1 AND attributes_type = $2",
            [.text(device), .text(type)]
        ).first
        let kept = current.map { " The stored token (\(DeviceToken.redacted($0[0] ?? ""))) was kept." } ?? ""
        var rotation: PushToStartRotation
        if raw == nil || raw?.trimmingCharacters(in: .whitespaces).isEmpty == true {
            rotation = PushToStartRotation(
                token: raw, outcome: .refused,
                reason:
                    "The push-to-start token was \(raw == nil ? "null" : "empty"): a rotation without a token never replaces one.\(kept)",
                source: source, at: at)
        } else {
            do {
                let token = try ActivityPushes.checkToken(raw ?? "", field: "push_to_start_tokens.token")
                if current?[0] == token {
                    try sql.query(
                        "UPDATE \(tokens) SET last_seen = $3 WHERE device = $1 AND attributes_type = $2",
                        [.text(device), .text(type), ActivityValue(at)])
                    rotation = PushToStartRotation(token: token, outcome: .unchanged, source: source, at: at)
                } else {
                    try sql.query(
                        """
                        INSERT INTO \(tokens) (device, attributes_type, token, status, first_seen, last_seen, source)
                        VALUES ($1, $2, $3, 'good', $4, $4, $5)
                        ON CONFLICT (device, attributes_type) DO UPDATE SET token = excluded.token, status = 'good',
                            first_seen = excluded.first_seen, last_seen = excluded.last_seen, source = excluded.source
                        """,
                        [.text(device), .text(type), .text(token), ActivityValue(at), .text(source)])
                    rotation = PushToStartRotation(token: token, outcome: .accepted, source: source, at: at)
                }
            } catch let error as KKPushError {
                rotation = PushToStartRotation(
                    token: raw, outcome: .refused, reason: error.message + kept, source: source, at: at)
            }
        }
        try sql.query(
            "INSERT INTO \(sql.table(ActivitySchema.history)) (device, attributes_type, token, outcome, reason, source, at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(device), .text(type), ActivityValue(rotation.token), .text(rotation.outcome.rawValue),
                ActivityValue(rotation.reason), .text(source), ActivityValue(at),
            ])
        return rotation
    }

    // MARK: Starts

    func planStart(_ sql: ActivitySQL, _ request: ActivityStartRequest, at: Date) throws -> ActivityStartPlan {
        do {
            try ActivityPushes.checkKey(request.key)
        } catch {
            return .refused(error)
        }
        if request.device.trimmingCharacters(in: .whitespaces).isEmpty {
            return .refused(
                KKPushError(
                    code: .activityInputInvalid, message: "The device (device) of the start is empty.",
                    fix: "Name the device the activity starts on (its enrollment or device id): budgets are per device."
                ))
        }
        // Idempotent by key: an activity of this key is the answer, unless its start was rejected by APNs (then it
        // never reached the device, and the same key may start it).
        if let existing = try activity(sql, key: request.key), !Self.startRejected(existing) {
            return .existing(existing)
        }
        if sql.dialect == .postgres {
            // One start per device at a time: the budget's count and the insert see each other's rows.
            try sql.query("SELECT pg_advisory_xact_lock(7306590, hashtext($1))", [.text(request.device)])
        }
        // The token. Only read here: a token given with the start is recorded as the device's current one after the
        // budget, when the start is planned to send (a deferred, refused or existing start records nothing).
        let tokens = sql.table(ActivitySchema.tokens)
        var notes: [String] = []
        let token: String
        var status = PushToStartTokenStatus.good
        let storedRow = try sql.query(
            "SELECT token, status FROM \(tokens) WHERE device = $1 AND attributes_type = $2",
            [.text(request.device), .text(request.attributesType)]
        ).first
        let storedStatus = PushToStartTokenStatus(rawValue: storedRow?[1] ?? "") ?? .good
        if let given = request.pushToStartToken {
            do {
                token = try ActivityPushes.checkToken(given, field: "pushToStartToken")
            } catch {
                return .refused(error)
            }
            if let stored = storedRow?[0], stored == token {
                // The registry's own token, given again: its status holds (a dead one is refused below, as the stored
                // one is when no token is given: APNs said it is no longer valid, a start to it never arrives).
                status = storedStatus
                notes.append("Sent to the push-to-start token given with the start (the device's current one).")
            } else {
                notes.append("Sent to the push-to-start token given with the start (now the device's current one).")
            }
        } else {
            guard let row = storedRow, let stored = row[0] else {
                return .refused(
                    KKPushError(
                        code: .activityNoPushToStartToken,
                        message:
                            "The device '\(request.device)' has no push-to-start token for \(request.attributesType): the app has not reported one.",
                        fix:
                            "Have the app report Activity<\(request.attributesType)>.pushToStartTokenUpdates on its token update (push_to_start_tokens), or give the token with the start (pushToStartToken)."
                    ))
            }
            status = storedStatus
            token = stored
        }
        if status == .dead {
            let given = request.pushToStartToken != nil
            return .refused(
                KKPushError(
                    code: .activityNoPushToStartToken,
                    message: given
                        ? "The push-to-start token given with the start (pushToStartToken) is the one of device '\(request.device)' for \(request.attributesType) that the registry holds as dead: APNs answered that it is no longer valid."
                        : "The push-to-start token of device '\(request.device)' for \(request.attributesType) is dead: APNs answered that it is no longer valid.",
                    fix: (given ? "Give the push-to-start token the app reported after it, or wait" : "Wait")
                        + " for the app to report its new push-to-start token (push_to_start_tokens on its next token update), then start again."
                ))
        }
        if status == .suspect {
            notes.append(
                "The push-to-start token is suspect: an earlier start on it went stale (APNs said 200, no activity came back), and no newer token has arrived. It is used all the same; if this start goes stale too, the app must report a new token."
            )
        }
        // The budget.
        let starts = sql.table(ActivitySchema.starts)
        let windowStart = ActivityValue.milliseconds(at) - Int64(settings.startBudgetWindow * 1000)
        let counted = try sql.query(
            "SELECT count(*), min(sent_at) FROM \(starts) WHERE device = $1 AND sent_at > $2",
            [.text(request.device), .int(windowStart)]
        ).first
        let count = Int(counted?[0] ?? "0") ?? 0
        if count >= settings.startBudgetCount {
            let oldest = Self.date(counted?[1]) ?? at
            let until = oldest.addingTimeInterval(settings.startBudgetWindow)
            let reason =
                "The device '\(request.device)' had \(count) starts in the last \(Self.seconds(settings.startBudgetWindow)); the start budget is \(settings.startBudgetCount) per \(Self.seconds(settings.startBudgetWindow)): the device would drop this start while APNs answers 200. The budget frees a place at \(Self.iso(until))."
            switch request.overBudget {
            case .defer: return .deferred(until: until, reason: reason)
            case .refuse:
                return .refused(
                    KKPushError(
                        code: .activityStartBudget, message: reason,
                        fix: "Start it again after \(Self.iso(until)), or defer it instead of refusing it (overBudget)."
                    ))
            }
        }
        // The push.
        let apnsID = UUID().uuidString.lowercased()
        let notification: NotificationRequest
        do {
            notification = try ActivityPushes.start(request, token: token, apnsID: apnsID, at: at)
        } catch {
            return .refused(error)
        }
        // The activity: one row per key (the primary key; a second process's insert waits for this one's commit and
        // then does nothing). A start APNs rejected before is planned again on its row.
        let activities = sql.table(ActivitySchema.activities)
        let topic = ActivityPushes.liveActivityTopic(request.topic)
        try sql.query(
            """
            INSERT INTO \(activities) (key, device, attributes_type, topic, state, push_to_start_token, start_apns_id, requested_at, updated_at, note)
            VALUES ($1, $2, $3, $4, 'requested', $5, $6, $7, $7, 'start planned') ON CONFLICT (key) DO NOTHING
            """,
            [
                .text(request.key), .text(request.device), .text(request.attributesType), .text(topic), .text(token),
                .text(apnsID), ActivityValue(at),
            ])
        try sql.query(
            """
            UPDATE \(activities) SET device = $2, attributes_type = $3, topic = $4, push_to_start_token = $5,
                start_apns_id = $6, start_status = NULL, start_reason = NULL, requested_at = $7, updated_at = $7,
                note = 'start planned again after APNs rejected the last one'
            WHERE key = $1 AND state = 'requested' AND start_status IS NOT NULL AND start_status <> 200
            """,
            [
                .text(request.key), .text(request.device), .text(request.attributesType), .text(topic), .text(token),
                .text(apnsID), ActivityValue(at),
            ])
        guard let record = try activity(sql, key: request.key) else {
            throw KKPushError(
                code: .activityRegistryFailed, message: "The activity '\(request.key)' was not recorded.",
                fix: "Check the registry's database.")
        }
        if record.startApnsID != apnsID { return .existing(record) }
        // The start goes out: a token given with it is now the device's current one (its rotation in the history,
        // source `start`).
        if let given = request.pushToStartToken {
            _ = try rotate(
                sql, device: request.device, type: request.attributesType, raw: given, source: "start", at: at)
        }
        try sql.query(
            "INSERT INTO \(starts) (apns_id, key, device, sent_at) VALUES ($1, $2, $3, $4)",
            [.text(apnsID), .text(request.key), .text(request.device), ActivityValue(at)])
        try sql.query(
            "UPDATE \(tokens) SET last_seen = $3 WHERE device = $1 AND attributes_type = $2",
            [.text(request.device), .text(request.attributesType), ActivityValue(at)])
        return .send(
            ActivityPush(
                key: request.key, event: .start, token: token, tokenKind: .pushToStart, tokenStatus: status,
                request: notification, notes: notes))
    }

    static func startRejected(_ r: ActivityRecord) -> Bool {
        r.state == .requested && r.startStatus != nil && r.startStatus != 200
    }

    // MARK: Updates and ends

    func planUpdate(_ sql: ActivitySQL, _ request: ActivityUpdateRequest, at: Date) throws -> ActivityPushPlan {
        let record: ActivityRecord
        switch try routable(sql, key: request.key, event: .update) {
        case .success(let r): record = r
        case .failure(let error): return .refused(error)
        }
        let token = record.updateToken ?? ""
        let apnsID = UUID().uuidString.lowercased()
        return .send(
            ActivityPush(
                key: record.key, event: .update, token: token, tokenKind: .update,
                request: ActivityPushes.update(request, token: token, topic: record.topic, apnsID: apnsID, at: at)))
    }

    func planEnd(_ sql: ActivitySQL, _ request: ActivityEndRequest, at: Date) throws -> ActivityPushPlan {
        let record: ActivityRecord
        switch try routable(sql, key: request.key, event: .end) {
        case .success(let r): record = r
        case .failure(let error): return .refused(error)
        }
        let token = record.updateToken ?? ""
        let apnsID = UUID().uuidString.lowercased()
        // The dismissal date is kept with the activity: the sweep dismisses it when the date passes.
        try sql.query(
            "UPDATE \(sql.table(ActivitySchema.activities)) SET dismissal_date = $2 WHERE key = $1",
            [
                .text(record.key),
                ActivityValue(request.dismissalDate.map { Date(timeIntervalSince1970: TimeInterval($0)) }),
            ])
        return .send(
            ActivityPush(
                key: record.key, event: .end, token: token, tokenKind: .update,
                request: ActivityPushes.end(request, token: token, topic: record.topic, apnsID: apnsID, at: at)))
    }

    /// The activity of `key` when an update or end can go to it, else the refusal.
    private func routable(_ sql: ActivitySQL, key: String, event: LiveActivityEventName) throws -> Result<
        ActivityRecord, KKPushError
    > {
        do {
            try ActivityPushes.checkKey(key)
        } catch {
            return .failure(error)
        }
        guard let record = try activity(sql, key: key) else {
            return .failure(
                KKPushError(
                    code: .activityUnknown, message: "The registry has no activity '\(key)'.",
                    fix: "Start it first under this key (activityKey), or check the key against the registry's list."))
        }
        if let refusal = ActivityTransition.refusal(sending: event, in: record.state, key: key) {
            return .failure(refusal)
        }
        // An activity an older kkpush recorded from the app's report without a topic: refused by name, never sent to
        // the apns-topic `.push-type.liveactivity` (APNs refuses it) nor to a topic guessed here.
        if record.topic.trimmingCharacters(in: .whitespaces).isEmpty {
            return .failure(
                KKPushError(
                    code: .activityTopicMissing,
                    message:
                        "The activity '\(key)' has no topic: it was recorded from the app's report without the app's bundle id, so its \(event.rawValue) would go to the apns-topic '.push-type.liveactivity', which APNs refuses.",
                    fix:
                        "Have the app report the activity's update token again with the app's bundle id (topic): a backend gives the token update's bundle_id, or its own app's, and the registry then records its topic. Or start a new activity under a new key (activityKey)."
                ))
        }
        return .success(record)
    }

    // MARK: Answers

    func recordAnswer(_ sql: ActivitySQL, _ answer: ActivityAnswer) throws -> ActivityRecord? {
        guard let current = try activity(sql, key: answer.key) else { return nil }
        let activities = sql.table(ActivitySchema.activities)
        let token = DeviceToken.canonical(answer.token)
        switch answer.event {
        case .start:
            // Only the answer to the start this activity last planned.
            guard current.pushToStartToken == token, answer.apnsID == nil || answer.apnsID == current.startApnsID
            else { return current }
            guard let status = answer.status else { return current }  // no answer: the start may have arrived
            if status == 200 {
                try sql.query(
                    "UPDATE \(activities) SET start_status = 200, start_reason = NULL, start_accepted_at = coalesce(start_accepted_at, $2), updated_at = $2, note = $3 WHERE key = $1",
                    [.text(current.key), ActivityValue(answer.at), .text("APNs accepted the start")])
            } else {
                let next = ActivityTransition.next(from: current.state, on: .startRejected) ?? current.state
                try sql.query(
                    "UPDATE \(activities) SET state = $2, start_status = $3, start_reason = $4, updated_at = $5, note = $6 WHERE key = $1",
                    [
                        .text(current.key), .text(next.rawValue), .int(Int64(status)), ActivityValue(answer.reason),
                        ActivityValue(answer.at),
                        .text("APNs rejected the start (\(status) \(answer.reason ?? "")); the key may start again"),
                    ])
                // It never reached the device: it does not count in the device's budget.
                if let id = current.startApnsID {
                    try sql.query("DELETE FROM \(sql.table(ActivitySchema.starts)) WHERE apns_id = $1", [.text(id)])
                }
                if answer.tokenIsDead {
                    try sql.query(
                        "UPDATE \(sql.table(ActivitySchema.tokens)) SET status = 'dead' WHERE device = $1 AND attributes_type = $2 AND token = $3",
                        [.text(current.device), .text(current.attributesType), .text(token)])
                }
            }
        case .update, .end:
            guard current.updateToken == token, let status = answer.status else { return current }
            if answer.tokenIsDead, let next = ActivityTransition.next(from: current.state, on: .updateTokenGone) {
                try setState(
                    sql, current, next, at: answer.at,
                    note:
                        "APNs answered \(status) \(answer.reason ?? "") for its update token: the activity is gone from the device"
                )
            } else if status == 200, answer.event == .end,
                let next = ActivityTransition.next(from: current.state, on: .endAccepted)
            {
                try setState(sql, current, next, at: answer.at, note: "APNs accepted the end")
            } else {
                // Nothing written (an accepted update, the most common answer): no second read.
                return current
            }
        default:
            return current
        }
        return try activity(sql, key: answer.key)
    }

    // MARK: The sweep

    func sweepStale(_ sql: ActivitySQL, at: Date) throws -> [ActivityRecord] {
        let activities = sql.table(ActivitySchema.activities)
        let now = ActivityValue.milliseconds(at)
        let staleBefore = now - Int64(settings.staleTimeout * 1000)
        let endedBefore = now - Int64(Self.endedLifetime * 1000)
        var changed: [ActivityRecord] = []
        // Accepted starts without an update token; and starts planned with no answer recorded (the caller stopped
        // before sending, or the network failed: the start may or may not have arrived), which would otherwise stay
        // `requested` for ever and keep their key: stale too, without suspecting the token.
        let stale = try sql.query(
            "SELECT \(Self.columns) FROM \(activities) WHERE state = 'requested' AND ((start_status = 200 AND start_accepted_at <= $1) OR (start_status IS NULL AND requested_at <= $1)) ORDER BY requested_at, key",
            [.int(staleBefore)]
        ).map(Self.record)
        for record in stale {
            guard let next = ActivityTransition.next(from: record.state, on: .staleTimeout) else { continue }
            let accepted = record.startStatus == 200
            try setState(
                sql, record, next, at: at,
                note: accepted
                    ? "no update token came back within the stale timeout of \(Self.seconds(settings.staleTimeout)) after APNs accepted the start; its push-to-start token is suspect"
                    : "no APNs answer to its start and no update token were recorded within the stale timeout of \(Self.seconds(settings.staleTimeout)) after it was planned"
            )
            if accepted, let pts = record.pushToStartToken {
                try sql.query(
                    "UPDATE \(sql.table(ActivitySchema.tokens)) SET status = 'suspect' WHERE device = $1 AND attributes_type = $2 AND token = $3 AND status = 'good'",
                    [.text(record.device), .text(record.attributesType), .text(pts)])
            }
            if let r = try activity(sql, key: record.key) { changed.append(r) }
        }
        let ended = try sql.query(
            "SELECT \(Self.columns) FROM \(activities) WHERE state = 'ended' AND ((dismissal_date IS NOT NULL AND dismissal_date <= $1) OR (dismissal_date IS NULL AND ended_at <= $2)) ORDER BY requested_at, key",
            [.int(now), .int(endedBefore)]
        ).map(Self.record)
        for record in ended {
            guard let next = ActivityTransition.next(from: record.state, on: .dismissalPassed) else { continue }
            try setState(
                sql, record, next, at: at,
                note: record.dismissalDate != nil ? "its dismissal date passed" : "4 hours passed since its end")
            if let r = try activity(sql, key: record.key) { changed.append(r) }
        }
        return changed
    }

    // MARK: Rows

    /// Writes a transition's result: the state and the time column of that state.
    private func setState(_ sql: ActivitySQL, _ record: ActivityRecord, _ next: ActivityState, at: Date, note: String)
        throws
    {
        let column: String? =
            switch next {
            case .ended: "ended_at"
            case .dismissed: "dismissed_at"
            case .stale: "stale_at"
            case .active: "active_at"
            case .requested: nil
            }
        let set = column.map { ", \($0) = coalesce(\($0), $3)" } ?? ""
        try sql.query(
            "UPDATE \(sql.table(ActivitySchema.activities)) SET state = $2, updated_at = $3, note = $4\(set) WHERE key = $1",
            [.text(record.key), .text(next.rawValue), ActivityValue(at), .text(note)])
    }

    static func record(_ r: [String?]) -> ActivityRecord {
        func v(_ i: Int) -> String? { i < r.count ? r[i] : nil }
        return ActivityRecord(
            key: v(0) ?? "", device: v(1) ?? "", attributesType: v(2) ?? "", topic: v(3) ?? "",
            state: ActivityState(rawValue: v(4) ?? "") ?? .requested, updateToken: v(5), activityID: v(6),
            pushToStartToken: v(7), startApnsID: v(8), startStatus: v(9).flatMap { Int($0) }, startReason: v(10),
            requestedAt: date(v(11)) ?? .distantPast, startAcceptedAt: date(v(12)), activeAt: date(v(13)),
            endedAt: date(v(14)), dismissalDate: date(v(15)), dismissedAt: date(v(16)), staleAt: date(v(17)),
            updatedAt: date(v(18)) ?? .distantPast, note: v(19))
    }

    static func date(_ text: String?) -> Date? {
        guard let text, let ms = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }

    static func seconds(_ t: TimeInterval) -> String { "\(Int(t.rounded())) s" }
}
