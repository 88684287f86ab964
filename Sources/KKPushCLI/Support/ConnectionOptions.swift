import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import KantineKoning
import Logging

/// Where to send and how to authenticate: the options `send` and `send-batch` share.
struct ConnectionOptions: ParsableArguments {
    /// `--key`, `--key-id`, `--team-id` (not used with `--cert`).
    @OptionGroup var providerKey: ProviderKeyOptions
    var keyOption: String? { providerKey.keyFile }

    /// `--key`, else `$APNS_KEY_PATH` (not when `--cert` is given).
    var key: String? { keyOption ?? (cert == nil ? CommandIO.current.environment["APNS_KEY_PATH"] : nil) }
    /// The signing key: `--key`, `$APNS_KEY_PATH` or `$APNS_KEY` (not when `--cert` is given).
    func signingKey(warn: Bool = true) throws -> Secrets.SigningKey? {
        cert == nil ? try providerKey.signingKey(warn: warn) : nil
    }
    /// `--key-id`, else `$APNS_KEY_ID`.
    var keyID: String? { providerKey.keyID() }
    /// `--team-id`, else `$APNS_TEAM_ID`.
    var teamID: String? { providerKey.teamID() }
    @Option(help: "Client certificate: a .p12 file (or a PEM with certificate and key).") var cert: String?
    @Option(
        name: .customLong("cert-password"),
        help:
            "Password of the .p12 file (or of an encrypted PEM key); prefer --cert-password-file or $APNS_CERT_PASSWORD."
    )
    var certPassword: String?
    @Option(name: .customLong("cert-password-file"), help: "A file holding the --cert password ('-' for stdin).")
    var certPasswordFile: String?
    @Option(
        name: .customLong("cert-key"),
        help: "With a PEM --cert: its private key (default: the same file if it holds the key, else FILE.key).")
    var certKey: String?

    @Option(
        help:
            "A credentials file (JSON): named provider keys and certificates, each with the environments and topics it may serve; instead of --key or --cert."
    )
    var credentials: String?

    @Option(help: "APNs environment: sandbox or production.") var env: String?
    @Option(
        name: .customLong("build-environment"),
        help: "Resolve the environment as the backend does from the app's build environment (e.g. development).")
    var buildEnvironment: String?
    @Flag(name: .customLong("test-user"), help: "With --build-environment: the enrollment is a test user.")
    var testUser = false

    @Option(
        help:
            "Custom endpoint, e.g. https://127.0.0.1:2197 (the mock server or a stand-in), for the one environment --env names (default sandbox); send-batch refuses a line of the other environment, worker holds its rows: give --sandbox-url/--production-url for both."
    ) var url: String?
    @Option(
        name: .customLong("sandbox-url"),
        help: "The endpoint for sandbox pushes (default Apple's sandbox host), e.g. the mock's sandbox listener.")
    var sandboxURL: String?
    @Option(
        name: .customLong("production-url"),
        help:
            "The endpoint for production pushes (default Apple's production host), e.g. the mock's production listener."
    )
    var productionURL: String?
    @Option(name: .customLong("ca-file"), help: "CA file to trust for --url, --sandbox-url and --production-url.")
    var caFile: String?
    @Option(parsing: .unconditional, help: "Port on Apple's host: 443 or 2197.") var port: Int?
    @Option(help: ArgumentHelp(ProxyHelp.text)) var proxy: String?

    @Flag(name: .customLong("no-preflight"), help: "Send even what the pre-flight rules say APNs rejects.")
    var noPreflight = false
    @Option(
        name: .customLong("connect-timeout"), parsing: .unconditional,
        help: "Seconds to open a connection (0.001 to 3600).")
    var connectTimeout: Double = 10
    @Option(
        name: .customLong("request-timeout"), parsing: .unconditional, help: "Seconds for one attempt (0.001 to 3600).")
    var requestTimeout: Double = 30
    @Option(
        name: .customLong("max-attempts"), parsing: .unconditional,
        help: "Most attempts per push, 1 to 100 (retries of 429/500/503/connection).")
    var maxAttempts: Int = 4

    /// The seconds `--connect-timeout` and `--request-timeout` accept.
    static let timeoutRange: ClosedRange<Double> = 0.001...3600
    /// The values `--max-attempts` accepts.
    static let maxAttemptsRange: ClosedRange<Int> = 1...100
    @Flag(name: .shortAndLong, help: "Log what the client does (to stderr).") var verbose = false

    func validate() throws {
        if credentials != nil {
            if cert != nil || keyOption != nil {
                throw ValidationError("Give --credentials, or --key or --cert, not both.")
            }
            return try validateRest()
        }
        if cert != nil, keyOption != nil {
            throw ValidationError("Give either --key (with --key-id and --team-id) or --cert, not both.")
        }
        if certPassword != nil, certPasswordFile != nil {
            throw ValidationError("Give --cert-password or --cert-password-file, not both.")
        }
        let signing = try signingKey(warn: false)
        if cert == nil, signing == nil {
            throw ValidationError(
                "Give a credential: --key P8 --key-id KID --team-id TEAM (or APNS_KEY_PATH or APNS_KEY, APNS_KEY_ID, APNS_TEAM_ID), or --cert P12."
            )
        }
        if signing != nil, keyID == nil || teamID == nil {
            throw ValidationError("--key needs --key-id and --team-id (or APNS_KEY_ID and APNS_TEAM_ID).")
        }
        try validateRest()
    }

    /// The checks that do not concern the credential.
    private func validateRest() throws {
        if env != nil, buildEnvironment != nil {
            throw ValidationError("Give either --env or --build-environment, not both.")
        }
        if testUser, buildEnvironment == nil {
            throw ValidationError("--test-user only makes sense with --build-environment.")
        }
        if let env, APNsEnvironment(lenient: env) == nil {
            throw ValidationError("--env '\(env)' is neither sandbox nor production.")
        }
        if let port, port != 443, port != 2197 {
            throw ValidationError("--port must be 443 or 2197 (Apple's two APNs ports); use --url for others.")
        }
        if url != nil, port != nil {
            throw ValidationError("--port is for Apple's hosts; put the port in --url.")
        }
        if url != nil, sandboxURL != nil || productionURL != nil {
            throw ValidationError(
                "Give --url (one endpoint, for the environment --env names), or --sandbox-url and --production-url (one per environment), not both."
            )
        }
        if port != nil, sandboxURL != nil, productionURL != nil {
            throw ValidationError(
                "--port picks Apple's port; with both --sandbox-url and --production-url it does nothing: put the port in the URLs."
            )
        }
        for (flag, given) in [("--sandbox-url", sandboxURL), ("--production-url", productionURL)] {
            guard let given else { continue }
            do { _ = try APNsEndpoint.parse(url: given) } catch let e as KKPushError {
                throw ValidationError("\(flag): \(e.message)\(e.fix.map { " \($0)" } ?? "")")
            }
        }
        if caFile != nil, url == nil, sandboxURL == nil, productionURL == nil {
            throw ValidationError(
                "--ca-file goes with --url, --sandbox-url or --production-url (Apple's hosts use the system's CA store)."
            )
        }
        try EndpointFlags.check(url: url, caFile: url == nil ? nil : caFile)
        if let proxy {
            do {
                try APNsClientConfiguration.checkProxy(proxy)
            } catch let error as KKPushError {
                throw ValidationError("--proxy: \(error.message) \(error.fix ?? "")")
            }
        }
        try NumericFlags.seconds(connectTimeout, flag: "--connect-timeout", in: Self.timeoutRange)
        try NumericFlags.seconds(requestTimeout, flag: "--request-timeout", in: Self.timeoutRange)
        try NumericFlags.integer(maxAttempts, flag: "--max-attempts", in: Self.maxAttemptsRange)
    }

    /// Checks the files the flags name before anything is sent: missing, a folder, empty or unreadable is an
    /// unusable input (exit 2) naming the flag; a `--ca-file` must hold a PEM certificate.
    func checkInputFiles() throws {
        if let keyOption, cert == nil {
            _ = try InputFile.read(keyOption, what: "signing key", label: "--key", maximumSize: 1 << 20)
        }
        if let cert { _ = try InputFile.read(cert, what: "client certificate", label: "--cert", maximumSize: 1 << 20) }
        if let certKey {
            _ = try InputFile.read(certKey, what: "certificate key", label: "--cert-key", maximumSize: 1 << 20)
        }
        if let caFile {
            let bytes = try InputFile.read(caFile, what: "CA file", label: "--ca-file", maximumSize: 4 << 20)
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.contains("-----BEGIN CERTIFICATE-----") else {
                let what = text.contains("PRIVATE KEY-----") ? "a private key" : "no PEM certificate"
                throw KKPushError(
                    code: .sendCaFileInvalid, message: "The CA file --ca-file \(caFile) holds \(what).",
                    fix:
                        "Give the CA certificate (PEM, '-----BEGIN CERTIFICATE-----') that signed the server's certificate, e.g. Certificates/ca.crt for the mock."
                )
            }
        }
    }

    /// The environment to use: `--env`, else resolved from `--build-environment`, else
    /// `fallback` (a per-line environment in a batch), else sandbox. Warnings go to `warnings`.
    func environment(fallback: APNsEnvironment? = nil, warnings: inout [Problem]) -> APNsEnvironment {
        if let env, let e = APNsEnvironment(lenient: env) { return e }
        if let buildEnvironment {
            let resolution = EnvironmentResolver.resolve(
                buildEnvironment: buildEnvironment, isTestUser: testUser,
                settings: ServerAPNsSettings.from(environment: CommandIO.current.environment))
            warnings += resolution.warnings
            return resolution.environment
        }
        if let fallback { return fallback }
        if url == nil {
            warnings.append(
                Problem(
                    .info, code: .environmentDefaulted, message: "No --env given; sending to sandbox.",
                    fix:
                        "Pass --env production for ad hoc, enterprise, TestFlight and App Store builds (signed for production whatever their configuration); sandbox is for builds run from Xcode."
                ))
        }
        return .sandbox
    }

    /// The environment to report: nil for a custom `--url` when neither `--env` nor
    /// `--build-environment` says which environment it stands in for.
    func reportedEnvironment(_ environment: APNsEnvironment) -> APNsEnvironment? {
        url != nil && env == nil && buildEnvironment == nil ? nil : environment
    }

    /// With `--url` and `--env` (or `--build-environment`): the environment is what that flag says, not what the
    /// host is (a mock's sandbox listener answers whatever `--env` claims). Nil without `--url`, or when no
    /// flag named an environment (then the label is "custom").
    var environmentSource: String? {
        guard url != nil else { return nil }
        if env != nil { return "--env" }
        if buildEnvironment != nil { return "--build-environment" }
        return nil
    }

    /// The credentials file of `--credentials`, read and checked; nil without the flag.
    func credentialSet() throws -> ProviderCredentialSet? {
        guard let credentials else { return nil }
        return try ProviderCredentialSet.load(path: credentials)
    }

    /// The endpoint for `environment`: `--url` if given, else that environment's `--sandbox-url` or
    /// `--production-url`, else Apple's host on `--port`.
    func endpoint(for environment: APNsEnvironment) throws -> APNsEndpoint {
        if let url {
            return try APNsEndpoint.parse(url: url, caFile: caFile, environment: reportedEnvironment(environment))
        }
        if let given = environment == .sandbox ? sandboxURL : productionURL {
            return try APNsEndpoint.parse(url: given, caFile: caFile, environment: environment)
        }
        return APNsEndpoint.apple(environment, port: port ?? APNsEndpoint.standardPort)
    }

    /// The environments the endpoints may serve: with `--url`, only `environment` (the one it stands in for:
    /// `--env`, `--build-environment`, else sandbox), since one host cannot be both and a push sent to the other
    /// environment's stand-in is answered as if it were this one's; else both (per-environment URLs, or Apple's).
    func servedEnvironments(_ environment: APNsEnvironment) -> Set<APNsEnvironment> {
        url == nil ? [.sandbox, .production] : [environment]
    }

    /// What to do about a push of an environment `--url` does not serve.
    static let endpointHint =
        "Give --sandbox-url and --production-url (one endpoint per environment) instead of --url, or leave them out to send to Apple's hosts."

    /// The client configuration for these options.
    func clientConfiguration(maxInFlight: Int? = nil, maxConnections: Int? = nil, loopThreads: Int? = nil) throws
        -> APNsClientConfiguration
    {
        var logger = Logger(label: "kkpush.client")
        logger.logLevel = verbose ? .debug : .warning
        let credential: APNsCredential
        if credentials != nil {
            // Each credential of the file gets a client of its own (ProviderClientRouter).
            credential = .none
        } else if let signing = try signingKey(), let keyID, let teamID {
            for problem in KeyTeamSwapCheck.check(keyFile: signing.path, keyID: keyID, teamID: teamID).map(
                FlagWords.common.apply)
            where problem.severity >= .warning {
                Output.printError(
                    "\(problem.severity.rawValue) \(problem.code): \(problem.message)\n  fix: \(problem.fix)")
            }
            let signingKey = try signing.load()
            var authLogger = Logger(label: "kkpush.auth")
            authLogger.logLevel = verbose ? .debug : .warning
            credential = .token(ProviderTokenCache(key: signingKey, keyID: keyID, teamID: teamID, logger: authLogger))
        } else if let cert {
            Secrets.warnIfCredentialExposed(path: cert)
            let password = try Secrets.resolve(Secrets.certPassword, flag: certPassword, file: certPasswordFile)
            credential = try certificateCredential(path: cert, keyPath: certKey, password: password)
        } else {
            throw KKPushError(code: .sendNoCredential, message: "No credential given.", fix: "Pass --key or --cert.")
        }
        let defaults = APNsClientConfiguration()
        let sandbox = try endpoint(for: .sandbox)
        let production = try endpoint(for: .production)
        // validate() has checked both; this is for callers that build options without parsing.
        guard let connect = InputNumbers.duration(seconds: connectTimeout, in: Self.timeoutRange),
            let request = InputNumbers.duration(seconds: requestTimeout, in: Self.timeoutRange)
        else {
            throw KKPushError(
                code: .sendTimeoutRange,
                message:
                    "--connect-timeout \(InputNumbers.text(connectTimeout)) or --request-timeout \(InputNumbers.text(requestTimeout)) is out of range.",
                fix: "Give a number of seconds from \(InputNumbers.describe(Self.timeoutRange)).")
        }
        return APNsClientConfiguration(
            credential: credential, sandboxEndpoint: sandbox, productionEndpoint: production,
            connectTimeout: connect, requestTimeout: request,
            maxInFlightPerConnection: maxInFlight ?? defaults.maxInFlightPerConnection,
            // --threads alone raises the connections to one per thread; with --max-connections, validate() checked.
            maxConnections: maxConnections ?? max(defaults.maxConnections, loopThreads ?? 1),
            loopThreads: loopThreads ?? defaults.loopThreads, proxyURL: proxy,
            retry: APNsRetryPolicy(maxAttempts: maxAttempts), preflight: !noPreflight, logger: logger)
    }
}

/// Loads a client certificate credential from a .p12 file, or from a PEM certificate and its key
/// (`keyPath`, else the same file if it holds a private key, else the file with the `.key` extension).
/// The loaders' password fixes name `send`'s flags (--cert-password, --cert-password-file) by default.
func certificateCredential(path: String, keyPath: String?, password: String?) throws -> APNsCredential {
    let lower = path.lowercased()
    let credential: ClientCredential
    if keyPath != nil || lower.hasSuffix(".pem") || lower.hasSuffix(".crt") || lower.hasSuffix(".cer") {
        var key = keyPath
        if key == nil {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            key = text.contains("PRIVATE KEY-----") ? path : (path as NSString).deletingPathExtension + ".key"
        }
        credential = try ClientCredential.loadPEM(certificatePath: path, keyPath: key!, password: password)
    } else {
        credential = try ClientCredential.loadPKCS12(
            path: path, password: password, passwordHint: Secrets.certificatePasswordHint)
    }
    return try .certificate(credential)
}
