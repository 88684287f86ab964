import Foundation
import KKPushCore

/// Writing command output: JSON for scripts, lines for people, errors on stderr.
enum Output {
    /// Prints a JSON object (from `[String: Any]`, arrays, strings, numbers, `NSNull`) with sorted keys.
    static func printJSON(_ object: Any) {
        let options: JSONSerialization.WritingOptions = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard JSONSerialization.isValidJSONObject(object),
            let data = try? JSONSerialization.data(withJSONObject: object, options: options),
            let text = String(data: data, encoding: .utf8)
        else {
            printError("internal error: output is not valid JSON")
            return
        }
        print(text)
    }

    /// Writes one line to standard error (a closed stderr is ignored, never fatal).
    static func printError(_ line: String) {
        StandardError.line(line)
    }

    /// A problem as a JSON object: `{severity, code, message, fix}`.
    static func json(_ problem: Problem) -> [String: Any] {
        ["severity": problem.severity.rawValue, "code": problem.code, "message": problem.message, "fix": problem.fix]
    }

    /// Problems as human lines: `  error CODE: message` + `    fix: ...`.
    static func lines(_ problems: [Problem], indent: String = "  ") -> [String] {
        problems.flatMap { p in
            ["\(indent)\(p.severity.rawValue) \(p.code): \(p.message)", "\(indent)  fix: \(p.fix)"]
        }
    }

    /// `value` or JSON null.
    static func orNull(_ value: Any?) -> Any { value ?? NSNull() }
}

extension Output {
    /// Rows of cells as left-aligned text columns, each as wide as its widest cell plus two spaces (the
    /// last column unpadded), so that no two columns ever run together.
    static func table(_ rows: [[String]]) -> [String] {
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
