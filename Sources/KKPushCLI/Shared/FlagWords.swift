package import Foundation
package import KKPushCore
package import KantineKoning

/// The one place where the libraries' words become this command line's.
///
/// The libraries speak of their own inputs: a message that needs to name one gives the API's name in parentheses
/// (`(pushType)`, `(adminHost)`), never a flag of this command line. A command puts its flags in their place before it
/// prints, with the names it maps here.
///
/// A message that suggests a command of this tool names it the same way, as a placeholder of its own in
/// parentheses: the command's words in lowerCamelCase followed by `Command` (`(jwtDecodeCommand)` for
/// `kkpush jwt decode`, `(channelListCommand)` for `kkpush channel list`), after a sentence that says in plain words
/// what the command does ("decoding the provider token shows kid and iss (jwtDecodeCommand)"), so that a library
/// user still reads what to do (`Wording.plain` drops the placeholders for one). ``commands`` maps them for every
/// command line; `Wording` in KKPushCore documents the convention for the libraries.
///
/// No library string names a flag (`--probe`), a `kkpush` command or a README section; `LibraryWordingTests` scans
/// the libraries' sources for them, and checks that every placeholder they use is mapped here.
package struct FlagWords: Sendable {
    /// API name → how this command's user gives it (`"pushType": "--push-type"`).
    package var flags: [String: String]

    package init(flags: [String: String]) { self.flags = flags }

    /// The API names the libraries use in their errors and findings, as every command spells them; a command with
    /// other flags for the same input maps them itself (``apply(_:)-(KKPushError)`` first, then these).
    package static let common = FlagWords(flags: [
        "host": "--host", "port": "--port", "secret": "--secret", "url": "--url", "caFile": "--ca-file",
        "devices": "--devices", "certificates": "--certificates", "schemaMap": "--schema-map",
        "ctaToken": "--cta-token", "tenant": "--tenant", "dienstID": "--dienst-id", "keyID": "--key-id",
        "teamID": "--team-id", "key": "--key", "cert": "--cert", "certPassword": "--cert-password",
        "proxy": "--proxy", "verbose": "--verbose", "env": "--env", "token": "--token", "topic": "--topic",
        "channel": "--channel", "probe": "--probe", "state": "--state", "strict": "--strict",
        "storagePolicy": "--storage-policy", "knownEnvironment": "--known-environment", "email": "--email",
        "db": "--db", "shard": "--shard", "credentials": "--credentials", "savedPushesFile": "--saved-pushes",
        "activityAttributes": "--activity-attributes", "activityRegistry": "--activity-registry",
        "timeZone": "--time-zone", "sendAt": "--at", "quietHours": "--quiet-hours", "rate": "--rate",
        "deviceCap": "--device-cap", "idempotencyKey": "--idempotency-key",
        "idempotencyRetention": "--idempotency-retention",
    ])

    /// The command placeholders of the libraries (`jwtDecodeCommand`) → the command a user of this tool runs.
    package static let commands: [String: String] = [
        "jwtSignCommand": "kkpush jwt sign", "jwtDecodeCommand": "kkpush jwt decode",
        "certInspectCommand": "kkpush cert inspect", "buildInspectCommand": "kkpush build inspect",
        "channelCreateCommand": "kkpush channel create", "channelListCommand": "kkpush channel list",
        "channelShowCommand": "kkpush channel show", "payloadBuildCommand": "kkpush payload build",
        "payloadLintCommand": "kkpush payload lint", "mockServeCommand": "kkpush mock serve",
        "backendServeCommand": "kkpush backend serve", "backendExportCommand": "kkpush backend export",
        "diagnoseCommand": "kkpush diagnose", "sendCommand": "kkpush send", "simulateCommand": "kkpush simulate",
        "versionCommand": "kkpush version", "backendMigrateCommand": "kkpush backend migrate",
        "backendImportCommand": "kkpush backend import", "backendEnrollCommand": "kkpush backend enroll",
        "sendBatchCommand": "kkpush send-batch",
        "payloadActivityAttributesCommand": "kkpush payload activity-attributes",
        "queueMigrateCommand": "kkpush queue migrate",
    ]

    /// `text` with every `(apiName)` of ``flags`` (else of ``common``) as `(flag)` and every `(placeholderCommand)` of
    /// ``commands`` as `(kkpush …)`. One pass over the text: the audit maps every finding of a large fleet.
    package func apply(_ text: String) -> String {
        guard text.contains("(") else { return text }
        var out = ""
        var rest = text[...]
        while let open = rest.firstIndex(of: "(") {
            out += rest[..<open]
            let after = rest.index(after: open)
            if let close = rest[after...].firstIndex(of: ")") {
                let name = String(rest[after..<close])
                // A command's own words first, then every command's: a library name the command does not map itself
                // (a CA file's `(caFile)` in `tls check`'s report) still reaches its user as the flag, never as
                // `(caFile)`.
                if let word = flags[name] ?? Self.common.flags[name] ?? Self.commands[name] {
                    out += "(\(word))"
                    rest = rest[rest.index(after: close)...]
                    continue
                }
            }
            out += "("
            rest = rest[after...]
        }
        out += rest
        return out
    }

    /// `value` with each text at `texts` in the command's words.
    private func apply<Value>(_ value: Value, at texts: [WritableKeyPath<Value, String>]) -> Value {
        var value = value
        for text in texts { value[keyPath: text] = apply(value[keyPath: text]) }
        return value
    }

    /// `problem` with its message and fix in the command's words.
    package func apply(_ problem: Problem) -> Problem { apply(problem, at: [\.message, \.fix]) }

    /// `error` with its message and fix in the command's words.
    package func apply(_ error: KKPushError) -> KKPushError {
        var error = apply(error, at: [\.message])
        error.fix = error.fix.map(apply)
        return error
    }

    /// A diagnosis finding with its message, why and fix in the command's words.
    package func apply(_ finding: Finding) -> Finding { apply(finding, at: [\.message, \.why, \.fix]) }

    /// An audit finding with its message and fix in the command's words.
    package func apply(_ finding: FleetAuditFinding) -> FleetAuditFinding { apply(finding, at: [\.message, \.fix]) }

    /// A JSON value built from library words (an audit summary) with every string in the command's words.
    package func apply(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s): .string(apply(s))
        case .array(let a): .array(a.map(apply))
        case .object(let o): .object(o.mapValues(apply))
        default: value
        }
    }
}
