package import ArgumentParser
package import Foundation

/// Typos that ArgumentParser reports as something else, found before that report is shown.
///
/// ArgumentParser names the first problem it meets: `kkpush send --tokn abc` gets "Missing expected argument
/// '--token'", `kkpush sned --token x` gets "Unknown option '--token'", `kkpush channel --help` prints the
/// root's help and exits 0, and a `validate()` error hides a misspelt flag behind it. When parsing fails
/// (or asks for help), this walks the command line as the user wrote it: a word where a subcommand belongs
/// must be one, and every `--long` option must be one the command has; the first that is not is the error,
/// with the nearest real name.
package enum CommandSpelling {
    /// The misspelling in `arguments`, if any: the message and the command whose usage to show.
    package struct Mistake: Error {
        package var message: String
        package var command: any ParsableCommand.Type
    }

    package static func mistake(in arguments: [String], root: any ParsableCommand.Type) -> Mistake? {
        var command = root
        var path = [root.configuration.commandName ?? root._commandName]
        var index = 0
        // The subcommand words.
        while index < arguments.count, !command.configuration.subcommands.isEmpty {
            let word = arguments[index]
            if word.hasPrefix("-") { break }
            if word == "help" && command == root && index == 0 {  // `kkpush help send`: the words after it
                index += 1
                continue
            }
            let children = command.configuration.subcommands
            if let child = children.first(where: { names(of: $0).contains(word) }) {
                command = child
                path.append(child.configuration.commandName ?? child._commandName)
                index += 1
                continue
            }
            let known = children.flatMap { names(of: $0) }
            let suggestion = nearest(word, in: known).map { " Did you mean '\($0)'?" } ?? ""
            return Mistake(
                message:
                    "'\(path.joined(separator: " "))' has no command '\(word)'.\(suggestion) Its commands: \(children.map { $0.configuration.commandName ?? $0._commandName }.joined(separator: ", ")).",
                command: command)
        }
        // The options of the command reached.
        let (longNames, takesValue) = options(of: command)
        var skipNext = false
        for word in arguments[index...] {
            if skipNext {
                skipNext = false
                continue
            }
            if word == "--" { break }
            guard word.hasPrefix("--"), word.count > 2 else { continue }
            let name = String(word.dropFirst(2).prefix { $0 != "=" })
            if longNames.contains(name) {
                skipNext = takesValue.contains(name) && !word.contains("=")
                continue
            }
            let suggestion = nearest(name, in: Array(longNames)).map { " Did you mean '--\($0)'?" } ?? ""
            return Mistake(message: "Unknown option '--\(name)'.\(suggestion)", command: command)
        }
        return nil
    }

    /// A command's name and aliases.
    package static func names(of command: any ParsableCommand.Type) -> [String] {
        [command.configuration.commandName ?? command._commandName] + command.configuration.aliases
    }

    /// The long option names of `command` (from ArgumentParser's own description of it, its help dump, decoded
    /// as the typed shape below) and those that take a value.
    package static func options(of command: any ParsableCommand.Type) -> (names: Set<String>, takingValue: Set<String>)
    {
        var names: Set<String> = ["help", "version", "experimental-dump-help", "generate-completion-script"]
        var takingValue: Set<String> = ["generate-completion-script"]
        guard let dump = try? JSONDecoder().decode(HelpDump.self, from: Data(command._dumpHelp().utf8)) else {
            return (names, takingValue)
        }
        for argument in dump.command.arguments ?? [] {
            let long = (argument.names ?? []).filter { $0.kind == "long" }.map(\.name)
            names.formUnion(long)
            if argument.kind == "option" { takingValue.formUnion(long) }
        }
        return (names, takingValue)
    }

    /// The part of ArgumentParser's help dump (`--experimental-dump-help`, its `ToolInfoV0`) this reads: each
    /// argument's kind (`flag`, `option`, `positional`) and names.
    struct HelpDump: Decodable {
        struct Command: Decodable {
            var arguments: [Argument]?
        }
        struct Argument: Decodable {
            var kind: String
            var names: [Name]?
        }
        struct Name: Decodable {
            var kind: String
            var name: String
        }
        var command: Command
    }

    /// The name in `candidates` closest to `word` (at most a third of its letters off, or one it starts), if any.
    package static func nearest(_ word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        if best.1 <= max(1, word.count / 3) { return best.0 }
        return candidates.first { $0.hasPrefix(word) && word.count >= 3 }
    }

    /// Levenshtein distance, with an adjacent swap counted as one edit (`sned` → `send`).
    package static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previousRow: [Int] = []
        var row = Array(0...b.count)
        for i in 1...a.count {
            let beforePrevious = previousRow
            previousRow = row
            row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                row[j] = min(previousRow[j] + 1, row[j - 1] + 1, previousRow[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    row[j] = min(row[j], beforePrevious[j - 2] + 1)
                }
            }
        }
        return row[b.count]
    }
}
