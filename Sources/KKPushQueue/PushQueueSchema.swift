import Foundation
import KKPushCore
package import KKPushStore

/// kkpush's own queue table, `public.kkpush_push_queue`, and its versioned migration: never a change to the
/// backend's tables. A backend enqueues a push with one `INSERT` (``enqueueSQL``) in its own transaction; the
/// statement-level trigger then sends `NOTIFY kkpush_push_queue` at commit, which wakes the workers.
package enum PushQueueSchema {
    /// The queue table, schema-qualified.
    package static let table = "public.kkpush_push_queue"
    /// The `LISTEN`/`NOTIFY` channel the insert trigger notifies.
    package static let channel = "kkpush_push_queue"
    /// The table of applied migration versions.
    package static let versionsTable = "public.kkpush_push_queue_versions"

    /// One step of the migration.
    package struct Migration: Sendable {
        /// Its number: steps run in order, each once.
        package var version: Int
        /// What it does, one line.
        package var description: String
        /// Its statements, run in one transaction with the others of the run.
        package var statements: [String]
    }

    /// Every step, in order. A later version of kkpush appends steps; it never edits one that shipped.
    package static let migrations: [Migration] = [
        Migration(
            version: 1,
            description: "create table \(table), its claiming indexes and the NOTIFY trigger",
            statements: [
                createTableSQL,
                // Claiming the next rows: the ready ones in id order, and the expired leases.
                "CREATE INDEX IF NOT EXISTS kkpush_push_queue_ready ON \(table) (id) WHERE state IN ('queued', 'retry')",
                "CREATE INDEX IF NOT EXISTS kkpush_push_queue_leases ON \(table) (lease_until) WHERE state = 'leased'",
                // The dead-token pruner and operators look rows up by token.
                "CREATE INDEX IF NOT EXISTS kkpush_push_queue_token ON \(table) (device_token)",
                notifyFunctionSQL,
                "DROP TRIGGER IF EXISTS kkpush_push_queue_notify ON \(table)",
                """
                CREATE TRIGGER kkpush_push_queue_notify AFTER INSERT ON \(table)
                    FOR EACH STATEMENT EXECUTE FUNCTION public.kkpush_push_queue_notify()
                """,
            ])
    ]

    /// The latest version this kkpush knows.
    package static var latestVersion: Int { migrations.last?.version ?? 0 }

    /// The queue table. `state` defaults to `queued`, so a backend's insert need not name it.
    package static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS \(table) (
            id bigserial PRIMARY KEY,
            device_token text NOT NULL,
            topic text NOT NULL,
            push_type text NOT NULL DEFAULT 'alert',
            priority int,
            payload text NOT NULL,
            environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
            credential text NULL,
            collapse_id text,
            expiration timestamptz,
            enrollment_id text NULL,
            state text NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'leased', 'accepted', 'rejected', 'retry', 'dead')),
            attempts int NOT NULL DEFAULT 0,
            not_before timestamptz,
            lease_owner text,
            lease_until timestamptz,
            apns_id text,
            status int,
            reason text,
            apns_timestamp timestamptz,
            possibly_duplicated boolean NOT NULL DEFAULT false,
            history jsonb NOT NULL DEFAULT '[]',
            enqueued_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz
        )
        """

    /// The trigger function: one `NOTIFY` per inserting statement (PostgreSQL delivers it at commit, and folds the
    /// same notification of one transaction into one).
    package static let notifyFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('\(channel)', '');
            RETURN NULL;
        END
        $$
        """

    /// The one statement a backend runs to enqueue a push, in the transaction that writes its own data
    /// ($1 token, $2 topic, $3 push type, $4 priority or NULL, $5 payload JSON, $6 environment, $7 credential or
    /// NULL, $8 collapse id or NULL, $9 expiration or NULL, $10 the enrollment's id or NULL).
    package static let enqueueSQL = """
        INSERT INTO public.kkpush_push_queue
            (device_token, topic, push_type, priority, payload, environment, credential, collapse_id, expiration,
             enrollment_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        """

    /// What ``migrate(url:)`` did.
    package struct MigrationResult: Sendable {
        /// The steps it applied, one line each ("1: create table ..."); empty on a second run.
        package var applied: [String]
        /// The schema's version after it.
        package var version: Int
    }

    /// Applies the steps not yet applied, in one transaction under an advisory lock (two runs at once do not both
    /// apply a step): idempotent, a second run applies nothing and says so. A database at a later version than
    /// this kkpush knows is refused (`queue-schema-newer`).
    package static func migrate(url: PostgresURL) async throws -> MigrationResult {
        let pool = PQPool(url: url, readOnly: false, size: 1)
        do {
            let result = try await pool.withConnection { c in
                try await c.run { c in
                    try c.transaction {
                        try c.exec("SELECT pg_advisory_xact_lock(7306588)")
                        try c.exec(
                            """
                            CREATE TABLE IF NOT EXISTS \(versionsTable) (
                                version int PRIMARY KEY, description text NOT NULL,
                                applied_at timestamptz NOT NULL DEFAULT now())
                            """)
                        let current =
                            Int(
                                try c.exec("SELECT coalesce(max(version), 0) FROM \(versionsTable)").rows.first?.first
                                    .flatMap { $0 } ?? "0") ?? 0
                        if current > latestVersion {
                            throw KKPushError(
                                code: .queueSchemaNewer,
                                message:
                                    "The push queue in \(url.named) is at schema version \(current); this kkpush knows versions up to \(latestVersion).",
                                fix: "Run a kkpush at least as new as the one that migrated it.")
                        }
                        var applied: [String] = []
                        for step in migrations where step.version > current {
                            for statement in step.statements { try c.exec(statement) }
                            try c.exec(
                                "INSERT INTO \(versionsTable) (version, description) VALUES ($1, $2)",
                                [String(step.version), step.description])
                            applied.append("\(step.version): \(step.description)")
                        }
                        return MigrationResult(applied: applied, version: max(current, latestVersion))
                    }
                }
            }
            await pool.close()
            return result
        } catch {
            await pool.close()
            throw PushQueueErrors.map(error, url: url)
        }
    }
}

/// The queue's database errors: libpq's through ``PostgresErrors``, and a missing table as `queue-not-migrated`.
enum PushQueueErrors {
    static func map(_ error: any Error, url: PostgresURL) -> any Error {
        if case PQFailure.server(let state, let message, _) = error, state == "42P01" {
            return KKPushError(
                code: .queueNotMigrated,
                message: "The push queue table is missing in \(url.named): \(message).",
                fix: "Create it first with the queue's migration (queueMigrateCommand) on the same database.")
        }
        return PostgresErrors.map(error, url: url) ?? error
    }
}
