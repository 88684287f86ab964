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
        let at = now.flatMap { InputNumbers.date(unixSeconds: $0) } ?? Date()
        var problems: [Problem] = []
        let info: CertificateInfo = try await reportingErrors {
            let password = try Secrets.resolve(Secrets.certInspectPassword, flag: password, file: passwordFile)
            Secrets.warnIfCredentialExposed(path: file)
            if let key { Secrets.warnIfExposed(path: key, what: "the key file \(key)") }
            let info = try CertificateInfo(contentsOfFile: file, password: password, passwordHint: Self.passwordHint)
            if let key {
                do {
                    _ = try ClientCredential.loadPEM(
                        certificatePath: file, keyPath: key, password: password, passwordHint: Self.passwordHint,
                        keyLabel: "--key")
                } catch let error as KKPushError where error.code == "certificate-key-mismatch" {
                    problems.append(
                        Problem(.error, code: error.code.rawValue, message: error.message, fix: error.fix ?? ""))
                } catch let error as KKPushError where error.code.rawValue.hasPrefix("certificate-") {
                    // FILE read as a certificate above, but not as a PEM or DER one: it is a .p12, which
                    // carries its own key (already checked against its certificate when it was opened).
                    throw KKPushError(
                        code: .certKeyWithP12,
                        message:
                            "--key checks a PEM key against a PEM or DER certificate, but \(file) is a .p12, which holds its own key.",
                        fix:
                            "Leave out --key for a .p12 (its key is checked when it opens), or give the PEM certificate with its key."
                    )
                }
            }
            return info
        }
        problems = info.problems(now: at) + problems

        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if json {
            Output.printJSON([
                "subject": .string(info.subject),
                "common_name": JSONValue(info.commonName),
                "bundle_id": JSONValue(info.bundleID),
                "topics": .array(info.topics.map(JSONValue.string)),
                "topic_kinds": .array(
                    info.topicEntries.map { ["topic": .string($0.topic), "kind": JSONValue($0.kind)] }),
                "environments": .array(info.environments.map { .string($0.rawValue) }),
                "not_before": .string(formatter.string(from: info.notBefore)),
                "not_after": .string(formatter.string(from: info.notAfter)),
                "issuer": .string(info.issuer),
                "serial_number": JSONValue(info.serialNumber),
                "sha256_fingerprint": .string(info.sha256Fingerprint),
                "warnings": Output.json(problems),
            ])
        } else {
            print("subject:      \(info.subject)")
            print("bundle id:    \(info.bundleID ?? "(none: no UID in the subject)")")
            let kinds = Dictionary(
                info.topicEntries.map { ($0.topic, $0.kind ?? "?") }, uniquingKeysWith: { a, _ in a })
            print(
                "topics:       \(info.topics.map { topic in kinds[topic].map { "\(topic) (\($0))" } ?? topic }.joined(separator: ", "))"
            )
            let envs = info.environments.map(\.rawValue).joined(separator: ", ")
            print("environments: \(envs.isEmpty ? "(none: not an APNs certificate)" : envs)")
            print("valid:        \(formatter.string(from: info.notBefore)) … \(formatter.string(from: info.notAfter))")
            print("issuer:       \(info.issuer)")
            print("sha-256:      \(info.sha256Fingerprint)")
            if problems.isEmpty {
                print("warnings:     none")
            } else {
                print("warnings:")
                for line in Output.lines(problems) { print(line) }
            }
        }
        if problems.hasErrors { throw ExitCode(1) }
    }
}
