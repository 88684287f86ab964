import ArgumentParser
import Foundation
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
        try await reportingErrors {
            let set = try ProviderCredentialSet.load(path: credentials)
            let environment = APNsEnvironment(lenient: env)!
            var name = credential
            if let keyID {
                guard let entry = set.credentials.first(where: { $0.keyID == keyID }) else {
                    throw KKPushError(
                        code: .unknownCredential,
                        message: "No key of the credentials file '\(credentials)' has the Key ID \(keyID).",
                        fix: "Add the key to the file, or check the token's kid (kkpush jwt decode).")
                }
                name = entry.name
            }
            let result = set.resolve(credential: name, topic: topic, environment: environment)
            let servers = set.servers(topic: topic, environment: environment).map(\.name)
            var object: [String: JSONValue] = [
                "topic": .string(topic), "environment": .string(environment.rawValue),
                "servers": .array(servers.map { .string($0) }),
            ]
            switch result {
            case .success(let chosen):
                object["credential"] = .string(chosen.name)
                object["serves"] = true
                object["problem"] = .null
                if json {
                    Output.printJSON(.object(object))
                } else {
                    print(
                        "credential \"\(chosen.name)\" (\(chosen.summary)) may serve \(topic) in \(environment.rawValue)"
                    )
                }
            case .failure(let problem):
                object["credential"] = JSONValue(problem.credential)
                object["serves"] = false
                var described: [String: JSONValue] = [
                    "code": .string(problem.kind.rawValue), "message": .string(problem.message),
                    "fix": .string(problem.fix),
                ]
                described["apns_reason"] = JSONValue(problem.apnsReason?.rawValue)
                object["problem"] = .object(described)
                if json {
                    Output.printJSON(.object(object))
                } else {
                    print("error \(problem.kind.rawValue): \(problem.message)\n  fix: \(problem.fix)")
                }
                throw ExitCode(1)
            }
        }
    }
}
