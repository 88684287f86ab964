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
            ]),
        // The documented INSERT (``enqueueSQL``) says the push type may be NULL, but `push_type` is NOT NULL: a
        // NULL failed the backend's transaction. A BEFORE INSERT trigger fills it in (PostgreSQL checks NOT NULL
        // after BEFORE triggers), so the column keeps its guarantee for the workers and the statement works as
        // documented. A trigger rather than dropping NOT NULL: every reader of the table keeps its non-NULL type.
        Migration(
            version: 2,
            description: "fill in a NULL push_type of an INSERT (alert), as the documented statement allows",
            statements: [
                defaultsFunctionSQL,
                "DROP TRIGGER IF EXISTS kkpush_push_queue_defaults ON \(table)",
                """
                CREATE TRIGGER kkpush_push_queue_defaults BEFORE INSERT ON \(table)
                    FOR EACH ROW EXECUTE FUNCTION public.kkpush_push_queue_defaults()
                """,
            ]),
        // Confirmed receipts (<doc:PushQueue#Receipts>): what the app says it got. New nullable columns, so the
        // backend's INSERT and older workers are unchanged; `push_id` is filled by the defaults trigger (replaced
        // here, not edited in step 2) from the payload's `kk_push_id`, so a receipt from a background push's handler
        // (which never sees the apns-id) finds its row.
        Migration(
            version: 3,
            description: "receipt columns (push_id, received_at, handled_at, handled, app_version, app_build)",
            statements: [
                """
                ALTER TABLE \(table) ADD COLUMN IF NOT EXISTS push_id text,
                    ADD COLUMN IF NOT EXISTS received_at timestamptz,
                    ADD COLUMN IF NOT EXISTS handled_at timestamptz,
                    ADD COLUMN IF NOT EXISTS handled text CHECK (handled IN ('refreshed', 'shown', 'dropped')),
                    ADD COLUMN IF NOT EXISTS app_version text,
                    ADD COLUMN IF NOT EXISTS app_build text
                """,
                "CREATE INDEX IF NOT EXISTS kkpush_push_queue_apns_id ON \(table) (lower(apns_id)) WHERE apns_id IS NOT NULL",
                """
                CREATE INDEX IF NOT EXISTS kkpush_push_queue_push_id ON \(table) (push_id, device_token)
                    WHERE push_id IS NOT NULL
                """,
                pushIDFunctionSQL,
                receiptDefaultsFunctionSQL,
                "UPDATE \(table) SET push_id = public.kkpush_push_queue_push_id(payload) WHERE push_id IS NULL",
            ]),
        // Live Activity rows by activity key (<doc:PushQueue#Live-Activity-rows>): two columns and a trigger.
        QueueActivitySchema.migration,
        // Idempotency keys, scheduled sends and quiet hours, rates and device caps (<doc:PushQueue#Idempotency-keys>).
        QueuePolicySchema.migration,
        // The attempt ledger and the webhook outbox (<doc:PushQueue#The-attempt-ledger>): new tables and a trigger.
        QueueLedgerSchema.migration,
        // The outbox's trigger once per statement (<doc:PushQueue#Webhooks>).
        QueueLedgerSchema.statementTrigger,
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

    /// The row trigger of version 2: a NULL `push_type` becomes `alert` (the column's default), before the
    /// NOT NULL check.
    package static let defaultsFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_defaults() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.push_type := coalesce(NEW.push_type, 'alert');
            RETURN NEW;
        END
        $$
        """

    /// Version 3: the push id of a payload (its top-level `kk_push_id`, a string or a number; NULL for a payload
    /// that is not a JSON object: the backend's INSERT never fails on it); ``receiptDefaultsFunctionSQL`` fills
    /// `push_id` with it when the INSERT leaves it NULL.
    package static let pushIDFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_push_id(payload text) RETURNS text
            LANGUAGE plpgsql IMMUTABLE AS $$
        DECLARE
            value jsonb;
        BEGIN
            value := payload::jsonb;
            IF jsonb_typeof(value) <> 'object' THEN RETURN NULL; END IF;
            IF jsonb_typeof(value -> 'kk_push_id') NOT IN ('string', 'number') THEN RETURN NULL; END IF;
            RETURN nullif(value ->> 'kk_push_id', '');
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END
        $$
        """

    /// Version 3's defaults trigger function: step 2's, and `push_id` from the payload.
    package static let receiptDefaultsFunctionSQL = """
        CREATE OR REPLACE FUNCTION public.kkpush_push_queue_defaults() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.push_type := coalesce(NEW.push_type, 'alert');
            NEW.push_id := coalesce(NEW.push_id, public.kkpush_push_queue_push_id(NEW.payload));
            RETURN NEW;
        END
        $$
        """

    /// The columns kkpush's queue table has: a table of that name without them was not made by its migration.
    package static let columns = [
        "id", "device_token", "topic", "push_type", "priority", "payload", "environment", "credential", "collapse_id",
        "expiration", "enrollment_id", "state", "attempts", "not_before", "lease_owner", "lease_until", "apns_id",
        "status", "reason", "apns_timestamp", "possibly_duplicated", "history", "enqueued_at", "updated_at",
    ]

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
                        if current > latestVersion { throw newer(current, url: url) }
                        // A table of that name that kkpush did not make: CREATE TABLE IF NOT EXISTS would keep it.
                        if current == 0, let missing = try missingColumns(c.exec), !missing.isEmpty {
                            throw foreign(missing, url: url)
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

extension PushQueueSchema {
    /// What the database holds of the queue (``PushQueueStore/checkSchema()``).
    package struct Inspection: Sendable, Equatable {
        /// The applied version (0: none recorded).
        package var version: Int
        /// A warning for a usable queue at an older version (nil: none).
        package var olderWarning: String?
    }

    /// The columns of ``columns`` that `public.kkpush_push_queue` lacks; nil when there is no such table. Reads
    /// the catalog (`pg_attribute`), which every user may read whatever its privileges on the table.
    static func missingColumns(_ exec: (String, [String?]) throws -> PQRows) throws -> [String]? {
        let rows = try exec(
            """
            SELECT a.attname FROM pg_attribute a
            WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
            """, [table])
        let present = Set(rows.rows.compactMap { $0.first.flatMap { $0 } })
        let exists = try exec("SELECT to_regclass($1) IS NOT NULL", [table]).rows.first?.first == "t"
        guard exists else { return nil }
        return columns.filter { !present.contains($0) }
    }

    /// Refuses a queue this kkpush cannot use: no table (`queue-not-migrated`), a table of that name that its
    /// migration did not make (`queue-table-foreign`), a version newer than this kkpush knows
    /// (`queue-schema-newer`). An older version is usable (the columns workers read have not changed), with a warning.
    static func inspect(_ exec: (String, [String?]) throws -> PQRows, url: PostgresURL) throws -> Inspection {
        guard let missing = try missingColumns(exec) else {
            throw KKPushError(
                code: .queueNotMigrated, message: "The push queue table \(table) is missing in \(url.named).",
                fix: "Create it first with the queue's migration (queueMigrateCommand) on the same database.")
        }
        if !missing.isEmpty { throw foreign(missing, url: url) }
        let hasVersions = try exec("SELECT to_regclass($1) IS NOT NULL", [versionsTable]).rows.first?.first == "t"
        let version =
            hasVersions
            ? Int(
                try exec("SELECT coalesce(max(version), 0) FROM \(versionsTable)", []).rows.first?.first.flatMap {
                    $0
                } ?? "0") ?? 0 : 0
        if version > latestVersion { throw newer(version, url: url) }
        if version == 0 {
            throw KKPushError(
                code: .queueNotMigrated,
                message:
                    "The push queue table \(table) in \(url.named) has no recorded schema version (\(versionsTable) is missing or empty).",
                fix: "Run the queue's migration (queueMigrateCommand) on the same database: it records the version.")
        }
        return Inspection(
            version: version,
            olderWarning: version < latestVersion
                ? "The push queue in \(url.named) is at schema version \(version); this kkpush has steps up to \(latestVersion) (run the queue's migration (queueMigrateCommand) to apply them)."
                : nil)
    }

    static func newer(_ version: Int, url: PostgresURL) -> KKPushError {
        KKPushError(
            code: .queueSchemaNewer,
            message:
                "The push queue in \(url.named) is at schema version \(version); this kkpush knows versions up to \(latestVersion).",
            fix: "Run a kkpush at least as new as the one that migrated it.")
    }

    static func foreign(_ missing: [String], url: PostgresURL) -> KKPushError {
        KKPushError(
            code: .queueTableForeign,
            message:
                "\(url.named) has a table \(table) that kkpush's queue migration did not make: it lacks the column\(missing.count == 1 ? "" : "s") \(missing.joined(separator: ", ")).",
            fix:
                "The push queue needs its own table of that name: rename or drop the other table, then run the queue's migration (queueMigrateCommand)."
        )
    }
}

/// The queue's database errors: libpq's through ``PostgresErrors``, and the queue's own: a missing table as
/// `queue-not-migrated`, missing columns as `queue-table-foreign`, a missing privilege as
/// `queue-permission-denied` with the GRANT the command needs.
enum PushQueueErrors {
    /// The privileges a worker needs: it claims and writes rows (UPDATE; `FOR UPDATE` needs it too) and reads the
    /// schema version.
    static let workerGrant =
        "GRANT SELECT, UPDATE ON \(PushQueueSchema.table) TO {user}; GRANT SELECT ON \(PushQueueSchema.versionsTable) TO {user}; "
        + QueueLedgerSchema.workerGrant
    /// The privileges an enqueue needs: INSERT (SELECT for the ids it returns), the id sequence, and reading the
    /// schema version.
    static let enqueueGrant =
        "GRANT SELECT, INSERT ON \(PushQueueSchema.table) TO {user}; GRANT USAGE ON SEQUENCE public.kkpush_push_queue_id_seq TO {user}; GRANT SELECT ON \(PushQueueSchema.versionsTable) TO {user}"
    /// The privileges `queue status` needs.
    static let statusGrant = "GRANT SELECT ON \(PushQueueSchema.table), \(PushQueueSchema.versionsTable) TO {user}"

    /// `grant`: the statement that gives the URL's user what the failed operation needs (`{user}` replaced).
    static func map(_ error: any Error, url: PostgresURL, grant: String = workerGrant) -> any Error {
        guard case PQFailure.server(let state, let message, let detail) = error else {
            return PostgresErrors.map(error, url: url) ?? error
        }
        // The message already says the server's words; the cause adds only its DETAIL (the SQLSTATE and text once).
        let cause = detail.map { KKPushError.Cause("SQLSTATE \(state); \($0)") }
        switch state {
        case "42P01":
            return KKPushError(
                code: .queueNotMigrated, message: "The push queue table is missing in \(url.named): \(message).",
                fix: "Create it first with the queue's migration (queueMigrateCommand) on the same database.")
        case "42501":
            return permissionDenied(message, url: url, grant: grant, underlying: cause)
        case "42703", "42P10", "42804", "42883":
            return KKPushError(
                code: .queueTableForeign,
                message:
                    "The push queue table \(PushQueueSchema.table) in \(url.named) is not the one kkpush's queue migration makes: \(message).",
                fix:
                    "The push queue needs its own table of that name: rename or drop the other table, then run the queue's migration (queueMigrateCommand).",
                underlying: cause)
        default:
            return PostgresErrors.map(error, url: url) ?? error
        }
    }

    /// `queue-permission-denied`: what the server said (`why`), and the GRANT that gives the URL's user `grant`.
    static func permissionDenied(_ why: String, url: PostgresURL, grant: String, underlying: KKPushError.Cause?)
        -> KKPushError
    {
        let user = "\"\(url.user.replacingOccurrences(of: "\"", with: "\"\""))\""
        return KKPushError(
            code: .queuePermissionDenied,
            message: "The database \(url.named) refused user '\(url.user)' a privilege on the push queue: \(why).",
            fix:
                "As the tables' owner, run: \(grant.replacingOccurrences(of: "{user}", with: user)); or connect as a user that has these privileges.",
            underlying: underlying)
    }
}
