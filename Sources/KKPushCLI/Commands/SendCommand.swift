import ArgumentParser
import Foundation
import KKPushAuth
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

    @Option(help: "APNs environment: sandbox or production.") var env: String?
    @Option(
        name: .customLong("build-environment"),
        help: "Resolve the environment as the backend does from the app's build environment (e.g. development).")
    var buildEnvironment: String?
    @Flag(name: .customLong("test-user"), help: "With --build-environment: the enrollment is a test user.")
    var testUser = false

    @Option(help: "Custom endpoint, e.g. https://127.0.0.1:2197 (the mock server or a stand-in).") var url: String?
    @Option(name: .customLong("ca-file"), help: "CA file to trust for --url.") var caFile: String?
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
        try EndpointFlags.check(url: url, caFile: caFile)
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
            _ = try InputFile.read(keyOption, what: "signing key", flag: "--key", maximumSize: 1 << 20)
        }
        if let cert { _ = try InputFile.read(cert, what: "client certificate", flag: "--cert", maximumSize: 1 << 20) }
        if let certKey {
            _ = try InputFile.read(certKey, what: "certificate key", flag: "--cert-key", maximumSize: 1 << 20)
        }
        if let caFile {
            let bytes = try InputFile.read(caFile, what: "CA file", flag: "--ca-file", maximumSize: 4 << 20)
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
                    .info, code: "environment-defaulted", message: "No --env given; sending to sandbox.",
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

    /// The endpoint for `environment`: `--url` if given, else Apple's host on `--port`.
    func endpoint(for environment: APNsEnvironment) throws -> APNsEndpoint {
        if let url {
            return try APNsEndpoint.parse(url: url, caFile: caFile, environment: reportedEnvironment(environment))
        }
        return APNsEndpoint.apple(environment, port: port ?? APNsEndpoint.standardPort)
    }

    /// The client configuration for these options.
    func clientConfiguration(maxInFlight: Int? = nil, maxConnections: Int? = nil) throws -> APNsClientConfiguration {
        var logger = Logger(label: "kkpush.client")
        logger.logLevel = verbose ? .debug : .warning
        let credential: APNsCredential
        if let signing = try signingKey(), let keyID, let teamID {
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
            maxConnections: maxConnections ?? defaults.maxConnections, proxyURL: proxy,
            retry: APNsRetryPolicy(maxAttempts: maxAttempts), preflight: !noPreflight, logger: logger)
    }
}

/// The payload options of `send`.
struct PayloadOptions: ParsableArguments {
    @Option(help: "Payload JSON file ('-' for stdin).") var payload: String?
    @Option(help: "Alert title.") var title: String?
    @Option(help: "Alert subtitle.") var subtitle: String?
    @Option(help: "Alert body.") var body: String?
    @Option(parsing: .unconditional, help: "Badge number (0 or more; 0 clears it).") var badge: Int?
    @Option(help: "Sound name, e.g. default.") var sound: String?
    @Flag(name: .customLong("content-available"), help: "Set content-available (a background push).")
    var contentAvailable = false
    @Option(name: .customLong("data"), help: "A custom top-level key: key=JSON value (or plain text). Repeatable.")
    var data: [String] = []

    var hasBuilderFlags: Bool {
        title != nil || subtitle != nil || body != nil || badge != nil || sound != nil || contentAvailable
            || !data.isEmpty
    }

    func validate() throws {
        if payload != nil, hasBuilderFlags {
            throw ValidationError("Give either --payload FILE or the payload flags (--title, --body, ...), not both.")
        }
        try NumericFlags.integer(badge, flag: "--badge", in: 0...Int(Int32.max))
    }

    /// The payload bytes and the push type they suggest.
    /// For an Xcode Simulator `.apns` file, its `Simulator Target Bundle` is the third element (the
    /// topic to use when `--topic` is not given); the key itself is not sent.
    func build() throws -> (bytes: [UInt8], suggested: PushType, fileTopic: String?) {
        if let payload {
            // Empty is allowed: pre-flight answers PayloadEmpty (and --no-preflight sends it, on purpose).
            let data = try InputFile.read(
                payload, what: "payload file", flag: "--payload", maximumSize: 1 << 20, allowEmpty: true)
            let file = PayloadFile.read(data, fileName: payload == "-" ? nil : payload)
            let suggested = file.parsed?.suggestedPushType ?? .alert
            return (file.payload, suggested, file.topic)
        }
        var aps = APS()
        if title != nil || subtitle != nil || body != nil {
            aps.alert = .fields(APSAlert.Fields(title: title, subtitle: subtitle, body: body))
        }
        aps.badge = badge
        aps.sound = sound.map { APSSound.named($0) }
        aps.contentAvailable = contentAvailable
        var built = Payload(aps: aps)
        for entry in data {
            guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex else {
                throw KKPushError(
                    code: .sendDataFlag, message: "--data '\(entry)' is not key=value.",
                    fix: "Write --data matchId=42 or --data 'team={\"id\":7}'.")
            }
            let key = String(entry[..<eq])
            let raw = String(entry[entry.index(after: eq)...])
            built.setCustom(key, JSONValue.lenient(raw))
        }
        if !hasBuilderFlags {
            throw KKPushError(
                code: .sendNoPayload, message: "No payload given.",
                fix: "Pass --payload FILE, or --title/--body (alert) or --content-available (background).")
        }
        return (built.encoded(), built.suggestedPushType, nil)
    }
}

/// `kkpush send`: one push, its outcome, and on rejection the explanation and fix.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send one push and show APNs's answer (exit 0 accepted, 1 rejected or failed).")

    @Option(help: "Device token (hex); or --channel for a broadcast.") var token: String?
    @Option(
        help:
            "Broadcast channel id (base64): send a broadcast (POST /4/broadcasts/apps/<--topic, the plain bundle id>) instead of a device push."
    )
    var channel: String?
    @Option(
        help:
            "apns-topic: the bundle ID (plus the push type's suffix); default: an .apns file's Simulator Target Bundle, else $APNS_TOPIC."
    )
    var topic: String?
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var payloadOptions: PayloadOptions
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(parsing: .unconditional, help: "apns-priority: 10, 5 or 1 (default: 10, or 5 for background).")
    var priority: Int?
    @Option(parsing: .unconditional, help: "apns-expiration: UNIX seconds (0 = try once).") var expiration: Int?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id (at most 64 bytes).") var collapseID: String?
    @Option(name: .customLong("apns-id"), help: "apns-id: a UUID to identify the push.") var apnsID: String?
    @Flag(help: "Print the outcome as JSON.") var json = false

    func validate() throws {
        try StandardInput.checkOneReader(connection.standardInputUses + [("--payload", payloadOptions.payload)])
        if (token == nil) == (channel == nil) {
            throw ValidationError("Give either --token (a device push) or --channel (a broadcast), exactly one.")
        }
        if channel != nil {
            if collapseID != nil { throw ValidationError("--collapse-id does not go with --channel (a broadcast).") }
            if let pushType, pushType.lowercased() != "liveactivity" {
                throw ValidationError(
                    "A broadcast (--channel) is always apns-push-type liveactivity; leave --push-type out.")
            }
        }
    }

    func run() async throws {
        if let channel {
            try await runBroadcast(channel: channel)
            return
        }
        let token = self.token ?? ""
        try await reportingErrors {
            try connection.checkInputFiles()
            var warnings: [Problem] = []
            let normalized = DeviceToken.normalize(token)
            // Normalisation problems that are errors are left to pre-flight (or to APNs with --no-preflight).
            let deviceToken = normalized.token ?? token
            warnings += normalized.problems.filter { $0.severity != .error }
            let environment = connection.environment(warnings: &warnings)
            let endpoint = try connection.endpoint(for: environment)
            let (bytes, suggested, fileTopic) = try payloadOptions.build()
            guard let topic = topic ?? fileTopic ?? Secrets.topic(nil) else {
                throw KKPushError(
                    code: .sendNoTopic,
                    message: "No --topic given (and the payload is not an .apns file with a Simulator Target Bundle).",
                    fix: "Pass --topic with the app's bundle id (or set APNS_TOPIC), e.g. --topic nl.kantinekoning.app."
                )
            }
            let type = pushType.map { PushType($0) } ?? suggested
            let request = NotificationRequest(
                deviceToken: deviceToken, topic: topic, pushType: type,
                priority: priority ?? (type == .background ? 5 : 10), expiration: expiration, collapseID: collapseID,
                apnsID: apnsID, payload: bytes)
            let configuration = try connection.clientConfiguration(maxConnections: 1)
            let outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(request, to: endpoint)
            }
            if json {
                var object = SendCommand.json(
                    outcome, environment: connection.reportedEnvironment(environment), warnings: warnings)
                // Where the environment came from: Apple's host for it, or a flag while --url chose the host.
                object["environment_source"] = .string(
                    connection.environmentSource ?? (connection.url == nil ? "host" : "none"))
                if let note = Self.preflightFlagNote(outcome) {
                    object["error"] = .string("\(object["error"]?.stringValue ?? "") \(note)")
                }
                Output.printJSON(.object(object))
            } else {
                for line in Output.lines(warnings + outcome.problems.filter { $0.severity != .error }) {
                    Output.printError(line)
                }
                var lines = SendCommand.humanLines(
                    outcome, environment: connection.reportedEnvironment(environment),
                    environmentSource: connection.environmentSource)
                if let note = Self.preflightFlagNote(outcome) { lines.append("  \(note)") }
                print(lines.joined(separator: "\n"))
            }
            if !outcome.isAccepted { throw ExitCode(1) }
        }
    }

    /// `send --channel`: one broadcast to a channel, APNs's answer with its apns-request-id.
    func runBroadcast(channel: String) async throws {
        try await reportingErrors {
            try connection.checkInputFiles()
            var warnings: [Problem] = []
            let environment = connection.environment(warnings: &warnings)
            let endpoint = try connection.endpoint(for: environment)
            let (bytes, _, fileTopic) = try payloadOptions.build()
            guard let givenTopic = topic ?? fileTopic ?? Secrets.topic(nil) else {
                throw KKPushError(
                    code: .sendNoTopic, message: "No --topic given: a broadcast needs the app's plain bundle id.",
                    fix: "Pass --topic with the plain bundle id (no .push-type.liveactivity), or set APNS_TOPIC.")
            }
            // The rule `channel` and `send-batch` apply too: a Live Activity topic's suffix dropped with a warning,
            // another push type's suffix refused (exit 1).
            let (bundleID, suffix) = BroadcastRules.broadcastBundleID(forTopic: givenTopic)
            if let suffix {
                if suffix.severity == .error { throw ChannelSuffix.error(suffix, flag: "--topic") }
                warnings.append(suffix)
            }
            // What `payload lint --broadcast` says of the same payload: APNs accepts it, the device ignores it
            // (a timestamp in milliseconds, a start event, no event). Errors are the client's pre-flight's.
            warnings += PayloadLint.lintBroadcast(PayloadFile(payload: bytes), priority: priority).check.problems
                .filter { $0.severity == .warning }
            let request = BroadcastRequest(
                bundleID: bundleID, channelID: channel, priority: priority ?? 10, expiration: expiration ?? 0,
                requestID: apnsID, payload: bytes)
            let client = try APNsBroadcastClient(configuration: try connection.clientConfiguration(maxConnections: 1))
            let r = try await client.broadcast(request, to: endpoint)
            let env = connection.reportedEnvironment(environment)?.rawValue ?? "custom"
            if json {
                var object: [String: JSONValue] = [
                    "status": .string(r.isSuccess ? "accepted" : "rejected"), "http_status": .int(r.status),
                    "apns_request_id": JSONValue(r.requestID), "channel_id": .string(channel),
                    "environment": JSONValue(connection.reportedEnvironment(environment)?.rawValue), "reason": .null,
                ]
                if let reason = r.reason {
                    object["reason"] = .string(reason.rawValue)
                    object["explanation"] = .string(reason.explanation)
                    object["fix"] = .string(reason.commandLineFix)
                }
                if !warnings.isEmpty { object["problems"] = Output.json(warnings) }
                Output.printJSON(.object(object))
            } else {
                for line in Output.lines(warnings) { Output.printError(line) }
                if let reason = r.reason {
                    print(
                        [
                            "rejected: \(r.status) \(reason.rawValue) (broadcast, \(env))",
                            "  why: \(reason.explanation)", "  fix: \(reason.commandLineFix)",
                            "  apns-request-id: \(r.requestID ?? "-")",
                        ].joined(separator: "\n"))
                } else {
                    print(
                        [
                            "accepted broadcast to channel \(channel) by \(endpoint.host):\(endpoint.port) (\(env))",
                            "  apns-request-id: \(r.requestID ?? "-")",
                        ].joined(separator: "\n"))
                }
            }
            if !r.isSuccess { throw ExitCode(1) }
        }
    }

    /// The flags behind each pre-flight error (the APNs reason it predicts).
    static let preflightFlags: [String: String] = [
        "BadPriority": "--priority", "BadExpirationDate": "--expiration", "BadCollapseId": "--collapse-id",
        "BadMessageId": "--apns-id", "InvalidPushType": "--push-type", "BadTopic": "--topic", "MissingTopic": "--topic",
        "BadDeviceToken": "--token", "MissingDeviceToken": "--token", "PayloadEmpty": "--payload",
        "PayloadTooLarge": "--payload",
    ]

    /// For a push pre-flight stopped: the flags at fault, and that `--no-preflight` sends it anyway.
    static func preflightFlagNote(_ outcome: PushOutcome) -> String? {
        guard outcome.failure?.kind == .preflight else { return nil }
        var flags: [String] = []
        for problem in outcome.problems where problem.severity == .error {
            if let flag = preflightFlags[problem.code], !flags.contains(flag) { flags.append(flag) }
        }
        guard !flags.isEmpty else { return nil }
        return
            "Flag at fault: \(flags.joined(separator: ", ")). Correct it, or add --no-preflight to send it as is and see APNs's own answer."
    }

    /// The `--json` object of an outcome (snake_case keys, stable).
    static func json(_ outcome: PushOutcome, environment: APNsEnvironment?, warnings: [Problem] = []) -> [String:
        JSONValue]
    {
        var object: [String: JSONValue] = [
            "status": .string(outcome.status),
            "apns_id": JSONValue(outcome.apnsID),
            "apns_unique_id": .null,
            "reason": .null,
            "http_status": .null,
            "timestamp": .null,
            "environment": JSONValue(environment?.rawValue ?? outcome.endpoint.environment?.rawValue),
            "duration_ms": .double((outcome.durationMilliseconds * 10).rounded() / 10),
            "attempts": .int(outcome.attempts),
            "possibly_duplicated": .bool(outcome.possiblyDuplicated),
        ]
        switch outcome.result {
        case .accepted(_, let unique):
            object["apns_unique_id"] = JSONValue(unique)
            object["http_status"] = 200
        case .rejected(let rejection):
            object["reason"] = .string(rejection.reason.rawValue)
            object["http_status"] = .int(rejection.status)
            object["explanation"] = .string(rejection.reason.explanation)
            object["fix"] = .string(rejection.reason.commandLineFix)
            if let t = rejection.timestamp {
                object["timestamp"] = .int(Int((t.timeIntervalSince1970 * 1000).rounded()))
            }
        case .failed(let failure):
            object["reason"] = .string(failure.kind.rawValue)
            object["error"] = .string(failure.message)
        }
        let problems = warnings + outcome.problems
        if !problems.isEmpty { object["problems"] = Output.json(problems) }
        return object
    }

    /// The human-readable outcome.
    /// `environmentSource`: the flag that named the environment while `--url` chose the host (`--env`), so the
    /// label says the environment is that flag's word, not something the host confirmed.
    static func humanLines(
        _ outcome: PushOutcome, environment: APNsEnvironment?, environmentSource: String? = nil
    ) -> [String] {
        let ms = String(format: "%.1f ms", outcome.durationMilliseconds)
        var env = environment?.rawValue ?? outcome.endpoint.environment?.rawValue ?? "custom"
        if let environmentSource {
            env += " as \(environmentSource) says; --url chose the host, which may be the other environment's"
        }
        var lines: [String] = []
        let attempts = outcome.attempts > 1 ? ", \(outcome.attempts) attempts" : ""
        switch outcome.result {
        case .accepted(let id, let unique):
            lines.append("accepted by \(outcome.endpoint.host):\(outcome.endpoint.port) (\(env)) in \(ms)\(attempts)")
            lines.append("  apns-id: \(id ?? "-")")
            if let unique { lines.append("  apns-unique-id: \(unique)") }
        case .rejected(let r):
            lines.append("rejected: \(r.status) \(r.reason.rawValue) (\(env), \(ms)\(attempts))")
            lines.append("  why: \(r.reason.explanation)")
            lines.append("  fix: \(r.reason.commandLineFix)")
            if let t = r.timestamp {
                lines.append("  token invalid since: \(ISO8601DateFormatter().string(from: t))")
            }
            if let id = r.apnsID { lines.append("  apns-id: \(id)") }
        case .failed(let f):
            lines.append("failed (\(f.kind.rawValue)) after \(ms)\(attempts): \(f.message)")
        }
        if outcome.possiblyDuplicated {
            lines.append(
                "  note: the connection dropped after an earlier attempt was sent; the device may show it twice")
        }
        return lines
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
