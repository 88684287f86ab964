import Foundation
import KKPushCLISupport
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

    @Test(
        "The README's exit-code table and kkpush --help list exactly the exits the error kinds map to, and the signals")
    func tablesFollowTheKinds() async throws {
        let fromKinds = Set(KKPushError.Kind.allCases.map(ExitStatus.code(for:)) + [ExitStatus.ok])
        let signals: Set<Int32> = [ExitStatus.signal(2), ExitStatus.signal(15)]
        // README: rows `| 2 | …` and one `| 130, 143 | …`.
        let readme = try String(contentsOf: Repository.file("README.md"), encoding: .utf8)
        var readmeExits: Set<Int32> = []
        for line in readme.split(separator: "\n") where line.hasPrefix("| ") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            let numbers = cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !numbers.isEmpty, numbers.allSatisfy({ Int32($0) != nil }) else { continue }
            readmeExits.formUnion(numbers.compactMap { Int32($0) })
        }
        #expect(
            readmeExits == fromKinds.union(signals), "README: \(readmeExits.sorted()), kinds: \(fromKinds.sorted())")
        // kkpush --help: each exit of the table named as `N ` at the start of a clause.
        let help = try await CLI.run(["--help"]).stdout.replacingOccurrences(of: "\n", with: " ")
        for exit in fromKinds.union(signals) {
            #expect(
                help.contains("; \(exit) ") || help.contains(": \(exit) ") || help.contains(", \(exit) "),
                "kkpush --help does not name exit \(exit)")
        }
    }
}
