import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport

/// Paths of the committed test material in `Certificates/`, found relative to this file.
enum Fixtures {
    static let certificates: String = Repository.certificates.path

    static func path(_ name: String) -> String { Repository.certificate(name) }

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8)
    }

    /// The key registry `keys.json`.
    struct KeyEntry: Decodable, Sendable {
        var key_id: String
        var team_id: String
        var file: String
        var environments: [String]
    }

    static func keys() throws -> [KeyEntry] {
        try JSONDecoder().decode([KeyEntry].self, from: Data(contentsOf: URL(fileURLWithPath: path("keys.json"))))
    }
}

/// The result of running a real process.
struct ProcessResult {
    var status: Int32
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

struct ProcessTimeout: Error {}

/// Runs `executable` with `arguments` (found on PATH through /usr/bin/env), waiting at most `timeout` seconds.
func run(_ arguments: [String], stdin: Data? = nil, timeout: TimeInterval = 30) async throws -> ProcessResult {
    let output = try await runProcess(URL(fileURLWithPath: "/usr/bin/env"), arguments, stdin: stdin, timeout: timeout)
    if output.timedOut { throw ProcessTimeout() }
    return ProcessResult(
        status: output.status, stdout: output.stdout, stderr: String(decoding: output.stderr, as: UTF8.self))
}
