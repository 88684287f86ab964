import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// What the "true answers" suites share (`.ci/smoke-release` runs every `KKPushCLITests.Answers…` suite against the
/// release binary too): the test key, the topic, and the check that nothing a user reads is a Swift value dump.
enum Answers {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }
    static var certificates: URL { CLI.certificates }

    /// Nothing a user reads is a Swift value dump.
    static func expectNoDump(_ r: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for marker in ["CLIError(", "KKPushError(", "exitCode:", "Optional(", "(errno:"] {
            #expect(
                !r.stdout.contains(marker) && !r.stderr.contains(marker), "\(marker) in \(r.stdout) \(r.stderr)",
                sourceLocation: sourceLocation)
        }
    }
}
