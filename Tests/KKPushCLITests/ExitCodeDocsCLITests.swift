import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The exit codes the help texts and `kkpush --help`'s table state are the ones the binary exits with.
@Suite("Exit codes: the help says what the binary does")
struct ExitCodeDocsCLITests {
    @Test("mock serve on a taken port exits with the code its help states for it")
    func mockServeTakenPort() async throws {
        let help = try await CLI.run(["mock", "serve", "--help"])
        try await withMockServer(configuration: .forTests()) { mock in
            let taken = try await CLI.run(
                [
                    "mock", "serve", "--sandbox-port", "\(mock.sandboxEndpoint.port)", "--production-port", "0",
                    "--admin-port", "0",
                ], timeout: 30)
            #expect(taken.stderr.contains("the port is in use"), "\(taken.stderr)")
            let text = help.stdout.replacingOccurrences(of: "\n", with: " ")
                .replacingOccurrences(of: "  +", with: " ", options: .regularExpression)
            #expect(
                text.contains("\(taken.status) if the server cannot start (a port in use"),
                "exit \(taken.status), help: \(text)")
        }
    }

    @Test(
        "kkpush --help's table: 130/143 for every command (send and audit included), 74 for export, 2 for an unknown tenant"
    )
    func rootTable() async throws {
        let help = try await CLI.run(["--help"])
        let text = help.stdout.replacingOccurrences(of: "\n", with: " ")
            .replacingOccurrences(of: "  +", with: " ", options: .regularExpression)
        #expect(text.contains("130 SIGINT, 143 SIGTERM"), "\(text)")
        #expect(text.contains("send and audit among them"), "\(text)")
        #expect(!text.contains("send-batch also: 74"), "\(text)")
        #expect(text.contains("backend export --output"), "\(text)")
        #expect(text.contains("audit --tenant of a tenant without enrollments"), "\(text)")
    }
}
