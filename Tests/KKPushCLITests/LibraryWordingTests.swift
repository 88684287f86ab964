import ArgumentParser
import Foundation
import KKPushCLISupport
import Testing

@testable import KKPushCLI

/// Each layer its own words (#46): no string literal of a library target names a flag (`--probe`), a `kkpush`
/// command (`kkpush jwt decode`) or a README section. A library names its inputs by API name in parentheses,
/// `(keyID)`, and a command it suggests by a placeholder, `(jwtDecodeCommand)`; the CLI maps both in one place,
/// ``FlagWords``. Doc comments may name them: only literals reach users.
@Suite("Library wording")
struct LibraryWordingTests {
    /// The targets that are no library: the command line and what only runs it.
    static let notLibraries: Set<String> = [
        "KKPushCLI", "KKPushCLISupport", "KKPushSimulateCommand", "kkpush", "kkpush-simulate", "KKPushFuzz",
        "KKPushExample",
    ]

    /// Hits allowed in the libraries, counted by file and by what they name: none. A hit is a library message in
    /// the command line's words; name the API input instead, and map it in FlagWords.
    static let knownRemainingHits: [String: Int] = [:]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// The top-level commands (`send`, `jwt`, …): `kkpush <one of them>` is a command suggestion.
    static var commandNames: [String] {
        KKPushCommand.configuration.subcommands.compactMap { $0.configuration.commandName }
    }

    /// Every string literal of every Swift file of every library target: `(file, literal)`, the literal with its
    /// quotes; a line of a multi-line literal counts as one literal. Comments are skipped.
    static func literals() throws -> [(file: String, literal: String)] {
        let fm = FileManager.default
        let targets = try fm.contentsOfDirectory(atPath: sources.path).filter { !notLibraries.contains($0) }.sorted()
        #expect(
            targets.contains("KantineKoning") && targets.contains("KKPushStore") && targets.contains("KKPushSystem"))
        let quoted = try Regex(#""(?:[^"\\]|\\.)*""#)
        var out: [(String, String)] = []
        for target in targets {
            let root = sources.appendingPathComponent(target)
            guard let walker = fm.enumerator(atPath: root.path) else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
                let file = "\(target)/\(path)"
                var inMultiline = false
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if trimmed.hasSuffix("\"\"\"") || trimmed.hasPrefix("\"\"\"") {
                        if trimmed.components(separatedBy: "\"\"\"").count == 2 { inMultiline.toggle() }
                        continue
                    }
                    if inMultiline {
                        out.append((file, trimmed))
                        continue
                    }
                    if trimmed.hasPrefix("//") { continue }
                    for match in line.matches(of: quoted) { out.append((file, String(line[match.range]))) }
                }
            }
        }
        return out
    }

    /// What a literal names that it should not: each flag, `kkpush` command and README in it.
    static func offences(_ literal: String, commands: [String]) -> [String] {
        var found = literal.matches(of: /(?:^|[^A-Za-z0-9-])(--[a-z][a-z-]+)/).map { String($0.1) }
        if literal.contains("README") { found.append("README") }
        found += commands.map { "kkpush \($0)" }.filter { literal.contains($0) }
        return found
    }

    @Test("No library string literal names a flag, a kkpush command or a README section")
    func noCLIWordsInLibraries() throws {
        let commands = Self.commandNames
        #expect(commands.contains("send") && commands.contains("jwt"))
        var counts: [String: Int] = [:]
        var literals: [String: [String]] = [:]
        for (file, literal) in try Self.literals() {
            for word in Self.offences(literal, commands: commands) {
                counts["\(file): \(word)", default: 0] += 1
                literals["\(file): \(word)", default: []].append(literal)
            }
        }
        let new = counts.filter { $0.value > Self.knownRemainingHits[$0.key, default: 0] }.keys.sorted()
        #expect(
            new.isEmpty,
            """
            library literals in CLI words (name the API input, `(keyID)`, or a placeholder, `(jwtDecodeCommand)`, and \
            map it in FlagWords):
            \(new.map { "\($0) (\(counts[$0] ?? 0)): \(literals[$0] ?? [])" }.joined(separator: "\n"))
            all hits now: \(counts.keys.sorted().map { "\"\($0)\": \(counts[$0] ?? 0)," }.joined(separator: " "))
            """)
        // Every known remaining hit is KKPushStore's (or KKPushSystem's), the part another change rewords.
        #expect(
            Self.knownRemainingHits.keys.allSatisfy { $0.hasPrefix("KKPushStore/") || $0.hasPrefix("KKPushSystem/") })
    }

    @Test("Every (…Command) placeholder a library uses is mapped, to the command its name spells")
    func placeholdersAreMapped() throws {
        var used: Set<String> = []
        for (_, literal) in try Self.literals() {
            for match in literal.matches(of: /\(([a-z][A-Za-z]*Command)\)/) { used.insert(String(match.1)) }
            // A placeholder stands alone in its parentheses, or FlagWords cannot find it.
            #expect(literal.firstMatch(of: /\([a-z][A-Za-z]*Command[^A-Za-z)]/) == nil, "\(literal)")
        }
        #expect(used.contains("jwtDecodeCommand"))
        let unmapped = used.filter { FlagWords.commands[$0] == nil }
        #expect(unmapped.isEmpty, "placeholders without a command in FlagWords.commands: \(unmapped.sorted())")
        for (placeholder, command) in FlagWords.commands {
            let words = command.split(separator: " ").dropFirst().flatMap { $0.split(separator: "-") }
            let spelled =
                words.enumerated().map { $0 == 0 ? String($1) : $1.prefix(1).uppercased() + $1.dropFirst() }
                .joined() + "Command"
            #expect(placeholder == spelled, "\(placeholder) → \(command)")
            #expect(Self.commandNames.contains(String(words.first ?? "")), "\(command) is no kkpush command")
        }
    }

    @Test("FlagWords maps an API name and a placeholder alone in parentheses, and nothing else")
    func mapping() {
        let text = FlagWords.common.apply(
            "Use port 2197 (port); decoding it shows kid (jwtDecodeCommand); (portable) (port 1) (the mock (strict))")
        #expect(
            text
                == "Use port 2197 (--port); decoding it shows kid (kkpush jwt decode); (portable) (port 1) (the mock (--strict))"
        )
        #expect(FlagWords.common.apply("no parentheses") == "no parentheses")
        // A command's own words first, then every command's: `tls check` maps `(caPath)` itself, and a library's
        // `(caFile)` (a fix in its report) still reaches the user as the flag (#59: it was printed as `(caFile)`).
        let command = FlagWords(flags: ["caPath": "--ca-path", "host": "HOST[:PORT]"])
        #expect(
            command.apply("a CA file (caFile), a folder (caPath), the host (host), decode (jwtDecodeCommand)")
                == "a CA file (--ca-file), a folder (--ca-path), the host (HOST[:PORT]), decode (kkpush jwt decode)")
        #expect(command.apply("(savedPushesFile) (activityAttributes)") == "(--saved-pushes) (--activity-attributes)")
        #expect(FlagWords.common.apply("(") == "(" && FlagWords.common.apply("a (b") == "a (b")
    }
}
