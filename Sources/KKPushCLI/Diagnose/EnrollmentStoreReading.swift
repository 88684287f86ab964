import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning

/// Reading an existing enrollment store a user named (`diagnose --store`, `token verify --db`), never writing it.
///
/// An SQLite file is checked first (``EnrollmentStoreFile/checkExisting(_:label:)``), and a file that SQLite cannot
/// open as an enrollment database (corrupt, locked too long, not kkpush's) is an input error (exit 2) naming the
/// flag, without the database library's nested text. A `postgres://` URL is opened read-only: every connection
/// has `default_transaction_read_only = on`, so the server refuses any write; a table without kkpush's own columns
/// is read all the same, and with `notes` a line on standard error says what cannot be known without each
/// ("note: token age unknown: the table has no token_updated_at ...").
enum EnrollmentStoreReading {
    static func with<T: Sendable>(
        _ value: String, flag: String, schemaMap: String? = nil, notes: Bool = false,
        _ read: (any EnrollmentStore) async throws -> T
    ) async throws -> T {
        let body: (any EnrollmentStore) async throws -> T = { store in
            if notes { for note in store.absentColumnNotes { Output.printError("note: \(note)") } }
            return try await read(store)
        }
        let location = try BackendStoreOptions.parse(value, origin: flag)
        let mapping = try schemaMap.map { try EnrollmentTableMapping.load(path: $0) }
        guard let path = location.sqlitePath else {
            return try await EnrollmentStores.withStore(location, readOnly: true, mapping: mapping, body)
        }
        if mapping != nil {
            throw CLIError.usage(
                .schemaMapSQLite, "--schema-map maps a PostgreSQL table, but \(flag) \(path) is an SQLite file.",
                fix: "Give a postgres:// URL, or leave out --schema-map.")
        }
        try EnrollmentStoreFile.checkExisting(path, label: flag)
        do {
            return try await EnrollmentStores.withStore(location, readOnly: true, body)
        } catch let e as KKPushError where e.code == "store-open-failed" {
            throw KKPushError(
                code: .storeMalformed,
                message:
                    "The enrollment database \(flag) \(path) cannot be opened as an enrollment database (it is corrupt, locked by another process for more than 5 s, or not kkpush's).",
                fix:
                    "Give the enrollment database the backend writes (kkpush backend serve --db FILE); `kkpush backend export --db \(path)` shows whether it can be read."
            )
        }
    }
}
