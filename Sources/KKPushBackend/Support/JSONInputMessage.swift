import Foundation
import KKPushCore

/// One way to turn a `DecodingError` into words a user can act on, for every JSON input of the backend
/// and the simulator (`backend import`, `backend serve --import`, the admin API's bodies, the simulator's
/// answers): where (`[3].status`), what was expected (for an enum: its valid values), and what was found.
public enum JSONInputMessage {
    /// The error in plain words, without a trailing period: `[3].status is "weird"; expected one of: active, revoked`.
    ///
    /// - Parameters:
    ///   - error: the decoder's error (anything else is described as "is not valid JSON").
    ///   - choices: the valid values of enum fields, by field name (the last key of the path).
    public static func describe(_ error: any Error, choices: [String: [String]] = [:]) -> String {
        guard let decoding = error as? DecodingError else { return "it is not valid JSON" }
        switch decoding {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing (a required field)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) is null; expected \(words(for: type))"
        case .typeMismatch(let type, let context):
            let found = foundPart(context.debugDescription)
            return "\(path(context.codingPath)) has the wrong type: expected \(words(for: type))\(found.map { ", found \($0)" } ?? "")"
        case .dataCorrupted(let context):
            let text = context.debugDescription
            if context.codingPath.isEmpty, context.underlyingError != nil || text.localizedCaseInsensitiveContains("not valid JSON") {
                return "it is not valid JSON\(position(context.underlyingError).map { " (\($0))" } ?? "")"
            }
            let where_ = path(context.codingPath)
            if let value = invalidEnumValue(text) {
                let name = context.codingPath.last?.stringValue ?? ""
                if let valid = choices[name] {
                    return "\(where_) is \"\(value)\"; expected one of: \(valid.joined(separator: ", "))"
                }
                return "\(where_) is \"\(value)\", which is not one of its valid values"
            }
            return "\(where_): \(text.hasSuffix(".") ? String(text.dropLast()) : text)"
        @unknown default:
            return "it is not valid JSON"
        }
    }

    /// What is wrong with `bytes` as JSON text ("unexpected character '}' (at byte 12)"), or nil if it is
    /// valid JSON (kkpush's own strict parser, which names the byte).
    public static func syntaxError(_ bytes: [UInt8]) -> String? {
        let start = Array(bytes.drop { [0x20, 0x09, 0x0A, 0x0D].contains($0) }.prefix(16))
        if start.starts(with: Array("-----BEGIN".utf8)) { return "it is PEM (a key or a certificate), not JSON" }
        if start.starts(with: Array("SQLite format 3".utf8)) { return "it is an SQLite database, not JSON" }
        do {
            _ = try JSONValue.parse(bytes)
            return nil
        } catch {
            var text = error.message
            if let r = text.range(of: "not valid JSON: ") { text = String(text[r.upperBound...]) }
            if text.hasSuffix(".") { text.removeLast() }
            return text
        }
    }

    /// A coding path as a user reads it: `[3].status`, `team_codes[0]`; the empty path is "the top level".
    public static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let i = key.intValue, key.stringValue.hasPrefix("Index") || key.stringValue == "\(i)" {
                text += "[\(i)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? "the top level" : text
    }

    /// What a Swift type is in JSON words.
    static func words(for type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Array") || name.hasPrefix("[") {
            if name.contains("String") { return "an array of strings" }
            return "an array"
        }
        if name.hasPrefix("Dictionary") || name.hasPrefix("[String") { return "an object" }
        switch name {
        case "String": return "a string"
        case "Bool": return "true or false"
        case "Int", "Int32", "Int64", "UInt", "UInt32", "UInt64", "Int16", "Int8", "UInt8", "UInt16": return "a whole number"
        case "Double", "Float", "Decimal": return "a number"
        default: return "a \(name)"
        }
    }

    /// "an object" from Foundation's "Expected to decode Array<Any> but found a dictionary instead."
    private static func foundPart(_ text: String) -> String? {
        guard let start = text.range(of: "but found ") else { return nil }
        var found = String(text[start.upperBound...])
        for suffix in [" instead.", " instead", "."] where found.hasSuffix(suffix) {
            found = String(found.dropLast(suffix.count))
            break
        }
        switch found.lowercased() {
        case "a dictionary": return "an object"
        case "a string/data": return "a string"
        case "a number", "number": return "a number"
        case "null", "null value": return "null"
        default: return found
        }
    }

    /// The value of Foundation's "Cannot initialize X from invalid String value weird".
    private static func invalidEnumValue(_ text: String) -> String? {
        guard text.hasPrefix("Cannot initialize "), let r = text.range(of: " from invalid ") else { return nil }
        let rest = text[r.upperBound...]
        guard let value = rest.range(of: " value ") else { return nil }
        return String(rest[value.upperBound...])
    }

    /// Line and column of a JSON syntax error, where Foundation tells.
    private static func position(_ underlying: (any Error)?) -> String? {
        guard let underlying else { return nil }
        let text = "\(underlying)"
        if let r = text.range(of: "line "), let c = text.range(of: "column ") {
            let line = text[r.upperBound...].prefix { $0.isNumber }
            let column = text[c.upperBound...].prefix { $0.isNumber }
            if !line.isEmpty, !column.isEmpty { return "line \(line), column \(column)" }
        }
        let nsError = underlying as NSError
        if let index = nsError.userInfo["NSJSONSerializationErrorIndex"] as? Int { return "at byte \(index + 1)" }
        return nil
    }
}
