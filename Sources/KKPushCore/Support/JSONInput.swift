import Foundation

/// Strict reading of JSON a user wrote (a config file, a batch line, an admin request body): syntax errors
/// with their line and column, keys nobody reads refused with the nearest known key, and decoding errors
/// turned into sentences that name the field path (`devices[2].token`) and the fix.
public enum JSONInput {
    /// The keys each object may have, at every nesting level.
    public indirect enum Shape: Sendable {
        /// Anything (a payload, free-form data): not checked.
        case any
        /// An object with these keys (each with the shape of its value).
        case object([String: Shape])
        /// A list whose elements have this shape.
        case array(Shape)

        /// An object whose keys all hold scalars.
        public static func fields(_ names: [String]) -> Shape {
            .object(Dictionary(uniqueKeysWithValues: names.map { ($0, Shape.any) }))
        }
    }

    /// A key the shape does not know.
    public struct UnknownKey: Sendable, Equatable {
        /// Where the object is (`devices[2]`), empty at the top level.
        public var path: String
        /// The key.
        public var key: String
        /// The nearest known key, if one is close.
        public var suggestion: String?
        /// The keys known there.
        public var known: [String]

        /// `unknown key `sandbox_prot`; did you mean `sandbox_port`?`
        public var message: String {
            let at = path.isEmpty ? "" : " in `\(path)`"
            return "unknown key `\(key)`\(at)" + (suggestion.map { "; did you mean `\($0)`?" } ?? "")
        }

        /// What to do about it.
        public var fix: String {
            if let suggestion { return "Rename `\(key)` to `\(suggestion)` (keys are case-sensitive), or remove it." }
            return
                "Remove `\(key)`; the keys known\(path.isEmpty ? " at the top level" : " in `\(path)`") are: \(known.joined(separator: ", "))."
        }
    }

    /// Parses `bytes` as one JSON value; a syntax error names its line and column.
    ///
    /// - Parameters:
    ///   - what: the input, for messages (`The config file x.json`, `Line 3`).
    ///   - code: the error's code (should contain `malformed`, so the CLI exits 2).
    ///   - fix: what to do, appended after the position.
    public static func parse(_ bytes: [UInt8], what: String, code: KKPushError.Code, fix: String) throws(KKPushError)
        -> JSONValue
    {
        let start = bytes.prefix(64).drop(while: { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) })
        if start.starts(with: Array("-----BEGIN".utf8)) {
            throw KKPushError(
                code: code, message: "\(what) is a PEM file (a certificate or a key), not JSON.", fix: fix)
        }
        do {
            return try JSONValue.parse(bytes)
        } catch {
            let (reason, offset) = syntaxError(error)
            var where_ = ""
            if let offset {
                let (line, column) = position(of: offset, in: bytes)
                where_ = bytes.contains(0x0A) ? " at line \(line), column \(column)" : " at column \(column)"
            }
            throw KKPushError(code: code, message: "\(what) is not valid JSON: \(reason)\(where_).", fix: fix)
        }
    }

    /// Decodes `bytes` as `T`, strictly: a syntax error names its line and column (code `<codePrefix>-malformed`),
    /// a key `shape` does not know is refused with the nearest known key, and a wrong type or value names the
    /// field path (both `<codePrefix>-invalid`). `what` starts the message (`The config file x.json`); `format`
    /// says what the input must be.
    public static func decodeStrict<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], shape: Shape, what: String, codePrefix: String, format: String
    ) throws -> T {
        let root = try parse(
            bytes, what: what, code: KKPushError.Code("\(codePrefix)-malformed", kind: .input),
            fix: "Correct the JSON at that place; it must be \(format).")
        try checkKeys(root, shape: shape, what: what, code: KKPushError.Code("\(codePrefix)-invalid", kind: .input))
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            // Foundation reports a number that does not fit its field (1e20 or 1.5 for a whole number) as
            // "not valid JSON" with no path: find the number by replacing each in turn.
            if case DecodingError.dataCorrupted(let ctx) = error, ctx.codingPath.isEmpty,
                let (path, value) = misfitNumber(T.self, in: root)
            {
                throw KKPushError(
                    code: KKPushError.Code("\(codePrefix)-invalid", kind: .input),
                    message: "\(what): `\(path)` is \(value), which does not fit: it must be a whole number in range.",
                    fix: "Give `\(path)` a whole number (no fraction, no exponent).")
            }
            let d = describe(error, in: root)
            throw KKPushError(
                code: KKPushError.Code("\(codePrefix)-invalid", kind: .input),
                message: "\(what): \(sentence(d.message))", fix: d.fix)
        }
    }

    /// The number in `root` that makes decoding `T` fail (its path and text), if replacing it by 0 makes the
    /// decoder's error go away or change.
    static func misfitNumber<T: Decodable>(_ type: T.Type, in root: JSONValue) -> (String, String)? {
        var numbers: [([PathStep], JSONValue)] = []
        collectNumbers(root, at: [], into: &numbers)
        for (steps, value) in numbers.prefix(1000) {
            let fixed = replacing(root, at: steps[...], with: .int(0))
            do {
                _ = try JSONDecoder().decode(T.self, from: Data(fixed.encoded()))
                return (render(steps), value.description)
            } catch DecodingError.dataCorrupted(let ctx) where ctx.codingPath.isEmpty {
                continue
            } catch {
                return (render(steps), value.description)
            }
        }
        return nil
    }

    enum PathStep {
        case key(String)
        case index(Int)
    }

    private static func collectNumbers(
        _ value: JSONValue, at path: [PathStep], into out: inout [([PathStep], JSONValue)]
    ) {
        switch value {
        case .double: out.append((path, value))
        case .object(let members):
            for key in members.keys.sorted() { collectNumbers(members[key]!, at: path + [.key(key)], into: &out) }
        case .array(let items):
            for (i, item) in items.enumerated() { collectNumbers(item, at: path + [.index(i)], into: &out) }
        default: break
        }
    }

    private static func replacing(_ value: JSONValue, at path: ArraySlice<PathStep>, with new: JSONValue) -> JSONValue {
        guard let step = path.first else { return new }
        switch (step, value) {
        case (.key(let k), .object(var members)):
            if let inner = members[k] { members[k] = replacing(inner, at: path.dropFirst(), with: new) }
            return .object(members)
        case (.index(let i), .array(var items)) where i < items.count:
            items[i] = replacing(items[i], at: path.dropFirst(), with: new)
            return .array(items)
        default:
            return value
        }
    }

    private static func render(_ steps: [PathStep]) -> String {
        var text = ""
        for step in steps {
            switch step {
            case .key(let k): text = join(text, k)
            case .index(let i): text += "[\(i)]"
            }
        }
        return text
    }

    /// Throws for the first key of `value` that `shape` does not know.
    public static func checkKeys(_ value: JSONValue, shape: Shape, what: String, code: KKPushError.Code)
        throws(KKPushError)
    {
        if let unknown = unknownKey(in: value, shape: shape) {
            throw KKPushError(code: code, message: "\(what): \(sentence(unknown.message))", fix: unknown.fix)
        }
    }

    /// `text` ending in one full stop (or its own question mark).
    public static func sentence(_ text: String) -> String {
        text.hasSuffix(".") || text.hasSuffix("?") ? text : text + "."
    }

    /// The reason and byte offset of one of ``JSONValue/parse(_:)-(String)``'s errors.
    static func syntaxError(_ error: KKPushError) -> (String, Int?) {
        var text = error.message
        if let colon = text.range(of: "not valid JSON: ") { text = String(text[colon.upperBound...]) }
        if text.hasSuffix(".") { text.removeLast() }
        guard let open = text.range(of: " (at byte ", options: .backwards), text.hasSuffix(")") else {
            return (text, nil)
        }
        let number = text[open.upperBound..<text.index(before: text.endIndex)]
        return (String(text[..<open.lowerBound]), Int(number))
    }

    /// The 1-based line and column (in characters) of byte `offset`.
    static func position(of offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        let end = min(offset, bytes.count)
        for i in 0..<end where bytes[i] == 0x0A {
            line += 1
            lineStart = i + 1
        }
        let column = String(decoding: bytes[lineStart..<end], as: UTF8.self).count + 1
        return (line, column)
    }

    /// The first key of `value` (depth first, keys in sorted order) that `shape` does not know.
    public static func unknownKey(in value: JSONValue, shape: Shape, path: String = "") -> UnknownKey? {
        switch (shape, value) {
        case (.object(let known), .object(let members)):
            for key in members.keys.sorted() {
                guard let inner = known[key] else {
                    let names = known.keys.sorted()
                    return UnknownKey(path: path, key: key, suggestion: nearest(key, among: names), known: names)
                }
                if let found = unknownKey(in: members[key]!, shape: inner, path: join(path, key)) { return found }
            }
        case (.array(let element), .array(let items)):
            for (i, item) in items.enumerated() {
                if let found = unknownKey(in: item, shape: element, path: "\(path)[\(i)]") { return found }
            }
        default:
            break
        }
        return nil
    }

    /// The known name nearest to `key` (edit distance, ignoring case), if it is close enough to be a typo.
    public static func nearest(_ key: String, among names: [String]) -> String? {
        let lower = Array(key.lowercased())
        var best: (String, Int)? = nil
        for name in names {
            let d = distance(lower, Array(name.lowercased()))
            if best == nil || d < best!.1 { best = (name, d) }
        }
        guard let best else { return nil }
        let limit = max(1, min(3, max(lower.count, best.0.count) / 3))
        return best.1 <= limit ? best.0 : nil
    }

    /// Levenshtein distance with adjacent transpositions (`prot` → `port` is 1).
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }

    /// `devices[2].token` from a decoder's coding path (plus `key`).
    public static func path(_ codingPath: [any CodingKey], _ key: (any CodingKey)? = nil) -> String {
        var text = ""
        for k in codingPath + (key.map { [$0] } ?? []) {
            if let i = k.intValue, k.stringValue.hasPrefix("Index ") || k.stringValue == "\(i)" {
                text += "[\(i)]"
            } else {
                text = join(text, k.stringValue)
            }
        }
        return text
    }

    private static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// The value at a coding path in `root`.
    static func value(at codingPath: [any CodingKey], in root: JSONValue) -> JSONValue? {
        var current: JSONValue? = root
        for k in codingPath {
            if let i = k.intValue, let items = current?.arrayValue {
                current = i < items.count ? items[i] : nil
            } else {
                current = current?.objectValue?[k.stringValue]
            }
        }
        return current
    }

    /// A decoding error as a sentence naming the field path, and its fix. `root` is the parsed JSON the
    /// decoder read (to say what was found).
    public static func describe(_ error: any Error, in root: JSONValue?) -> (message: String, fix: String) {
        guard let error = error as? DecodingError else {
            if let e = error as? KKPushError { return (e.message, e.fix ?? "") }
            return ("\(error)", "Check the JSON against its description.")
        }
        switch error {
        case .keyNotFound(let key, let ctx):
            let field = path(ctx.codingPath, key)
            let parent = path(ctx.codingPath)
            return (
                "the field `\(field)` is missing",
                "Add `\(key.stringValue)`\(parent.isEmpty ? " at the top level" : " to `\(parent)`")."
            )
        case .typeMismatch(let type, let ctx), .valueNotFound(let type, let ctx):
            let field = path(ctx.codingPath)
            let expected = words(for: type)
            let found = root.flatMap { value(at: ctx.codingPath, in: $0) }
            let foundText =
                found.map {
                    " is \($0.typeName == "null" ? "null" : "\(article($0.typeName)) \($0.typeName) (\(shortText($0)))")"
                } ?? " has the wrong type"
            if field.isEmpty {
                return ("the whole text\(foundText), but must be \(expected)", "Write it as \(expected).")
            }
            return ("`\(field)`\(foundText), but must be \(expected)", "Give `\(field)` \(expected).")
        case .dataCorrupted(let ctx):
            let field = path(ctx.codingPath)
            var text = ctx.debugDescription
            if text.hasPrefix("Cannot initialize"), let found = root.flatMap({ value(at: ctx.codingPath, in: $0) }) {
                text = "\(shortText(found)) is not a valid value"
            }
            return (
                field.isEmpty ? text : "`\(field)`: \(text)",
                field.isEmpty ? "Check the JSON against its description." : "Correct the value of `\(field)`."
            )
        @unknown default:
            return ("\(error)", "Check the JSON against its description.")
        }
    }

    private static func article(_ word: String) -> String {
        ["a", "e", "i", "o", "u"].contains(word.prefix(1)) ? "an" : "a"
    }

    private static func shortText(_ value: JSONValue) -> String {
        let text = value.description
        return text.count > 40 ? String(text.prefix(37)) + "..." : text
    }

    // MARK: Short messages (the backend's and the simulator's inputs)

    /// A decoding error as one short clause without a trailing period, for the backend's and the
    /// simulator's inputs (`backend import`, the admin API's bodies, the simulator's answers): where
    /// (`[3].status`), what was expected (for an enum: its valid values), and what was found:
    /// `[3].status is "weird"; expected one of: active, revoked`.
    ///
    /// - Parameters:
    ///   - error: the decoder's error (anything else is described as "is not valid JSON").
    ///   - choices: the valid values of enum fields, by field name (the last key of the path).
    public static func clause(for error: any Error, choices: [String: [String]] = [:]) -> String {
        guard let decoding = error as? DecodingError else { return "it is not valid JSON" }
        switch decoding {
        case .keyNotFound(let key, let context):
            return "\(fieldPath(context.codingPath + [key])) is missing (a required field)"
        case .valueNotFound(let type, let context):
            return "\(fieldPath(context.codingPath)) is null; expected \(words(for: type))"
        case .typeMismatch(let type, let context):
            let found = foundPart(context.debugDescription)
            return
                "\(fieldPath(context.codingPath)) has the wrong type: expected \(words(for: type))\(found.map { ", found \($0)" } ?? "")"
        case .dataCorrupted(let context):
            let text = context.debugDescription
            if context.codingPath.isEmpty,
                context.underlyingError != nil || text.localizedCaseInsensitiveContains("not valid JSON")
            {
                return "it is not valid JSON\(linePosition(context.underlyingError).map { " (\($0))" } ?? "")"
            }
            let where_ = fieldPath(context.codingPath)
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
    public static func syntaxProblem(_ bytes: [UInt8]) -> String? {
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

    /// ``path(_:_:)``, with the empty path as "the top level".
    public static func fieldPath(_ keys: [any CodingKey]) -> String {
        let text = path(keys)
        return text.isEmpty ? "the top level" : text
    }

    /// What a Swift type is in JSON words: "a string", "a whole number", "an array of strings", ...
    public static func words(for type: Any.Type) -> String {
        let name = String(describing: type)
        if name.hasPrefix("Array") || name.hasPrefix("[") {
            if name.contains("String") { return "an array of strings" }
            return "an array"
        }
        if name.hasPrefix("Dictionary") || name.hasPrefix("[String") || name.hasPrefix("Optional<Dictionary") {
            return "an object"
        }
        switch name {
        case "String", "Substring": return "a string"
        case "Bool": return "true or false"
        case "Int", "Int32", "Int64", "UInt", "UInt32", "UInt64", "Int16", "Int8", "UInt8", "UInt16":
            return "a whole number"
        case "Double", "Float", "Decimal": return "a number"
        default: return "an object"  // a struct of kkpush's (an enum decodes from a String)
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

    /// Line and column of a JSON syntax error, where Foundation's decoder tells.
    private static func linePosition(_ underlying: (any Error)?) -> String? {
        guard let underlying else { return nil }
        let text = "\(underlying)"
        if let r = text.range(of: "line "), let c = text.range(of: "column ") {
            let line = text[r.upperBound...].prefix { $0.isNumber }
            let column = text[c.upperBound...].prefix { $0.isNumber }
            if !line.isEmpty, !column.isEmpty { return "line \(line), column \(column)" }
        }
        return nil
    }
}
