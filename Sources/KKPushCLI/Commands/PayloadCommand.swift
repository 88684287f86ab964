import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushSystem
import KantineKoning

/// `kkpush payload`: lint payload files and build payloads.
struct PayloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "payload",
        abstract: "Check payloads as APNs would, and build them (including Kantine Koning's pushes).",
        subcommands: [PayloadLintCommand.self, PayloadBuildCommand.self, PayloadActivityAttributesCommand.self]
    )
}

/// `kkpush payload lint FILE|-`: judges a JSON or Simulator `.apns` payload as APNs would.
struct PayloadLintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check a payload file (JSON or Xcode Simulator .apns) as APNs would judge it.",
        discussion: """
            Exits 0 when APNs would accept the payload (warnings allowed), 1 when it would reject it, 2 when \
            the file cannot be read. With --strict (for CI, as `swift format lint --strict`) a warning exits 1 \
            too: APNs accepts such a payload, but the device ignores or mishandles it (a Live Activity \
            timestamp in milliseconds, a start event without its attributes, ...). Without --push-type the push type the payload reads as is assumed. \
            A .apns file's 'Simulator Target Bundle' (the app's bundle id) becomes the topic, with the push type's \
            suffix (.push-type.liveactivity, .voip), and is not sent; the rest is judged exactly as written. One \
            final newline (\\n or \\r\\n, \
            as editors and `payload build > FILE` write) is not part of the payload, here as for `send --payload`.
            """
    )

    /// The largest file read, in bytes (payloads are at most 5 KB; this leaves room to report the size).
    static let maximumFileSize = 1 << 20

    @Argument(help: "The payload file, or - for standard input.")
    var file: String

    @Option(name: .long, help: "The apns-push-type to judge against (alert, background, voip, ...).")
    var pushType: String?

    @Option(name: .long, help: "The apns-topic (bundle id plus the push type's suffix).")
    var topic: String?

    @Option(name: .long, parsing: .unconditional, help: "The apns-priority (1, 5 or 10).")
    var priority: Int?

    @Flag(
        name: .long,
        help:
            "Judge it as a broadcast to a channel (5120 bytes, an aps object, update or end; --topic is then the plain bundle id)."
    )
    var broadcast = false

    @Flag(
        name: .long, help: "Print a JSON object: valid, size, limit, push_type, problems (and topic for .apns files).")
    var json = false

    @Flag(
        name: .long,
        help:
            "Exit 1 on warnings too (for CI): APNs accepts the payload, but the device ignores or mishandles what a warning names."
    )
    var strict = false

    @Option(
        name: .customLong("activity-attributes"),
        help: ArgumentHelp(
            "The app's ActivityAttributes description (payload activity-attributes): warn when a Live Activity payload would not decode on the device.",
            valueName: "file"))
    var activityAttributes: String?

    func validate() throws {
        if file.isEmpty { throw ValidationError("FILE is empty: give the payload file, or - to read standard input.") }
        if broadcast, let pushType, pushType.lowercased() != "liveactivity" {
            throw ValidationError(
                "--broadcast is always apns-push-type liveactivity; leave --push-type \(pushType) out.")
        }
        if pushType?.isEmpty == true {
            throw ValidationError(
                "--push-type is empty: give alert, background, voip, ... or leave it out to judge the payload's own type."
            )
        }
        if topic?.isEmpty == true {
            throw ValidationError(
                "--topic is empty: give the app's bundle id (e.g. nl.kantinekoning.app), or leave it out.")
        }
    }

    /// The lint's words for its inputs, as this command's flags.
    static let flagWords = FlagWords(flags: ["pushType": "--push-type", "priority": "--priority", "topic": "--topic"])

    func run() async throws {
        let bytes = try await reportingErrors { try Self.read(file) }
        let description = try await reportingErrors {
            try activityAttributes.map(PayloadActivityAttributesCommand.load)
        }
        let name = file == "-" ? "standard input" : (file as NSString).lastPathComponent
        let payloadFile = PayloadFile.read(bytes, fileName: name)
        var result =
            broadcast
            ? PayloadLint.lintBroadcast(payloadFile, bundleID: topic ?? payloadFile.topic, priority: priority)
            : PayloadLint.lint(
                payloadFile, pushType: pushType.map { PushType(rawValue: $0) }, topic: topic, priority: priority)
        if let description, let parsed = payloadFile.parsed {
            result.check.problems += description.problems(in: parsed)
        }
        result.check.problems = result.check.problems.map(Self.flagWords.apply)
        let report = PayloadLintReport(
            name: name, broadcast: broadcast, result: result,
            strictWarnings: strict ? result.check.problems.filter { $0.severity == .warning }.count : 0)
        Output.printReport(report, json: json)
        if !result.isValid || report.strictWarnings > 0 { throw ExitCode(1) }
    }

    /// Reads a file, or standard input for `-`, up to ``maximumFileSize`` bytes, through ``InputFile``: a
    /// missing file, a folder, an unreadable, empty or too large one each get their own message (exit 2).
    static func read(_ path: String) throws -> [UInt8] {
        try InputFile.read(path, what: "payload", maximumSize: maximumFileSize)
    }
}

/// `kkpush payload build`: prints a compact payload ready for `kkpush send`.
struct PayloadBuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Print a compact JSON payload ready for `kkpush send`.",
        discussion: """
            Kantine Koning's pushes: --dienst-update --tenant SLUG --dienst-id ID (a background push the app \
            answers by refreshing its diensten; with --title/--body the alert variant), --cta-token TOKEN \
            (an alert carrying kantinekoning://cta/shift-volunteer?token=TOKEN). Custom values are JSON if \
            they parse as JSON, else strings. A Live Activity: --live-activity start|update|end with \
            --content-state JSON (start, update; optional on end), --attributes-type NAME --attributes JSON and \
            --title/--body (start), --timestamp (default now), --stale-date, --dismissal-date, --relevance-score, \
            --input-push-token or --input-push-channel ID (start, iOS 18+); notes on standard error name the push \
            type (liveactivity), the topic (BUNDLE.push-type.liveactivity) and, for a start, the push-to-start token \
            it needs. Warnings go to standard error; exits 1 if APNs would reject it.
            """
    )

    @Option(name: .long, help: "aps.alert.title.") var title: String?
    @Option(name: .long, help: "aps.alert.subtitle.") var subtitle: String?
    @Option(name: .long, help: "aps.alert.body.") var body: String?
    @Option(name: .long, parsing: .unconditional, help: "aps.badge (0 clears it).") var badge: Int?
    @Option(name: .long, help: "aps.sound (default, or a sound file name).") var sound: String?
    @Flag(
        name: .long,
        help: "A background push: aps.content-available 1 only (send with --push-type background --priority 5).")
    var background = false
    @Option(name: .long, help: "aps.thread-id.") var threadId: String?
    @Option(name: .long, help: "aps.category.") var category: String?
    @Flag(name: .long, help: "aps.mutable-content 1 (runs the service extension; needs an alert).")
    var mutableContent = false
    @Option(name: .long, help: "aps.interruption-level: passive, active, time-sensitive or critical.")
    var interruptionLevel: String?
    @Option(name: .long, parsing: .singleValue, help: "A custom top-level key=value (repeatable).")
    var custom: [String] = []
    @Flag(name: .long, help: "Kantine Koning's dienst update (needs --tenant and --dienst-id).")
    var dienstUpdate = false
    @Option(name: .long, help: "The club's slug, for --dienst-update.") var tenant: String?
    @Option(name: .long, help: "The shift's id, for --dienst-update.") var dienstId: String?
    @Option(name: .long, help: "Kantine Koning's CTA push with this token.") var ctaToken: String?
    @Option(
        name: .long,
        help:
            "A Live Activity push: start, update or end (send with --push-type liveactivity to BUNDLE.push-type.liveactivity)."
    )
    var liveActivity: String?
    @Option(name: .long, help: "aps.content-state: the ContentState as a JSON object (start and update).")
    var contentState: String?
    @Option(name: .long, help: "aps.attributes-type: the ActivityAttributes type's name (start).")
    var attributesType: String?
    @Option(name: .long, help: "aps.attributes: the ActivityAttributes as a JSON object (start).")
    var attributes: String?
    @Option(name: .long, parsing: .unconditional, help: "aps.timestamp in UNIX seconds (default: now).")
    var timestamp: Int?
    @Option(name: .long, parsing: .unconditional, help: "aps.stale-date in UNIX seconds.")
    var staleDate: Int?
    @Option(name: .long, parsing: .unconditional, help: "aps.dismissal-date in UNIX seconds (end; past: at once).")
    var dismissalDate: Int?
    @Option(name: .long, parsing: .unconditional, help: "aps.relevance-score (any number for Live Activities).")
    var relevanceScore: Double?
    @Flag(name: .long, help: "aps.input-push-token 1 (start, iOS 18+): the device sends the activity's update token.")
    var inputPushToken = false
    @Option(name: .customLong("apns-file"), help: ArgumentHelp(SimulatorFileWriter.help, valueName: "file"))
    var apnsFile: String?
    @Option(
        name: .long,
        help:
            "The apns-topic, for --apns-file's Simulator Target Bundle (its push-type suffix dropped; default: $APNS_TOPIC)."
    )
    var topic: String?
    @Option(name: .long, help: "aps.input-push-channel (start, iOS 18+): subscribe to this broadcast channel id.")
    var inputPushChannel: String?

    var hasAlertFields: Bool { title != nil || subtitle != nil || body != nil }

    func validate() throws {
        if dienstUpdate {
            guard tenant != nil else { throw ValidationError("--dienst-update needs --tenant SLUG.") }
            guard dienstId != nil else { throw ValidationError("--dienst-update needs --dienst-id ID.") }
            if ctaToken != nil {
                throw ValidationError("--dienst-update and --cta-token are different pushes; pick one.")
            }
        } else if tenant != nil || dienstId != nil {
            throw ValidationError("--tenant and --dienst-id belong to --dienst-update; add it.")
        }
        if background {
            var clashing: [String] = []
            if title != nil { clashing.append("--title") }
            if subtitle != nil { clashing.append("--subtitle") }
            if body != nil { clashing.append("--body") }
            if badge != nil { clashing.append("--badge") }
            if sound != nil { clashing.append("--sound") }
            if mutableContent { clashing.append("--mutable-content") }
            if ctaToken != nil { clashing.append("--cta-token") }
            if !clashing.isEmpty {
                throw ValidationError(
                    "--background cannot have \(clashing.joined(separator: ", ")): a background push must not alert, sound or badge."
                )
            }
        }
        // An empty value builds a payload APNs takes but that shows nothing or names nothing: refused.
        let texts: [(String, String?)] = [
            ("--title", title), ("--subtitle", subtitle), ("--body", body), ("--sound", sound),
            ("--thread-id", threadId), ("--category", category), ("--tenant", tenant), ("--dienst-id", dienstId),
            ("--cta-token", ctaToken),
        ]
        for (flag, value) in texts where value?.trimmingWhitespace().isEmpty == true {
            throw ValidationError("\(flag) is empty: give a value, or leave the flag out.")
        }
        if let badge, badge < 0 {
            throw ValidationError("--badge \(badge) is out of range: give 0 or more (0 clears the badge).")
        }
        do {
            if let tenant, let dienstId { try KantineKoningPush.validate(tenant: tenant, dienstID: dienstId) }
            if let ctaToken { _ = try KantineKoningPush.cta(token: ctaToken) }
        } catch {
            throw ValidationError("\(error.message) \(error.fix ?? "")")
        }
        if let level = interruptionLevel, !InterruptionLevel(rawValue: level).isKnown {
            throw ValidationError(
                "--interruption-level must be passive, active, time-sensitive or critical, not '\(level)'.")
        }
        for item in custom {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw ValidationError("--custom '\(item)' is not key=value (the key must not be empty).")
            }
            if item[..<equals] == "aps" { throw ValidationError("--custom cannot set 'aps'; use the aps flags.") }
        }
        try validateLiveActivity()
        let anything =
            liveActivity != nil || hasAlertFields || badge != nil || sound != nil || background || dienstUpdate
            || ctaToken != nil
            || !custom.isEmpty || mutableContent || threadId != nil || category != nil || interruptionLevel != nil
        if !anything {
            throw ValidationError(
                "Nothing to build: give --title/--body, --background, --dienst-update, --cta-token or --live-activity."
            )
        }
    }

    /// The Live Activity flags given, by name (for messages).
    var liveActivityFlags: [String] {
        var given: [String] = []
        if contentState != nil { given.append("--content-state") }
        if attributesType != nil { given.append("--attributes-type") }
        if attributes != nil { given.append("--attributes") }
        if timestamp != nil { given.append("--timestamp") }
        if staleDate != nil { given.append("--stale-date") }
        if dismissalDate != nil { given.append("--dismissal-date") }
        if relevanceScore != nil { given.append("--relevance-score") }
        if inputPushToken { given.append("--input-push-token") }
        if inputPushChannel != nil { given.append("--input-push-channel") }
        return given
    }

    /// `--live-activity` and its flags: the event, what each event needs and allows, JSON objects, UNIX seconds.
    func validateLiveActivity() throws {
        guard let liveActivity else {
            let given = liveActivityFlags
            if !given.isEmpty {
                throw ValidationError(
                    "\(given.joined(separator: ", ")) belong\(given.count == 1 ? "s" : "") to --live-activity start|update|end; add it."
                )
            }
            return
        }
        let event = LiveActivityEvent(rawValue: liveActivity)
        guard event.isKnown else {
            throw ValidationError("--live-activity must be start, update or end, not '\(liveActivity)'.")
        }
        var clashing: [String] = []
        if background { clashing.append("--background") }
        if dienstUpdate { clashing.append("--dienst-update") }
        if ctaToken != nil { clashing.append("--cta-token") }
        if !clashing.isEmpty {
            throw ValidationError(
                "--live-activity cannot have \(clashing.joined(separator: ", ")): those are other pushes.")
        }
        // What the event needs and allows is LiveActivityRules' (the rules `payload lint` judges the payload by), each
        // key asked of the flag that sets it.
        let keys = LiveActivityRules.eventKeys(event) { key in
            switch key {
            case "attributes-type": attributesType != nil
            case "attributes": attributes != nil
            case "content-state": contentState != nil
            case "alert": hasAlertFields
            case "input-push-token": inputPushToken
            case "input-push-channel": inputPushChannel != nil
            default: false
            }
        }
        if !keys.startOnly.isEmpty {
            throw ValidationError(
                "\(keys.startOnly.map { "--\($0)" }.joined(separator: ", ")) belong\(keys.startOnly.count == 1 ? "s" : "") to --live-activity start, not \(liveActivity)."
            )
        }
        if event == .start, !keys.missing.isEmpty {
            let needs: [String: String] = [
                "attributes-type": "--attributes-type NAME", "attributes": "--attributes JSON",
                "content-state": "--content-state JSON", "alert": "--title/--body (a start needs an alert)",
            ]
            throw ValidationError(
                "--live-activity start needs \(keys.missing.compactMap { needs[$0] }.joined(separator: ", "))."
            )
        }
        if event == .update, keys.missing.contains("content-state") {
            throw ValidationError("--live-activity update needs --content-state JSON (the new ContentState).")
        }
        if let attributesType, attributesType.trimmingWhitespace().isEmpty {
            throw ValidationError("--attributes-type is empty: give the ActivityAttributes type's name.")
        }
        if let inputPushChannel, inputPushChannel.trimmingWhitespace().isEmpty {
            throw ValidationError("--input-push-channel is empty: give the broadcast channel id.")
        }
        _ = try Self.jsonObject(contentState, flag: "--content-state")
        _ = try Self.jsonObject(attributes, flag: "--attributes")
        for (flag, value) in [
            ("--timestamp", timestamp), ("--stale-date", staleDate), ("--dismissal-date", dismissalDate),
        ] {
            guard let value else { continue }
            if LiveActivityRules.isMilliseconds(value) {
                throw ValidationError(
                    "\(flag) \(value) is in milliseconds; APNs wants UNIX seconds (\(value / 1000)).")
            }
            if !InputNumbers.unixSeconds.contains(Int64(value)) {
                throw ValidationError(
                    "\(flag) \(value) is out of range: give UNIX seconds, \(InputNumbers.unixSecondsDescription).")
            }
        }
        if let relevanceScore, !relevanceScore.isFinite {
            throw ValidationError("--relevance-score must be a finite number, not \(relevanceScore).")
        }
    }

    /// `text` parsed as a JSON object (nil when not given); a ValidationError naming `flag` otherwise.
    static func jsonObject(_ text: String?, flag: String) throws -> JSONValue? {
        guard let text else { return nil }
        let value: JSONValue
        do {
            value = try JSONValue.parse(text)
        } catch {
            throw ValidationError("\(flag) is not JSON: \(error.message) Give a JSON object, e.g. '{\"score\":1}'.")
        }
        guard value.objectValue != nil else {
            throw ValidationError(
                "\(flag) is \(value.jsonTypePhrase), not an object: give e.g. '{\"score\":1}'.")
        }
        return value
    }

    /// The Live Activity content the flags describe (nil without `--live-activity`).
    func liveActivityContent(now: Int = LiveActivityRules.currentUnixSeconds()) throws -> LiveActivityContent? {
        guard let liveActivity else { return nil }
        let state = try Self.jsonObject(contentState, flag: "--content-state")
        let attributeValues = try Self.jsonObject(attributes, flag: "--attributes")
        return LiveActivityContent(
            event: LiveActivityEvent(rawValue: liveActivity), timestamp: timestamp ?? now, contentState: state,
            attributesType: attributesType, attributes: attributeValues, staleDate: staleDate,
            dismissalDate: dismissalDate, relevanceScore: relevanceScore, inputPushToken: inputPushToken,
            inputPushChannel: inputPushChannel,
            alert: hasAlertFields ? .fields(APSAlert.Fields(title: title, subtitle: subtitle, body: body)) : nil)
    }

    /// The notes `--live-activity` prints on standard error: how to send it, and for a start which token.
    static func liveActivityNotes(_ content: LiveActivityContent) -> [String] {
        var notes = [
            "note: send it with --push-type liveactivity to the topic "
                + "\(LiveActivityContent.topic(forBundleID: "<bundleId>")) (a .p8 key: Live Activities need token authentication).",
            "note: --priority 10 (the default) counts against an hourly budget (NSSupportsLiveActivitiesFrequentUpdates "
                + "raises it); use --priority 5 for routine updates.",
        ]
        if content.event == .start {
            notes.append(
                "note: a start goes to a push-to-start token (from pushToStartTokenUpdates, one per activity type), "
                    + "not to an activity's update token (from pushTokenUpdates): same topic, push type and /3/device/ "
                    + "path, but a start sent to an update token does nothing.")
        }
        return notes
    }

    func run() async throws {
        try await reportingErrors {
            let payload = try makePayload()
            let lint = PayloadLint.lint(PayloadFile(payload: payload.encoded()))
            for problem in lint.check.problems where problem.severity >= .warning {
                Output.printError("\(problem.severity.rawValue) \(problem.code): \(problem.message)")
            }
            if !lint.isValid { throw ExitCode(1) }
            if let apnsFile {
                guard let topic = Secrets.topic(topic) else {
                    throw KKPushError(
                        code: .sendNoTopic,
                        message: "--apns-file needs the app's bundle id for its Simulator Target Bundle.",
                        fix:
                            "Pass --topic with the app's bundle id (or set APNS_TOPIC), e.g. --topic nl.kantinekoning.app."
                    )
                }
                let type = try liveActivityContent() != nil ? PushType.liveactivity : nil
                let warnings = try SimulatorFileWriter.write(
                    payload: payload.encoded(), topic: topic, pushType: type, to: apnsFile)
                for line in Output.lines(warnings) { Output.printError(line) }
            }
            print(payload.jsonString)
            if let content = try liveActivityContent() {
                for note in Self.liveActivityNotes(content) { Output.printError(note) }
            }
        }
    }

    func makePayload() throws -> Payload {
        var payload: Payload
        if dienstUpdate, let tenant, let dienstId {
            payload =
                hasAlertFields
                ? try KantineKoningPush.dienstUpdateAlert(
                    tenant: tenant, dienstID: dienstId, title: title ?? "Dienst gewijzigd",
                    body: body ?? "Er is een wijziging in je diensten.")
                : try KantineKoningPush.dienstUpdate(tenant: tenant, dienstID: dienstId)
        } else if let ctaToken {
            payload = try KantineKoningPush.cta(
                token: ctaToken, title: title ?? "Vrijwilligers gezocht", body: body ?? "Kun jij een dienst draaien?")
        } else if background {
            payload = .background()
        } else if let content = try liveActivityContent() {
            payload = .liveActivity(content)
        } else {
            payload = Payload(aps: APS())
        }
        var aps = payload.aps ?? APS()
        if hasAlertFields {
            var fields: APSAlert.Fields
            if case .fields(let existing) = aps.alert { fields = existing } else { fields = APSAlert.Fields() }
            if let title { fields.title = title }
            if let subtitle { fields.subtitle = subtitle }
            if let body { fields.body = body }
            aps.alert = .fields(fields)
        }
        if let badge { aps.badge = badge }
        if let sound { aps.sound = .named(sound) }
        if let threadId { aps.threadID = threadId }
        if let category { aps.category = category }
        if mutableContent { aps.mutableContent = true }
        if let interruptionLevel { aps.interruptionLevel = InterruptionLevel(rawValue: interruptionLevel) }
        payload.aps = aps
        for item in custom {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0])
            if payload.custom(key) != nil {
                throw KKPushError(
                    code: .customKeyTaken,
                    message:
                        "--custom \(key) would replace the '\(key)' already set (by the push itself or an earlier --custom).",
                    fix: "Use another key name.")
            }
            payload.setCustom(key, JSONValue.lenient(parts.count > 1 ? String(parts[1]) : ""))
        }
        return payload
    }
}

/// What `payload lint` says of a payload: its JSON is `valid`, `size`, `limit`, `push_type`, `problems`
/// ([{severity, code, message, fix}]), with `topic` (an `.apns` file's) and `rejection` ({status, reason}) when there
/// is one.
struct PayloadLintReport: CommandReport, Sendable {
    /// The file's name as the text names it.
    var name: String
    var broadcast: Bool
    var result: PayloadLint.Result
    /// With `--strict`: the warnings that fail the lint (0 without).
    var strictWarnings: Int

    enum CodingKeys: String, CodingKey {
        case valid, size, limit, problems, topic, rejection
        case pushType = "push_type"
    }

    struct Rejection: Encodable {
        var status: Int
        var reason: String
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(result.isValid, forKey: .valid)
        try c.encode(result.size, forKey: .size)
        try c.encode(result.limit, forKey: .limit)
        try c.encode(result.pushType.rawValue, forKey: .pushType)
        try c.encode(result.check.problems, forKey: .problems)
        try c.encodeIfPresent(result.fileTopic, forKey: .topic)
        try c.encodeIfPresent(
            result.check.rejection.map { Rejection(status: $0.status, reason: $0.reason.rawValue) }, forKey: .rejection)
    }

    var textLines: [String] {
        let verdict =
            result.check.rejection.map { "REJECTED: APNs would answer \($0)" } ?? "valid: APNs would accept it"
        let kind = broadcast ? "broadcast (liveactivity)" : "\(result.pushType) push"
        let topic = result.topic.map { ", \(broadcast ? "bundle id" : "topic") \($0)" } ?? ""
        var lines = ["\(name): \(verdict)", "  \(result.size) of \(result.limit) bytes, \(kind)\(topic)"]
        lines += Output.lines(result.check.problems)
        if result.isValid, strictWarnings > 0 { lines.append("--strict: \(strictWarnings) warning(s) fail the lint.") }
        return lines
    }
}
