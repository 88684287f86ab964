import CLibPQ
public import Foundation
import KKPushCore

/// A PostgreSQL connection string as libpq reads it (`PQconninfoParse`), in either of libpq's forms:
///
/// - a URL: `postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=verify-full&sslrootcert=ca.crt` (also
///   `postgresql://`; `postgres:///db?host=/var/run/postgresql` for a Unix socket);
/// - `key=value` pairs: `host=db.example.nl dbname=kk sslmode=require`.
///
/// Every libpq parameter is accepted (`sslmode` with all six modes, `sslrootcert`, `sslcert`, `sslkey`,
/// `service`, `options`, `application_name`, `connect_timeout`, several hosts, ...); what the string leaves
/// out libpq takes from the `PG*` environment variables, `pg_service.conf` and `~/.pgpass`, as psql does.
/// kkpush checks a few values itself, to name them in its message: `port`, `sslmode`, `connect_timeout`
/// (1 to 300 s; 5 s when neither the string nor `PGCONNECT_TIMEOUT` sets it).
///
/// The password (given in the string) is never printed: ``redacted`` masks it, and so does every message.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// libpq's `sslmode` values.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Plain TCP only.
        case disable
        /// Plain TCP, TLS if the server insists.
        case allow
        /// TLS if the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS, without checking the certificate (unless `sslrootcert` names a CA: then as verify-ca).
        case require
        /// TLS, checking the chain against `sslrootcert` (default `~/.postgresql/root.crt`).
        case verifyCA = "verify-ca"
        /// TLS, checking the chain and that the certificate names the host.
        case verifyFull = "verify-full"
    }

    /// The string as given (it may hold the password: never print it, print ``redacted``).
    public let conninfo: String
    /// The parameters the string sets (libpq's keywords: `host`, `port`, `dbname`, `user`, `password`, ...).
    public let parameters: [String: String]
    /// The environment the defaults are shown from (libpq itself reads the process's).
    private let environment: [String: String]
    /// Where the string came from, for messages: the flag (`--db`, `--store`) or `DATABASE_URL`.
    public let origin: String

    /// The default `connect_timeout`: 5 s.
    public static let defaultConnectTimeoutSeconds = 5

    /// Whether `value` is a connection string: a `postgres://` or `postgresql://` URL (any case), or libpq's
    /// `key=value` form (it starts with a keyword and `=`).
    public static func looksLikeURL(_ value: String) -> Bool {
        let lower = value.lowercased()
        if lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") { return true }
        let trimmed = value.drop(while: { $0 == " " })
        guard let equals = trimmed.firstIndex(of: "=") else { return false }
        let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
        return !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") }
    }

    /// Parses `text` with libpq; `store-url-invalid` naming the part at fault (the password never shown).
    public init(
        parsing text: String, origin: String = "(db)",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws {
        func invalid(_ why: String, fix: String) -> KKPushError {
            KKPushError(
                code: .storeUrlInvalid,
                message:
                    "The PostgreSQL connection string \(origin) \(PostgresURL.mask(text)) is not usable: \(PostgresURL.scrub(why, of: text)).",
                fix: fix)
        }
        let example = "postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=require, or host=HOST dbname=DATABASE"
        if text.utf8.contains(0) { throw invalid("it holds a NUL byte", fix: "Write it as \(example).") }
        let parameters: [String: String]
        switch Self.parse(text) {
        case .failure(let why): throw invalid(why.description, fix: "Write it as libpq reads it: \(example).")
        case .success(let p): parameters = p
        }
        if let port = parameters["port"] {
            for p in port.split(separator: ",", omittingEmptySubsequences: false) {
                guard let n = Int(p), (1...65535).contains(n) else {
                    throw invalid(
                        "the port '\(p)' is not a number from 1 to 65535", fix: "Write HOST:5432 (port=5432).")
                }
            }
        }
        if let mode = parameters["sslmode"], SSLMode(rawValue: mode) == nil {
            throw invalid(
                "sslmode '\(mode)' is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))",
                fix:
                    "Use sslmode=verify-full with sslrootcert for a server on the network, sslmode=disable on 127.0.0.1."
            )
        }
        if let timeout = parameters["connect_timeout"], !(Int(timeout).map { (1...300).contains($0) } ?? false) {
            throw invalid(
                "connect_timeout '\(timeout)' is not a whole number of seconds from 1 to 300",
                fix: "Write connect_timeout=5.")
        }
        // libpq fills what the string leaves out from PG* variables, and reports a bad one as a failed
        // connection; named here instead, as the variable it is.
        func variable(_ name: String, _ why: String, fix: String) -> KKPushError {
            KKPushError(
                code: .storeUrlInvalid,
                message:
                    "The environment variable \(name) (which libpq uses for what \(origin) leaves out) is not usable: \(why).",
                fix: fix)
        }
        if parameters["port"] == nil, let port = environment["PGPORT"], !port.isEmpty,
            !port.split(separator: ",", omittingEmptySubsequences: false).allSatisfy({
                Int($0).map { (1...65535).contains($0) } ?? false
            })
        {
            throw variable(
                "PGPORT", "'\(port)' is not a port number from 1 to 65535", fix: "Set PGPORT=5432, or unset it.")
        }
        if parameters["sslmode"] == nil, let mode = environment["PGSSLMODE"], !mode.isEmpty,
            SSLMode(rawValue: mode) == nil
        {
            throw variable(
                "PGSSLMODE",
                "'\(mode)' is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))",
                fix: "Set PGSSLMODE=verify-full (with PGSSLROOTCERT) for a server on the network, or unset it.")
        }
        if parameters["connect_timeout"] == nil, let timeout = environment["PGCONNECT_TIMEOUT"], !timeout.isEmpty,
            !(Int(timeout).map { (1...300).contains($0) } ?? false)
        {
            throw variable(
                "PGCONNECT_TIMEOUT", "'\(timeout)' is not a whole number of seconds from 1 to 300",
                fix: "Set PGCONNECT_TIMEOUT=5, or unset it.")
        }
        self.conninfo = text
        self.parameters = parameters
        self.environment = environment
        self.origin = origin
    }

    /// Whether it came from the environment (`DATABASE_URL`) rather than a flag: messages say so, since the user
    /// may not know a variable chose the database.
    public var fromEnvironment: Bool {
        !origin.isEmpty && origin.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }
    }

    /// The string for messages: ``redacted``, and `(from DATABASE_URL)` when the environment gave it.
    public var named: String { fromEnvironment ? "\(redacted) (from \(origin))" : redacted }

    /// The database in a fix that says to migrate it: ` (db) '<the URL>'` when the string holds no password (it is
    /// shown whole), else ` (db) '<the same URL, with its password>'` (the masked one would fail to log in); nothing
    /// when the environment gave it (`DATABASE_URL`, which a migration reads too). `(db)` is the input's API name.
    public var databaseForFix: String {
        if fromEnvironment { return "" }
        return password == nil ? " (db) '\(conninfo)'" : " (db) '<the same URL, with its password>'"
    }

    public static func == (a: PostgresURL, b: PostgresURL) -> Bool {
        a.conninfo == b.conninfo && a.parameters == b.parameters
    }

    /// A parameter of the string, else its `PG*` variable.
    private func value(_ keyword: String, _ variable: String) -> String? {
        if let v = parameters[keyword], !v.isEmpty { return v }
        if let v = environment[variable], !v.isEmpty { return v }
        return nil
    }

    /// The user name (the string's, else `PGUSER`, else the login name).
    public var user: String {
        value("user", "PGUSER") ?? environment["USER"] ?? ProcessInfo.processInfo.userName
    }
    /// The password the string holds, if any (never printed: see ``redacted``). libpq may also take one from
    /// `PGPASSWORD` or `~/.pgpass`.
    public var password: String? { parameters["password"] }
    /// The host: a name, an address, or a Unix socket's directory (starting with `/`); the string's, else
    /// `PGHOST`, else libpq's default socket directory.
    public var host: String { value("host", "PGHOST") ?? value("hostaddr", "PGHOSTADDR") ?? "/var/run/postgresql" }
    /// The port (the first, if several).
    public var port: Int {
        value("port", "PGPORT").flatMap { Int($0.split(separator: ",").first ?? "") } ?? 5432
    }
    /// The database name (the string's, else `PGDATABASE`, else the user's name).
    public var database: String { value("dbname", "PGDATABASE") ?? user }
    /// TLS (`sslmode`, else `PGSSLMODE`, else prefer).
    public var sslMode: SSLMode { value("sslmode", "PGSSLMODE").flatMap(SSLMode.init(rawValue:)) ?? .prefer }
    /// How long a connection may take to be established (and a request may wait for a pooled connection).
    public var connectTimeout: Duration {
        .seconds(
            value("connect_timeout", "PGCONNECT_TIMEOUT").flatMap { Int($0) }.map { max(1, $0) }
                ?? Self.defaultConnectTimeoutSeconds)
    }
    /// Whether the host is a Unix socket's directory.
    public var isSocket: Bool { host.hasPrefix("/") || host.hasPrefix("@") }

    /// host:port (`[::1]:5432` for IPv6), or the socket (`/var/run/postgresql/.s.PGSQL.5432`).
    public var endpoint: String {
        if isSocket { return "\(host)/.s.PGSQL.\(port)" }
        return host.contains(":") && !host.contains(",") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The string with its password masked: `postgres://kkpush:•••@127.0.0.1:5432/kk?sslmode=disable`, or
    /// `host=db password=••• dbname=kk`.
    public var redacted: String { Self.mask(conninfo) }

    public var description: String { redacted }

    /// `text` with its passwords masked: a URL's between the first `:` after the scheme and the last `@` of
    /// the authority, and the value of every `password` parameter (of a URL's query or of `key=value` pairs).
    /// Also used for a string that did not parse.
    static func mask(_ text: String) -> String {
        let masked = maskText(text)
        // What libpq reads must hold no password but the mask. Where the text's shape hides one from the textual
        // mask (an escaped or percent-encoded keyword, a value with a character the mask stops at), show the
        // parameters libpq read instead, the password masked.
        guard case .success(let parameters) = parse(text), parameters["password"] != nil,
            case .success(let again) = parse(masked), again["password"] != nil, again["password"] != "•••"
        else { return masked }
        return parameters.keys.sorted().map { key in
            if key == "password" { return "password=•••" }
            let value = parameters[key] ?? ""
            // Scalar by scalar: a quote followed by a combining mark is one Character, never one to miss.
            var escaped = String.UnicodeScalarView()
            for u in value.unicodeScalars {
                if u == "\\" || u == "'" { escaped.append("\\") }
                escaped.append(u)
            }
            return "\(key)='\(String(escaped))'"
        }.joined(separator: " ")
    }

    /// The textual mask of ``mask(_:)``.
    private static func maskText(_ text: String) -> String {
        var out = text
        if let schemeEnd = out.range(of: "://") {
            let afterScheme = out[schemeEnd.upperBound...]
            // libpq looks for the credentials' `@` up to the first `/` only (a `?` before the `@` belongs to the
            // user name there: `postgres://u?x:pw@host`), so the mask does too.
            let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
            let authority = afterScheme[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out = String(out[..<authority.index(after: colon)]) + "•••" + String(out[at...])
            }
        }
        return maskPasswordParameters(out)
    }

    /// Every `password=VALUE` (in a URL's query, `&`-separated; in `key=value` pairs, quoted or not) as
    /// `password=•••`.
    private static func maskPasswordParameters(_ text: String) -> String {
        let chars = Array(text)
        var out = ""
        var i = 0
        let needle = Array("password")
        while i < chars.count {
            let boundary = i == 0 || [" ", "\t", "\n", "?", "&"].contains(chars[i - 1])
            if boundary, i + needle.count <= chars.count,
                String(chars[i..<i + needle.count]).lowercased() == "password"
            {
                var j = i + needle.count
                while j < chars.count, chars[j] == " " { j += 1 }
                if j < chars.count, chars[j] == "=" {
                    j += 1
                    while j < chars.count, chars[j] == " " { j += 1 }
                    // The value: quoted ('...' with \' escapes) or up to a space or &.
                    if j < chars.count, chars[j] == "'" {
                        j += 1
                        while j < chars.count, chars[j] != "'" { j += chars[j] == "\\" ? 2 : 1 }
                        j = min(j + 1, chars.count)
                    } else {
                        while j < chars.count, ![" ", "\t", "\n", "&", "#"].contains(chars[j]) { j += 1 }
                    }
                    out += "password=•••"
                    i = j
                    continue
                }
            }
            out.append(chars[i])
            i += 1
        }
        return out
    }

    /// libpq's reading of a connection string (PQconninfoParse): the parameters it sets, or libpq's message.
    static func parse(_ text: String) -> Result<[String: String], LibPQMessage> {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &error) else {
            let why =
                error.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
                ?? "libpq is out of memory"
            if let error { PQfreemem(error) }
            return .failure(LibPQMessage(description: why))
        }
        defer { PQconninfoFree(options) }
        var parameters: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { parameters[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return .success(parameters)
    }

    /// `message` (libpq's) without any password of `text` in it.
    static func scrub(_ message: String, of text: String) -> String {
        var secrets: [String] = []
        if case .success(let parameters) = parse(text) {
            if let p = parameters["password"] { secrets.append(p) }
        } else {
            // The string did not parse: every word masked by ``mask`` counts as secret.
            let masked = Set(mask(text).split(whereSeparator: { " &?@:/=".contains($0) }))
            secrets = text.split(whereSeparator: { " &?@:/=".contains($0) }).map(String.init).filter {
                !masked.contains(Substring($0)) && $0.count >= 3
            }
        }
        var out = message
        for secret in secrets where !secret.isEmpty {
            out = replacingBytes(secret, in: out)
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                out = replacingBytes(encoded, in: out)
            }
        }
        return out
    }

    /// `haystack` with every occurrence of `needle`'s UTF-8 bytes replaced by the mask. Byte by byte, not
    /// Foundation's `replacingOccurrences`, which traps on some strings a hostile connection string can hold (found
    /// by fuzzing).
    static func replacingBytes(_ needle: String, in haystack: String) -> String {
        let h = Array(haystack.utf8)
        let n = Array(needle.utf8)
        guard !n.isEmpty, n.count <= h.count else { return haystack }
        var out: [UInt8] = []
        out.reserveCapacity(h.count)
        var i = 0
        while i < h.count {
            if i + n.count <= h.count, h[i..<(i + n.count)].elementsEqual(n) {
                out += Array("•••".utf8)
                i += n.count
            } else {
                out.append(h[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A message of libpq's.
struct LibPQMessage: Error, CustomStringConvertible {
    var description: String
}
