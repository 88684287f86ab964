public import Foundation
import KKPushCore

/// Where an enrollment store is: an SQLite file, or a PostgreSQL database named by a libpq connection string
/// (a `postgres://` URL or `key=value` pairs, see ``PostgresURL``).
///
/// A command's `--db`/`--store` value decides; without the flag, `DATABASE_URL` (if set) does, and the messages
/// say which of the two was used (``origin``).
public struct EnrollmentStoreLocation: Sendable, CustomStringConvertible {
    /// What kind of store.
    public enum Kind: Sendable {
        /// An SQLite database file.
        case sqlite(path: String)
        /// A PostgreSQL database.
        case postgres(PostgresURL)
    }

    /// The store.
    public var kind: Kind
    /// Where the value came from, for messages: `--db`, `--store`, `DATABASE_URL`.
    public var origin: String

    /// Creates a location.
    public init(kind: Kind, origin: String) {
        self.kind = kind
        self.origin = origin
    }

    /// The environment variable read when the flag is absent.
    public static let environmentVariable = "DATABASE_URL"

    /// The location of `value` (given by the caller's `origin`, e.g. a flag), else of `DATABASE_URL` in `environment`,
    /// else of `defaultPath` (nil: none).
    /// A value starting with `postgres://` or `postgresql://`, or made of libpq's `key=value` pairs
    /// (`host=db dbname=kk`), is a PostgreSQL connection string (parsed by libpq, `store-url-invalid` naming the
    /// part at fault); anything else is an SQLite path.
    public static func resolve(
        given value: String?, origin: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        defaultPath: String? = nil
    ) throws -> EnrollmentStoreLocation? {
        if let value { return try parse(value, origin: origin) }
        if let url = environment[environmentVariable], !url.trimmingWhitespace().isEmpty {
            return try parse(url, origin: environmentVariable)
        }
        return defaultPath.map { EnrollmentStoreLocation(kind: .sqlite(path: $0), origin: origin) }
    }

    /// `value` as a location; `origin` names where it came from in messages.
    public static func parse(_ value: String, origin: String) throws -> EnrollmentStoreLocation {
        if PostgresURL.looksLikeURL(value) {
            return EnrollmentStoreLocation(
                kind: .postgres(try PostgresURL(parsing: value, origin: origin)), origin: origin)
        }
        return EnrollmentStoreLocation(kind: .sqlite(path: value), origin: origin)
    }

    /// The SQLite path, if it is one.
    public var sqlitePath: String? {
        if case .sqlite(let path) = kind { return path }
        return nil
    }

    /// The store for messages (a URL with its password masked): `--db postgres://kkpush:•••@127.0.0.1:5432/kk`.
    public var description: String { "\(origin) \(display)" }

    /// The store without its origin (the password masked).
    public var display: String {
        switch kind {
        case .sqlite(let path): path
        case .postgres(let url): url.redacted
        }
    }
}
