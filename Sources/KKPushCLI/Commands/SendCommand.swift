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
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(parsing: .unconditional, help: "apns-priority: 10, 5 or 1 (default: 10, or 5 for background).")
    var priority: Int?
    @Option(parsing: .unconditional, help: "apns-expiration: UNIX seconds (0 = try once).") var expiration: Int?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id (at most 64 bytes).") var collapseID: String?
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
        throw KKPushError(
            code: "live-activity-would-not-decode",
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
            let (bytes, suggested, simulatorFile) = try payloadOptions.build()
            try checkActivityAttributes(bytes, warnings: &warnings)
            let type = pushType.map { PushType($0) } ?? suggested
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
                priority: priority ?? (type == .background ? 5 : 10), expiration: expiration, collapseID: collapseID,
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
                        .info, code: "credential",
                        message: "Sending with credential \"\(chosen.name)\" (\(chosen.summary)).",
                        fix: ""))
                outcome = await client.send(request, to: endpoint)
                await router.shutdown()
            } else {
                outcome = try await withAPNsClient(configuration: configuration) { client in
                    await client.send(request, to: endpoint)
                }
            }
            if json {
                var object = SendCommand.json(
                    outcome, environment: connection.reportedEnvironment(environment), warnings: warnings)
                // Where the environment came from: Apple's host for it, or a flag while --url chose the host.
                object["environment_source"] = .string(
                    connection.environmentSource ?? (connection.url == nil ? "host" : "none"))
                if let note = Self.preflightFlagNote(outcome, topicSource: topicSource) {
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
                if let note = Self.preflightFlagNote(outcome, topicSource: topicSource) { lines.append("  \(note)") }
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
            warnings += PayloadLint.lintBroadcast(PayloadFile(payload: bytes), priority: priority).check.problems
                .filter { $0.severity == .warning }
            let request = BroadcastRequest(
                bundleID: bundleID, channelID: channel, priority: priority ?? 10, expiration: expiration ?? 0,
                requestID: apnsID, payload: bytes)
            if let apnsFile { warnings += try writeSimulatorFile(apnsFile, broadcast: request) }
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
