import ArgumentParser
import Foundation
import KKPushActivities
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore

/// Sends a push the registry planned with the connection flags, and records APNs' answer in the registry.
struct ActivitySender {
    var connection: ConnectionOptions
    var credential: String?

    /// What a send needs, read and checked from the connection flags: the files they name, the environment and its
    /// endpoint, the client configuration (the `--key` or `--cert` loaded) and the credentials file.
    private struct Prepared {
        var environment: APNsEnvironment
        var endpoint: APNsEndpoint
        var configuration: APNsClientConfiguration
        var credentials: ProviderCredentialSet?
        var warnings: [Problem]
    }

    private func prepare() throws -> Prepared {
        try connection.checkInputFiles()
        var warnings: [Problem] = []
        let environment = connection.environment(warnings: &warnings)
        return Prepared(
            environment: environment, endpoint: try connection.endpoint(for: environment),
            configuration: try connection.clientConfiguration(maxConnections: 1),
            credentials: try connection.credentialSet(), warnings: warnings)
    }

    /// A dry run's check: everything ``send(_:registry:)`` reads and checks before it sends `push` (the key file or
    /// certificate loaded; with `--credentials`, the entry that serves the push's topic and environment and its
    /// secret), failing with the same error; nothing is sent and no client is started. Chosen over checking the
    /// flags' shape only: a dry run is the rehearsal of the real run on the machine that will send, so a `--key`
    /// the send would fail on fails it too (and `activity start --dry-run` needs the credential flags all the same).
    func check(_ push: ActivityPush) throws {
        let prepared = try prepare()
        if let set = prepared.credentials {
            switch set.resolve(credential: credential, topic: push.request.topic, environment: prepared.environment) {
            case .failure(let problem): throw problem.error
            case .success(let entry):
                // What ProviderClientRouter loads for the entry's client when it sends.
                switch entry.kind {
                case .token: _ = try set.tokenCache(for: entry)
                case .certificate: _ = try set.clientCertificate(for: entry)
                }
            }
        }
        for line in Output.lines(prepared.warnings) { Output.printError(line) }
    }

    /// Sends `push` and records the answer; the outcome and the activity after it.
    func send(_ push: ActivityPush, registry: any ActivityRegistry) async throws -> (PushOutcome, ActivityRecord?) {
        let prepared = try prepare()
        let (environment, endpoint) = (prepared.environment, prepared.endpoint)
        let outcome: PushOutcome
        if let set = prepared.credentials {
            let router = ProviderClientRouter(credentials: set, configuration: prepared.configuration)
            let (_, client) = try router.client(
                credential: credential, topic: push.request.topic, environment: environment)
            outcome = await client.send(push.request, to: endpoint)
            await router.shutdown()
        } else {
            outcome = try await withAPNsClient(configuration: prepared.configuration) { client in
                await client.send(push.request, to: endpoint)
            }
        }
        for line in Output.lines(prepared.warnings) { Output.printError(line) }
        let record = try await registry.recordAnswer(
            push.answer(
                status: outcome.httpStatus, reason: outcome.rejection?.reason.rawValue, apnsID: outcome.apnsID,
                at: Date()))
        return (outcome, record)
    }
}

/// `kkpush activity start`.
struct ActivityStartCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract:
            "Start a Live Activity by push-to-start, once per --activity-key (exit 0 sent or already started, 1 deferred, refused or rejected).",
        discussion: """
            The start carries the key in its attributes as kk_activity_key (the app reads it from \
            activity.attributes and reports it with the activity's update token; an attributes type without that \
            field ignores it: a synthesized Decodable init skips unknown keys) and input-push-token 1, so the device \
            sends the new activity's update token. A key the registry knows sends nothing and shows that activity.
            """)

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(name: .customLong("activity-key"), help: "The activity's key (1-200 printable ASCII), e.g. dienst-club-42.")
    var activityKey: String
    @Option(help: "The device (your stable name for it: an enrollment or device id); budget and tokens are per device.")
    var device: String
    @Option(help: "The app's bundle id (.push-type.liveactivity is added); default: $APNS_TOPIC.") var topic: String?
    @Option(name: .customLong("attributes-type"), help: "The app's ActivityAttributes type name.")
    var attributesType: String
    @Option(help: "The static attributes: a JSON object, or @FILE (default {}).") var attributes: String = "{}"
    @Option(name: .customLong("content-state"), help: "The first content state: JSON, or @FILE.")
    var contentState: String
    @Option(help: "The alert's title (a start needs --title or --body).") var title: String?
    @Option(help: "The alert's body.") var body: String?
    @Option(
        name: .customLong("push-to-start-token"),
        help: "Send to this push-to-start token (hex); default: the device's current one in the registry.")
    var pushToStartToken: String?
    @Flag(
        name: .customLong("no-input-push-token"),
        help: "Leave input-push-token out (not advised: no update token comes back).")
    var noInputPushToken = false
    @Option(name: .customLong("stale-date"), help: "stale-date: UNIX seconds.") var staleDate: Int?
    @Option(name: .customLong("relevance-score"), help: "relevance-score.") var relevanceScore: Double?
    @Option(
        name: .customLong("over-budget"),
        help:
            "Past the device's start budget: defer (say when it frees, the default) or refuse (activity-start-budget).")
    var overBudget: String = ActivityOverBudget.defer.rawValue
    @Flag(
        name: .customLong("dry-run"),
        help:
            "Plan the start and print it; record and send nothing. The connection flags are checked and the key or certificate is read as a send would (a bad --key fails the dry run too)."
    )
    var dryRun =
        false
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "With --credentials: the credential (entry name) to send with.") var credential: String?
    @Flag(help: "Print the report as JSON.") var json = false

    func validate() throws {
        if ActivityOverBudget(rawValue: overBudget) == nil {
            throw ValidationError("--over-budget is defer or refuse, not '\(overBudget)'.")
        }
        if title == nil && body == nil {
            throw ValidationError("A start needs an alert (APNs requires one): give --title, --body or both.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                guard let topic = topic ?? Secrets.topic(nil) else {
                    throw KKPushError(
                        code: .activityInputInvalid, message: "No --topic given.",
                        fix: "Pass --topic with the app's bundle id (or set APNS_TOPIC).")
                }
                let request = ActivityStartRequest(
                    key: activityKey, device: device, topic: topic, attributesType: attributesType,
                    attributes: try ActivityJSONFlag.parse(attributes, flag: "--attributes"),
                    contentState: try ActivityJSONFlag.parse(contentState, flag: "--content-state"),
                    alert: ActivityJSONFlag.alert(title: title, body: body) ?? .text(""),
                    inputPushToken: !noInputPushToken, staleDate: staleDate, relevanceScore: relevanceScore,
                    pushToStartToken: pushToStartToken, overBudget: ActivityOverBudget(rawValue: overBudget) ?? .defer)
                let report = try await registry.withRegistry { r -> ActivityPushReport in
                    switch try await r.planStart(request, at: Date(), dryRun: dryRun) {
                    case .existing(let record):
                        return ActivityPushReport(
                            command: "start", key: activityKey, outcome: .existing, activity: record)
                    case .deferred(let until, let reason):
                        return ActivityPushReport(
                            command: "start", key: activityKey, outcome: .deferred, deferredUntil: until,
                            why: FlagWords.common.apply(ActivityCommand.words.apply(reason)))
                    case .refused(let error):
                        throw error
                    case .send(let push):
                        return try await ActivityPushReport.run(
                            .send(push), command: "start", dryRun: dryRun, registry: r,
                            sender: ActivitySender(connection: connection, credential: credential))
                    }
                }
                Output.printReport(report, json: json)
                if report.outcome.failed { throw ExitCode(1) }
            }
        }
    }
}

/// `kkpush activity update`.
struct ActivityUpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract:
            "Update a Live Activity at its current update token (exit 0 accepted; 1 refused: no update token yet, ended; or rejected)."
    )

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(name: .customLong("activity-key"), help: "The activity's key.") var activityKey: String
    @Option(name: .customLong("content-state"), help: "The new content state: JSON, or @FILE.") var contentState: String
    @Option(help: "An alert's title (optional on an update).") var title: String?
    @Option(help: "An alert's body.") var body: String?
    @Option(name: .customLong("stale-date"), help: "stale-date: UNIX seconds.") var staleDate: Int?
    @Option(name: .customLong("relevance-score"), help: "relevance-score.") var relevanceScore: Double?
    @Flag(
        name: .customLong("dry-run"),
        help:
            "Plan the update and print it; record and send nothing. The connection flags are checked and the key or certificate is read as a send would (a bad --key fails the dry run too)."
    )
    var dryRun = false
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "With --credentials: the credential (entry name) to send with.") var credential: String?
    @Flag(help: "Print the report as JSON.") var json = false

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let request = ActivityUpdateRequest(
                    key: activityKey, contentState: try ActivityJSONFlag.parse(contentState, flag: "--content-state"),
                    alert: ActivityJSONFlag.alert(title: title, body: body), staleDate: staleDate,
                    relevanceScore: relevanceScore)
                let report = try await registry.withRegistry { r -> ActivityPushReport in
                    let plan = try await r.planUpdate(request, at: Date(), dryRun: dryRun)
                    return try await ActivityPushReport.run(
                        plan, command: "update", dryRun: dryRun, registry: r,
                        sender: ActivitySender(connection: connection, credential: credential))
                }
                Output.printReport(report, json: json)
                if report.outcome.failed { throw ExitCode(1) }
            }
        }
    }
}

/// `kkpush activity end`.
struct ActivityEndCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "end",
        abstract:
            "End a Live Activity at its current update token (exit 0 accepted: the activity is ended; 1 refused or rejected)."
    )

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(name: .customLong("activity-key"), help: "The activity's key.") var activityKey: String
    @Option(name: .customLong("content-state"), help: "The final content state: JSON, or @FILE (optional).")
    var contentState: String?
    @Option(
        name: .customLong("dismissal-date"),
        help: "dismissal-date: UNIX seconds when the ended activity leaves the Lock Screen (none: up to 4 hours).")
    var dismissalDate: Int?
    @Option(help: "An alert's title (optional).") var title: String?
    @Option(help: "An alert's body.") var body: String?
    @Flag(
        name: .customLong("dry-run"),
        help:
            "Plan the end and print it; record and send nothing. The connection flags are checked and the key or certificate is read as a send would (a bad --key fails the dry run too)."
    )
    var dryRun = false
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "With --credentials: the credential (entry name) to send with.") var credential: String?
    @Flag(help: "Print the report as JSON.") var json = false

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let request = ActivityEndRequest(
                    key: activityKey,
                    contentState: try contentState.map { try ActivityJSONFlag.parse($0, flag: "--content-state") },
                    dismissalDate: dismissalDate, alert: ActivityJSONFlag.alert(title: title, body: body))
                let report = try await registry.withRegistry { r -> ActivityPushReport in
                    let plan = try await r.planEnd(request, at: Date(), dryRun: dryRun)
                    return try await ActivityPushReport.run(
                        plan, command: "end", dryRun: dryRun, registry: r,
                        sender: ActivitySender(connection: connection, credential: credential))
                }
                Output.printReport(report, json: json)
                if report.outcome.failed { throw ExitCode(1) }
            }
        }
    }
}
