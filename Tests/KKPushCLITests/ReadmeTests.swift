import Foundation
import KKPushTestSupport
import Testing

/// The README is the front door: its commands are the ones CI and users run, its library example is the file the
/// package compiles, and every file it links to exists.
@Suite("The README matches the code")
struct ReadmeTests {
    static func read(_ relativePath: String) throws -> String {
        try String(contentsOf: Repository.file(relativePath), encoding: .utf8)
    }

    @Test("The README's two commands: the main job, and the test command that .ci/run runs exactly")
    func commands() throws {
        let readme = try Self.read("README.md")
        #expect(readme.contains("bash .ci/setup && swift run kkpush-simulate\n"))
        let ci = try Self.read(".ci/run")
        let testCommand = try #require(ci.split(separator: "\n").last { !$0.hasPrefix("#") && !$0.isEmpty })
        #expect(testCommand == "bash .ci/test")
        #expect(readme.contains("\n\(testCommand)\n"))
    }

    @Test("The README's library example is Sources/KKPushExample/Example.swift, which the package compiles")
    func libraryExample() throws {
        let readme = try Self.read("README.md")
        let example = try Self.read("Sources/KKPushExample/Example.swift")
        #expect(readme.contains("```swift\n" + example + "```\n"), "paste Sources/KKPushExample/Example.swift")
    }

    @Test("The library example runs: one push to the mock it starts, accepted and delivered")
    func libraryExampleRuns() async throws {
        let output = try await runProcess(
            try Repository.builtProduct("kkpush-example"), [], stdin: nil, environment: nil,
            currentDirectory: Repository.root, timeout: 60)
        let stdout = String(decoding: output.stdout, as: UTF8.self)
        #expect(output.status == 0, "\(String(decoding: output.stderr, as: UTF8.self))")
        #expect(stdout.hasPrefix("accepted, apns-id "))
        #expect(stdout.hasSuffix("the mock delivered 1\n"))
    }

    @Test("The README is a front door: at most 400 lines")
    func length() throws {
        let lines = try Self.read("README.md").split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 400)
    }

    @Test("Every file the README links to exists in the repository")
    func links() throws {
        let readme = try Self.read("README.md")
        let pattern = try Regex(#"\]\(([^)#\s]+)(#[^)\s]*)?\)"#)
        var checked = 0
        for match in readme.matches(of: pattern) {
            guard let target = match.output[1].substring.map(String.init), !target.contains("://") else { continue }
            checked += 1
            #expect(FileManager.default.fileExists(atPath: Repository.file(target).path), "README links to \(target)")
        }
        #expect(checked >= 5)
    }

    @Test("Every exit code the README's table lists is one kkpush --help documents")
    func exitCodes() async throws {
        let readme = try Self.read("README.md")
        let help = try await CLI.run(["--help"]).stdout
        let table = try #require(readme.range(of: "## Exit codes")).upperBound
        let rows = readme[table...].split(separator: "\n").prefix { !$0.hasPrefix("## ") }.filter { $0.hasPrefix("| ") }
        let codes = rows.compactMap { $0.split(separator: "|").first }
            .flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            .filter { $0.first?.isNumber == true }
        #expect(codes.count >= 8)
        for code in codes { #expect(help.contains(code), "exit \(code) in the README, not in kkpush --help") }
    }
}
