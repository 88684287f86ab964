import Foundation
package import KKPushActivities
package import KKPushAuth
package import KKPushClient
package import KKPushCore
package import KKPushSystem
import Synchronization

/// The token file as an async sequence of batch items (JSON lines parsed, tokens normalised).
/// Lines that cannot be used (invalid JSON, a JSON line without a string `token`, an unknown key, an
/// invalid `environment` or `payload`) get a result line of their own at once, failed `bad-input` with the
/// line number and what is wrong; a plain token line is left to pre-flight (BadDeviceToken if malformed).
///
/// Each item is admitted into the ``BatchLedger`` (with its line number) before it is handed to the
/// client; once the ledger is stopping (a signal, a write error), no line is taken any more. With a
/// ``BatchResume``, lines whose earlier result was final are skipped, and a line whose token is not
/// the one the earlier run had ends the sequence with an error.
package struct BatchLines: AsyncSequence, Sendable {
    package typealias Element = PushBatchItem
    package let reader: LineReader
    package let template: NotificationRequest
    /// The endpoint of each environment the batch may send to (the default environment's always): a line of an
    /// environment without one is refused before sending (one stand-in URL serves one environment; sending the
    /// other's pushes to it would be answered as if they were its own).
    package let endpoints: [APNsEnvironment: APNsEndpoint]
    /// Said after the refusal of a line whose environment has no endpoint: how to give one (the caller's words).
    package var endpointHint = ""
    package let defaultEnvironment: APNsEnvironment
    /// Whether `--env` or `--build-environment` was given (a line's own `environment` still wins; those lines are counted).
    package let explicitEnvironment: Bool
    package let ledger: BatchLedger
    package let resume: BatchResume?
    /// Sends the lines that name a `channel` (broadcasts); nil where nothing is sent (the fuzz target).
    package let broadcaster: BatchBroadcaster?
    /// This machine's part of the input (`K/N`); nil: every line.
    package var shard: BatchShard?
    /// False when the batch has no payload (no `--payload`, no payload flags): each line must bring its own.
    package var batchHasPayload = true
    /// The credentials file's entries (`send-batch --credentials`): each push line is routed to the credential it
    /// names in `credential`, else to the first that may serve its topic and environment; a line no credential may
    /// serve is refused before sending with the scope problem. Nil: the batch's one credential sends every line.
    package var credentials: ProviderCredentialSet?
    /// Told once, at the first channel line, when the broadcast bundle id rule changed the batch's topic (its
    /// warning); the caller says it in its own words.
    package var onTopicWarning: (@Sendable (Problem) -> Void)?
    /// The activity registry of Live Activity lines (`activity_key`, BatchActivity.swift); nil: such lines are refused.
    package var activities: BatchActivities?

    package init(
        reader: LineReader, template: NotificationRequest, endpoints: [APNsEnvironment: APNsEndpoint],
        defaultEnvironment: APNsEnvironment, explicitEnvironment: Bool, ledger: BatchLedger, resume: BatchResume?,
        broadcaster: BatchBroadcaster?, batchHasPayload: Bool = true, shard: BatchShard? = nil,
        onTopicWarning: (@Sendable (Problem) -> Void)? = nil
    ) {
        self.shard = shard
        self.batchHasPayload = batchHasPayload
        self.onTopicWarning = onTopicWarning
        self.reader = reader
        self.template = template
        self.endpoints = endpoints
        self.defaultEnvironment = defaultEnvironment
        self.explicitEnvironment = explicitEnvironment
        self.ledger = ledger
        self.resume = resume
        self.broadcaster = broadcaster
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        let lines: BatchLines
        /// Whether the first channel line has said what the broadcast bundle id rule did to `--topic`.
        var toldBundleID = false
        /// The 1-based number of the last line read from the file (blank and comment lines count).
        var lineNumber = 0
        /// The position of the next item in the batch (the client's `PushResult.index`).
        var position = 0
        /// The `idempotency_key`s of this run's lines, with their token and topic.
        var seenKeys: Set<String> = []

        package mutating func next() async throws -> PushBatchItem? {
            while !lines.ledger.isStopping {
                guard let line = try lines.reader.next() else { return nil }
                lineNumber += 1
                let trimmed = line.trimmingWhitespace()
                if trimmed.isEmpty || trimmed.hasPrefix("#") {
                    lines.ledger.countBlank(line: lineNumber)
                    continue
                }
                let item: PushBatchItem
                var activityPush: ActivityPush?
                let lineItem = lines.item(trimmed, line: lineNumber)
                if let shard = lines.shard, !shard.owns(key: lineItem.shardKey, line: lineNumber) {
                    lines.ledger.countOtherShard(line: lineNumber)
                    continue
                }
                switch lineItem {
                case .bad(let token, let message):
                    // Bad input lines get their result line at once; --resume sends them again.
                    lines.ledger.recordBadLine(
                        line: lineNumber, token: token, message: message,
                        endpoint: lines.endpoints[lines.defaultEnvironment]!)
                    continue
                case .outOfScope(let token, let message, let endpoint):
                    lines.ledger.recordBadLine(
                        line: lineNumber, token: token, message: message, endpoint: endpoint, credentialScope: true)
                    continue
                case .unserved(let token, let message):
                    lines.ledger.recordBadLine(
                        line: lineNumber, token: token, message: message,
                        endpoint: lines.endpoints[lines.defaultEnvironment]!, unservedEnvironment: true)
                    continue
                case .push(let pushItem, let overridesEnvironment, let idempotencyKey):
                    item = pushItem
                    if overridesEnvironment { lines.ledger.countEnvironmentOverride() }
                    // A key this run has seen for the same token and topic: sent once (before --resume's check,
                    // so a resumed run, reading the same file, skips the same lines).
                    if let key = idempotencyKey.map({ BatchLines.scopedKey($0, item: pushItem) }),
                        !seenKeys.insert(key).inserted
                    {
                        lines.ledger.countRepeatedKey(line: lineNumber)
                        continue
                    }
                case .activity(let activity):
                    // Planned by the activity registry (BatchActivity.swift); item() refuses the line without one.
                    guard let activities = lines.activities else { continue }
                    if activity.overridesEnvironment { lines.ledger.countEnvironmentOverride() }
                    switch await activities.plan(activity, number: lineNumber) {
                    case .send(let planned, let push):
                        item = planned
                        activityPush = push
                    case .skip:
                        lines.ledger.countActivityExisting(line: lineNumber)
                        continue
                    case .refused(let message):
                        lines.ledger.recordBadLine(
                            line: lineNumber, token: activity.token ?? "", message: message,
                            endpoint: activity.endpoint)
                        continue
                    }
                case .broadcast(let request, let endpoint, let overridesEnvironment):
                    if overridesEnvironment { lines.ledger.countEnvironmentOverride() }
                    if !toldBundleID {
                        toldBundleID = true
                        // Said once, as `send --channel` and `channel` say it (an error is each line's pre-flight).
                        if let problem = BroadcastRules.broadcastBundleID(forTopic: lines.template.topic ?? "").problem,
                            problem.severity == .warning
                        {
                            lines.onTopicWarning?(problem)
                        }
                    }
                    let key = BatchBroadcaster.resumeKey(channel: request.channelID)
                    if let resume = lines.resume,
                        let reason = try resume.verdict(
                            line: lineNumber, token: key, environment: endpoint.environment?.rawValue,
                            input: lines.reader.name)
                    {
                        lines.ledger.countResumeSkip(reason, line: lineNumber)
                        continue
                    }
                    // Sent by itself, in its place: the next line is read once its answer is in.
                    guard let broadcaster = lines.broadcaster else { continue }
                    let outcome = await broadcaster.send(request, to: endpoint)
                    lines.ledger.recordBroadcast(line: lineNumber, channel: request.channelID, outcome: outcome)
                    continue
                }
                if let resume = lines.resume {
                    let verdict = try resume.verdict(
                        line: lineNumber, token: item.request.deviceToken,
                        environment: item.endpoint.environment?.rawValue, input: lines.reader.name)
                    if let reason = verdict {
                        lines.ledger.countResumeSkip(reason, line: lineNumber)
                        continue
                    }
                }
                guard lines.ledger.admit(position: position, line: lineNumber, item: item) else { return nil }
                if let activityPush { lines.activities?.admitted(position: position, push: activityPush) }
                position += 1
                return item
            }
            return nil
        }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(lines: self) }

    /// One input line: a push, or why the line cannot be used.
    package enum LineItem {
        /// A push; `overridesEnvironment` when the line's own `environment` differs from `--env`; its
        /// `idempotency_key` as the line gave it (nil without one), read with the line's other fields.
        case push(PushBatchItem, overridesEnvironment: Bool, idempotencyKey: String?)
        /// A broadcast to a channel (a line with `channel` instead of `token`), to `endpoint`.
        case broadcast(BroadcastRequest, APNsEndpoint, overridesEnvironment: Bool)
        /// A line kkpush cannot use (its `token` if it had one), with a message naming the line and the field.
        case bad(token: String, message: String)
        /// A push its credential may not serve (`--credentials`): the scope problem, said before sending.
        case outOfScope(token: String, message: String, endpoint: APNsEndpoint)
        /// A push or broadcast of an environment the batch has no endpoint for, said before sending.
        case unserved(token: String, message: String)
        /// A Live Activity line (`activity_key`), planned by the activity registry when it is read.
        case activity(BatchActivityLine)

        /// What decides the line's ``BatchShard``: the device token, the channel id, or (empty) the line number.
        package var shardKey: String {
            switch self {
            case .push(let item, _, _): item.request.deviceToken
            case .broadcast(let request, _, _): request.channelID
            case .bad(let token, _), .outOfScope(let token, _, _), .unserved(let token, _):
                DeviceToken.normalize(token).token ?? ""
            // Every line of one activity on one machine: its start, updates and end go through one registry in order.
            case .activity(let activity): activity.key
            }
        }
    }

    /// The keys a JSON line may have.
    package static let lineShape = JSONInput.Shape.object([
        "token": .any, "channel": .any, "payload": .any, "environment": .any, "topic": .any, "credential": .any,
        "idempotency_key": .any, "activity_key": .any, "activity_event": .any, "device": .any,
    ])
    /// How a JSON line is written, for messages.
    package static let lineFormat =
        #"Write each line as a hex device token, or one JSON object: {"token": "<hex>", "payload": {...}, "environment": "sandbox" or "production", "topic": "<bundle id>", "credential": "<name>"} (all but token optional; credential with a credentials file; "idempotency_key": "<key>" sends a push once per run), or {"channel": "<base64 channel id>", ...} for a broadcast."#

    /// The push of one (trimmed, non-blank) input line. A hex token line is sent with the defaults (pre-flight
    /// judges the token); a JSON line must parse, have a string `token`, an object `payload` and an
    /// `environment` of sandbox or production if it has them, and no other keys. The line's own `environment`
    /// wins over `--env` / `--build-environment` (it is the more specific).
    /// A line without a payload in a batch without one.
    package static let noPayload =
        "no payload: the line has no \"payload\" and the batch gives none (neither a payload file nor the payload's fields)."

    package func item(_ line: String, line number: Int) -> LineItem {
        var request = template
        func bad(_ token: String, _ message: String) -> LineItem {
            .bad(token: token, message: "Line \(number): \(message) \(Self.lineFormat)")
        }
        if line.unicodeScalars.contains(where: {
            $0 == "\u{FFFD}" || ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F
        }) {
            return bad("", "binary data, not text (is this the token file?).")
        }
        if line.hasPrefix("[") {
            return bad("", "a JSON list; each line holds one token or one JSON object.")
        }
        guard line.hasPrefix("{") else {
            if !batchHasPayload { return bad(line, Self.noPayload) }
            request.deviceToken = normalized(line)
            return pushItem(
                request, route: route(nil, token: line, deviceToken: request.deviceToken, line: number, bad: bad))
        }
        let object: JSONValue
        do {
            object = try JSONInput.parse(Array(line.utf8), what: "Line \(number)", code: .batchLineMalformed, fix: "")
        } catch {
            return .bad(token: "", message: "\(error.message) \(Self.lineFormat)")
        }
        guard let members = object.objectValue else { return bad("", "not a JSON object.") }
        let tokenText = members["token"]?.stringValue ?? ""
        if let unknown = JSONInput.unknownKey(in: object, shape: Self.lineShape) {
            return bad(
                tokenText,
                "\(unknown.message) (the keys are token or channel, payload, environment, topic, credential, idempotency_key; activity_key, activity_event, device for a Live Activity)."
            )
        }
        // A Live Activity line: its token is the registry's (BatchActivity.swift).
        if members["activity_key"] != nil || members["activity_event"] != nil {
            return activityItem(members, line: number, bad: bad)
        }
        if members["device"] != nil {
            return bad(
                tokenText, "`device` belongs to a Live Activity line: give `activity_key` and `activity_event` too.")
        }
        if let channelValue = members["channel"] {
            if members["token"] != nil {
                return bad(tokenText, "both `token` and `channel`: a line is a device push or a broadcast, not both.")
            }
            if members["payload"] == nil, !batchHasPayload { return bad("", Self.noPayload) }
            if credentials != nil {
                return bad(
                    "",
                    "a broadcast (`channel`) in a batch with a credentials file: broadcasts are not routed by credential; send them in a batch with one key."
                )
            }
            return broadcastItem(channelValue, members: members, line: number, bad: bad)
        }
        if members["payload"] == nil, !batchHasPayload { return bad(tokenText, Self.noPayload) }
        guard let tokenValue = members["token"] else {
            return bad("", "the field `token` (or `channel`, for a broadcast) is missing.")
        }
        guard let token = tokenValue.stringValue else {
            return bad("", "`token` is \(tokenValue.typeNameWithArticle), but must be a string of hex digits.")
        }
        if token.trimmingWhitespace().isEmpty { return bad(token, "`token` is empty.") }
        request.deviceToken = normalized(token)
        if let payload = members["payload"] {
            guard payload.objectValue != nil else {
                return bad(
                    token,
                    "`payload` is \(payload.typeNameWithArticle), but must be a JSON object such as {\"aps\": {\"alert\": \"Hallo\"}}."
                )
            }
            request.payload = payload.encoded()
        }
        // Read here with the other fields, and carried with the push (the iterator scopes it to token and topic).
        var idempotencyKey: String? = nil
        if let value = members["idempotency_key"] {
            guard let key = value.stringValue, !key.trimmingWhitespace().isEmpty else {
                return bad(token, "`idempotency_key` is \(value.description), but must be a non-empty string.")
            }
            idempotencyKey = key
        }
        return pushItem(
            request, route: route(members, token: token, deviceToken: request.deviceToken, line: number, bad: bad),
            idempotencyKey: idempotencyKey)
    }

    /// The push of `request` along `routed` (or the routing's refusal).
    private func pushItem(_ request: NotificationRequest, route routed: Routed, idempotencyKey: String? = nil)
        -> LineItem
    {
        switch routed {
        case .refused(let item): return item
        case .route(let route):
            var request = request
            request.topic = route.topic
            return .push(
                PushBatchItem(request: request, endpoint: route.endpoint, credential: route.credential),
                overridesEnvironment: route.overridesEnvironment, idempotencyKey: idempotencyKey)
        }
    }

    /// Where a device push line goes.
    struct LineRoute {
        /// The line's `topic`, else the batch's.
        var topic: String?
        var endpoint: APNsEndpoint
        /// The credential that serves it (`--credentials`), else nil: the batch's one credential.
        var credential: String?
        /// The line's own `environment` differs from `--env`.
        var overridesEnvironment: Bool
    }

    /// A line's route, or the line's refusal.
    enum Routed {
        case route(LineRoute)
        case refused(LineItem)
    }

    /// The routing checks of a device push line, a plain line's and a Live Activity line's alike (one function, so
    /// the two cannot drift): the line's `environment` (it wins over `--env` / `--build-environment`: it is the more
    /// specific), `topic` (else the batch's), `credential` (only with a credentials file); then the endpoint of the
    /// environment (a line of an environment without one is ``LineItem/unserved(token:message:)``, with
    /// ``endpointHint``), and with a credentials file the credential that may serve `scopeTopic` of the topic (a Live
    /// Activity's is its `.push-type.liveactivity` topic) in that environment
    /// (``LineItem/outOfScope(token:message:endpoint:)`` when none may). `members` is nil for a hex token line (the
    /// batch's defaults); `token` is the line's token as given (a refused field's result line), `deviceToken` as sent.
    func route(
        _ members: [String: JSONValue]?, token: String, deviceToken: String,
        scopeTopic: (String?) -> String? = { $0 }, line number: Int, bad: (String, String) -> LineItem
    ) -> Routed {
        var environment = defaultEnvironment
        var overrides = false
        var topic = template.topic
        var credentialName: String? = nil
        if let value = members?["environment"] {
            guard let text = value.stringValue, let e = APNsEnvironment(lenient: text) else {
                let shown = value.stringValue.map { "'\($0)'" } ?? value.description
                return .refused(bad(token, "`environment` is \(shown); the valid values are sandbox and production."))
            }
            overrides = explicitEnvironment && e != defaultEnvironment
            environment = e
        }
        if let value = members?["topic"] {
            guard let text = value.stringValue, !text.trimmingWhitespace().isEmpty else {
                return .refused(
                    bad(token, "`topic` is \(value.description), but must be the bundle id (or its suffixed topic)."))
            }
            topic = text
        }
        if let value = members?["credential"] {
            guard let text = value.stringValue, !text.trimmingWhitespace().isEmpty else {
                return .refused(
                    bad(token, "`credential` is \(value.description), but must be a name from the credentials file."))
            }
            guard credentials != nil else {
                return .refused(bad(token, "`credential` is \"\(text)\", but the batch has no credentials file."))
            }
            credentialName = text
        }
        guard let endpoint = endpoints[environment] else {
            return .refused(unserved(deviceToken, environment, line: number))
        }
        if let credentials {
            switch credentials.resolve(credential: credentialName, topic: scopeTopic(topic), environment: environment) {
            case .failure(let problem):
                return .refused(
                    .outOfScope(
                        token: deviceToken,
                        message: "Line \(number): \(problem.kind.rawValue): \(problem.message) \(problem.fix)",
                        endpoint: endpoint))
            case .success(let credential): credentialName = credential.name
            }
        }
        return .route(
            LineRoute(topic: topic, endpoint: endpoint, credential: credentialName, overridesEnvironment: overrides))
    }

    /// A line naming a broadcast channel: the batch's payload (or the line's), priority and expiration, to
    /// the plain bundle id of `--topic`, through the APNs host of the line's environment.
    private func broadcastItem(
        _ channelValue: JSONValue, members: [String: JSONValue], line number: Int, bad: (String, String) -> LineItem
    ) -> LineItem {
        guard let channel = channelValue.stringValue, !channel.trimmingWhitespace().isEmpty else {
            return bad("", "`channel` is \(channelValue.description), but must be the channel id (base64) as a string.")
        }
        var payload = template.payload
        if let value = members["payload"] {
            guard value.objectValue != nil else {
                return bad("", "`payload` of the broadcast to \(channel) must be a JSON object.")
            }
            payload = value.encoded()
        }
        var environment = defaultEnvironment
        var overrides = false
        if let value = members["environment"] {
            guard let text = value.stringValue, let e = APNsEnvironment(lenient: text) else {
                return bad("", "`environment` is \(value.description); the valid values are sandbox and production.")
            }
            overrides = explicitEnvironment && e != defaultEnvironment
            environment = e
        }
        let request = BroadcastRequest(
            bundleID: BatchBroadcaster.bundleID(forTopic: template.topic ?? ""), channelID: channel,
            priority: template.priority ?? 10, expiration: template.expiration ?? 0, payload: payload)
        guard let endpoint = endpoints[environment] else { return unserved("", environment, line: number) }
        return .broadcast(request, endpoint, overridesEnvironment: overrides)
    }

    /// The refusal of a line of `environment`, which has no endpoint here.
    private func unserved(_ token: String, _ environment: APNsEnvironment, line number: Int) -> LineItem {
        let served = endpoints.keys.map(\.rawValue).sorted().joined(separator: " and ")
        return .unserved(
            token: token,
            message:
                "Line \(number): the line's environment is \(environment.rawValue), but this batch has an endpoint for \(served) only; the push was not sent.\(endpointHint.isEmpty ? "" : " \(endpointHint)")"
        )
    }

    /// A line's `idempotency_key` (``LineItem/push(_:overridesEnvironment:idempotencyKey:)``), scoped as the queue
    /// scopes it: to the push's topic and token. Keys are kept for the run only: a line repeating an earlier line's
    /// key is skipped, counted as `repeated idempotency_key`.
    static func scopedKey(_ key: String, item: PushBatchItem) -> String {
        "\(item.request.topic ?? "")\u{0}\(item.request.deviceToken)\u{0}\(key)"
    }

    private func normalized(_ token: String) -> String {
        DeviceToken.normalize(token).token ?? token
    }
}
