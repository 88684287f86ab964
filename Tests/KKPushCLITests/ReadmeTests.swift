import Foundation
import Testing

/// The README's CLI reference must match `kkpush help` exactly (regenerate with `.ci/gen-reference`).
@Suite("README matches the code")
struct ReadmeTests {
    static func subcommands(_ path: [String]) async throws -> [String] {
        let help = try await CLI.run(["help"] + path).stdout
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }
            .compactMap { line -> String? in
                guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
                let name = line.split(separator: " ").first.map(String.init)
                return name == "help" ? nil : name
            }
    }

    static func leaves(_ path: [String] = []) async throws -> [[String]] {
        let children = try await subcommands(path)
        if children.isEmpty { return [path] }
        var all: [[String]] = []
        for child in children { all += try await leaves(path + [child]) }
        return all
    }

    @Test("Every command's help is in the README, verbatim")
    func reference() async throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let commands = try await Self.leaves()
        #expect(commands.count >= 10)
        for command in commands {
            let help = try await CLI.run(["help"] + command).stdout
                .split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
                .joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
            #expect(
                readme.contains(help),
                "README's reference for `kkpush \(command.joined(separator: " "))` is stale: run .ci/gen-reference")
        }
    }

    @Test("The README's two quick-start commands are the ones CI and users run")
    func quickStart() async throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let ci = try String(contentsOf: CLI.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        let testCommand = try #require(ci.split(separator: "\n").last { !$0.hasPrefix("#") && !$0.isEmpty })
        #expect(readme.contains(String(testCommand)))
    }
}
