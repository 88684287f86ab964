package import Foundation
package import KKPushCore

/// Writing command output: JSON for scripts, lines for people, errors on stderr.
///
/// Every JSON document a command prints is a ``JSONValue`` written by ``printJSON(_:)`` (the one JSON
/// writing path of the CLI).
package enum Output {
    /// Prints a JSON value, pretty printed with sorted keys (see ``pretty(_:)``).
    package static func printJSON(_ value: JSONValue) {
        print(pretty(value))
    }

    /// A JSON value as the CLI prints it: two-space indentation, `"key" : value`, keys sorted as
    /// Foundation sorts them (numeric, case-insensitive), slashes not escaped, decimals without a
    /// trailing `.0`, and empty containers as `{` + blank line + `}` (the layout scripts and tests have
    /// always read).
    package static func pretty(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        writePretty(value, indent: 0, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func writePretty(_ value: JSONValue, indent: Int, to out: inout [UInt8]) {
        func newline(_ level: Int) {
            out.append(0x0A)
            out += [UInt8](repeating: 0x20, count: 2 * level)
        }
        switch value {
        case .double(let number):
            guard number.isFinite else {
                out += Array("null".utf8)
                return
            }
            var text = number.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            out += Array(text.utf8)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            if values.isEmpty { out.append(0x0A) }
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                writePretty(element, indent: indent + 1, to: &out)
            }
            newline(indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            if members.isEmpty { out.append(0x0A) }
            for (index, key) in sortedKeys(members).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                JSONValue.writeString(key, to: &out)
                out += Array(" : ".utf8)
                writePretty(members[key]!, indent: indent + 1, to: &out)
            }
            newline(indent)
            out.append(UInt8(ascii: "}"))
        default:
            value.write(to: &out)
        }
    }

    /// Object keys in the order Foundation's `.sortedKeys` gives them (numeric, case-insensitive, in the
    /// root locale: `_` before digits before letters).
    private static func sortedKeys(_ members: [String: JSONValue]) -> [String] {
        members.keys.sorted {
            $0.compare(
                $1, options: [.numeric, .caseInsensitive, .forcedOrdering], range: $0.startIndex..<$0.endIndex,
                locale: rootLocale)
                == .orderedAscending
        }
    }

    private static let rootLocale = Locale(identifier: "")

    /// Writes one line to standard error (a closed stderr is ignored, never fatal).
    package static func printError(_ line: String) {
        StandardError.line(line)
    }

    /// A problem as a JSON object: `{severity, code, message, fix}`.
    package static func json(_ problem: Problem) -> JSONValue {
        let problem = FlagWords.common.apply(problem)
        return [
            "severity": .string(problem.severity.rawValue), "code": .string(problem.code),
            "message": .string(problem.message), "fix": .string(problem.fix),
        ]
    }

    /// Problems as a JSON array of ``json(_:)`` objects.
    package static func json(_ problems: [Problem]) -> JSONValue {
        .array(problems.map { json($0) })
    }

    /// Problems as human lines: `  error CODE: message` + `    fix: ...`.
    package static func lines(_ problems: [Problem], indent: String = "  ") -> [String] {
        problems.map(FlagWords.common.apply).flatMap { p in
            ["\(indent)\(p.severity.rawValue) \(p.code): \(p.message)", "\(indent)  fix: \(p.fix)"]
        }
    }
}

extension Output {
    /// Rows of cells as left-aligned text columns, each as wide as its widest cell plus two spaces (the
    /// last column unpadded), so that no two columns ever run together.
    package static func table(_ rows: [[String]]) -> [String] {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i] + 2, withPad: " ", startingAt: 0)
            }.joined()
        }
    }
}
