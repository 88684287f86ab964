import Foundation
import KKPushCore
public import Logging

/// Opens the enrollment store a command names (an SQLite file or a PostgreSQL URL), the one way every command
/// does it.
public enum EnrollmentStores {
    /// Opens the store at `location`, runs `body`, closes the store whatever happens.
    ///
    /// - `readOnly`: PostgreSQL opens every connection read-only (the server refuses writes); SQLite is opened as
    ///   usual (it changes nothing of a ready file).
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
            if let mapping, let source = mapping.source {
                throw KKPushError(
                    code: .schemaMapSQLite,
                    message: "\(source) maps a PostgreSQL table, but \(location.origin) \(path) is an SQLite file.",
                    fix: "Give a postgres:// URL, or no table mapping (SQLite stores use kkpush's own table).")
            }
            return try await SQLiteEnrollmentStore.withStore(path: path, logger: logger) { try await body($0) }
        case .postgres(let url):
            return try await PostgresEnrollmentStore.withStore(
                url: url, mapping: mapping ?? .standard, readOnly: readOnly, poolSize: poolSize, logger: logger
            ) { try await body($0) }
        }
    }
}
