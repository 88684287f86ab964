import ArgumentParser
import KKPushAuth
import KKPushCLISupport
import KKPushCore

/// `kkpush jwt scope`: whether a key of a credentials file may serve a topic in an environment, and if not, why.
struct JWTScopeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scope",
        abstract:
            "Say whether a credential of a credentials file may serve a topic in an environment (exit 0 yes, 1 no).",
        discussion: """
            Names the scope problem APNs would answer: a key scoped to the other environment \
            (BadEnvironmentKeyIdInToken), a key scoped to other topics (TopicDisallowed), or a name the file does not \
            have. Without --credential or --key-id: which credential of the file serves them, if any. A bundle id of \
            the scope covers itself and itself plus a push type's suffix (.voip, .complication, \
            .pushkit.fileprovider, .push-type.liveactivity, .location-query, .voip-ptt, .push-type.widgets, \
            .push-type.controls); any other <bundle id>.X, such as an extension's own bundle id, is another app. \
            An empty --topic is a usage error (exit 64). A file whose entries give one Key ID two teams or two \
            different keys is refused (exit 2), naming both entries.
            """
    )

    @Option(help: "The credentials file (JSON).") var credentials: String
    @Option(help: "The entry to judge, by name.") var credential: String?
    @Option(name: .customLong("key-id"), help: "The entry to judge, by its Key ID (e.g. a token's kid).")
    var keyID: String?
    @Option(help: "The apns-topic (the bundle id, or a suffixed topic).") var topic: String
    @Option(help: "The environment: sandbox or production.") var env: String
    @Flag(name: .long, help: "Print a JSON object.") var json = false

    func validate() throws {
        if credential != nil, keyID != nil { throw ValidationError("Give --credential or --key-id, not both.") }
        if topic.trimmingWhitespace().isEmpty {
            throw ValidationError(
                "--topic is empty: give the apns-topic to judge (the bundle id, or the bundle id plus a push type's suffix). No scope covers a push without a topic."
            )
        }
        if APNsEnvironment(lenient: env) == nil {
            throw ValidationError("--env '\(env)' is neither sandbox nor production.")
        }
    }

    func run() async throws {
        let report = try await reportingErrors {
            try CredentialScopeReport.judge(
                credentialsFile: credentials, credential: credential, keyID: keyID, topic: topic,
                environment: APNsEnvironment(lenient: env)!)
        }
        Output.printReport(report, json: json)
        if !report.serves { throw ExitCode(ExitStatus.failed) }
    }
}

extension CredentialScopeReport: CommandReport {
    var textLines: [String] {
        if let chosen {
            return ["credential \"\(chosen.name)\" (\(chosen.summary)) may serve \(topic) in \(environment.rawValue)"]
        }
        guard let problem else { return [] }
        return [
            "error \(problem.kind.rawValue): \(FlagWords.common.apply(problem.message))",
            "  fix: \(FlagWords.common.apply(problem.fix))",
        ]
    }
}
