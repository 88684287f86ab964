import Foundation
import KKPushCore
public import Logging

/// `kkpush backend migrate` on PostgreSQL: kkpush's own table, its indexes and the columns later versions added.
extension PostgresEnrollmentStore {
    /// What ``migrate(url:logger:)`` did.
    public struct MigrationResult: Sendable {
        /// The statements' effects, one line each ("created table public.device_enrollments", ...).
        public var created: [String]
        /// Whether anything changed (false on a second run).
        public var changed: Bool { !created.isEmpty }
    }

    /// The index names `migrate` creates, and what each serves.
    public static let indexes: [(name: String, definition: String, serves: String)] = [
        (
            "device_enrollments_hardware", "(lower(hardware_identifier))",
            "find(hardwareIdentifier:), compared without case"
        ),
        (
            "device_enrollments_email", "(lower(team_manager_email))",
            "find(teamManagerEmail:) (a diagnosis by e-mail), compared without case"
        ),
        ("device_enrollments_token", "(apns_token)", "find(apnsToken:) and the 410 compare-and-clear"),
        ("device_enrollments_teams", "USING gin (team_codes)", "the team fan-out: team_codes @> ARRAY[team]"),
    ]

    /// Creates `public.device_enrollments` and its indexes where missing, and adds the columns of later versions
    /// to a table of an earlier one (`ADD COLUMN IF NOT EXISTS`), in one transaction (idempotent: a second run
    /// changes nothing and says so). Only kkpush's own table: a mapped table is the real backend's.
    public static func migrate(url: PostgresURL, logger: Logger = quiet) async throws -> MigrationResult {
        let pool = PQPool(url: url, readOnly: false, size: 1)
        do {
            let result = try await pool.withConnection { c in
                try await c.run { c in
                    try c.transaction {
                        // One migration at a time (two `backend migrate` runs at once would both see the table
                        // missing).
                        try c.exec("SELECT pg_advisory_xact_lock(7306587)")
                        var created: [String] = []
                        let table = try c.exec("SELECT to_regclass('public.device_enrollments') IS NOT NULL")
                        if table.rows.first?.first != "t" {
                            try c.exec(createTableSQL)
                            created.append("created table public.device_enrollments")
                        }
                        for (column, type) in addedColumns {
                            let exists = try c.exec(
                                "SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'device_enrollments' AND column_name = $1",
                                [column])
                            if exists.rows.isEmpty {
                                try c.exec(
                                    "ALTER TABLE public.device_enrollments ADD COLUMN IF NOT EXISTS \(column) \(type)")
                                created.append("added column \(column) \(type)")
                            }
                        }
                        for index in indexes {
                            let exists = try c.exec(
                                "SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = $1", [index.name])
                            if exists.rows.isEmpty {
                                try c.exec(
                                    "CREATE INDEX IF NOT EXISTS \(index.name) ON public.device_enrollments \(index.definition)"
                                )
                                created.append("created index \(index.name) \(index.definition)")
                            }
                        }
                        let throttle = try c.exec(
                            "SELECT to_regclass('public.kkpush_sync_throttle') IS NOT NULL")
                        if throttle.rows.first?.first != "t" {
                            try c.exec(syncThrottleSQL)
                            created.append("created table public.kkpush_sync_throttle")
                        }
                        return MigrationResult(created: created)
                    }
                }
            }
            await pool.close()
            return result
        } catch {
            await pool.close()
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }

    /// The columns later versions added, with their types: `migrate` adds them to an existing table.
    public static let addedColumns: [(name: String, type: String)] = [("aps_environment", "text")]

    /// The sync throttle's last sync per lower-cased vendor UUID (``lastSync(hardwareIdentifier:)``), so a
    /// restarted backend still answers 429 within the hour.
    public static let syncThrottleSQL = """
        CREATE TABLE IF NOT EXISTS public.kkpush_sync_throttle (
            hardware_identifier text PRIMARY KEY,
            last_sync_at timestamptz NOT NULL
        )
        """

    /// kkpush's table (README "PostgreSQL": every column and why its type).
    public static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS public.device_enrollments (
            tenant_slug text NOT NULL,
            device_id text NOT NULL,
            team_codes text[] NOT NULL DEFAULT '{}',
            role text NOT NULL CHECK (role IN ('manager', 'member')),
            hardware_identifier text NOT NULL,
            apns_token text,
            build_environment text,
            app_version text,
            is_test_user boolean NOT NULL DEFAULT false,
            status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
            team_manager_email text,
            updated_at timestamptz NOT NULL,
            generation integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
            token_updated_at timestamptz,
            aps_environment text,
            PRIMARY KEY (tenant_slug, device_id)
        )
        """
}
