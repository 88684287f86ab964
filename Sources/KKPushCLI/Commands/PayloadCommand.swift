import ArgumentParser
import Foundation
import KKPushCore
import KantineKoning

/// `kkpush payload`: lint payload files and build payloads.
struct PayloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "payload",
        abstract: "Check payloads as APNs would, and build them (including Kantine Koning's pushes).",
        subcommands: [PayloadLintCommand.self, PayloadBuildCommand.self]
    )
}

/// `kkpush payload lint FILE|-`: judges a JSON or Simulator `.apns` payload as APNs would.
struct PayloadLintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check a payload file (JSON or Xcode Simulator .apns) as APNs would judge it.",
        discussion: """
            Exits 0 when APNs would accept the payload (warnings allowed), 1 when it would reject it, 2 when \
            the file cannot be read. Without --push-type the push type the payload reads as is assumed. \
            A .apns file's 'Simulator Target Bundle' becomes the topic and is not sent. One final newline (\\n or \\r\\n, \
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
        name: .long, help: "Print a JSON object: valid, size, limit, push_type, problems (and topic for .apns files).")
    var json = false

    func validate() throws {
        if file.isEmpty { throw ValidationError("FILE is empty: give the payload file, or - to read standard input.") }
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
        let bytes = try await reportingErrors(exitCode: ExitStatus.input) { try Self.read(file) }
        let name = file == "-" ? "standard input" : (file as NSString).lastPathComponent
        let payloadFile = PayloadFile.read(bytes, fileName: name)
        var result = PayloadLint.lint(
            payloadFile, pushType: pushType.map { PushType(rawValue: $0) }, topic: topic, priority: priority)
        result.check.problems = result.check.problems.map(Self.flagWords.apply)
        if json {
            var object: [String: JSONValue] = [
                "valid": .bool(result.isValid),
                "size": .int(result.size),
                "limit": .int(result.limit),
                "push_type": .string(result.pushType.rawValue),
                "problems": Output.json(result.check.problems),
            ]
            if let fileTopic = result.fileTopic { object["topic"] = .string(fileTopic) }
            if let rejection = result.check.rejection {
                object["rejection"] = ["status": .int(rejection.status), "reason": .string(rejection.reason.rawValue)]
            }
            Output.printJSON(.object(object))
        } else {
            let verdict =
                result.check.rejection.map { "REJECTED: APNs would answer \($0)" } ?? "valid: APNs would accept it"
            print("\(name): \(verdict)")
            print(
                "  \(result.size) of \(result.limit) bytes, \(result.pushType) push\(result.topic.map { ", topic \($0)" } ?? "")"
            )
            for line in Output.lines(result.check.problems) { print(line) }
        }
        if !result.isValid { throw ExitCode(1) }
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
            they parse as JSON, else strings. Warnings go to standard error; exits 1 if APNs would reject it.
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
        let anything =
            hasAlertFields || badge != nil || sound != nil || background || dienstUpdate || ctaToken != nil
            || !custom.isEmpty || mutableContent || threadId != nil || category != nil || interruptionLevel != nil
        if !anything {
            throw ValidationError(
                "Nothing to build: give --title/--body, --background, --dienst-update or --cta-token.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            let payload = try makePayload()
            let lint = PayloadLint.lint(PayloadFile(payload: payload.encoded()))
            for problem in lint.check.problems where problem.severity >= .warning {
                Output.printError("\(problem.severity.rawValue) \(problem.code): \(problem.message)")
            }
            if !lint.isValid { throw ExitCode(1) }
            print(payload.jsonString)
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
