/// Reads an app's `ActivityAttributes` type from its Swift source into an ``ActivityAttributesDescription``.
///
/// A small reader, not a Swift compiler. It reads the declarations a Live Activity's types are written with:
/// `struct X: ActivityAttributes { struct ContentState: Codable, Hashable { var a: Int } var b: String }`, stored
/// properties (`var`/`let`, several per line, `public`/`private` and attributes such as `@available(...)` skipped)
/// with their types: `String`, the integer types, `Double`/`Float`/`CGFloat`, `Bool`, `Date`, `URL`, `UUID`,
/// `[T]`, `[String: T]`, `T?`, `Optional<T>`, `Array<T>`, `ClosedRange<T>`/`Range<T>`, structs of the same file
/// and enums with `String` or `Int` raw values (their cases' raw values read, `case a = "x"` included); and
/// `typealias ContentState = State`. Computed properties, `static` members, methods and initialisers are skipped;
/// a `let` with a value is not decoded (as the compiler's synthesized `Codable` does). What it cannot read it
/// refuses by name, with `activity-attributes-source`: a type it does not know (another file's), custom
/// `CodingKeys` or `init(from:)`, an enum without a raw type, a property without a type annotation.
public enum ActivityAttributesSource {
    /// The description of the `ActivityAttributes` type `name` in `source` (nil: the only one there). `sourceName`
    /// (the file's path) names the source in errors; without it they say `(activityAttributesSource)`.
    public static func describe(_ source: String, name: String? = nil, sourceName: String? = nil) throws(KKPushError)
        -> ActivityAttributesDescription
    {
        func failure(_ what: String) -> KKPushError { Self.failure(what, sourceName: sourceName) }
        var parser = Parser(tokens: tokenize(source))
        let declarations: [Declaration]
        do {
            declarations = try parser.declarations(until: nil)
        } catch let error as SourceError {
            throw failure(error.message)
        } catch {
            throw failure("\(error)")
        }
        var index = Index()
        index.add(declarations, prefix: "")
        let candidates = index.structs.values.filter { $0.conformances.contains("ActivityAttributes") }
            .sorted { $0.qualifiedName < $1.qualifiedName }
        let chosen: StructDecl
        if let name {
            guard let found = candidates.first(where: { $0.qualifiedName == name || $0.name == name }) else {
                throw failure(
                    "no struct \(name) conforming to ActivityAttributes (found: \(candidates.map(\.qualifiedName).joined(separator: ", ")))"
                )
            }
            chosen = found
        } else {
            guard candidates.count == 1, let only = candidates.first else {
                throw failure(
                    candidates.isEmpty
                        ? "no struct conforming to ActivityAttributes"
                        : "several ActivityAttributes types (\(candidates.map(\.qualifiedName).joined(separator: ", "))); name the one to read (activityAttributesName)"
                )
            }
            chosen = only
        }
        do {
            let attributes = try index.fields(of: chosen)
            guard let stateName = index.resolveName("ContentState", in: chosen.qualifiedName),
                let state = index.structs[stateName]
            else {
                throw SourceError(message: "\(chosen.name) has no ContentState struct (or typealias ContentState = X)")
            }
            return ActivityAttributesDescription(
                name: chosen.name, attributes: attributes, contentState: try index.fields(of: state))
        } catch let error as SourceError {
            throw failure(error.message)
        } catch {
            throw failure("\(error)")
        }
    }

    static func failure(_ what: String, sourceName: String?) -> KKPushError {
        KKPushError(
            code: .activityAttributesSource,
            message:
                "The Swift source \(sourceName.map { "'\($0)'" } ?? "(activityAttributesSource)") cannot be read as an ActivityAttributes type: \(what).",
            fix:
                "Give the file that declares the ActivityAttributes struct, its ContentState and the types they use; or write the description's JSON by hand."
        )
    }

    struct SourceError: Error { var message: String }

    // MARK: Tokens

    /// Identifiers, punctuation (one character each; `->` kept whole) and string literals (as `"`).
    static func tokenize(_ source: String) -> [String] {
        let chars = Array(source.unicodeScalars)
        var tokens: [String] = []
        var i = 0
        func isIdent(_ c: Unicode.Scalar) -> Bool {
            c == "_" || c.properties.isAlphabetic || ("0"..."9").contains(c)
        }
        while i < chars.count {
            let c = chars[i]
            if c == "/" && i + 1 < chars.count && chars[i + 1] == "/" {
                while i < chars.count && chars[i] != "\n" { i += 1 }
            } else if c == "/" && i + 1 < chars.count && chars[i + 1] == "*" {
                var depth = 0
                repeat {
                    if chars[i] == "/" && i + 1 < chars.count && chars[i + 1] == "*" {
                        depth += 1
                        i += 2
                    } else if chars[i] == "*" && i + 1 < chars.count && chars[i + 1] == "/" {
                        depth -= 1
                        i += 2
                    } else {
                        i += 1
                    }
                } while depth > 0 && i < chars.count
            } else if c == "\"" {
                // A string literal (raw values): its text kept as "…".
                var text = ""
                let triple = i + 2 < chars.count && chars[i + 1] == "\"" && chars[i + 2] == "\""
                i += triple ? 3 : 1
                while i < chars.count {
                    if chars[i] == "\\" && i + 1 < chars.count {
                        text.unicodeScalars.append(chars[i + 1])
                        i += 2
                        continue
                    }
                    if chars[i] == "\""
                        && (!triple || (i + 2 < chars.count && chars[i + 1] == "\"" && chars[i + 2] == "\""))
                    {
                        i += triple ? 3 : 1
                        break
                    }
                    text.unicodeScalars.append(chars[i])
                    i += 1
                }
                tokens.append("\"" + text)
            } else if isIdent(c) {
                var word = ""
                while i < chars.count && isIdent(chars[i]) {
                    word.unicodeScalars.append(chars[i])
                    i += 1
                }
                tokens.append(word)
            } else if c == "-" && i + 1 < chars.count && chars[i + 1] == ">" {
                tokens.append("->")
                i += 2
            } else if c.properties.isWhitespace {
                i += 1
            } else {
                tokens.append(String(c))
                i += 1
            }
        }
        return tokens
    }

    // MARK: Declarations

    indirect enum TypeRef: Equatable {
        case named(String, [TypeRef])
        case array(TypeRef)
        case dictionary(TypeRef, TypeRef)
        case optional(TypeRef)
    }

    struct Property {
        var name: String
        var type: TypeRef
    }

    struct StructDecl {
        var name: String
        var qualifiedName = ""
        var conformances: [String]
        var properties: [Property] = []
        var nested: [Declaration] = []
        var aliases: [String: TypeRef] = [:]
        var unreadable: String? = nil
    }

    struct EnumDecl {
        var name: String
        var qualifiedName = ""
        var rawType: String?
        var rawValues: [String] = []
        var hasAssociatedValues = false
        var nested: [Declaration] = []
    }

    enum Declaration {
        case structure(StructDecl)
        case enumeration(EnumDecl)
        case alias(String, TypeRef)
        case extensionOf(String, [Declaration])
    }

    struct Parser {
        var tokens: [String]
        var i = 0

        var peek: String? { i < tokens.count ? tokens[i] : nil }

        mutating func next() -> String? {
            defer { i += 1 }
            return peek
        }

        mutating func expect(_ token: String) throws {
            guard next() == token else {
                throw SourceError(message: "expected '\(token)' near token \(i) ('\(tokens[max(0, i - 1)])')")
            }
        }

        /// Skips a balanced group that starts at the current `open` token.
        mutating func skipGroup(_ open: String, _ close: String) {
            guard peek == open else { return }
            var depth = 0
            while let t = next() {
                if t == open { depth += 1 }
                if t == close {
                    depth -= 1
                    if depth == 0 { return }
                }
            }
        }

        static let modifiers: Set<String> = [
            "public", "private", "fileprivate", "internal", "package", "open", "final", "nonisolated", "mutating",
            "nonmutating", "override", "required", "convenience", "lazy", "weak", "unowned", "indirect", "dynamic",
        ]

        /// Declarations until `}` (consumed) or the end.
        mutating func declarations(until close: String?) throws -> [Declaration] {
            var out: [Declaration] = []
            var isStatic = false
            while let t = peek {
                if t == close {
                    i += 1
                    return out
                }
                if t == "@" {
                    i += 1
                    _ = next()
                    if peek == "(" { skipGroup("(", ")") }
                    continue
                }
                if t == "#" {
                    // #if / #else / #endif lines: both branches read.
                    i += 1
                    _ = next()
                    if peek == "(" { skipGroup("(", ")") }
                    continue
                }
                if Self.modifiers.contains(t) {
                    i += 1
                    if peek == "(" { skipGroup("(", ")") }
                    continue
                }
                if t == "static"
                    || t == "class" && tokens.indices.contains(i + 1) && ["var", "let", "func"].contains(tokens[i + 1])
                {
                    isStatic = true
                    i += 1
                    continue
                }
                switch t {
                case "struct":
                    i += 1
                    out.append(.structure(try structure()))
                case "enum":
                    i += 1
                    out.append(.enumeration(try enumeration()))
                case "extension":
                    i += 1
                    var name = next() ?? ""
                    while peek == "." {
                        i += 1
                        name += "." + (next() ?? "")
                    }
                    while peek != "{" && peek != nil { i += 1 }
                    try expect("{")
                    out.append(.extensionOf(name, try declarations(until: "}")))
                case "typealias":
                    i += 1
                    let name = next() ?? ""
                    if peek == "<" { skipGroup("<", ">") }
                    try expect("=")
                    out.append(.alias(name, try typeRef()))
                case "var", "let":
                    i += 1
                    let stored = try properties(isLet: t == "let" || isStatic)
                    if !isStatic { out += stored.map { .alias("\u{0}property", .named($0.name, [$0.type])) } }
                case "case":
                    i += 1
                    out += try cases()
                case "func", "init", "subscript", "deinit":
                    i += 1
                    let isDecoder =
                        t == "init" && peek == "(" && tokens.indices.contains(i + 1) && tokens[i + 1] == "from"
                    while let p = peek, p != "{" && p != "}" {
                        if p == "(" { skipGroup("(", ")") } else { i += 1 }
                    }
                    if peek == "{" { skipGroup("{", "}") }
                    if isDecoder { out.append(.alias("\u{0}init(from:)", .named("", []))) }
                case "class", "actor", "protocol":
                    i += 1
                    while peek != "{" && peek != nil { i += 1 }
                    skipGroup("{", "}")
                case "import":
                    i += 1
                    _ = next()
                    while peek == "." {
                        i += 1
                        _ = next()
                    }
                default:
                    i += 1
                }
                isStatic = false
            }
            if close != nil { throw SourceError(message: "a '{' is never closed") }
            return out
        }

        mutating func conformances() -> [String] {
            var out: [String] = []
            guard peek == ":" else { return out }
            i += 1
            while let t = peek, t != "{", t != "where" {
                if t != "," && t != "&" && t != "." { out.append(t) }
                i += 1
            }
            while peek != "{" && peek != nil { i += 1 }
            return out
        }

        mutating func structure() throws -> StructDecl {
            let name = next() ?? ""
            if peek == "<" { skipGroup("<", ">") }
            var decl = StructDecl(name: name, conformances: conformances())
            try expect("{")
            for member in try declarations(until: "}") {
                switch member {
                case .alias("\u{0}property", .named(let property, let types)):
                    decl.properties.append(Property(name: property, type: types[0]))
                case .alias("\u{0}init(from:)", _):
                    decl.unreadable = "\(name) has its own init(from:)"
                case .alias(let alias, let type):
                    decl.aliases[alias] = type
                case .enumeration(let e) where e.name == "CodingKeys":
                    decl.unreadable = "\(name) has its own CodingKeys"
                default:
                    decl.nested.append(member)
                }
            }
            return decl
        }

        mutating func enumeration() throws -> EnumDecl {
            let name = next() ?? ""
            var decl = EnumDecl(name: name)
            let conforms = conformances()
            decl.rawType = conforms.first {
                ["String", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64"]
                    .contains($0)
            }
            try expect("{")
            for member in try declarations(until: "}") {
                switch member {
                case .alias("\u{0}case", .named(let caseName, let raw)):
                    if raw.first == .named("\u{0}associated", []) {
                        decl.hasAssociatedValues = true
                    } else if case .named(let value, _)? = raw.first {
                        decl.rawValues.append(value)
                    } else {
                        decl.rawValues.append(caseName)
                    }
                case .alias("\u{0}property", _), .alias("\u{0}init(from:)", _):
                    break
                default:
                    decl.nested.append(member)
                }
            }
            if decl.rawType?.hasPrefix("Int") == true || decl.rawType?.hasPrefix("UInt") == true {
                // Int raw values: implicit ones count up from the last explicit one.
                var values: [String] = []
                var nextValue = 0
                for raw in decl.rawValues {
                    if let n = Int(raw) {
                        values.append(raw)
                        nextValue = n + 1
                    } else {
                        values.append(String(nextValue))
                        nextValue += 1
                    }
                }
                decl.rawValues = values
            }
            return decl
        }

        /// `case a, b = "x", c(Int)`: one pseudo-declaration per case (raw value, or a marker for associated values).
        mutating func cases() throws -> [Declaration] {
            var out: [Declaration] = []
            while let name = next() {
                var raw: [TypeRef] = []
                if peek == "(" {
                    skipGroup("(", ")")
                    raw = [.named("\u{0}associated", [])]
                }
                if peek == "=" {
                    i += 1
                    var literal = next() ?? ""
                    if literal == "-", let n = next() { literal = "-" + n }
                    raw = [.named(literal.hasPrefix("\"") ? String(literal.dropFirst()) : literal, [])]
                }
                out.append(.alias("\u{0}case", .named(name, raw)))
                guard peek == "," else { break }
                i += 1
            }
            return out
        }

        /// `a: T, b: U = x` after `var`/`let`: the stored ones.
        mutating func properties(isLet: Bool) throws -> [Property] {
            var out: [Property] = []
            while true {
                if peek == "(" { throw SourceError(message: "a tuple pattern (var (a, b) = …) is not read") }
                let name = next() ?? ""
                guard peek == ":" else {
                    if peek == "=" && isLet {
                        // Not decoded: a let with a value.
                        i += 1
                        skipExpression()
                        guard peek == "," else { return out }
                        i += 1
                        continue
                    }
                    if peek == "=" {
                        throw SourceError(message: "\(name) has no type annotation (write var \(name): Type = …)")
                    }
                    throw SourceError(message: "\(name): expected ': Type'")
                }
                i += 1
                let type = try typeRef()
                var stored = true
                if peek == "=" {
                    i += 1
                    skipExpression()
                    // A let with a value is not decoded by the synthesized init(from:).
                    if isLet { stored = false }
                }
                if peek == "{" {
                    let first = tokens.indices.contains(i + 1) ? tokens[i + 1] : ""
                    stored = ["willSet", "didSet"].contains(first)
                    skipGroup("{", "}")
                }
                if stored { out.append(Property(name: name, type: type)) }
                guard peek == "," else { return out }
                i += 1
            }
        }

        /// Skips an initial value: to the next `,` or declaration start at depth 0.
        mutating func skipExpression() {
            var depth = 0
            let starts: Set<String> = [
                "var", "let", "func", "struct", "enum", "case", "init", "static", "typealias", "@", "}",
            ]
            while let t = peek {
                let afterDot = i > 0 && tokens[i - 1] == "."
                if depth == 0 && !afterDot && (t == "," || starts.contains(t) || Self.modifiers.contains(t)) { return }
                if depth == 0 && t == "{" {
                    // A closure value: skip it.
                    skipGroup("{", "}")
                    continue
                }
                if t == "(" || t == "[" { depth += 1 }
                if t == ")" || t == "]" { depth -= 1 }
                i += 1
            }
        }

        mutating func typeRef() throws -> TypeRef {
            var type: TypeRef
            if peek == "[" {
                i += 1
                let first = try typeRef()
                if peek == ":" {
                    i += 1
                    let value = try typeRef()
                    type = .dictionary(first, value)
                } else {
                    type = .array(first)
                }
                try expect("]")
            } else if peek == "(" {
                throw SourceError(message: "a tuple or function type is not Codable")
            } else {
                guard var name = next(), name.first.map({ $0 == "_" || $0.isLetter }) == true else {
                    throw SourceError(message: "expected a type near token \(i)")
                }
                var arguments: [TypeRef] = []
                while peek == "." {
                    i += 1
                    name += "." + (next() ?? "")
                }
                if peek == "<" {
                    i += 1
                    while true {
                        arguments.append(try typeRef())
                        if peek == "," {
                            i += 1
                            continue
                        }
                        break
                    }
                    try expect(">")
                }
                type = .named(name, arguments)
            }
            while peek == "?" || peek == "!" {
                i += 1
                type = .optional(type)
            }
            return type
        }
    }

    // MARK: Resolving

    struct Index {
        var structs: [String: StructDecl] = [:]
        var enums: [String: EnumDecl] = [:]
        var aliases: [String: TypeRef] = [:]

        mutating func add(_ declarations: [Declaration], prefix: String) {
            for declaration in declarations {
                switch declaration {
                case .structure(var s):
                    s.qualifiedName = prefix + s.name
                    if let existing = structs[s.qualifiedName] {
                        s.properties = existing.properties + s.properties
                    }
                    for (alias, type) in s.aliases { aliases[s.qualifiedName + "." + alias] = type }
                    structs[s.qualifiedName] = s
                    add(s.nested, prefix: s.qualifiedName + ".")
                case .enumeration(var e):
                    e.qualifiedName = prefix + e.name
                    enums[e.qualifiedName] = e
                    add(e.nested, prefix: e.qualifiedName + ".")
                case .alias(let name, let type) where !name.hasPrefix("\u{0}"):
                    aliases[prefix + name] = type
                case .extensionOf(let name, let members):
                    // Members of an extension: nested types and aliases (stored properties cannot be added).
                    add(members, prefix: name + ".")
                default:
                    break
                }
            }
        }

        /// The qualified name `name` means inside `scope` (innermost first), through type aliases.
        func resolveName(_ name: String, in scope: String, depth: Int = 0) -> String? {
            var parts = scope.split(separator: ".").map(String.init)
            while true {
                let candidate = (parts + [name]).joined(separator: ".")
                if structs[candidate] != nil || enums[candidate] != nil { return candidate }
                if let alias = aliases[candidate], case .named(let target, let args) = alias, args.isEmpty, depth < 8 {
                    return resolveName(target, in: parts.joined(separator: "."), depth: depth + 1)
                }
                if parts.isEmpty { return nil }
                parts.removeLast()
            }
        }

        func fields(of s: StructDecl, depth: Int = 0) throws -> [ActivityAttributesDescription.Field] {
            if let unreadable = s.unreadable {
                throw SourceError(message: "\(unreadable), which this reader does not follow")
            }
            guard depth < 16 else { throw SourceError(message: "\(s.qualifiedName) nests itself") }
            return try s.properties.map {
                ActivityAttributesDescription.Field(
                    $0.name, try fieldType($0.type, in: s.qualifiedName, owner: "\(s.name).\($0.name)", depth: depth))
            }
        }

        func fieldType(_ type: TypeRef, in scope: String, owner: String, depth: Int) throws
            -> ActivityAttributesDescription.FieldType
        {
            switch type {
            case .optional(let t): return .optional(try fieldType(t, in: scope, owner: owner, depth: depth))
            case .array(let t): return .array(try fieldType(t, in: scope, owner: owner, depth: depth))
            case .dictionary(let key, let value):
                guard case .named("String", []) = key else {
                    throw SourceError(message: "\(owner): only [String: T] dictionaries are read")
                }
                return .dictionary(try fieldType(value, in: scope, owner: owner, depth: depth))
            case .named(let name, let args):
                switch (name, args.count) {
                case ("Optional", 1): return .optional(try fieldType(args[0], in: scope, owner: owner, depth: depth))
                case ("Array", 1): return .array(try fieldType(args[0], in: scope, owner: owner, depth: depth))
                case ("ClosedRange", 1), ("Range", 1):
                    return .range(try fieldType(args[0], in: scope, owner: owner, depth: depth))
                case ("Dictionary", 2):
                    return try fieldType(.dictionary(args[0], args[1]), in: scope, owner: owner, depth: depth)
                default: break
                }
                switch name {
                case "String", "Substring", "Character": return .string
                case "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64":
                    return .int
                case "Double", "Float", "CGFloat", "Float32", "Float64", "Decimal": return .double
                case "Bool": return .bool
                case "Date", "Foundation.Date": return .date
                case "URL", "Foundation.URL": return .url
                case "UUID", "Foundation.UUID": return .uuid
                default: break
                }
                if let alias = aliases[scope + "." + name] ?? aliases[name], depth < 16 {
                    return try fieldType(alias, in: scope, owner: owner, depth: depth + 1)
                }
                guard let qualified = resolveName(name, in: scope) else {
                    throw SourceError(
                        message:
                            "\(owner) has the type \(name), which is not declared in the file (give the file that declares it too)"
                    )
                }
                if let s = structs[qualified] {
                    return .object(name: s.name, fields: try fields(of: s, depth: depth + 1))
                }
                let e = enums[qualified]!
                guard let raw = e.rawType, !e.hasAssociatedValues else {
                    throw SourceError(
                        message:
                            "\(owner) is the enum \(e.name), which has no String or Int raw type (its Codable form is not read)"
                    )
                }
                return .enumeration(name: e.name, raw: raw == "String" ? .string : .int, values: e.rawValues)
            }
        }
    }
}
