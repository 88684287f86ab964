import Foundation
import KKPushCore

/// The libraries speak of their own inputs: a message that needs to name one gives the API's name in parentheses
/// (`(pushType)`, `(adminHost)`), never a flag of this command line. A command puts its flags in their place before it
/// prints, with the names it maps here.
struct FlagWords: Sendable {
    /// API name → how this command's user gives it (`"pushType": "--push-type"`).
    var flags: [String: String]

    /// The API names the libraries use in their errors, as every command spells them; a command with other
    /// flags for the same input maps them itself (``apply(_:)-(KKPushError)`` first, then these).
    static let common = FlagWords(flags: [
        "host": "--host", "port": "--port", "secret": "--secret", "url": "--url", "caFile": "--ca-file",
        "devices": "--devices", "certificates": "--certificates", "schemaMap": "--schema-map",
        "ctaToken": "--cta-token", "tenant": "--tenant", "dienstID": "--dienst-id", "keyID": "--key-id",
        "teamID": "--team-id",
    ])

    /// `text` with every `(apiName)` of ``flags`` as `(flag)`.
    func apply(_ text: String) -> String {
        var text = text
        for (name, flag) in flags { text = text.replacingOccurrences(of: "(\(name))", with: "(\(flag))") }
        return text
    }

    /// `problem` with its message and fix in the command's words.
    func apply(_ problem: Problem) -> Problem {
        var problem = problem
        problem.message = apply(problem.message)
        problem.fix = apply(problem.fix)
        return problem
    }

    /// `error` with its message and fix in the command's words.
    func apply(_ error: KKPushError) -> KKPushError {
        var error = error
        error.message = apply(error.message)
        error.fix = error.fix.map(apply)
        return error
    }
}
