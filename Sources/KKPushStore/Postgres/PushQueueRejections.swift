public import Foundation
import KKPushCore

/// One row of the push queue (`kkpush_push_queue`) that APNs rejected with a reason that may mean a dead token.
public struct PushQueueRejection: Sendable, Hashable {
    /// The device token the push went to.
    public var deviceToken: String
    /// The environment it was sent to (`sandbox`, `production`), as the queue holds it.
    public var environment: String?
    /// The topic (bundle id).
    public var topic: String?
    /// The enrollment the push was for, if the queue knows it.
    public var enrollmentID: String?
    /// The row's state (`rejected`, `dead`, ...).
    public var state: String?
    /// APNs' HTTP status.
    public var status: Int?
    /// APNs' reason (`Unregistered`, `BadDeviceToken`).
    public var reason: String
    /// APNs' timestamp of a 410 (when it found the token no longer valid), if any.
    public var apnsTimestamp: Date?
    /// When the row last changed.
    public var updatedAt: Date?

    /// Creates a row.
    public init(
        deviceToken: String, environment: String?, topic: String?, enrollmentID: String?, state: String?,
        status: Int?, reason: String, apnsTimestamp: Date?, updatedAt: Date?
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.enrollmentID = enrollmentID
        self.state = state
        self.status = status
        self.reason = reason
        self.apnsTimestamp = apnsTimestamp
        self.updatedAt = updatedAt
    }
}

/// A token's `accepted` rows of the push queue, folded into one: APNs accepted a push to it, and when last.
public struct PushQueueAcceptance: Sendable, Hashable {
    /// The device token, lowercased (the rows of one token in any case are one token).
    public var deviceToken: String
    /// The environment of the latest accepted row.
    public var environment: String?
    /// When the latest accepted row changed (was answered); nil when a row of the token has no `updated_at` (its
    /// time is unknown, so it may be the latest).
    public var updatedAt: Date?
    /// How many accepted rows the token has.
    public var rows: Int

    /// Creates a token's acceptance.
    public init(deviceToken: String, environment: String?, updatedAt: Date?, rows: Int) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.updatedAt = updatedAt
        self.rows = rows
    }
}

/// Reads the push queue's rejections (read-only): the rows of `kkpush_push_queue` whose reason is
/// `Unregistered`, `ExpiredToken` or `BadDeviceToken`; and its acceptances (`state` `accepted`), one per token.
public enum PushQueueRejections {
    /// The queue's table.
    public static let table = "kkpush_push_queue"

    /// The queue's rows with a dead-token reason, `batchSize` at a time (keyset on the token), handed to `body`.
    /// `store-schema-mismatch` names a missing table or column.
    public static func forEach(
        url: PostgresURL, batchSize: Int, _ body: @Sendable ([PushQueueRejection]) async throws -> Void
    ) async throws {
        let size = max(1, batchSize)
        var after: (String, String)? = nil
        while true {
            let key = after
            let rows = try await read(url: url, after: key, limit: size)
            if rows.isEmpty { break }
            try await body(rows.map(\.rejection))
            after = rows.last.map { ($0.rejection.deviceToken, $0.ctid) }
            if rows.count < size { break }
        }
    }

    /// Per token (lowercased), its `accepted` rows folded into one (the latest `updated_at`), `batchSize` tokens at a
    /// time (keyset on the lowercased token), handed to `body`. Read-only; run after ``forEach(url:batchSize:_:)``,
    /// which names a table or column that is missing.
    public static func forEachAcceptance(
        url: PostgresURL, batchSize: Int, _ body: @Sendable ([PushQueueAcceptance]) async throws -> Void
    ) async throws {
        let size = max(1, batchSize)
        var after: String? = nil
        while true {
            let key = after
            let rows = try await readAcceptances(url: url, after: key, limit: size)
            if rows.isEmpty { break }
            try await body(rows)
            after = rows.last?.deviceToken
            if rows.count < size { break }
        }
    }

    private static func readAcceptances(url: PostgresURL, after: String?, limit: Int) async throws
        -> [PushQueueAcceptance]
    {
        let c = try await PQConnection.connectAlone(url: url, readOnly: true)
        defer { c.close() }
        do {
            return try await c.run { c in
                let keyset = after == nil ? "" : " AND lower(device_token) COLLATE \"C\" > $1"
                // A row without updated_at has no known time: the token's time is then unknown (it may be the latest).
                let q = """
                    SELECT lower(device_token) COLLATE "C" AS token,
                        (array_agg(environment::text ORDER BY updated_at DESC NULLS FIRST))[1],
                        CASE WHEN bool_or(updated_at IS NULL) THEN NULL
                            ELSE floor(extract(epoch from max(updated_at)) * 1000)::int8 END,
                        count(*)::int8
                    FROM \(EnrollmentTableMapping.quote(table))
                    WHERE state = 'accepted' AND device_token IS NOT NULL\(keyset)
                    GROUP BY 1 ORDER BY 1 LIMIT \(limit)
                    """
                return try c.exec(q, after.map { [$0] } ?? []).rows.map { r in
                    PushQueueAcceptance(
                        deviceToken: r[0] ?? "", environment: r[1],
                        updatedAt: r[2].flatMap { Int64($0) }.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                        rows: r[3].flatMap { Int($0) } ?? 0)
                }
            }
        } catch {
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }

    private struct Row: Sendable {
        var rejection: PushQueueRejection
        var ctid: String
    }

    private static func read(url: PostgresURL, after: (String, String)?, limit: Int) async throws -> [Row] {
        let c = try await PQConnection.connectAlone(url: url, readOnly: true)
        defer { c.close() }
        do {
            return try await c.run { c in
                let present = Set(
                    try c.exec(
                        "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                        [table]
                    ).rows.compactMap { $0.first ?? nil })
                let needed = [
                    "device_token", "environment", "topic", "enrollment_id", "state", "status", "reason",
                    "apns_timestamp", "updated_at",
                ]
                let missing = needed.filter { !present.contains($0) }
                if !missing.isEmpty {
                    throw KKPushError(
                        code: .storeSchemaMismatch,
                        message: present.isEmpty
                            ? "The database \(url.named) has no table \(table) (the push queue), or this user cannot see it."
                            : "The push queue's table \(table) in \(url.named) has no column \(missing.joined(separator: ", ")).",
                        fix: "Give the database the push queue runs on (its migration creates \(table)).")
                }
                // The row's ctid breaks ties between rows of one token (keyset pagination).
                let keyset =
                    after == nil ? "" : " AND (device_token COLLATE \"C\", ctid::text COLLATE \"C\") > ($1, $2)"
                let q = """
                    SELECT device_token::text, environment::text, topic::text, enrollment_id::text, state::text,
                        status::int8::text, reason::text, floor(extract(epoch from apns_timestamp) * 1000)::int8,
                        floor(extract(epoch from updated_at) * 1000)::int8, ctid::text
                    FROM \(EnrollmentTableMapping.quote(table))
                    WHERE reason IN ('Unregistered', 'ExpiredToken', 'BadDeviceToken') AND device_token IS NOT NULL\(keyset)
                    ORDER BY device_token COLLATE "C", ctid::text COLLATE "C" LIMIT \(limit)
                    """
                return try c.exec(q, after.map { [$0.0, $0.1] } ?? []).rows.map { r in
                    func date(_ v: String?) -> Date? {
                        v.flatMap { Int64($0) }.map { Date(timeIntervalSince1970: Double($0) / 1000) }
                    }
                    return Row(
                        rejection: PushQueueRejection(
                            deviceToken: r[0] ?? "", environment: r[1], topic: r[2], enrollmentID: r[3], state: r[4],
                            status: r[5].flatMap { Int($0) }, reason: r[6] ?? "", apnsTimestamp: date(r[7]),
                            updatedAt: date(r[8])),
                        ctid: r[9] ?? "")
                }
            }
        } catch {
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }
}
