import Foundation
import Testing

/// The README's CLI reference must match `kkpush help` exactly (regenerate with `.ci/gen-reference`).
@Suite("README matches the code")
struct ReadmeTests {
    static func subcommands(_ path: [String]) throws -> [String] {
        let help = try CLI.run(["help"] + path).stdout
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }
            .compactMap { line -> String? in
                guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
                let name = line.split(separator: " ").first.map(String.init)
                return name == "help" ? nil : name
            }
    }

    static func leaves(_ path: [String] = []) throws -> [[String]] {
        let children = try subcommands(path)
        if children.isEmpty { return [path] }
        return try children.flatMap { try leaves(path + [$0]) }
    }

    @Test("Every command's help is in the README, verbatim")
    func reference() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let commands = try Self.leaves()
        #expect(commands.count >= 10)
        for command in commands {
            let help = try CLI.run(["help"] + command).stdout
                .split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
                .joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
            #expect(readme.contains(help), "README's reference for `kkpush \(command.joined(separator: " "))` is stale: run .ci/gen-reference")
        }
    }

    @Test("The README's two quick-start commands are the ones CI and users run")
    func quickStart() throws {
        let readme = try String(contentsOf: CLI.root.appendingPathComponent("README.md"), encoding: .utf8)
        let ci = try String(contentsOf: CLI.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        let testCommand = try #require(ci.split(separator: "\n").last { !$0.hasPrefix("#") && !$0.isEmpty })
        #expect(readme.contains(String(testCommand)))
    }
}
