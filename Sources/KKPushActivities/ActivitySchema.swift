import Foundation
import KKPushCore

/// The registry's tables, the same in SQLite and PostgreSQL (`public.` in PostgreSQL), and their versioned
/// migration, as the push queue's: each step runs once, in order, recorded in `kkpush_activities_versions`; a later
/// kkpush appends steps and never edits one that shipped.
///
/// Times are whole milliseconds since 1970 (UTC) in `bigint` columns in both databases: one set of statements
/// serves both, with no time zone and no text format to parse (kkpush's choice; `to_timestamp(x / 1000.0)` reads
/// one in PostgreSQL).
enum ActivitySchema {
    /// The tables' names without a schema.
    static let activities = "kkpush_activities"
    static let tokens = "kkpush_push_to_start_tokens"
    static let history = "kkpush_push_to_start_history"
    static let starts = "kkpush_activity_starts"
    static let versions = "kkpush_activities_versions"

    /// One migration step.
    struct Migration: Sendable {
        var version: Int
        var description: String
        var statements: @Sendable (ActivityDialect) -> [String]
    }

    /// Every step, in order.
    static let migrations: [Migration] = [
        Migration(
            version: 1,
            description: "create the activity registry's tables (activities, push-to-start tokens and history, starts)",
            statements: { d in
                [
                    """
                    CREATE TABLE IF NOT EXISTS \(d.table(activities)) (
                        key text PRIMARY KEY,
                        device text NOT NULL,
                        attributes_type text NOT NULL,
                        topic text NOT NULL,
                        state text NOT NULL CHECK (state IN ('requested', 'active', 'ended', 'dismissed', 'stale')),
                        update_token text,
                        activity_id text,
                        push_to_start_token text,
                        start_apns_id text,
                        start_status integer,
                        start_reason text,
                        requested_at bigint NOT NULL,
                        start_accepted_at bigint,
                        active_at bigint,
                        ended_at bigint,
                        dismissal_date bigint,
                        dismissed_at bigint,
                        stale_at bigint,
                        updated_at bigint NOT NULL,
                        note text
                    )
                    """,
                    "CREATE INDEX IF NOT EXISTS kkpush_activities_device ON \(d.table(activities)) (device, requested_at)",
                    "CREATE INDEX IF NOT EXISTS kkpush_activities_state ON \(d.table(activities)) (state)",
                    "CREATE INDEX IF NOT EXISTS kkpush_activities_update_token ON \(d.table(activities)) (update_token)",
                    """
                    CREATE TABLE IF NOT EXISTS \(d.table(tokens)) (
                        device text NOT NULL,
                        attributes_type text NOT NULL,
                        token text NOT NULL,
                        status text NOT NULL CHECK (status IN ('good', 'suspect', 'dead')),
                        first_seen bigint NOT NULL,
                        last_seen bigint NOT NULL,
                        source text NOT NULL,
                        PRIMARY KEY (device, attributes_type)
                    )
                    """,
                    """
                    CREATE TABLE IF NOT EXISTS \(d.table(history)) (
                        id \(d == .postgres ? "bigserial PRIMARY KEY" : "INTEGER PRIMARY KEY"),
                        device text NOT NULL,
                        attributes_type text NOT NULL,
                        token text,
                        outcome text NOT NULL CHECK (outcome IN ('accepted', 'unchanged', 'refused')),
                        reason text,
                        source text NOT NULL,
                        at bigint NOT NULL
                    )
                    """,
                    "CREATE INDEX IF NOT EXISTS kkpush_push_to_start_history_device ON \(d.table(history)) (device, attributes_type, id)",
                    """
                    CREATE TABLE IF NOT EXISTS \(d.table(starts)) (
                        apns_id text PRIMARY KEY,
                        key text NOT NULL,
                        device text NOT NULL,
                        sent_at bigint NOT NULL
                    )
                    """,
                    "CREATE INDEX IF NOT EXISTS kkpush_activity_starts_device ON \(d.table(starts)) (device, sent_at)",
                ]
            })
    ]

    /// The latest version this kkpush knows.
    static var latestVersion: Int { migrations.last?.version ?? 0 }
}

/// Which database a statement runs on: the few places their SQL differs.
enum ActivityDialect: Sendable, Equatable {
    case sqlite, postgres

    /// `name` schema-qualified where the database has schemas (`public.name`).
    func table(_ name: String) -> String { self == .postgres ? "public.\(name)" : name }
}

/// A value bound to a statement.
enum ActivityValue: Sendable, Equatable {
    case text(String)
    case int(Int64)
    case null

    init(_ s: String?) { self = s.map(ActivityValue.text) ?? .null }
    init(_ i: Int?) { self = i.map { .int(Int64($0)) } ?? .null }
    init(_ d: Date?) { self = d.map { .int(ActivityValue.milliseconds($0)) } ?? .null }

    static func milliseconds(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// As libpq's text parameter.
    var text: String? {
        switch self {
        case .text(let s): s
        case .int(let i): String(i)
        case .null: nil
        }
    }
}

/// Runs the registry's statements on one connection, on its thread, inside one transaction: the SQL is written
/// once with `$1`, `$2`… (PostgreSQL's placeholders; SQLite reads them as `?1`, `?2`…).
struct ActivitySQL {
    let dialect: ActivityDialect
    let run: (String, [ActivityValue]) throws -> [[String?]]

    @discardableResult
    func query(_ sql: String, _ binds: [ActivityValue] = []) throws -> [[String?]] {
        try run(sql, binds)
    }

    func table(_ name: String) -> String { dialect.table(name) }
}
