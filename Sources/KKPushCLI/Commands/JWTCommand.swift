import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBench
import KKPushCLISupport
import KKPushCore
import KKPushSystem

/// `kkpush jwt`: APNs provider tokens (ES256 JWTs).
struct JWTCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jwt",
        abstract: "Sign, verify, decode and benchmark APNs provider tokens (ES256 JWTs).",
        subcommands: [
            JWTSignCommand.self, JWTVerifyCommand.self, JWTDecodeCommand.self, JWTBenchCommand.self,
            JWTScopeCommand.self,
        ]
    )
}

/// Reads a token argument: `-` means standard input (keeps the token out of `ps`). An empty token (or
/// empty standard input) is a usage error, reported with the subcommand's usage.
private func readToken(_ argument: String) throws -> String {
    guard argument == "-" else {
        let text = argument.trimmingWhitespace()
        guard !text.isEmpty else {
            throw ValidationError("TOKEN is empty: give the provider token, or - to read it from standard input.")
        }
        return text
    }
    let bytes = try InputFile.read("-", what: "provider token", allowEmpty: true)
    let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
    guard !text.isEmpty else {
        throw ValidationError(
            "TOKEN is '-' but standard input is empty: pipe the provider token in, or give it as the argument.")
    }
    return text
}

/// The flag or variable a signing key's path came from (`--key` if it was given), for messages about the file.
private func keyFlag(given flag: String?) -> String {
    flag != nil ? "--key" : "APNS_KEY_PATH"
}

/// The date of a `--now`/`--issued-at` flag (checked by ``NumericFlags/unixTime(_:flag:)``), else now.
private func date(unix: Int64?) -> Date {
    unix.flatMap { InputNumbers.date(unixSeconds: $0) } ?? Date()
}

/// `2026-11-21T19:37:55Z`.
private func isoString(_ date: Date) -> String { date.formatted(.iso8601) }

/// `kkpush jwt sign`: the one command that prints a whole token.
struct JWTSignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a provider token and print it (the only kkpush command that prints a whole token).",
        discussion: """
            Header {"alg":"ES256","kid":KEY_ID}, claims {"iss":TEAM_ID,"iat":SECONDS}, raw r‖s signature. \
            Flags fall back to APNS_KEY_PATH (or APNS_KEY, the PEM itself), APNS_KEY_ID and APNS_TEAM_ID. A key id or team id \
            that is not 10 upper-case letters and digits (Apple's form) is refused (exit 64); a key id / team id swap is \
            warned about on stderr.
            """
    )

    @OptionGroup var providerKey: ProviderKeyOptions
    var key: String? { providerKey.keyFile }
    var keyID: String? { providerKey.keyIDFlag }
    var teamID: String? { providerKey.teamIDFlag }

    @Option(
        name: .customLong("issued-at"), parsing: .unconditional,
        help: "iat as UNIX seconds (default: now; 0 to 253402300799).")
    var issuedAt: Int64?

    func validate() throws {
        try NumericFlags.unixTime(issuedAt, flag: "--issued-at")
    }

    func run() async throws {
        let env = CommandIO.current.environment
        guard let signing = try Secrets.signingKey(flag: key) else {
            throw ValidationError("Give the .p8 key with --key, APNS_KEY_PATH, or APNS_KEY (the PEM itself).")
        }
        guard let keyID = keyID ?? env["APNS_KEY_ID"], !keyID.isEmpty else {
            throw ValidationError("Give the key id with --key-id or APNS_KEY_ID.")
        }
        guard let teamID = teamID ?? env["APNS_TEAM_ID"], !teamID.isEmpty else {
            throw ValidationError("Give the team id with --team-id or APNS_TEAM_ID.")
        }
        try await reportingErrors {
            // A key id or team id not of Apple's form (10 upper-case letters and digits) makes a token no
            // APNs key matches: refused (64). A swap of two well-formed ids is warned about (exit 0).
            let problems = KeyTeamSwapCheck.check(keyFile: signing.path, keyID: keyID, teamID: teamID)
            if let format = problems.first(where: { $0.code == .keyIdFormat || $0.code == .teamIdFormat }) {
                let flag =
                    format.code == .keyIdFormat
                    ? (self.keyID != nil ? "--key-id" : "APNS_KEY_ID")
                    : (self.teamID != nil ? "--team-id" : "APNS_TEAM_ID")
                throw KKPushError(
                    code: format.code == .keyIdFormat ? .keyIDFormat : .teamIDFormat,
                    message: "\(flag): \(format.message) APNs would answer InvalidProviderToken.",
                    fix: format.fix)
            }
            for problem in problems.map(FlagWords.common.apply) {
                Output.printError("warning \(problem.code): \(problem.message)\n  fix: \(problem.fix)")
            }
            let privateKey =
                try signing.pem.map { try ES256PrivateKey(pem: $0, field: "key in APNS_KEY") }
                ?? ES256PrivateKey(contentsOfFile: signing.path ?? "", label: keyFlag(given: key))
            let token = try ProviderToken.sign(
                keyID: keyID, teamID: teamID, issuedAt: date(unix: issuedAt), key: privateKey)
            print(token)
        }
    }
}

/// `kkpush jwt verify`.
struct JWTVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify a provider token as APNs would. Exit 0 valid, 1 invalid (with the reason).",
        discussion: """
            Accepts raw (r‖s) and DER signatures. The key may be the .p8 or the P-256 public key PEM. A token whose \
            signature verifies is still invalid (exit 1, 'signature valid, but APNs will reject it') when APNs would \
            answer InvalidProviderToken to its ids: kid and iss swapped (iss is the key id of the AuthKey_<KEYID>.p8 \
            file, or kid = iss), a kid that is not the key file's, or ids not of Apple's form (10 upper-case letters \
            and digits).
            """
    )

    @Argument(help: "The token, or '-' to read it from standard input. A 'bearer ' prefix is ignored.")
    var token: String

    @Option(
        name: .long,
        help: "The .p8 key or public key PEM to verify with (default: $APNS_KEY_PATH, else $APNS_KEY holding the PEM).")
    var key: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Judge the token's age at this UNIX time (default: now; 0 to 253402300799).")
    var now: Int64?

    @Option(
        name: .customLong("max-age"), parsing: .unconditional,
        help: "The oldest a token may be, in seconds (1 to 31536000).")
    var maxAge: Int = apnsMaxAge

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    /// The ages `--max-age` accepts: a second to a year.
    static let maxAgeRange: ClosedRange<Int> = 1...31_536_000
    /// The oldest token APNs accepts, in seconds (the default --max-age).
    static let apnsMaxAge = 3600

    func validate() throws {
        try NumericFlags.unixTime(now, flag: "--now")
        try NumericFlags.integer(maxAge, flag: "--max-age", in: Self.maxAgeRange, unit: "seconds")
        if token == "-", key == "-" {
            throw ValidationError("Only one input can come from standard input ('-'): TOKEN or --key, not both.")
        }
    }

    func run() async throws {
        guard let signing = try Secrets.signingKey(flag: key, warn: false) else {
            throw ValidationError("Give the key with --key, APNS_KEY_PATH or APNS_KEY (the PEM itself).")
        }
        let text = try readToken(token)
        let publicKey = try await reportingErrors {
            if let pem = signing.pem { return try ES256PublicKey(pem: pem, field: "key in APNS_KEY") }
            return try ES256PublicKey(contentsOfFile: signing.path ?? "", label: keyFlag(given: key))
        }
        var report = ProviderTokenVerificationReport.verify(
            text, key: publicKey, keyFile: signing.path, now: date(unix: now), maxAge: maxAge)
        // A --max-age above APNs's hour judges by the user's limit; say that APNs itself would not.
        if report.olderThanAPNsAccepts {
            report.note =
                "Older than \(Self.apnsMaxAge) s: valid by --max-age \(maxAge), but APNs itself would answer 403 ExpiredProviderToken."
        }
        Output.printReport(report, json: json)
        if !report.valid { throw ExitCode(ExitStatus.failed) }
    }
}

extension ProviderTokenVerificationReport: CommandReport {
    var textLines: [String] {
        if let failure {
            return [
                "invalid \(failure.code): \(failure.message)",
                "  APNs would answer \(failure.apnsReason.status) \(failure.apnsReason.rawValue)",
            ]
        }
        let idProblems = idProblems.map(FlagWords.common.apply)
        if let problem = idProblems.first {
            let reason = APNsReason.invalidProviderToken
            return [
                "invalid \(problem.code): signature valid, but APNs will reject it: \(problem.message)",
                "  APNs would answer \(reason.status) \(reason.rawValue)", "  fix: \(problem.fix)",
            ] + idProblems.dropFirst().map { "  also \($0.code): \($0.message)" }
        }
        guard let claims else { return [] }
        return [
            "valid: kid \(claims.keyID), iss \(claims.teamID), issued \(isoString(claims.issuedAt)) (\(ageSeconds ?? 0) s ago)"
        ] + (note.map { ["  note: \($0)"] } ?? [])
    }
}

/// `kkpush jwt decode`.
struct JWTDecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Show a provider token's header, claims, issue time and age, with warnings (no signature check).",
        discussion: """
            Warnings: expired (older than an hour), too-young-to-refresh (under 20 minutes: replacing it \
            risks TooManyProviderTokenUpdates), iat-not-integer, key-team-swapped, and any other \
            structural problem. Exit 0 when the token decodes, 1 when it is malformed. The signature is \
            never printed.
            """
    )

    @Argument(help: "The token, or '-' to read it from standard input. A 'bearer ' prefix is ignored.")
    var token: String

    @Option(
        name: .long, parsing: .unconditional,
        help: "Judge the token's age at this UNIX time (default: now; 0 to 253402300799).")
    var now: Int64?

    @Flag(name: .long, help: "Print a JSON object: header, claims, age_seconds, warnings.")
    var json = false

    func validate() throws {
        try NumericFlags.unixTime(now, flag: "--now")
    }

    func run() async throws {
        var report = ProviderTokenDecodeReport.decode(try readToken(token), now: date(unix: now))
        report.note = Self.hmacNote(alg: report.hmacAlgorithm)
        if let failure = report.failure, !json {
            Output.printError("error \(failure.code): \(failure.message)")
        } else {
            Output.printReport(report, json: json)
        }
        if report.failure != nil { throw ExitCode(ExitStatus.failed) }
    }

    /// For an HS* token: it is not a provider token, most likely the tenant JWT Kantine Koning's backend gives
    /// an enrollment (the bearer of the app's token update), and the command that checks one.
    static func hmacNote(alg: String?) -> String? {
        guard let alg, alg.hasPrefix("HS") else { return nil }
        return "An \(alg) token is not an APNs provider token (those are ES256). Kantine Koning's backend signs "
            + "the tenant JWT of an enrollment (the bearer the app sends with its token update) with HS256: "
            + "check one with kkpush token verify BODY --bearer TOKEN --secret-file FILE."
    }
}

extension ProviderTokenDecodeReport: CommandReport {
    var textLines: [String] {
        guard let decoded else { return failure.map { ["error \($0.code): \($0.message)"] } ?? [] }
        var lines = ["header: \(JSONValue.object(decoded.header))", "claims: \(JSONValue.object(decoded.claims))"]
        if let issued = decoded.issuedAt, let age = ageSeconds {
            lines.append(
                age >= 0
                    ? "issued: \(isoString(issued)) (\(age) s ago, \(age / 60) min)"
                    : "issued: \(isoString(issued)) (\(-age) s in the future)")
        } else if let iat = decoded.iat {
            lines.append("issued: unknown (iat \(iat) is not a UNIX time from 1970 to 9999)")
        } else {
            lines.append("issued: unknown (iat is not an integer)")
        }
        lines.append("signature: \(signatureForm ?? "")")
        if problems.isEmpty {
            lines.append("warnings: none")
        } else {
            lines.append("warnings:")
            lines += Output.lines(problems)
        }
        if let note { lines.append("note: \(note)") }
        return lines
    }
}

/// `kkpush jwt bench`.
struct JWTBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Sign provider tokens for a while on one thread and print the rate (sign/s).",
        discussion: """
            Rates are per second of the signing thread's user CPU time, the basis `openssl speed` uses, so a \
            busy machine does not skew the comparison; the wall-clock rate is printed too. With \
            --compare-openssl, also runs `openssl speed -seconds S ecdsap256` and prints the ratio.
            """
    )

    @Option(name: .long, parsing: .unconditional, help: "How long to sign, in seconds (0.1...600).")
    var seconds: Double = 3

    @Option(name: .long, help: "A .p8 key to sign with (default: a freshly generated P-256 key).")
    var key: String?

    @Flag(
        name: .customLong("compare-openssl"),
        help: "Also run `openssl speed ecdsap256` for the same time and print the ratio.")
    var compareOpenSSL = false

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    /// The library's words for this command: its flags.
    static let words = FlagWords(flags: ["compareOpenSSL": "--compare-openssl"])

    func validate() throws {
        try NumericFlags.seconds(seconds, flag: "--seconds", in: SigningBenchReport.secondsRange)
    }

    func run() async throws {
        let privateKey = try await reportingErrors {
            try key.map { try ES256PrivateKey(contentsOfFile: $0, label: "--key") } ?? ES256PrivateKey.generate()
        }
        let report = try await reportingErrors {
            do {
                return try SigningBenchReport.run(key: privateKey, seconds: seconds, compareOpenSSL: compareOpenSSL)
            } catch let error as KKPushError {
                throw Self.words.apply(error)
            }
        }
        Output.printReport(report, json: json)
    }
}

extension SigningBenchReport: CommandReport {
    var textLines: [String] {
        var lines = [
            "\(Int(signPerSecond.rounded())) sign/s (\(signs) provider tokens in \(String(format: "%.2f", cpuSeconds)) s of CPU; "
                + "\(Int(signPerWallSecond.rounded())) per wall-clock second)"
        ]
        if let openssl = opensslSignPerSecond, let ratio = ratioToOpenSSL {
            lines.append("\(Int(openssl.rounded())) sign/s openssl speed ecdsap256 (per CPU second)")
            lines.append(String(format: "ratio %.2f", ratio))
        }
        return lines
    }
}
