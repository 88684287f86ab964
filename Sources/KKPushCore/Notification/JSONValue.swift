import Foundation

/// Any JSON value: the custom keys of a payload, Live Activity content, and payloads read back.
///
/// Encoded compactly (no white space), object keys sorted, slashes not escaped, so the bytes are
/// deterministic and the size is exact. Parsed by kkpush's own strict RFC 8259 parser (see
/// ``parse(_:)``), which keeps integers and decimals apart (`1` is ``int(_:)``, `1.0` ``double(_:)``).
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits in `Int`.
    case int(Int)
    /// Any other number (non-finite values encode as `null`).
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object (encoded with sorted keys).
    case object([String: JSONValue])

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses one JSON text (white space around it allowed).
    ///
    /// Strict: no trailing commas, comments, NaN, single quotes, raw control characters or invalid
    /// UTF-8; nesting deeper than 256 levels is refused. Errors have code `payload-not-json` and name
    /// the byte offset.
    public static func parse(_ bytes: [UInt8]) throws(KKPushError) -> JSONValue {
        var parser = JSONParser(bytes)
        return try parser.parseDocument()
    }

    /// Parses one JSON text from a string.
    public static func parse(_ text: String) throws(KKPushError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// The compact encoding.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    /// The compact encoding as a string.
    public var description: String { String(decoding: encoded(), as: UTF8.self) }

    /// Appends the compact encoding to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let value): out += Array((value ? "true" : "false").utf8)
        case .int(let value): out += Array(String(value).utf8)
        case .double(let value):
            out += Array((value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends an object whose members are written in the order given, not sorted: for output whose field
    /// order is part of its format (send-batch's result lines, `index` first). Values are written as ``write(to:)``.
    public static func writeOrderedObject(_ members: [(String, JSONValue)], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(member.0, to: &out)
            out.append(UInt8(ascii: ":"))
            member.1.write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends `string` as a JSON string: `"` and `\` escaped, control characters as `\n`, `\t`, ...
    /// or `\u00XX`; everything else (including `/` and non-ASCII) as UTF-8.
    public static func writeString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let utf8 = string.utf8
        // Most strings (tokens, ids, reasons) need no escape: copied whole, not byte by byte. A native string's
        // bytes are checked in place (the worker writes every push's outcome through here).
        let copied =
            utf8.withContiguousStorageIfAvailable { bytes -> Bool in
                for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    return false
                }
                out.append(contentsOf: bytes)
                return true
            } ?? false
        if copied {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [0x5C, 0x22]
            case UInt8(ascii: "\\"): out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0x08: out += [0x5C, UInt8(ascii: "b")]
            case 0x0C: out += [0x5C, UInt8(ascii: "f")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: Accessors

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The number as an `Int`, if this is an integer (or a decimal with no fraction).
    public var intValue: Int? {
        switch self {
        case .int(let value): value
        case .double(let value): value.rounded() == value && abs(value) < 9e15 ? Int(value) : nil
        default: nil
        }
    }

    /// The boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The member named `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The JSON type's name: object, array, string, number, boolean or null.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The JSON type's name as a sentence says it, with its article: "an object", "an array", "a string", "a number",
    /// "a boolean"; "null" alone (never "a null").
    public var typeNameWithArticle: String {
        switch self {
        case .null: "null"
        case .array, .object: "an \(typeName)"
        default: "a \(typeName)"
        }
    }

    /// The JSON type as a sentence about JSON input says it: "a JSON array", "a JSON number"; "null" alone (never
    /// "a JSON null").
    public var jsonTypePhrase: String { self == .null ? "null" : "a JSON \(typeName)" }

    /// Reads a command-line value: JSON if it parses as JSON, otherwise the text as a string.
    public static func lenient(_ text: String) -> JSONValue {
        (try? parse(text)) ?? .string(text)
    }
}

/// kkpush's strict JSON parser (RFC 8259), over bytes.
struct JSONParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0
    /// Object keys seen twice (the last value wins), as `path.key`.
    var duplicateKeys: [String] = []
    /// The keys of the root object, in the order they appear.
    var rootKeyOrder: [String] = []
    static let maximumDepth = 256

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(KKPushError) -> JSONValue {
        if let encoding = Self.byteOrderMark(bytes) {
            throw failure(
                "it starts with a byte order mark (\(encoding)), which JSON does not allow",
                fix: "Save the file as UTF-8 without a BOM (most editors offer \"UTF-8\" beside \"UTF-8 with BOM\").")
        }
        skipWhitespace()
        if index == bytes.count { throw failure("the text is empty (only white space)") }
        let value = try parseValue(path: "")
        skipWhitespace()
        if index != bytes.count { throw failure("unexpected text after the JSON value") }
        return value
    }

    func failure(_ what: String, at offset: Int? = nil, fix: String? = nil) -> KKPushError {
        KKPushError(
            code: .payloadNotJson, message: "The payload is not valid JSON: \(what) (at byte \(offset ?? index)).",
            fix: fix
                ?? "Send one JSON object, e.g. {\"aps\":{\"alert\":\"Hallo\"}}; check quotes, commas and braces.")
    }

    /// The encoding a byte order mark at the start of `bytes` names, if there is one: JSON text is UTF-8
    /// without one.
    static func byteOrderMark(_ bytes: [UInt8]) -> String? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return "UTF-8 BOM, bytes EF BB BF" }
        if bytes.starts(with: [0xFF, 0xFE]) { return "UTF-16 little-endian, bytes FF FE: the text is UTF-16" }
        if bytes.starts(with: [0xFE, 0xFF]) { return "UTF-16 big-endian, bytes FE FF: the text is UTF-16" }
        return nil
    }

    /// The failure for a string whose bytes (`raw`, starting at byte `start`) are not UTF-8: the first bad byte,
    /// and what it would be in Latin-1 / Windows-1252, the usual culprit (an `é` saved by an old editor).
    func notUTF8(_ raw: [UInt8], start: Int) -> KKPushError {
        var iterator = raw.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        loop: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput, .error: break loop
            }
        }
        let byte = offset < raw.count ? raw[offset] : 0
        let latin1 = byte >= 0xA0 ? " ('\(Character(Unicode.Scalar(byte)))' in Latin-1)" : ""
        return failure(
            "a string is not UTF-8: byte 0x\(String(byte, radix: 16, uppercase: true))\(latin1); the text looks like Latin-1 (ISO 8859-1) or Windows-1252, not UTF-8",
            at: start + offset,
            fix:
                "Save the file as UTF-8 (iconv -f latin1 -t utf-8 FILE > FILE.utf8, or your editor's \"Save with encoding\")."
        )
    }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func parseValue(path: String) throws(KKPushError) -> JSONValue {
        guard index < bytes.count else { throw failure("the text ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(path: path)
        case UInt8(ascii: "["): return try parseArray(path: path)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default:
            let byte = bytes[index]
            let shown =
                byte >= 0x20 && byte < 0x7F
                ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
            throw failure("unexpected \(shown)")
        }
    }

    mutating func literal(_ word: String) throws(KKPushError) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw failure("expected '\(word)'")
        }
        index += expected.count
    }

    mutating func enter() throws(KKPushError) {
        depth += 1
        if depth > Self.maximumDepth { throw failure("nested deeper than \(Self.maximumDepth) levels") }
    }

    mutating func parseObject(path: String) throws(KKPushError) -> JSONValue {
        try enter()
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a key in quotes")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw failure("expected ':' after a key")
            }
            index += 1
            skipWhitespace()
            let childPath = path.isEmpty ? key : path + "." + key
            let value = try parseValue(path: childPath)
            if members[key] != nil {
                duplicateKeys.append(childPath)
            } else if depth == 1 {
                rootKeyOrder.append(key)
            }
            members[key] = value
            skipWhitespace()
            guard index < bytes.count else { throw failure("the text ends inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(members)
            }
            throw failure("expected ',' or '}' in an object")
        }
    }

    mutating func parseArray(path: String) throws(KKPushError) -> JSONValue {
        try enter()
        index += 1
        var values: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try parseValue(path: path + "[\(values.count)]"))
            skipWhitespace()
            guard index < bytes.count else { throw failure("the text ends inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(values)
            }
            throw failure("expected ',' or ']' in an array")
        }
    }

    mutating func parseString() throws(KKPushError) -> String {
        index += 1  // opening quote
        let start = index
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw failure("the text ends inside a string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: out, as: UTF8.self) else {
                    // Escapes make `out` differ from the bytes only by them; the raw bytes name the place.
                    throw notUTF8(Array(bytes[start..<(index - 1)]), start: start)
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("the text ends inside an escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw failure("a \\u escape has a lone high surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else {
                            throw failure("a \\u escape has a bad low surrogate")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw failure("a \\u escape has a lone low surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("a \\u escape is not a character") }
                    out += Array(String(Character(unicode)).utf8)
                default:
                    throw failure("unknown escape '\\\(Character(Unicode.Scalar(escape)))'")
                }
            case 0x00..<0x20:
                throw failure("a raw control character (0x\(String(byte, radix: 16))) inside a string; escape it")
            default:
                out.append(byte)
                index += 1
            }
        }
    }

    mutating func hex4() throws(KKPushError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape is cut short") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw failure("a \\u escape needs four hex digits")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    mutating func parseNumber() throws(KKPushError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else { throw failure("a number needs digits") }
        if bytes[index] == 0x30 {
            index += 1
            if index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                throw failure("a number has a leading zero")
            }
        } else {
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else {
                throw failure("a number needs digits after '.'")
            }
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, (0x30...0x39).contains(bytes[index]) else {
                throw failure("a number needs exponent digits")
            }
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else { throw failure("the number \(text) is out of range") }
        return .double(value)
    }
}

extension JSONValue {
    /// `.string(value)`, or `.null` if `value` is nil.
    public init(_ value: String?) { self = value.map(JSONValue.string) ?? .null }
    /// `.int(value)`, or `.null` if `value` is nil.
    public init(_ value: Int?) { self = value.map(JSONValue.int) ?? .null }
    /// `.double(value)`, or `.null` if `value` is nil.
    public init(_ value: Double?) { self = value.map(JSONValue.double) ?? .null }
    /// `.bool(value)`, or `.null` if `value` is nil.
    public init(_ value: Bool?) { self = value.map(JSONValue.bool) ?? .null }
    /// The value of any `Encodable` (through `JSONEncoder`), e.g. a stored record.
    public init(encoding value: some Encodable) throws {
        self = try JSONValue.parse(Array(JSONEncoder().encode(value)))
    }
}

extension JSONValue: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    /// An object literal: `["code": "x", "count": 1]`.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// An array literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer literal.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A decimal literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
