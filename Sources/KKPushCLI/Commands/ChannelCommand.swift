import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import Logging

/// `kkpush channel`: broadcast channels (iOS 18+) on Apple's channel-management hosts.
struct ChannelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "Create, list, show and delete broadcast channels (exit 0 ok, 1 rejected or failed).",
        discussion: """
            Channels live on Apple's management hosts, one per environment, separate: a channel created in \
            sandbox does not exist in production. Sandbox: api-manage-broadcast.sandbox.push.apple.com:2195; \
            production: api-manage-broadcast.push.apple.com:2196. Provider-token (--key) authentication only. \
            Send to a channel with `kkpush send --channel ID --topic BUNDLE_ID`.
            """,
        subcommands: [
            ChannelCreateCommand.self, ChannelListCommand.self, ChannelShowCommand.self, ChannelDeleteCommand.self,
        ])
}

/// The options every `channel` subcommand takes.
struct ChannelOptions: ParsableArguments {
    @Option(name: .customLong("bundle-id"), help: "The app's plain bundle id (no suffix). Default: $APNS_TOPIC.")
    var bundleID: String?
    @OptionGroup var providerKey: ProviderKeyOptions
    @Option(help: "APNs environment: sandbox or production (default sandbox).") var env: String?
    @Option(
        help:
            "Custom management endpoint, e.g. https://127.0.0.1:2195 (the mock's channel listener) instead of Apple's host."
    )
    var url: String?
    @Option(name: .customLong("ca-file"), help: "CA file to trust for --url.") var caFile: String?
    @Flag(help: "Print the answer as JSON.") var json = false
    @Flag(name: .shortAndLong, help: "Log what the client does (to stderr).") var verbose = false

    func validate() throws {
        if let env, APNsEnvironment(lenient: env) == nil {
            throw ValidationError("--env '\(env)' is neither sandbox nor production.")
        }
        try EndpointFlags.check(url: url, caFile: caFile)
        if try providerKey.signingKey(warn: false) == nil {
            throw ValidationError(
                "Give a provider key: --key P8 --key-id KID --team-id TEAM (or APNS_KEY_PATH or APNS_KEY, APNS_KEY_ID, APNS_TEAM_ID)."
            )
        }
        if providerKey.keyID() == nil || providerKey.teamID() == nil {
            throw ValidationError("--key needs --key-id and --team-id (or APNS_KEY_ID and APNS_TEAM_ID).")
        }
        if bundleID ?? Secrets.topic(nil) == nil {
            throw ValidationError("Give --bundle-id (the app's plain bundle id), or set APNS_TOPIC.")
        }
    }

    var environment: APNsEnvironment { env.flatMap { APNsEnvironment(lenient: $0) } ?? .sandbox }

    /// The bundle id as given (or $APNS_TOPIC).
    var givenBundle: String { bundleID ?? Secrets.topic(nil) ?? "" }
    /// The bundle id the requests go to: ``BroadcastRules/broadcastBundleID(forTopic:)``, the rule `send
    /// --channel` and `send-batch` apply too (a Live Activity topic's suffix dropped, with a warning).
    var bundle: String { BroadcastRules.broadcastBundleID(forTopic: givenBundle).bundleID }

    func endpoint() throws -> APNsEndpoint {
        if let url { return try APNsEndpoint.parse(url: url, caFile: caFile, environment: environment) }
        return .channelManagement(environment)
    }

    /// Sends `request` and prints the answer; exit 1 if APNs refused it.
    func run(_ request: ChannelRequest, describe: (BroadcastResponse) -> [String]) async throws {
        try await reportingErrors {
            if let caFile { _ = try InputFile.read(caFile, what: "CA file", label: "--ca-file", maximumSize: 4 << 20) }
            if let problem = BroadcastRules.broadcastBundleID(forTopic: givenBundle).problem {
                if problem.severity == .error { throw ChannelSuffix.error(problem, flag: "--bundle-id") }
                for line in Output.lines([problem]) { Output.printError(line) }
            }
            if let r = BroadcastRules.checkBundleID(bundle) {
                throw KKPushError(
                    code: .channelBundleIdInvalid,
                    message:
                        "--bundle-id '\(bundle)' would be refused: \(r.status) \(r.reason). \(r.reason.explanation)",
                    fix: r.reason.fix)
            }
            let endpoint = try endpoint()
            let client = try APNsBroadcastClient(configuration: try clientConfiguration())
            let response = try await client.perform(request, at: endpoint)
            let report = ChannelReport(
                response: response, operation: request.operation.rawValue, endpoint: endpoint,
                described: response.reason == nil ? describe(response) : [])
            Output.printReport(report, json: json)
            if !response.isSuccess { throw ExitCode(1) }
        }
    }

    func clientConfiguration() throws -> APNsClientConfiguration {
        guard let signing = try providerKey.signingKey(), let keyID = providerKey.keyID(),
            let teamID = providerKey.teamID()
        else {
            throw KKPushError(code: .sendNoCredential, message: "No provider key given.", fix: "Pass --key.")
        }
        var logger = Logger(label: "kkpush.auth")
        logger.logLevel = verbose ? .debug : .warning
        let cache = ProviderTokenCache(key: try signing.load(), keyID: keyID, teamID: teamID, logger: logger)
        return APNsClientConfiguration(credential: .token(cache))
    }
}

/// What a `channel` subcommand says of APNs' answer: the operation's own lines, or the refusal's why and fix.
///
/// JSON: `operation`, `http_status`, `status` (ok or rejected), `apns_request_id` and `environment` (null when
/// none); `channel_id`, `message_storage_policy`, `push_type`, `channels` when APNs answered them; on a refusal
/// `reason`, `explanation` and `fix`.
struct ChannelReport: CommandReport, Sendable {
    var response: BroadcastResponse
    var operation: String
    var endpoint: APNsEndpoint
    /// The operation's lines on success ("created channel …").
    var described: [String]

    enum CodingKeys: String, CodingKey {
        case operation, status, environment, channels, reason, explanation, fix
        case httpStatus = "http_status"
        case apnsRequestID = "apns_request_id"
        case channelID = "channel_id"
        case messageStoragePolicy = "message_storage_policy"
        case pushType = "push_type"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let r = response
        try c.encode(operation, forKey: .operation)
        try c.encode(r.status, forKey: .httpStatus)
        try c.encode(r.isSuccess ? "ok" : "rejected", forKey: .status)
        try c.encode(r.requestID, forKey: .apnsRequestID)
        try c.encode(endpoint.environment?.rawValue, forKey: .environment)
        try c.encodeIfPresent(r.channelID, forKey: .channelID)
        try c.encodeIfPresent(r.storagePolicy?.rawValue, forKey: .messageStoragePolicy)
        try c.encodeIfPresent(r.pushType, forKey: .pushType)
        try c.encodeIfPresent(r.channels, forKey: .channels)
        if let reason = r.reason {
            try c.encode(reason.rawValue, forKey: .reason)
            try c.encode(reason.explanation, forKey: .explanation)
            try c.encode(reason.commandLineFix, forKey: .fix)
        }
    }

    var textLines: [String] {
        let r = response
        if let reason = r.reason {
            return [
                "rejected: \(r.status) \(reason.rawValue) (\(endpoint.environment?.rawValue ?? "custom"), \(endpoint.host):\(endpoint.port))",
                "  why: \(reason.explanation)", "  fix: \(reason.commandLineFix)",
                "  apns-request-id: \(r.requestID ?? "-")",
            ]
        }
        return described + ["  apns-request-id: \(r.requestID ?? "-")"]
    }
}

struct ChannelCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a broadcast channel (201 with its apns-channel-id).")
    @OptionGroup var options: ChannelOptions
    @Option(
        name: .customLong("storage-policy"), parsing: .unconditional,
        help: "message-storage-policy: 0 (No Message Stored, default) or 1 (Most Recent Message Stored, 8 h).")
    var storagePolicy: Int = 0

    func validate() throws {
        guard ChannelStoragePolicy(rawValue: storagePolicy) != nil else {
            throw ValidationError("--storage-policy must be 0 (no message stored) or 1 (most recent message stored).")
        }
    }

    func run() async throws {
        let policy = ChannelStoragePolicy(rawValue: storagePolicy) ?? .noMessageStored
        try await options.run(.create(bundleID: options.bundle, storagePolicy: policy)) { r in
            [
                "created channel \(r.channelID ?? "-") (\(options.environment), storage policy \(policy))"
            ]
        }
    }
}

struct ChannelListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the app's channels in one environment.")
    @OptionGroup var options: ChannelOptions

    func run() async throws {
        try await options.run(.listAll(bundleID: options.bundle)) { r in
            let ids = r.channels ?? []
            return ["\(ids.count) channel(s) of \(options.bundle) in \(options.environment)"] + ids.map { "  \($0)" }
        }
    }
}

struct ChannelShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one channel's storage policy and push type.")
    @OptionGroup var options: ChannelOptions
    @Option(help: "The channel id (base64, as create or list answered it).") var channel: String

    func run() async throws {
        try await options.run(.read(bundleID: options.bundle, channelID: channel)) { r in
            [
                "channel \(channel) (\(options.environment))",
                "  message-storage-policy: \(r.storagePolicy?.description ?? "-")",
                "  push-type: \(r.pushType ?? "-")",
            ]
        }
    }
}

struct ChannelDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a channel (its id is never reissued).")
    @OptionGroup var options: ChannelOptions
    @Option(help: "The channel id (base64, as create or list answered it).") var channel: String

    func run() async throws {
        try await options.run(.delete(bundleID: options.bundle, channelID: channel)) { _ in
            ["deleted channel \(channel) (\(options.environment))"]
        }
    }
}

/// The refusal of a broadcast bundle id with another push type's suffix (``BroadcastRules/broadcastBundleID(forTopic:)``),
/// the same error and exit status (1, as every pre-flight refusal) in `channel`, `send --channel` and `send-batch`.
enum ChannelSuffix {
    static func error(_ problem: Problem, flag: String) -> KKPushError {
        KKPushError(
            code: .broadcastTopicDisallowed, message: "\(flag): \(problem.message) Nothing was sent.",
            fix: problem.fix)
    }
}
