import KKPushCore
package import KKPushStore
import KantineKoning

/// Reading an existing enrollment store a user named (`diagnose --store`, `token verify --db`), never writing it.
///
/// An SQLite file is checked first (``EnrollmentStoreFile/checkExisting(_:label:)``) and opened read-only (never
/// written, whoever owns it), and a file that SQLite cannot open as an enrollment database (corrupt, locked too
/// long, not kkpush's) is an input error (exit 2) naming the flag and SQLite's reason in one sentence. A `postgres://` URL is opened read-only: every connection
/// has `default_transaction_read_only = on`, so the server refuses any write; a table without kkpush's own columns
/// is read all the same, and `note` is given what cannot be known without each
/// ("token age unknown: the table has no token_updated_at ...").
package enum EnrollmentStoreReading {
    /// Why a store the user named cannot be read, for the caller to say in its own words.
    package enum Refusal: Error, Sendable {
        /// A schema map was given with an SQLite file (it maps a PostgreSQL table).
        case schemaMapOnSQLite(path: String)
        /// SQLite cannot open the file as an enrollment database (corrupt, locked for more than 5 s, not kkpush's,
        /// not readable by this user); `cause` is SQLite's own reason.
        case notAnEnrollmentDatabase(path: String, cause: String)
    }

    /// Opens the store `value` names (`label`: the option or setting that gave it, as the location parsers name it)
    /// read-only, with the table mapping in the file `schemaMap`, and runs `read` on it.
    package static func reading<T: Sendable>(
        _ value: String, label: String, schemaMap: String? = nil, note: ((String) -> Void)? = nil,
        _ read: (any EnrollmentStore) async throws -> T
    ) async throws -> T {
        let body: (any EnrollmentStore) async throws -> T = { store in
            if let note { for text in store.readingNotes { note(text) } }
            return try await read(store)
        }
        let location = try EnrollmentStoreLocation.parse(value, origin: label)
        let mapping = try schemaMap.map { try EnrollmentTableMapping.load(path: $0) }
        guard let path = location.sqlitePath else {
            return try await EnrollmentStores.withStore(location, readOnly: true, mapping: mapping, body)
        }
        if mapping != nil { throw Refusal.schemaMapOnSQLite(path: path) }
        try EnrollmentStoreFile.checkExisting(path, label: label)
        do {
            return try await EnrollmentStores.withStore(location, readOnly: true, body)
        } catch let e as KKPushError where e.code == .storeOpenFailed {
            // SQLite's own reason ("file is not a database", "unable to open database file") names the cause.
            throw Refusal.notAnEnrollmentDatabase(path: path, cause: SQLiteEnrollmentStore.cause(of: e))
        }
    }
}
