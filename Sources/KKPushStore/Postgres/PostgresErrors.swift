import Foundation
package import KKPushCore

/// libpq's failures as KKPushErrors with stable codes: `store-unreachable` (where, and libpq's reason),
/// `store-auth-failed`, `store-database-missing`, `store-not-migrated`, `store-schema-mismatch`,
/// `store-read-only`, `store-query-failed`. The password never appears: messages name the connection string
/// redacted, and libpq's own text is scrubbed of it.
package enum PostgresErrors {
    /// `error` as a KKPushError (nil: not the database's).
    package static func map(_ error: any Error, url: PostgresURL?) -> KKPushError? {
        if let e = error as? KKPushError { return e }
        guard let failure = error as? PQFailure else { return nil }
        let name = url?.named ?? "the PostgreSQL database"
        let endpoint = url?.endpoint ?? "the server"
        let migrate = "the migration (backendMigrateCommand)\(url?.databaseForFix ?? " (db)")"
        func clean(_ text: String) -> String {
            guard let url else { return text }
            return PostgresURL.scrub(text, of: url.conninfo)
        }
        switch failure {
        case .connect(let message):
            return connectError(clean(message), url: url)
        case .lost(let message, let state):
            return KKPushError(
                code: .storeUnreachable,
                message:
                    "The database server \(endpoint) closed the connection (\(name)): \(clean(message))\(state.map { " (SQLSTATE \($0))" } ?? "").",
                fix:
                    "Wait until PostgreSQL has started again, then try again (a running server's pool reconnects by itself)."
            )
        case .server(let state, let rawText, let detail):
            // Each message says the server's text and its SQLSTATE once; the cause holds only what the message does
            // not (the server's DETAIL), as a command line prints a message followed by its cause.
            let text = "\(clean(rawText)) (SQLSTATE \(state))"
            let cause = detail.map { KKPushError.Cause(oneLine(clean($0))) }
            switch state {
            case "25006":
                return KKPushError(
                    code: .storeReadOnly,
                    message: "The database \(name) is open read-only here; a write was refused: \(text).",
                    fix:
                        "Reads only: a diagnosis never writes. Write through the backend's import (backendImportCommand) or enroll (backendEnrollCommand) instead.",
                    underlying: cause)
            case "28P01", "28000":
                return KKPushError(
                    code: .storeAuthFailed,
                    message:
                        "The database server \(endpoint) refused the login of user '\(url?.user ?? "?")': \(text).",
                    fix: "Check the user and password (and the server's pg_hba.conf).", underlying: cause)
            case "3D000":
                return KKPushError(
                    code: .storeDatabaseMissing,
                    message: "The database server \(endpoint) has no database '\(url?.database ?? "?")': \(text).",
                    fix: "Create it (createdb \(url?.database ?? "NAME")), or check the database name.",
                    underlying: cause)
            case "42P01":
                return KKPushError(
                    code: .storeNotMigrated, message: "The enrollment table is missing in \(name): \(text).",
                    fix: "Run \(migrate) first (it creates public.device_enrollments).", underlying: cause)
            case "42703", "42P10", "42804", "42883":
                return KKPushError(
                    code: .storeSchemaMismatch,
                    message:
                        "The enrollment table in \(name) does not have the columns or constraints kkpush needs: \(text).",
                    fix:
                        "Run \(migrate) for kkpush's table; for another table, map its columns in a schema map (schemaMap); the PostgreSQL guide lists the table.",
                    underlying: cause)
            case "22P02", "22007", "22008", "23502", "23514":
                return KKPushError(
                    code: .storeQueryFailed,
                    message: "The database \(name) refused a value: \(text).",
                    fix: "Check the value against the column's type and constraints (the PostgreSQL guide lists them).",
                    underlying: cause)
            case let s where s.hasPrefix("57P") || s.hasPrefix("08"):
                return KKPushError(
                    code: .storeUnreachable,
                    message: "The database server \(endpoint) is not available (\(name)): \(text).",
                    fix: "Wait until PostgreSQL has started, then try again.", underlying: cause)
            default:
                return KKPushError(
                    code: .storeQueryFailed,
                    message: "The database \(name) failed a query: \(text).",
                    fix:
                        "Check the server's log for the statement; the PostgreSQL guide lists the table this store expects.",
                    underlying: cause)
            }
        }
    }

    /// A connection libpq could not open, by its message.
    static func connectError(_ message: String, url: PostgresURL?) -> KKPushError {
        let name = url?.redacted ?? "the PostgreSQL database"
        let endpoint = url?.endpoint ?? "the server"
        let via = url.map { $0.fromEnvironment ? " (the URL from \($0.origin))" : "" } ?? ""
        let lower = message.lowercased()
        let cause = KKPushError.Cause(oneLine(message))
        if lower.contains("password authentication failed") || lower.contains("no password supplied")
            || lower.contains("authentication failed")
            || (lower.contains("role \"") && lower.contains("does not exist"))
            || lower.contains("no pg_hba.conf entry") || lower.contains("peer authentication")
        {
            var fix =
                "Check the user and password (in the connection string, PGPASSWORD or ~/.pgpass) and the server's pg_hba.conf."
            if let warning = passwordFileWarning() { fix = "\(warning) \(fix)" }
            return KKPushError(
                code: .storeAuthFailed,
                message:
                    "The database server \(endpoint)\(via) refused the login of user '\(url?.user ?? "?")': \(serverReason(message)).",
                fix: fix)
        }
        if lower.contains("database \"") && lower.contains("does not exist") {
            return KKPushError(
                code: .storeDatabaseMissing,
                message:
                    "The database server \(endpoint)\(via) has no database '\(url?.database ?? "?")': \(serverReason(message)).",
                fix: "Create it (createdb \(url?.database ?? "NAME")), or check the database name.")
        }
        let reason: String
        var fix =
            "Check that PostgreSQL runs at \(endpoint) and accepts connections, then try again."
        if lower.contains("connection refused") {
            reason = "connection refused (nothing listens there)"
        } else if lower.contains("no such file or directory") && (url?.isSocket ?? true) {
            reason =
                "no PostgreSQL Unix socket there (the URL's host \(url?.host ?? "") is the socket's folder, its port names the file .s.PGSQL.PORT)"
        } else if lower.contains("timeout expired") || lower.contains("timed out") {
            reason = "the connection timed out"
        } else if lower.contains("could not translate host name") || lower.contains("name or service not known") {
            reason = "the host name cannot be resolved"
        } else if lower.contains("does not support ssl") {
            reason = "the server does not offer TLS, and sslmode asks for it"
            fix = "Use sslmode=disable for a server on this machine, or enable ssl on the server."
        } else if lower.contains("certificate") || lower.contains("ssl") || lower.contains("tls") {
            reason = "TLS failed: \(oneLine(message))"
            fix =
                "Check sslmode and sslrootcert (the CA that issued the server's certificate) and that the certificate names the host (verify-full)."
        } else if lower.contains("starting up") || lower.contains("shutting down") {
            reason = oneLine(message)
            fix = "Wait until PostgreSQL has started, then try again."
        } else {
            reason = oneLine(message)
        }
        return KKPushError(
            code: .storeUnreachable,
            message:
                "Cannot reach the database server \(endpoint) (\(name)\(url.map { $0.fromEnvironment ? ", from \($0.origin)" : "" } ?? "")): \(reason).",
            fix: fix, underlying: cause)
    }

    /// The server's own words in libpq's message, without libpq's `connection to server at "…", port N failed:`
    /// and the `FATAL:` severity: `password authentication failed for user "alice"`.
    static func serverReason(_ message: String) -> String {
        var text = oneLine(message)
        if let failed = text.range(of: " failed: ") { text = String(text[failed.upperBound...]) }
        for severity in ["FATAL:", "ERROR:"] where text.hasPrefix(severity) {
            text = text.dropFirst(severity.count).trimmingCharacters(in: .whitespaces)
        }
        return text
    }

    /// libpq's multi-line message on one line.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }

    /// What libpq did with a password file it ignores for its mode (it then sends no password), if it did.
    static func passwordFileWarning() -> String? {
        let env = ProcessInfo.processInfo.environment
        let path =
            env["PGPASSFILE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (env["HOME"] ?? NSHomeDirectory()) + "/.pgpass"
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0
        else { return nil }
        return
            "libpq ignored the password file \(path): its mode is \(String(mode, radix: 8, uppercase: false).leftPadded(4)), and it must be 0600 or less (chmod 600 \(path))."
    }

    /// Whether `error` means the connection went away under the statement (worth one more try for a read).
    static func isLostConnection(_ error: any Error) -> Bool {
        if case PQFailure.lost = error { return true }
        if case PQFailure.server(let state, _, _) = error { return state == "57P01" }
        return false
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
