package import Foundation
package import KKPushCore

/// What a command prints: one value, from which both its text (for people) and its `--json` document (for scripts)
/// are rendered, so the two never disagree. The value's `Encodable` conformance is the JSON schema: its coding keys
/// are the stable field names scripts read (write `encode(to:)` where a field must be `null` rather than absent).
package protocol CommandReport: Encodable {
    /// The lines a person reads.
    var textLines: [String] { get }
}

/// Writing command output: JSON for scripts, lines for people, errors on stderr.
///
/// Every JSON document a command prints goes through ``printJSON(_:)`` (the one JSON writing path of the CLI);
/// a ``CommandReport`` or any `Encodable` value is encoded by the one ``encoder`` first (``printReport(_:json:)``).
package enum Output {
    /// The CLI's one `JSONEncoder` set-up: dates in ISO 8601, keys as the types name them. Every `Encodable` a
    /// command prints goes through it, then through ``pretty(_:)`` for the layout.
    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    /// `value` as a JSON value, through ``encoder()``; its library words (`(apiName)` placeholders) in this
    /// command line's.
    package static func json(encoding value: some Encodable) -> JSONValue {
        do {
            return FlagWords.common.apply(try JSONValue.parse(Array(encoder().encode(value))))
        } catch {
            // Only a value whose own encode(to:) throws gets here: a bug, said as such rather than a crash.
            return [
                "error": ["code": "unexpected-error", "message": .string("The report could not be encoded: \(error)")]
            ]
        }
    }

    /// Prints `value` as the CLI's JSON document.
    package static func printJSON(encoding value: some Encodable) {
        printJSON(json(encoding: value))
    }

    /// Prints `report`: its JSON document with `json`, else its lines.
    package static func printReport(_ report: some CommandReport, json: Bool) {
        if json {
            printJSON(encoding: report)
        } else {
            for line in report.textLines { Output.printLine(line) }
        }
    }

    /// Writes one line to the running command's standard output.
    package static func printLine(_ line: String) {
        CommandIO.print([line], separator: " ", terminator: "\n")
    }

    /// Prints a JSON value, pretty printed with sorted keys (see ``pretty(_:)``).
    package static func printJSON(_ value: JSONValue) {
        printLine(pretty(value))
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
