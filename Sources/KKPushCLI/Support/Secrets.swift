import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushCore
import KKPushSystem

/// Secrets off the command line: every secret flag also has a `-file` form and an environment variable.
///
/// Precedence: the flag, else its file flag (`-` = stdin), else the environment variable. The flag and
/// its file flag together are a usage error naming both; an environment variable is only a default.
/// A secret is never printed: messages name the flag, the file or the variable, never the value.
enum Secrets {
    /// One secret's three sources.
    struct Source: Sendable {
        var flag: String
        var fileFlag: String
        var environment: String
    }

    static let certPassword = Source(
        flag: "--cert-password", fileFlag: "--cert-password-file", environment: "APNS_CERT_PASSWORD")
    /// Where `send`, `send-batch` and `diagnose` take a `.p12` password from, for the fix of a wrong or missing one.
    static let certificatePasswordHint = "--cert-password, --cert-password-file or $APNS_CERT_PASSWORD"
    static let certInspectPassword = Source(
        flag: "--password", fileFlag: "--password-file", environment: "APNS_CERT_PASSWORD")
    static let providerToken = Source(
        flag: "--provider-token", fileFlag: "--provider-token-file", environment: "APNS_PROVIDER_TOKEN")
    static let bearer = Source(flag: "--bearer", fileFlag: "--bearer-file", environment: "KKPUSH_BEARER")
    static let backendSecret = Source(flag: "--secret", fileFlag: "--secret-file", environment: "KKPUSH_BACKEND_SECRET")
    static let adminToken = Source(
        flag: "--admin-token", fileFlag: "--admin-token-file", environment: "KKPUSH_ADMIN_TOKEN")

    /// For `kkpush --help`.
    static let helpTable = """
        Secrets (prefer a file flag or the environment: argv is visible in ps and shell history): \
        --cert-password/--cert-password-file/$APNS_CERT_PASSWORD (cert inspect: --password/--password-file), \
        --provider-token/--provider-token-file/$APNS_PROVIDER_TOKEN, --bearer/--bearer-file/$KKPUSH_BEARER, \
        --secret/--secret-file/$KKPUSH_BACKEND_SECRET, --admin-token/--admin-token-file/$KKPUSH_ADMIN_TOKEN; \
        the signing key: --key FILE, $APNS_KEY_PATH, or $APNS_KEY (the PEM itself); $APNS_TOPIC for --topic. \
        A file flag takes - for stdin. Precedence: the flag, then its file flag, then the environment \
        variable; a flag together with its file flag is a usage error.
        """

    /// The secret from `value` (the flag), else the file `file`, else the environment; nil if none.
    static func resolve(
        _ source: Source, flag value: String?, file: String?,
        environment: [String: String] = CommandIO.current.environment
    ) throws -> String? {
        if value != nil, file != nil {
            throw CLIError.usage(
                .secretConflict, "Give \(source.flag) or \(source.fileFlag), not both.",
                fix:
                    "Keep \(source.fileFlag) (or $\(source.environment)): a value on the command line shows in ps and shell history."
            )
        }
        if let value { return value }
        if let file { return try read(file, flag: source.fileFlag) }
        if let env = environment[source.environment], !env.isEmpty { return env }
        return nil
    }

    /// A secret file's contents without its trailing newline; `-` reads stdin.
    static func read(_ path: String, flag: String) throws -> String {
        if path != "-" { warnIfExposed(path: path, what: "\(flag) \(path)") }
        var text: String
        do {
            text = try InputFile.readText(
                path, what: "secret file", label: flag, maximumSize: 64 * 1024, allowEmpty: true)
        } catch let error as KKPushError {
            // One stable code for every reason a secret file cannot be used (README), InputFile's words.
            throw CLIError.input(
                .secretFileUnreadable, error.message,
                fix: error.fix ?? "Check the path and its permissions (chmod 600).")
        }
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        if text.isEmpty {
            throw CLIError.input(
                .secretFileEmpty, path == "-" ? "\(flag) -: standard input is empty." : "\(flag) \(path) is empty.",
                fix: "Put the secret in the file (one line).")
        }
        return text
    }

    /// Warns on stderr (never fails) when a file holding a secret is readable by its group or others.
    static func warnIfExposed(path: String, what: String) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue,
            (attributes[.type] as? FileAttributeType) == .typeRegular,
            mode & 0o044 != 0
        else { return }
        let who = [mode & 0o040 != 0 ? "its group" : nil, mode & 0o004 != 0 ? "others" : nil].compactMap { $0 }
        Output.printError(
            "warning secret-file-permissions: \(what) is readable by \(who.joined(separator: " and ")) (mode \(String(mode & 0o777, radix: 8))).\n  fix: chmod 600 \(path)"
        )
    }

    /// Warns when a certificate file that holds a private key (a .p12, or a PEM with its key) is exposed.
    static func warnIfCredentialExposed(path: String) {
        let lower = path.lowercased()
        if lower.hasSuffix(".p12") || lower.hasSuffix(".pfx") {
            warnIfExposed(path: path, what: "the certificate \(path)")
        } else if let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("PRIVATE KEY-----") {
            warnIfExposed(path: path, what: "the certificate and key \(path)")
        }
    }

    /// The provider signing key: `--key FILE`, else `$APNS_KEY_PATH`, else `$APNS_KEY` (the PEM itself).
    /// Both environment variables set is a usage error. The file's permissions are checked.
    struct SigningKey {
        /// The file it came from (nil for `$APNS_KEY`).
        var path: String?
        /// The PEM text from `$APNS_KEY`.
        var pem: String?
        /// Where it came from, for messages.
        var origin: String

        func load() throws -> ES256PrivateKey {
            if let pem { return try ES256PrivateKey(pem: pem) }
            return try ES256PrivateKey(contentsOfFile: path ?? "")
        }
    }

    static func signingKey(
        flag: String?, warn: Bool = true, environment: [String: String] = CommandIO.current.environment
    ) throws
        -> SigningKey?
    {
        let envPath = environment["APNS_KEY_PATH"].flatMap { $0.isEmpty ? nil : $0 }
        let envPEM = environment["APNS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if let flag {
            if warn { warnIfExposed(path: flag, what: "the key file \(flag)") }
            return SigningKey(path: flag, pem: nil, origin: "--key \(flag)")
        }
        if envPath != nil, envPEM != nil {
            throw CLIError.usage(
                .secretConflict, "Both APNS_KEY_PATH and APNS_KEY are set.",
                fix: "Set one: APNS_KEY_PATH (a .p8 file) or APNS_KEY (the PEM itself), or pass --key.")
        }
        if let envPath {
            if warn { warnIfExposed(path: envPath, what: "the key file \(envPath) (APNS_KEY_PATH)") }
            return SigningKey(path: envPath, pem: nil, origin: "APNS_KEY_PATH \(envPath)")
        }
        if let envPEM { return SigningKey(path: nil, pem: envPEM, origin: "APNS_KEY") }
        return nil
    }

    /// `--topic`, else `$APNS_TOPIC`.
    static func topic(_ flag: String?, environment: [String: String] = CommandIO.current.environment) -> String? {
        flag ?? environment["APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
