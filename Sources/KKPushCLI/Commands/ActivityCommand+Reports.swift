import ArgumentParser
import Foundation
import KKPushActivities
import KKPushCLISupport
import KKPushClient
import KKPushCore

/// What `activity start|update|end` says: the registry's plan, APNs' answer to the push, the activity after it.
///
/// JSON: `command`, `key`, `outcome` (`accepted`, `rejected`, `failed`, `existing`, `deferred`, `planned`),
/// `token` and `token_kind` (`push-to-start` or `update`), `token_status` (a start's push-to-start token: `good` or
/// `suspect`), `apns_id`, `status`, `reason`, `deferred_until`, `why`, `notes`, `payload` (a dry run's), `activity`
/// (the registry's record: `state`, `update_token`, the times in ISO 8601); null where there is none.
struct ActivityPushReport: CommandReport, Sendable {
    enum Outcome: String, Encodable, Sendable {
        case accepted, rejected, failed, existing, deferred, planned
        /// Exit 1: nothing was started, updated or ended. A deferred start exits 1 too (kkpush's choice): the push
        /// was not sent, and a script that checks only the exit code must not take it as started; `deferred_until`
        /// says when to try again.
        var failed: Bool { self == .rejected || self == .failed || self == .deferred }
    }
    var command: String
    var key: String
    var outcome: Outcome
    var token: String?
    var tokenKind: ActivityTokenKind?
    var tokenStatus: PushToStartTokenStatus?
    var apnsID: String?
    var status: Int?
    var reason: String?
    var deferredUntil: Date?
    var why: String?
    var notes: [String] = []
    var payload: JSONValue?
    var activity: ActivityRecord?

    enum CodingKeys: String, CodingKey {
        case command, key, outcome, token, status, reason, why, notes, payload, activity
        case tokenKind = "token_kind"
        case tokenStatus = "token_status"
        case apnsID = "apns_id"
        case deferredUntil = "deferred_until"
    }

    init(
        command: String, key: String, outcome: Outcome, deferredUntil: Date? = nil, why: String? = nil,
        activity: ActivityRecord? = nil
    ) {
        self.command = command
        self.key = key
        self.outcome = outcome
        self.deferredUntil = deferredUntil
        self.why = why
        self.activity = activity
        if let activity, outcome == .existing {
            token = activity.updateToken ?? activity.pushToStartToken
            tokenKind = activity.updateToken != nil ? .update : .pushToStart
            apnsID = activity.startApnsID
            status = activity.startStatus
            reason = activity.startReason
        }
    }

    /// A dry run's plan: the push it would send.
    init(planned push: ActivityPush, command: String) {
        self.init(command: command, key: push.key, outcome: .planned)
        fill(push)
        payload = try? JSONValue.parse(push.request.payload)
    }

    /// A push sent and APNs' answer.
    init(sent push: ActivityPush, outcome: PushOutcome, record: ActivityRecord?, command: String) {
        let result: Outcome =
            switch outcome.result {
            case .accepted: .accepted
            case .rejected: .rejected
            case .failed: .failed
            }
        self.init(command: command, key: push.key, outcome: result, activity: record)
        fill(push)
        apnsID = outcome.apnsID ?? push.request.apnsID
        status = outcome.httpStatus
        switch outcome.result {
        case .accepted: break
        case .rejected(let r):
            reason = r.reason.rawValue
            why = r.reason.explanation
        case .failed(let f):
            reason = f.kind.rawValue
            why = FlagWords.common.apply(f.message)
        }
    }

    private mutating func fill(_ push: ActivityPush) {
        token = push.token
        tokenKind = push.tokenKind
        tokenStatus = push.tokenStatus
        apnsID = push.request.apnsID
        notes = push.notes
    }

    /// An update's or end's plan carried out: refused (thrown), planned (a dry run) or sent.
    static func run(
        _ plan: ActivityPushPlan, command: String, dryRun: Bool, registry: any ActivityRegistry, sender: ActivitySender
    ) async throws -> ActivityPushReport {
        switch plan {
        case .refused(let error): throw error
        case .send(let push):
            if dryRun {
                try sender.check(push)
                return ActivityPushReport(planned: push, command: command)
            }
            let (outcome, record) = try await sender.send(push, registry: registry)
            return ActivityPushReport(sent: push, outcome: outcome, record: record, command: command)
        }
    }

    var textLines: [String] {
        var lines: [String] = []
        switch outcome {
        case .accepted:
            lines.append("\(command) of activity \(key): accepted (apns-id \(apnsID ?? "-"))")
        case .rejected:
            lines.append("\(command) of activity \(key): rejected: \(status.map(String.init) ?? "-") \(reason ?? "")")
            if let why { lines.append("  why: \(why)") }
        case .failed:
            lines.append("\(command) of activity \(key): failed (\(reason ?? "-")): \(why ?? "")")
        case .existing:
            lines.append(
                "activity \(key) exists (\(activity?.state.rawValue ?? "-")): nothing sent; its start was apns-id \(apnsID ?? "-")"
            )
        case .deferred:
            lines.append("start of activity \(key): deferred until \(deferredUntil.map(Self.iso) ?? "-"), nothing sent")
            if let why { lines.append("  why: \(why)") }
        case .planned:
            lines.append("\(command) of activity \(key): planned (dry run), nothing sent or recorded")
            if let payload { lines.append("  payload: \(payload)") }
        }
        if let token, let tokenKind {
            lines.append("  to the \(tokenKind.rawValue) token \(token)\(tokenStatus == .suspect ? " (suspect)" : "")")
        }
        for note in notes { lines.append("  note: \(note)") }
        if let activity, outcome != .existing { lines.append("  activity: \(activity.state.rawValue)") }
        if let activity, outcome == .existing { lines += ActivityText.lines(activity).map { "  " + $0 } }
        return lines
    }

    static func iso(_ date: Date) -> String { ActivityText.iso(date) }
}

/// An activity record as text.
enum ActivityText {
    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: date)
    }

    static func lines(_ a: ActivityRecord) -> [String] {
        var lines = [
            "state: \(a.state.rawValue)", "device: \(a.device)", "attributes type: \(a.attributesType)",
            "topic: \(a.topic)", "update token: \(a.updateToken ?? "none yet")",
            "push-to-start token: \(a.pushToStartToken ?? "-")",
            "start: apns-id \(a.startApnsID ?? "-"), \(a.startStatus.map { "APNs \($0)" } ?? "no answer recorded")\(a.startReason.map { " \($0)" } ?? "")",
            "requested: \(iso(a.requestedAt))",
        ]
        let times: [(String, Date?)] = [
            ("start accepted", a.startAcceptedAt), ("active", a.activeAt), ("ended", a.endedAt),
            ("dismissal date", a.dismissalDate), ("dismissed", a.dismissedAt), ("stale", a.staleAt),
        ]
        for (name, time) in times { if let time { lines.append("\(name): \(iso(time))") } }
        if let id = a.activityID { lines.append("activity id: \(id)") }
        if let note = a.note { lines.append("why: \(note)") }
        return lines
    }
}

/// `activity list`'s and `activity sweep`'s report: activities, one line each.
///
/// JSON: `activities`, each the registry's record.
struct ActivityListReport: CommandReport, Sendable {
    var activities: [ActivityRecord]
    var heading: String?

    var textLines: [String] {
        var lines = heading.map { [$0] } ?? []
        if activities.isEmpty { lines.append("no activities") }
        for a in activities {
            lines.append(
                "\(a.key)  \(a.state.rawValue)  device \(a.device)  \(a.attributesType)  update token \(a.updateToken.map(DeviceToken.redacted) ?? "none")"
            )
        }
        return lines
    }

    enum CodingKeys: String, CodingKey { case activities }
}

/// `activity inspect`'s report: one activity, or a device's push-to-start tokens with their history.
///
/// JSON: `activity` (the record) or `push_to_start_tokens` (each with `history`).
struct ActivityInspectReport: CommandReport, Sendable {
    var activity: ActivityRecord?
    var tokens: [PushToStartTokenRecord]?
    var device: String?

    enum CodingKeys: String, CodingKey {
        case activity
        case tokens = "push_to_start_tokens"
    }

    var textLines: [String] {
        if let activity { return ["activity \(activity.key)"] + ActivityText.lines(activity).map { "  " + $0 } }
        var lines: [String] = []
        let list = tokens ?? []
        if list.isEmpty { lines.append("device \(device ?? "-"): no push-to-start tokens") }
        for t in list {
            lines.append(
                "device \(t.device), \(t.attributesType): \(t.token) (\(t.status.rawValue); first seen \(ActivityText.iso(t.firstSeen)), last seen \(ActivityText.iso(t.lastSeen)), from \(t.source))"
            )
            for h in t.history {
                lines.append(
                    "  \(ActivityText.iso(h.at)) \(h.outcome.rawValue) \(h.token.map { $0.isEmpty ? "\"\"" : $0 } ?? "null") from \(h.source)\(h.reason.map { ": \($0)" } ?? "")"
                )
            }
        }
        return lines
    }
}

/// `activity report`'s report: what the registry did with each entry.
///
/// JSON: the library's result: `rotations`, `activities`, `ignored`.
struct ActivityReportReport: CommandReport, Sendable {
    var result: ActivityReportResult

    func encode(to encoder: any Encoder) throws { try result.encode(to: encoder) }

    var textLines: [String] {
        var lines: [String] = []
        for r in result.rotations {
            lines.append(
                "push-to-start token \(r.outcome.rawValue): \(r.token.map { $0.isEmpty ? "\"\"" : $0 } ?? "null")\(r.reason.map { " (\($0))" } ?? "")"
            )
        }
        for a in result.activities {
            lines.append("activity \(a.key): \(a.state.rawValue), update token \(a.updateToken ?? "none")")
        }
        for i in result.ignored { lines.append("ignored: \(i)") }
        if lines.isEmpty { lines.append("nothing reported") }
        return lines
    }
}

/// `kkpush activity list`.
struct ActivityListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the registry's activities, oldest first.")

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(help: "Only this device's.") var device: String?
    @Option(help: "Only in this state: requested, active, ended, dismissed or stale.") var state: String?
    @Option(name: .customLong("attributes-type"), help: "Only of this ActivityAttributes type.") var attributesType:
        String?
    @Option(help: "At most this many.") var limit: Int?
    @Flag(help: "Print the report as JSON.") var json = false

    func validate() throws {
        if let state, ActivityState(rawValue: state) == nil {
            throw ValidationError(
                "--state is one of \(ActivityState.allCases.map(\.rawValue).joined(separator: ", ")), not '\(state)'.")
        }
        if let limit, limit < 1 { throw ValidationError("--limit is at least 1, not \(limit).") }
    }

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let filter = ActivityFilter(
                    device: device, state: state.flatMap(ActivityState.init(rawValue:)),
                    attributesType: attributesType, limit: limit)
                let list = try await registry.withRegistry { try await $0.activities(filter) }
                Output.printReport(ActivityListReport(activities: list), json: json)
            }
        }
    }
}

/// `kkpush activity inspect`.
struct ActivityInspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract:
            "Show one activity (--activity-key), or a device's push-to-start tokens and their rotations (--device); exit 2 for an unknown key."
    )

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(name: .customLong("activity-key"), help: "The activity's key.") var activityKey: String?
    @Option(help: "The device whose push-to-start tokens to show.") var device: String?
    @Flag(help: "Print the report as JSON.") var json = false

    func validate() throws {
        if (activityKey == nil) == (device == nil) {
            throw ValidationError("Give either --activity-key (an activity) or --device (its push-to-start tokens).")
        }
    }

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let report = try await registry.withRegistry { r -> ActivityInspectReport in
                    if let device {
                        return ActivityInspectReport(
                            tokens: try await r.pushToStartTokens(device: device), device: device)
                    }
                    let key = activityKey ?? ""
                    guard let record = try await r.activity(key: key) else {
                        throw KKPushError(
                            code: .activityUnknown, message: "The registry has no activity '\(key)'.",
                            fix: "Check the key against the registry's list (activity list).")
                    }
                    return ActivityInspectReport(activity: record)
                }
                Output.printReport(report, json: json)
            }
        }
    }
}

/// `kkpush activity sweep`.
struct ActivitySweepCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract:
            "Mark stale the starts whose update token did not come back within --stale-timeout after APNs accepted them (their push-to-start token becomes suspect) or that have no APNs answer recorded, and dismissed the ended activities whose dismissal date passed (4 hours after the end without one)."
    )

    @OptionGroup var registry: ActivityRegistryOptions
    @Flag(help: "Print the report as JSON.") var json = false

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let changed = try await registry.withRegistry { try await $0.sweepStale(at: Date()) }
                Output.printReport(
                    ActivityListReport(activities: changed, heading: "\(changed.count) activities changed"), json: json)
            }
        }
    }
}

/// `kkpush activity report`: records what an app reported, as the backend does on a token update.
struct ActivityReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract:
            "Record what the app reported of its Live Activities (push-to-start tokens, update tokens, ended or dismissed activities), as the backend does on a token update.",
        discussion: """
            A null or empty push-to-start token (--push-to-start TYPE=) never replaces a stored one: it is kept in the \
            token's history as a refused rotation. An update token for a key the registry does not know (an activity \
            the app started itself) is recorded with --attributes-type under --topic, the app's bundle id, so its \
            updates go to <bundle id>.push-type.liveactivity; without --topic it is ignored, saying why.
            """)

    @OptionGroup var registry: ActivityRegistryOptions
    @Option(help: "The device that reports.") var device: String
    @Option(
        name: .customLong("push-to-start"),
        help: ArgumentHelp(
            "A push-to-start token: TYPE=HEX (TYPE= for a null token); repeatable.", valueName: "type=token"))
    var pushToStart: [String] = []
    @Option(
        name: .customLong("activity-token"),
        help: ArgumentHelp("An activity's update token: KEY=HEX; repeatable.", valueName: "key=token"))
    var activityToken: [String] = []
    @Option(
        name: .customLong("attributes-type"),
        help: "With --activity-token: the activity's attributes type (records an activity the registry did not start).")
    var attributesType: String?
    @Option(
        help:
            "The reporting app's bundle id (or <bundle id>.push-type.liveactivity): an activity the app started itself is recorded under it."
    )
    var topic: String?
    @Option(help: "An activity the app saw end (its key); repeatable.") var ended: [String] = []
    @Option(help: "An activity the app saw dismissed (its key); repeatable.") var dismissed: [String] = []
    @Flag(help: "Print the report as JSON.") var json = false

    static func split(_ value: String, flag: String) throws -> (String, String) {
        guard let equals = value.firstIndex(of: "=") else {
            throw ValidationError("\(flag) takes NAME=TOKEN; '\(value)' has no '='.")
        }
        return (String(value[..<equals]), String(value[value.index(after: equals)...]))
    }

    func validate() throws {
        for p in pushToStart { _ = try Self.split(p, flag: "--push-to-start") }
        for a in activityToken { _ = try Self.split(a, flag: "--activity-token") }
    }

    func run() async throws {
        try await reportingErrors {
            try await ActivityCommand.mappingWords {
                let report = ActivityTokenReport(
                    pushToStartTokens: try pushToStart.map {
                        let (type, token) = try Self.split($0, flag: "--push-to-start")
                        return PushToStartTokenReport(attributesType: type, token: token.isEmpty ? nil : token)
                    },
                    activityTokens: try activityToken.map {
                        let (key, token) = try Self.split($0, flag: "--activity-token")
                        return ActivityUpdateTokenReport(activityKey: key, attributesType: attributesType, token: token)
                    },
                    activityStates: ended.map { ActivityStateReport(activityKey: $0, state: .ended) }
                        + dismissed.map { ActivityStateReport(activityKey: $0, state: .dismissed) },
                    source: "report", topic: topic)
                var result = try await registry.withRegistry {
                    try await $0.recordReport(report, device: device, at: Date())
                }
                // The registry's reasons name its inputs in parentheses ((topic)): this command's flags.
                result.ignored = result.ignored.map { ActivityCommand.words.apply($0) }
                Output.printReport(ActivityReportReport(result: result), json: json)
            }
        }
    }
}
