import ArgumentParser
import Foundation
import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushStore

/// `kkpush backend migrate`.
struct BackendMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract:
            "Create the enrollment table and its indexes where missing (idempotent: a second run changes nothing).",
        discussion: """
            PostgreSQL: creates public.device_enrollments (team_codes text[], timestamptz timestamps, primary key \
            (tenant_slug, device_id)) and its indexes (lower(hardware_identifier), lower(team_manager_email), \
            apns_token, GIN on team_codes) and public.kkpush_sync_throttle (the sync throttle's last sync per \
            phone) in one transaction, and prints what it created; a table of an earlier version gets the columns \
            added since (aps_environment). A table mapped with --schema-map is the real backend's: migrate refuses \
            to change it (it only checks that the mapped columns are there, and names generation, \
            token_updated_at and aps_environment if it lacks them: reading works without them, writing does \
            not). SQLite: creates the file \
            and its table if missing, and adds missing columns (every command that opens it does the same).
            """)

    @OptionGroup var database: BackendDatabaseOptions
    @Flag(help: "Print a JSON object: database, created (a list), changed.") var json = false

    func run() async throws {
        try await reportingErrors {
            let location = try database.location()
            let mapping = try database.mapping()
            var created: [String] = []
            switch location.kind {
            case .postgres(let url):
                if let mapping, !mapping.isStandard {
                    // The mapped table belongs to the real backend: check it, never change it.
                    let missing = try await PostgresEnrollmentStore.withStore(
                        url: url, mapping: mapping, readOnly: true
                    ) { $0.missingColumns }
                    if !missing.isEmpty {
                        let names = missing.sorted()
                        throw CLIError.usage(
                            .migrateMappedTable,
                            "--schema-map \(database.schemaMap ?? "") maps the real backend's table \(mapping.tableName), which lacks \(names.map { mapping.column($0) == $0 ? $0 : "\($0) (as \(mapping.column($0)))" }.joined(separator: ", ")); migrate does not change a table it did not create. Reading (diagnose --store, token verify --db, backend export, audit) works without \(names.count == 1 ? "it" : "them"); writing (backend serve, import, enroll) needs \(names.count == 1 ? "it" : "them").",
                            fix:
                                names.map {
                                    "ALTER TABLE \(mapping.qualifiedTable) ADD COLUMN \(mapping.quoted($0)) \(EnrollmentTableMapping.addedColumnTypes[$0] ?? "text");"
                                }
                                .joined(separator: " ")
                                + " (the owner of the table runs it; README: PostgreSQL)"
                        )
                    }
                    throw CLIError.usage(
                        .migrateMappedTable,
                        "--schema-map \(database.schemaMap ?? "") maps the real backend's table \(mapping.tableName); migrate does not change a table it did not create (its columns are all there).",
                        fix:
                            "Leave out --schema-map to create kkpush's own public.device_enrollments; the mapped table needs no migration."
                    )
                }
                created = try await PostgresEnrollmentStore.migrate(url: url).created
            case .sqlite(let path):
                if mapping != nil {
                    throw CLIError.usage(
                        .schemaMapSQLite, "--schema-map maps a PostgreSQL table, but --db \(path) is an SQLite file.",
                        fix: "Give a postgres:// URL, or leave out --schema-map.")
                }
                let existed = FileManager.default.fileExists(atPath: path)
                try await SQLiteEnrollmentStore.withStore(path: path) { _ in }
                if !existed { created.append("created database \(path) with table device_enrollments") }
            }
            Output.printReport(BackendMigrationReport(location: location, created: created), json: json)
        }
    }
}

extension BackendMigrationReport: CommandReport {}
