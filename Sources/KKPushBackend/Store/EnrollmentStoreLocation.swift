import Foundation
import KKPushCore

/// Where an enrollment store is: an SQLite file, or a PostgreSQL database named by a
/// `postgres://user:password@host:port/database?sslmode=...` URL.
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

    /// The location of `flag`'s value, else of `DATABASE_URL` in `environment`, else of `defaultPath` (nil: none).
    /// A value starting with `postgres://` or `postgresql://` is a PostgreSQL URL (parsed, `store-url-invalid`
    /// naming the part at fault); anything else is an SQLite path.
    public static func resolve(
        flagValue: String?, flag: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        defaultPath: String? = nil
    ) throws -> EnrollmentStoreLocation? {
        if let flagValue { return try parse(flagValue, origin: flag) }
        if let url = environment[environmentVariable], !url.trimmingWhitespace().isEmpty {
            return try parse(url, origin: environmentVariable)
        }
        return defaultPath.map { EnrollmentStoreLocation(kind: .sqlite(path: $0), origin: flag) }
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

/// A parsed `postgres://` (or `postgresql://`) URL, as libpq reads it: user, password, host, port (5432),
/// database (the user's name if absent), and the query parameters `sslmode` (disable, prefer, require,
/// verify-full; default prefer) and `connect_timeout` (seconds, default 5). Other parameters are refused.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// How TLS is used (libpq's `sslmode` values kkpush supports).
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Plain TCP only.
        case disable
        /// TLS if the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS, without checking the certificate.
        case require
        /// TLS, checking the certificate chain (system trust store) and the host name.
        case verifyFull = "verify-full"
    }

    /// The user name.
    public var user: String
    /// The password, if any (never printed: see ``redacted``).
    public var password: String?
    /// The host name or address.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The database name.
    public var database: String
    /// TLS.
    public var sslMode: SSLMode
    /// How long a connection may take to be established (and a request may wait for a pooled connection).
    public var connectTimeout: Duration

    /// The default `connect_timeout`: 5 s.
    public static let defaultConnectTimeoutSeconds = 5

    /// Whether `value` is meant as a URL (`postgres://` or `postgresql://`, any case).
    public static func looksLikeURL(_ value: String) -> Bool {
        let lower = value.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// Parses `text`; `store-url-invalid` naming the part at fault (the password never shown).
    public init(parsing text: String, origin: String = "--db") throws {
        func invalid(_ why: String, fix: String) -> KKPushError {
            KKPushError(
                code: .storeUrlInvalid,
                message: "The PostgreSQL URL \(origin) \(PostgresURL.mask(text)) is not usable: \(why).",
                fix: fix)
        }
        let example = "postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=require"
        guard let schemeEnd = text.range(of: "://") else {
            throw invalid("no scheme", fix: "Write it as \(example).")
        }
        var rest = String(text[schemeEnd.upperBound...])
        var query = ""
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = String(rest[..<q])
        }
        if rest.contains("#") { throw invalid("it has a fragment (#...)", fix: "Leave out the # part.") }
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[rest.index(after: slash)...])
            rest = String(rest[..<slash])
        }
        var userInfo: String?
        if let at = rest.lastIndex(of: "@") {
            userInfo = String(rest[..<at])
            rest = String(rest[rest.index(after: at)...])
        }
        // host[:port], host may be [IPv6].
        var hostPart = rest
        var portText: String?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else {
                throw invalid("the host '\(hostPart)' has no closing ]", fix: "Write an IPv6 host as [::1].")
            }
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") {
                portText = String(after.dropFirst())
            } else if !after.isEmpty {
                throw invalid("the host '\(hostPart)' has text after ]", fix: "Write [::1]:5432.")
            }
            hostPart = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = String(hostPart[hostPart.index(after: colon)...])
            hostPart = String(hostPart[..<colon])
        }
        guard let host = hostPart.removingPercentEncoding, !host.isEmpty else {
            throw invalid(
                "the host is empty (kkpush connects over TCP only, not a Unix socket)",
                fix: "Name the server: \(example).")
        }
        if host.contains(",") {
            throw invalid("it names several hosts ('\(host)')", fix: "Give one host.")
        }
        var port = 5432
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw invalid("the port '\(portText)' is not a number from 1 to 65535", fix: "Write HOST:5432.")
            }
            port = p
        }
        var user = ""
        var password: String?
        if let userInfo {
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let u = String(parts[0]).removingPercentEncoding else {
                throw invalid("the user name has a bad %-escape", fix: "Percent-encode it (%40 for @).")
            }
            user = u
            if parts.count == 2 {
                guard let p = String(parts[1]).removingPercentEncoding else {
                    throw invalid("the password has a bad %-escape", fix: "Percent-encode it (%40 for @, %3A for :).")
                }
                password = p
            }
        }
        if user.isEmpty {
            throw invalid("it names no user", fix: "Write the user before the host: \(example).")
        }
        guard let database = path.removingPercentEncoding else {
            throw invalid("the database name '\(path)' has a bad %-escape", fix: "Percent-encode it.")
        }
        if database.contains("/") {
            throw invalid("the database name '\(database)' has a /", fix: "Give one path part: /DATABASE.")
        }
        var sslMode = SSLMode.prefer
        var timeout = Self.defaultConnectTimeoutSeconds
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0])
            let value = kv.count == 2 ? (String(kv[1]).removingPercentEncoding ?? "") : ""
            switch key {
            case "sslmode":
                if value == "verify-ca" {
                    throw invalid(
                        "sslmode=verify-ca is not supported",
                        fix: "Use sslmode=verify-full (it checks the host name too).")
                }
                guard let mode = SSLMode(rawValue: value) else {
                    throw invalid(
                        "sslmode '\(value)' is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))",
                        fix: "Use sslmode=require for a server on the network, sslmode=disable for one on 127.0.0.1.")
                }
                sslMode = mode
            case "connect_timeout":
                guard let seconds = Int(value), (1...300).contains(seconds) else {
                    throw invalid(
                        "connect_timeout '\(value)' is not a whole number of seconds from 1 to 300",
                        fix: "Write connect_timeout=5.")
                }
                timeout = seconds
            default:
                throw invalid(
                    "the parameter '\(key)' is not supported (only sslmode and connect_timeout)",
                    fix: "Leave '\(key)' out.")
            }
        }
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database.isEmpty ? user : database
        self.sslMode = sslMode
        self.connectTimeout = .seconds(timeout)
    }

    /// host:port (`[::1]:5432` for IPv6).
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The URL with the password masked: `postgres://kkpush:•••@127.0.0.1:5432/kk?sslmode=disable`.
    public var redacted: String {
        let pass = password == nil ? "" : ":•••"
        return "postgres://\(user)\(pass)@\(endpoint)/\(database)?sslmode=\(sslMode.rawValue)"
    }

    public var description: String { redacted }

    /// `text` with whatever is between the first `:` after the scheme and the last `@` masked (for a URL that
    /// did not parse).
    static func mask(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        let afterScheme = text[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else {
            return text
        }
        return String(text[..<authority.index(after: colon)]) + "•••" + String(text[at...])
    }
}
