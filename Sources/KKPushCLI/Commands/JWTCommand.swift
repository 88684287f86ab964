import ArgumentParser
import Foundation
import KKPushAuth
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
            if let format = problems.first(where: { $0.code == "key-id-format" || $0.code == "team-id-format" }) {
                let flag =
                    format.code == "key-id-format"
                    ? (self.keyID != nil ? "--key-id" : "APNS_KEY_ID")
                    : (self.teamID != nil ? "--team-id" : "APNS_TEAM_ID")
                throw KKPushError(
                    code: format.code == "key-id-format" ? .keyIDFormat : .teamIDFormat,
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
        let at = date(unix: now)
        let result = ProviderToken.verify(text, key: publicKey, now: at, maxAge: TimeInterval(maxAge))
        switch result {
        case .valid(let claims):
            let age = Int(at.timeIntervalSince(claims.issuedAt))
            var object: [String: JSONValue] = [
                "valid": true, "signature_valid": true, "kid": .string(claims.keyID), "iss": .string(claims.teamID),
                "iat": .int(Int(claims.issuedAt.timeIntervalSince1970)), "age_seconds": .int(age),
            ]
            // The signature verifies, but kid and iss can still be ones APNs rejects: swapped (the team id
            // is the key file's AuthKey_<KEYID>.p8 id, or kid = iss), another key's id, or not of Apple's
            // form. APNs answers 403 InvalidProviderToken to all of them: a verdict (exit 1), not a warning.
            let idProblems = KeyTeamSwapCheck.check(
                keyFile: signing.path, keyID: claims.keyID, teamID: claims.teamID, inToken: true
            ).map { FlagWords.common.apply(Problem(.error, code: $0.code, message: $0.message, fix: $0.fix)) }
            if let problem = idProblems.first {
                let reason = APNsReason.invalidProviderToken
                object["valid"] = false
                object["code"] = .string(problem.code)
                object["message"] = .string(
                    "The signature is valid, but APNs will reject the token: \(problem.message)")
                object["fix"] = .string(problem.fix)
                object["apns_reason"] = .string(reason.rawValue)
                object["problems"] = Output.json(idProblems)
                if json {
                    Output.printJSON(.object(object))
                } else {
                    print("invalid \(problem.code): signature valid, but APNs will reject it: \(problem.message)")
                    print("  APNs would answer \(reason.status) \(reason.rawValue)")
                    print("  fix: \(problem.fix)")
                    for other in idProblems.dropFirst() { print("  also \(other.code): \(other.message)") }
                }
                throw ExitCode(1)
            }
            // A --max-age above APNs's hour judges by the user's limit; say that APNs itself would not.
            let apnsExpired = age > Self.apnsMaxAge
            let note =
                apnsExpired
                ? "Older than \(Self.apnsMaxAge) s: valid by --max-age \(maxAge), but APNs itself would answer 403 ExpiredProviderToken."
                : nil
            if json {
                object["note"] = JSONValue(note)
                Output.printJSON(.object(object))
            } else {
                print(
                    "valid: kid \(claims.keyID), iss \(claims.teamID), issued \(isoString(claims.issuedAt)) (\(age) s ago)"
                )
                if let note { print("  note: \(note)") }
            }
        case .invalid(let failure):
            if json {
                Output.printJSON([
                    "valid": false, "signature_valid": Self.signatureVerdict(failure),
                    "code": .string(failure.code), "message": .string(failure.message),
                    "apns_reason": .string(failure.apnsReason.rawValue),
                ])
            } else {
                print("invalid \(failure.code): \(failure.message)")
                print("  APNs would answer \(failure.apnsReason.status) \(failure.apnsReason.rawValue)")
            }
            throw ExitCode(1)
        }
    }
}

extension JWTVerifyCommand {
    /// Whether the signature verified, for `--json`: false for `bad-signature`, true for failures found
    /// after it was checked (the issue time), null when the token failed before the signature was checked.
    static func signatureVerdict(_ failure: ProviderTokenFailure) -> JSONValue {
        switch failure.code {
        case "bad-signature": false
        case "iat-out-of-range", "iat-in-future", "expired": true
        default: .null
        }
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
        let text = try readToken(token)
        let decoded: DecodedProviderToken
        do {
            decoded = try ProviderToken.decode(text)
        } catch {
            if json {
                Output.printJSON([
                    "header": .null, "claims": .null, "age_seconds": .null,
                    "warnings": [["code": .string(error.code), "message": .string(error.message)]],
                ])
            } else {
                Output.printError("error \(error.code): \(error.message)")
            }
            throw ExitCode(1)
        }
        let at = date(unix: now)
        let problems = decoded.problems(now: at)
        let age = decoded.age(now: at).map { Int($0) }
        let signatureForm = Self.signatureForm(alg: decoded.alg, bytes: decoded.signature)
        let hmacNote = Self.hmacNote(alg: decoded.alg)
        if json {
            Output.printJSON([
                "header": .object(decoded.header),
                "claims": .object(decoded.claims),
                "issued_at": JSONValue(decoded.issuedAt.map(isoString)),
                "age_seconds": JSONValue(age),
                "signature_bytes": .int(decoded.signature.count),
                "signature_form": .string(signatureForm),
                "warnings": Output.json(problems),
                "note": JSONValue(hmacNote),
            ])
            return
        }
        print("header: \(JSONValue.object(decoded.header))")
        print("claims: \(JSONValue.object(decoded.claims))")
        if let issued = decoded.issuedAt, let age {
            print(
                age >= 0
                    ? "issued: \(isoString(issued)) (\(age) s ago, \(age / 60) min)"
                    : "issued: \(isoString(issued)) (\(-age) s in the future)")
        } else if let iat = decoded.iat {
            print("issued: unknown (iat \(iat) is not a UNIX time from 1970 to 9999)")
        } else {
            print("issued: unknown (iat is not an integer)")
        }
        print("signature: \(signatureForm)")
        if problems.isEmpty {
            print("warnings: none")
        } else {
            print("warnings:")
            for line in Output.lines(problems) { print(line) }
        }
        if let hmacNote { print("note: \(hmacNote)") }
    }

    /// How the signature is encoded, in words: APNs wants ES256's raw r‖s (64 bytes); a DER-encoded ECDSA
    /// signature (what OpenSSL's plain sign call gives) starts with 0x30; an HS* token carries an HMAC.
    static func signatureForm(alg: String?, bytes: [UInt8]) -> String {
        switch alg {
        case .some(let a) where a.hasPrefix("HS"):
            "\(bytes.count) bytes (an HMAC: \(a) is signed with a shared secret, not an APNs key)"
        case "ES256" where bytes.count == 64:
            "raw r‖s (64 bytes, as APNs requires)"
        case "ES256" where bytes.first == 0x30:
            "\(bytes.count) bytes, DER-encoded: APNs requires the raw 64-byte r‖s form (JWS, RFC 7518 §3.4)"
        default:
            "\(bytes.count) bytes (not the 64-byte r‖s of an ES256 signature)"
        }
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

    /// The seconds `--seconds` accepts.
    static let secondsRange: ClosedRange<Double> = 0.1...600

    func validate() throws {
        try NumericFlags.seconds(seconds, flag: "--seconds", in: Self.secondsRange)
    }

    func run() async throws {
        let privateKey = try await reportingErrors {
            try key.map { try ES256PrivateKey(contentsOfFile: $0, label: "--key") } ?? ES256PrivateKey.generate()
        }
        let result = try await reportingErrors { try Self.measure(key: privateKey, seconds: seconds) }
        var openssl: Double?
        if compareOpenSSL {
            openssl = try await reportingErrors { try Self.opensslSignRate(seconds: max(1, Int(seconds.rounded()))) }
        }
        let ratio = openssl.map { result.rate / $0 }
        if json {
            Output.printJSON([
                "signs": .int(result.count), "seconds": .double(result.elapsed),
                "cpu_seconds": .double(result.cpuSeconds),
                "sign_per_second": .double(result.rate.rounded()),
                "sign_per_wall_second": .double(result.wallRate.rounded()),
                "openssl_sign_per_second": JSONValue(openssl?.rounded()), "ratio_to_openssl": JSONValue(ratio),
            ])
            return
        }
        print(
            "\(Int(result.rate.rounded())) sign/s (\(result.count) provider tokens in \(String(format: "%.2f", result.cpuSeconds)) s of CPU; "
                + "\(Int(result.wallRate.rounded())) per wall-clock second)")
        if let openssl, let ratio {
            print("\(Int(openssl.rounded())) sign/s openssl speed ecdsap256 (per CPU second)")
            print(String(format: "ratio %.2f", ratio))
        }
    }

    /// The result of a benchmark run.
    struct Measurement {
        /// Tokens signed.
        var count: Int
        /// Wall-clock seconds.
        var elapsed: Double
        /// CPU seconds (user + system) of the signing thread.
        var cpuSeconds: Double
        /// Tokens per wall-clock second.
        var wallRate: Double { Double(count) / elapsed }
        /// Tokens per CPU second: the basis `openssl speed` reports on (it divides by user time).
        var rate: Double { Double(count) / cpuSeconds }
    }

    /// The calling thread's CPU time (user + system) in seconds: `CLOCK_THREAD_CPUTIME_ID`.
    static func threadCPUTime() -> Double {
        ThreadCPUTime.seconds()
    }

    /// Signs whole provider tokens (JSON, base64url, SHA-256, ECDSA, DER→raw) until `seconds` have
    /// passed, on the calling thread (no suspension point, so the task stays on one thread).
    static func measure(key: ES256PrivateKey, seconds: Double) throws -> Measurement {
        let clock = ContinuousClock()
        let start = clock.now
        let cpuStart = threadCPUTime()
        let limit = Duration.milliseconds(Int64(seconds * 1000))
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        var count = 0
        // Bounded by time and by a hard cap on the count.
        while count < 100_000_000 {
            for _ in 0..<256 {
                _ = try ProviderToken.sign(
                    keyID: "KKBENCH001", teamID: "KKTEAM0001", issuedAt: base.addingTimeInterval(Double(count)),
                    key: key)
                count += 1
            }
            if clock.now - start >= limit { break }
        }
        let elapsed = clock.now - start
        let cpu = max(threadCPUTime() - cpuStart, 1e-6)
        let wall = elapsed.seconds
        return Measurement(count: count, elapsed: wall, cpuSeconds: cpu)
    }

    /// Runs `openssl speed -seconds S ecdsap256` and reads its sign/s figure.
    ///
    /// Spawned through `SpawnedCommand` (posix_spawn, an empty signal mask): `openssl speed` times itself with
    /// SIGALRM, and threads of this process (Dispatch, the cooperative pool) block that signal, a
    /// mask a child started by Foundation's `Process` would inherit (it would then never stop).
    static func opensslSignRate(seconds: Int) throws -> Double {
        let arguments = ["openssl", "speed", "-seconds", String(seconds), "ecdsap256"]
        let data: [UInt8]
        let status: Int32
        switch SpawnedCommand.run(arguments) {
        case .noPipe(let code):
            throw KKPushError(
                code: .opensslSpeedFailed, message: "Cannot create a pipe for openssl (errno \(code)).",
                fix: "Run it again without --compare-openssl.")
        case .notStarted(let spawned):
            throw KKPushError(
                code: .opensslSpeedFailed,
                message: "--compare-openssl: cannot run the openssl command (posix_spawnp: \(spawned)).",
                fix: "Install the openssl command line (apt-get install openssl), or leave out --compare-openssl.")
        case .finished(let s, let output):
            status = s
            data = output
        }
        // " 256 bits ecdsa (nistp256)   0.0000s   0.0000s  69289.9  23614.0"
        let text = String(decoding: data, as: UTF8.self)
        let exited = status & 0x7F == 0 && (status >> 8) & 0xFF == 0
        guard exited,
            let line = text.split(separator: "\n").last(where: { $0.contains("ecdsa (nistp256)") }),
            case let fields = line.split(separator: " "), fields.count >= 2,
            let rate = Double(fields[fields.count - 2])
        else {
            throw KKPushError(
                code: .opensslSpeedFailed,
                message: "--compare-openssl: could not read the sign/s figure from `openssl speed` (status \(status)).",
                fix: "Check that `openssl speed -seconds 1 ecdsap256` runs here, or leave out --compare-openssl.")
        }
        return rate
    }
}
