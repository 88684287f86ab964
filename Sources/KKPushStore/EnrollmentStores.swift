import Foundation
import KKPushCore
public import Logging

/// Opens the enrollment store a command names (an SQLite file or a PostgreSQL URL), the one way every command
/// does it.
public enum EnrollmentStores {
    /// Opens the store at `location`, runs `body`, closes the store whatever happens.
    ///
    /// - `readOnly`: PostgreSQL opens every connection read-only (the server refuses writes); SQLite opens the file
    ///   read-only (`mode=ro`, or `immutable=1` in a read-only folder): nothing of it changes, a file this user
    ///   cannot write is read, and a table without kkpush's own columns is read with their defaults. Every reader
    ///   of a user's store opens it here.
    /// - `mapping`: the PostgreSQL table and columns (`--schema-map`); an SQLite store refuses one
    ///   (`schema-map-invalid`).
    /// - `poolSize`: the most PostgreSQL connections held at once.
    public static func withStore<T: Sendable>(
        _ location: EnrollmentStoreLocation, readOnly: Bool = false, mapping: EnrollmentTableMapping? = nil,
        poolSize: Int = 2,
        logger: Logger = Logger(label: "kkpush.backend.store", factory: { _ in SwiftLogNoOpLogHandler() }),
        _ body: (any EnrollmentStore) async throws -> T
    ) async throws -> T {
        switch location.kind {
        case .sqlite(let path):
            try refuseMapping(mapping, sqlite: path, location)
            return try await SQLiteEnrollmentStore.withStore(path: path, readOnly: readOnly, logger: logger) {
                try await body($0)
            }
        case .postgres(let url):
            return try await PostgresEnrollmentStore.withStore(
                url: url, mapping: mapping ?? .standard, readOnly: readOnly, poolSize: poolSize, logger: logger
            ) { try await body($0) }
        }
    }

    /// `schema-map-sqlite` when a table mapping read from a file is given with the SQLite file `path`.
    static func refuseMapping(
        _ mapping: EnrollmentTableMapping?, sqlite path: String, _ location: EnrollmentStoreLocation
    )
        throws
    {
        guard let mapping, let source = mapping.source else { return }
        throw KKPushError(
            code: .schemaMapSQLite,
            message: "\(source) maps a PostgreSQL table, but \(location.origin) \(path) is an SQLite file.",
            fix: "Give a postgres:// URL, or no table mapping (SQLite stores use kkpush's own table).")
    }
}
