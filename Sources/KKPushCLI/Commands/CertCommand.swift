import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushCore

/// `kkpush cert`: APNs client certificates.
struct CertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cert",
        abstract: "Inspect APNs client certificates (.p12, PEM or DER).",
        subcommands: [CertInspectCommand.self]
    )
}

/// `kkpush cert inspect`.
struct CertInspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract:
            "Show a certificate's subject, topics, environments, validity and warnings. Exit 1 if APNs would refuse it.",
        discussion: """
            FILE is a .p12 (give --password-file, $APNS_CERT_PASSWORD or --password unless it has none; legacy RC2/3DES files are read through \
            OpenSSL's legacy provider), a PEM certificate or a DER .cer. With --key, checks that the PEM \
            key belongs to the certificate. Exit 0 usable, 1 expired, not yet valid, not an APNs certificate (a CA's, a TLS server's), or key \
            mismatch, 2 unreadable (or a wrong password).
            """
    )

    @Argument(help: "The certificate file: .p12, PEM or DER.")
    var file: String

    @Option(
        name: .long,
        help:
            "The .p12 password, or the --key file's password (default: $APNS_CERT_PASSWORD; prefer it or --password-file)."
    )
    var password: String?

    @Option(name: .long, help: "A file holding the password ('-' for stdin).")
    var passwordFile: String?

    @Option(name: .long, help: "A PEM private key to check against the certificate.")
    var key: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Judge validity at this UNIX time (default: now; 0 to 253402300799).")
    var now: Int64?

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    /// How `cert inspect` takes a password, for the fix of a wrong or missing one.
    static let passwordHint =
        Secrets.certInspectPassword.flag + ", " + Secrets.certInspectPassword.fileFlag + " or $"
        + Secrets.certInspectPassword.environment

    func validate() throws {
        try NumericFlags.unixTime(now, flag: "--now")
        if password != nil, passwordFile != nil {
            throw ValidationError("Give --password or --password-file, not both.")
        }
        if [file, passwordFile, key].filter({ $0 == "-" }).count > 1 {
            throw ValidationError("Only one input can come from standard input ('-'): FILE, --password-file or --key.")
        }
        if file == "-", key != nil {
            throw ValidationError(
                "--key is checked against FILE read a second time: give the certificate as a file path, not -.")
        }
    }

    func run() async throws {
        let report = try await reportingErrors {
            let password = try Secrets.resolve(Secrets.certInspectPassword, flag: password, file: passwordFile)
            Secrets.warnIfCredentialExposed(path: file)
            if let key { Secrets.warnIfExposed(path: key, what: "the key file \(key)") }
            return try CertificateInspectionReport.inspect(
                file: file, password: password, passwordHint: Self.passwordHint, keyFile: key, keyLabel: "--key",
                now: now.flatMap { InputNumbers.date(unixSeconds: $0) } ?? Date())
        }
        Output.printReport(report, json: json)
        if report.refused { throw ExitCode(ExitStatus.failed) }
    }
}

extension CertificateInspectionReport: CommandReport {
    var textLines: [String] {
        let kinds = Dictionary(info.topicEntries.map { ($0.topic, $0.kind ?? "?") }, uniquingKeysWith: { a, _ in a })
        let topics = info.topics.map { topic in kinds[topic].map { "\(topic) (\($0))" } ?? topic }
        let envs = info.environments.map(\.rawValue).joined(separator: ", ")
        var lines = [
            "subject:      \(info.subject)",
            "bundle id:    \(info.bundleID ?? "(none: no UID in the subject)")",
            "topics:       \(topics.joined(separator: ", "))",
            "environments: \(envs.isEmpty ? "(none: not an APNs certificate)" : envs)",
            "valid:        \(info.notBefore.formatted(.iso8601)) … \(info.notAfter.formatted(.iso8601))",
            "issuer:       \(info.issuer)",
            "sha-256:      \(info.sha256Fingerprint)",
        ]
        if problems.isEmpty {
            lines.append("warnings:     none")
        } else {
            lines.append("warnings:")
            lines += Output.lines(problems)
        }
        return lines
    }
}
