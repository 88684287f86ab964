import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import KantineKoning
import Logging

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
            "apns-topic: the bundle ID (plus the push type's suffix); default: an .apns file's Simulator Target Bundle with the push type's suffix, else $APNS_TOPIC."
    )
    var topic: String?
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var payloadOptions: PayloadOptions
    /// `--push-type`, `--priority`, `--expiration`, `--collapse-id`: declared once for `send` and `send-batch`.
    @OptionGroup var headers: PushHeaderOptions
    @Option(name: .customLong("apns-id"), help: "apns-id: a UUID to identify the push.") var apnsID: String?
    @Option(
        help:
            "With --credentials: the credential (entry name) to send with; default: the first of the file that may serve --topic in the environment."
    )
    var credential: String?
    @Flag(help: "Print the outcome as JSON.") var json = false
    @Option(
        name: .customLong("apns-file"),
        help: ArgumentHelp(
            SimulatorFileWriter.help
                + " A push the file cannot hold (over 4096 bytes) is not sent: usage error, exit 64 (a push its own rules fail keeps its verdict, exit 1).",
            valueName: "file"))
    var apnsFile: String?
    @Option(
        name: .customLong("activity-attributes"),
        help: ArgumentHelp(
            "The app's ActivityAttributes description (payload activity-attributes): pre-flight refuses a Live Activity payload that would not decode on the device.",
            valueName: "file"))
    var activityAttributes: String?

    /// Pre-flight against the app's `ActivityAttributes` (`--activity-attributes`): a Live Activity payload the device
    /// would not decode is refused (`--no-preflight` sends it anyway, with the findings as warnings).
    func checkActivityAttributes(_ bytes: [UInt8], warnings: inout [Problem]) throws {
        guard let activityAttributes else { return }
        let description = try PayloadActivityAttributesCommand.load(activityAttributes)
        guard let payload = try? Payload(parsing: bytes) else { return }
        let problems = description.problems(in: payload)
        guard !problems.isEmpty else { return }
        if connection.noPreflight {
            warnings += problems
            return
        }
        // A push that would not decode is dropped on the device; one whose only problem is a misread date decodes
        // and shows the wrong time: refused either way, under the code that says which.
        let wouldNotDecode = problems.contains { $0.code == .liveActivityWouldNotDecode }
        throw KKPushError(
            code: wouldNotDecode ? .liveActivityWouldNotDecode : .liveActivityDateMisread,
            message: "Not sent: " + problems.map(\.message).joined(separator: " "),
            fix: (problems.first?.fix ?? "") + " Or add --no-preflight to send it as it is.")
    }

    func validate() throws {
        try StandardInput.checkOneReader(connection.standardInputUses + [("--payload", payloadOptions.payload)])
        if credential != nil, connection.credentials == nil {
            throw ValidationError("--credential names an entry of a credentials file: give --credentials FILE too.")
        }
        if (token == nil) == (channel == nil) {
            throw ValidationError("Give either --token (a device push) or --channel (a broadcast), exactly one.")
        }
        if channel != nil {
            if connection.credentials != nil {
                throw ValidationError(
                    "A broadcast (--channel) is sent with --key or --cert; --credentials routes device pushes only.")
            }
            if headers.collapseID != nil {
                throw ValidationError("--collapse-id does not go with --channel (a broadcast).")
            }
            if let pushType = headers.pushType, pushType.lowercased() != "liveactivity" {
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
            let (bytes, suggested, simulatorFile) = try payloadOptions.build()
            try checkActivityAttributes(bytes, warnings: &warnings)
            let type = headers.pushType.map { PushType($0) } ?? suggested
            // An .apns file names the app's bundle id (what simctl push wants); a Live Activity or VoIP push read
            // from it goes to that id with its push type's suffix, as it was sent when the file was written.
            let fileTopic = simulatorFile?.topic(for: type)
            guard let topic = topic ?? fileTopic ?? Secrets.topic(nil) else {
                throw KKPushError(
                    code: .sendNoTopic,
                    message: "No --topic given (and the payload is not an .apns file with a Simulator Target Bundle).",
                    fix: "Pass --topic with the app's bundle id (or set APNS_TOPIC), e.g. --topic nl.kantinekoning.app."
                )
            }
            let topicSource =
                self.topic == nil && fileTopic != nil
                ? "the Simulator Target Bundle of --payload \(payloadOptions.payload ?? "")" : "--topic"
            let request = NotificationRequest(
                deviceToken: deviceToken, topic: topic, pushType: type,
                priority: headers.priority ?? type.defaultPriority, expiration: headers.expiration,
                collapseID: headers.collapseID,
                apnsID: apnsID, payload: bytes)
            if let apnsFile {
                warnings += try writeSimulatorFile(apnsFile, request: request, environment: environment)
            }
            let configuration = try connection.clientConfiguration(maxConnections: 1)
            let outcome: PushOutcome
            if let set = try connection.credentialSet() {
                // Pre-flight of the scope: a credential that may not serve the topic or environment is named before
                // anything is sent.
                let router = ProviderClientRouter(credentials: set, configuration: configuration)
                let (chosen, client) = try router.client(
                    credential: credential, topic: topic, environment: environment)
                warnings.append(
                    Problem(
                        .info, code: .credential,
                        message: "Sending with credential \"\(chosen.name)\" (\(chosen.summary)).",
                        fix: ""))
                outcome = await client.send(request, to: endpoint)
                await router.shutdown()
            } else {
                outcome = try await withAPNsClient(configuration: configuration) { client in
                    await client.send(request, to: endpoint)
                }
            }
            let report = SendReport(
                outcome: outcome, environment: connection.reportedEnvironment(environment),
                environmentFlag: connection.environmentSource,
                environmentSource: connection.environmentSource ?? (connection.url == nil ? "host" : "none"),
                problems: warnings + outcome.problems,
                preflightNote: Self.preflightFlagNote(outcome, topicSource: topicSource))
            if !json {
                for line in Output.lines(warnings + outcome.problems.filter { $0.severity != .error }) {
                    Output.printError(line)
                }
            }
            Output.printReport(report, json: json)
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
            let (bytes, _, simulatorFile) = try payloadOptions.build()
            try checkActivityAttributes(bytes, warnings: &warnings)
            guard let givenTopic = topic ?? simulatorFile?.topic ?? Secrets.topic(nil) else {
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
            let lint = PayloadLint.lintBroadcast(PayloadFile(payload: bytes), priority: headers.priority)
            warnings += lint.check.problems.filter { $0.severity == .warning }
            let request = BroadcastRequest(
                bundleID: bundleID, channelID: channel, priority: headers.priority ?? 10,
                expiration: headers.expiration ?? 0,
                requestID: apnsID, payload: bytes)
            if let apnsFile { warnings += try writeSimulatorFile(apnsFile, broadcast: request) }
            let client = try APNsBroadcastClient(configuration: try connection.clientConfiguration(maxConnections: 1))
            let r = try await client.broadcast(request, to: endpoint)
            let report = BroadcastReport(
                response: r, channel: channel, environment: connection.reportedEnvironment(environment),
                endpoint: endpoint, problems: warnings)
            if !json { for line in Output.lines(warnings) { Output.printError(line) } }
            Output.printReport(report, json: json)
            if !r.isSuccess { throw ExitCode(1) }
        }
    }

    /// The flags behind each pre-flight error (the APNs reason it predicts).
    static let preflightFlags: [Problem.Code: String] = [
        .badPriority: "--priority", .badExpirationDate: "--expiration", .badCollapseId: "--collapse-id",
        .badMessageId: "--apns-id", .invalidPushType: "--push-type", .badTopic: "--topic", .missingTopic: "--topic",
        .badDeviceToken: "--token", .missingDeviceToken: "--token", .payloadEmpty: "--payload",
        .payloadTooLarge: "--payload",
    ]

    /// For a push pre-flight stopped: the flags at fault, and that `--no-preflight` sends it anyway. `topicSource`
    /// names where the topic came from when no `--topic` was given (an `.apns` file's Simulator Target Bundle): a
    /// flag the user never gave is never blamed.
    static func preflightFlagNote(_ outcome: PushOutcome, topicSource: String = "--topic") -> String? {
        guard outcome.failure?.kind == .preflight else { return nil }
        var flags: [String] = []
        for problem in outcome.problems where problem.severity == .error {
            if var flag = preflightFlags[problem.code] {
                if flag == "--topic" { flag = topicSource }
                if !flags.contains(flag) { flags.append(flag) }
            }
        }
        guard !flags.isEmpty else { return nil }
        return
            "Flag at fault: \(flags.joined(separator: ", ")). Correct it, or add --no-preflight to send it as is and see APNs's own answer."
    }
}

/// What `send` says of one push: APNs' answer (or the failure), with the problems found before it.
///
/// JSON: `status`, `apns_id`, `apns_unique_id`, `reason`, `http_status`, `timestamp` (APNs' in milliseconds) and
/// `environment` (each null when there is none), `duration_ms`, `attempts`, `possibly_duplicated`,
/// `environment_source` (the flag that named the environment, `host` when Apple's host did, `none`); on a rejection
/// `explanation` and `fix`, on a failure `error` (with the flags at fault after a pre-flight stop); `problems` when
/// there are any.
struct SendReport: CommandReport, Sendable {
    var outcome: PushOutcome
    /// The environment reported (nil: a custom host).
    var environment: APNsEnvironment?
    /// The flag that named the environment while `--url` chose the host (`--env`), for the text's label.
    var environmentFlag: String?
    var environmentSource: String
    /// The warnings found before sending, then the outcome's own problems.
    var problems: [Problem]
    /// For a push pre-flight stopped: the flags at fault (``SendCommand/preflightFlagNote(_:topicSource:)``).
    var preflightNote: String?

    enum CodingKeys: String, CodingKey {
        case status, reason, timestamp, environment, attempts, explanation, fix, error, problems
        case apnsID = "apns_id"
        case apnsUniqueID = "apns_unique_id"
        case httpStatus = "http_status"
        case durationMS = "duration_ms"
        case possiblyDuplicated = "possibly_duplicated"
        case environmentSource = "environment_source"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var uniqueID: String?
        var reason: String?
        var timestamp: Int?
        switch outcome.result {
        case .accepted(_, let unique):
            uniqueID = unique
        case .rejected(let rejection):
            reason = rejection.reason.rawValue
            timestamp = rejection.timestamp.map { Int(($0.timeIntervalSince1970 * 1000).rounded()) }
            try c.encode(rejection.reason.explanation, forKey: .explanation)
            try c.encode(rejection.reason.commandLineFix, forKey: .fix)
        case .failed(let failure):
            reason = failure.kind.rawValue
            try c.encode(failure.message + (preflightNote.map { " \($0)" } ?? ""), forKey: .error)
        }
        try c.encode(outcome.status, forKey: .status)
        try c.encode(outcome.apnsID, forKey: .apnsID)
        try c.encode(uniqueID, forKey: .apnsUniqueID)
        try c.encode(reason, forKey: .reason)
        try c.encode(outcome.httpStatus, forKey: .httpStatus)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode((environment ?? outcome.endpoint.environment)?.rawValue, forKey: .environment)
        try c.encode((outcome.durationMilliseconds * 10).rounded() / 10, forKey: .durationMS)
        try c.encode(outcome.attempts, forKey: .attempts)
        try c.encode(outcome.possiblyDuplicated, forKey: .possiblyDuplicated)
        try c.encode(environmentSource, forKey: .environmentSource)
        if !problems.isEmpty { try c.encode(problems, forKey: .problems) }
    }

    var textLines: [String] {
        let ms = String(format: "%.1f ms", outcome.durationMilliseconds)
        var env = environment?.rawValue ?? outcome.endpoint.environment?.rawValue ?? "custom"
        if let environmentFlag {
            env += " as \(environmentFlag) says; --url chose the host, which may be the other environment's"
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
            lines.append("failed (\(f.kind.rawValue)) after \(ms)\(attempts): \(FlagWords.common.apply(f.message))")
        }
        if outcome.possiblyDuplicated {
            lines.append(
                "  note: the connection dropped after an earlier attempt was sent; the device may show it twice")
        }
        if let preflightNote { lines.append("  \(preflightNote)") }
        return lines
    }
}

/// What `send --channel` says of one broadcast: APNs' answer with its apns-request-id.
///
/// JSON: `status` (accepted or rejected), `http_status`, `apns_request_id`, `channel_id`, `environment` and `reason`
/// (null when there is none); on a rejection `explanation` and `fix`; `problems` when there are any.
struct BroadcastReport: CommandReport, Sendable {
    var response: BroadcastResponse
    var channel: String
    var environment: APNsEnvironment?
    var endpoint: APNsEndpoint
    var problems: [Problem]

    enum CodingKeys: String, CodingKey {
        case status, environment, reason, explanation, fix, problems
        case httpStatus = "http_status"
        case apnsRequestID = "apns_request_id"
        case channelID = "channel_id"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(response.isSuccess ? "accepted" : "rejected", forKey: .status)
        try c.encode(response.status, forKey: .httpStatus)
        try c.encode(response.requestID, forKey: .apnsRequestID)
        try c.encode(channel, forKey: .channelID)
        try c.encode(environment?.rawValue, forKey: .environment)
        try c.encode(response.reason?.rawValue, forKey: .reason)
        if let reason = response.reason {
            try c.encode(reason.explanation, forKey: .explanation)
            try c.encode(reason.commandLineFix, forKey: .fix)
        }
        if !problems.isEmpty { try c.encode(problems, forKey: .problems) }
    }

    var textLines: [String] {
        let env = environment?.rawValue ?? "custom"
        if let reason = response.reason {
            return [
                "rejected: \(response.status) \(reason.rawValue) (broadcast, \(env))", "  why: \(reason.explanation)",
                "  fix: \(reason.commandLineFix)", "  apns-request-id: \(response.requestID ?? "-")",
            ]
        }
        return [
            "accepted broadcast to channel \(channel) by \(endpoint.host):\(endpoint.port) (\(env))",
            "  apns-request-id: \(response.requestID ?? "-")",
        ]
    }
}
