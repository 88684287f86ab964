/// The declarations of one Swift file that a Live Activity's types are written with, read token by token: structs,
/// enums, extensions, type aliases, stored properties and enum cases, each with the file and line it is on. Function
/// and computed-property bodies, initial values and closures are skipped as balanced groups; what decides a
/// synthesized `Codable` form is kept: `CodingKeys`, an own `init(from:)`, `#if` around a property, property
/// wrappers and generic parameters.
///
/// A hand reader rather than SwiftSyntax (swift-syntax): see ``ActivityAttributesSource`` for why.
struct SwiftDeclarations {
    /// Where a declaration is: the file's name as given and its 1-based line.
    struct Origin: Equatable, Sendable {
        var file: String
        var line: Int
    }

    struct Token: Equatable {
        enum Kind: Equatable { case identifier, string, punctuation }
        var text: String
        var kind: Kind
        var line: Int
    }

    indirect enum TypeRef: Equatable {
        case named(String, [TypeRef])
        case array(TypeRef)
        case dictionary(TypeRef, TypeRef)
        case optional(TypeRef)
        /// A type no JSON decodes (a function, tuple, existential, opaque or metatype), as written.
        case notCodable(String)

        var spelled: String {
            switch self {
            case .named(let name, let args):
                args.isEmpty ? name : "\(name)<\(args.map(\.spelled).joined(separator: ", "))>"
            case .array(let t): "[\(t.spelled)]"
            case .dictionary(let k, let v): "[\(k.spelled): \(v.spelled)]"
            case .optional(let t): "\(t.spelled)?"
            case .notCodable(let text): text
            }
        }
    }

    struct Property {
        var name: String
        var type: TypeRef
        var origin: Origin
        /// Declared inside `#if … #endif` in its type's body: decoded only in the builds that compile it.
        var conditional: Bool
        /// A property wrapper's attribute (`@Clamped`): its Codable form is the wrapper's.
        var wrapper: String?
        /// Why it cannot be read (no type annotation, a tuple pattern): refused only when its type is decoded, so a
        /// view model or widget in the same file does not stop the reader.
        var unreadable: String? = nil
    }

    struct StructDecl {
        var name: String
        var qualifiedName = ""
        var conformances: [String]
        /// `<T>` of a generic struct, as written.
        var genericParameters: String?
        var properties: [Property] = []
        var nested: [Declaration] = []
        var origin: Origin
    }

    struct Case {
        var name: String
        /// The raw value written (`case a = "x"`), nil when implicit.
        var raw: String?
        var hasAssociatedValues: Bool
    }

    struct EnumDecl {
        var name: String
        var qualifiedName = ""
        var conformances: [String]
        var genericParameters: String?
        var cases: [Case] = []
        var nested: [Declaration] = []
        var origin: Origin
    }

    enum Declaration {
        case structure(StructDecl)
        case enumeration(EnumDecl)
        case alias(String, TypeRef, Origin)
        /// `extension Name: Conformances { members }`.
        case extensionOf(String, [String], [Declaration], Origin)
        case property(Property)
        case enumCase(Case)
        /// `init(from decoder:)`: the type decodes itself.
        case decoderInit(Origin)
    }

    struct Failure: Error {
        var message: String
        var origin: Origin?
    }

    // MARK: Tokens

    /// Identifiers (backticks removed: `` `default` `` is `default`), string literals (their text, escapes and
    /// interpolations read as the compiler does, raw strings `#"…"#` included), punctuation (one character; `->`
    /// whole). Comments, nested block comments included, are dropped.
    static func tokenize(_ source: String) -> [Token] {
        let chars = Array(source.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        var line = 1
        func isIdent(_ c: Unicode.Scalar) -> Bool {
            c == "_" || c == "$" || c.properties.isAlphabetic || ("0"..."9").contains(c)
        }
        func at(_ k: Int) -> Unicode.Scalar? { k < chars.count ? chars[k] : nil }
        /// Reads a string literal whose opening quote(s) start at `i` after `hashes` `#`s; returns its text.
        func readString(hashes: Int) -> String {
            var text = ""
            let triple = at(i + 1) == "\"" && at(i + 2) == "\""
            i += triple ? 3 : 1
            func closes(_ k: Int) -> Bool {
                guard at(k) == "\"" else { return false }
                if triple && !(at(k + 1) == "\"" && at(k + 2) == "\"") { return false }
                let after = k + (triple ? 3 : 1)
                return (0..<hashes).allSatisfy { at(after + $0) == "#" }
            }
            while i < chars.count {
                let c = chars[i]
                if closes(i) {
                    i += (triple ? 3 : 1) + hashes
                    break
                }
                if c == "\\" && (0..<hashes).allSatisfy({ at(i + 1 + $0) == "#" }) {
                    let e = i + 1 + hashes
                    guard let escaped = at(e) else {
                        i = e
                        break
                    }
                    if escaped == "(" {
                        // An interpolation: skipped to its closing parenthesis, strings inside it included.
                        i = e
                        var depth = 0
                        while i < chars.count {
                            if chars[i] == "(" { depth += 1 }
                            if chars[i] == ")" {
                                depth -= 1
                                if depth == 0 {
                                    i += 1
                                    break
                                }
                            }
                            if chars[i] == "\"" {
                                _ = readString(hashes: 0)
                                continue
                            }
                            if chars[i] == "\n" { line += 1 }
                            i += 1
                        }
                        continue
                    }
                    switch escaped {
                    case "n": text += "\n"
                    case "t": text += "\t"
                    case "r": text += "\r"
                    case "0": text += "\0"
                    case "u":
                        var hex = ""
                        var k = e + 2
                        while let h = at(k), h != "}" {
                            hex.unicodeScalars.append(h)
                            k += 1
                        }
                        if let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) {
                            text.unicodeScalars.append(scalar)
                        }
                        i = k + 1
                        continue
                    case "\n": line += 1
                    default: text.unicodeScalars.append(escaped)
                    }
                    i = e + 1
                    continue
                }
                if c == "\n" { line += 1 }
                text.unicodeScalars.append(c)
                i += 1
            }
            return text
        }
        while i < chars.count {
            let c = chars[i]
            if c == "\n" {
                line += 1
                i += 1
            } else if c == "/" && at(i + 1) == "/" {
                while i < chars.count && chars[i] != "\n" { i += 1 }
            } else if c == "/" && at(i + 1) == "*" {
                var depth = 0
                repeat {
                    if chars[i] == "/" && at(i + 1) == "*" {
                        depth += 1
                        i += 2
                    } else if chars[i] == "*" && at(i + 1) == "/" {
                        depth -= 1
                        i += 2
                    } else {
                        if chars[i] == "\n" { line += 1 }
                        i += 1
                    }
                } while depth > 0 && i < chars.count
            } else if c == "\"" || (c == "#" && rawStringStart(chars, i) != nil) {
                let start = line
                var hashes = 0
                if c == "#" {
                    hashes = rawStringStart(chars, i) ?? 0
                    i += hashes
                }
                tokens.append(Token(text: readString(hashes: hashes), kind: .string, line: start))
            } else if c == "`" {
                var word = ""
                i += 1
                while let w = at(i), w != "`", w != "\n" {
                    word.unicodeScalars.append(w)
                    i += 1
                }
                i += 1
                tokens.append(Token(text: word, kind: .identifier, line: line))
            } else if isIdent(c) {
                var word = ""
                while let w = at(i), isIdent(w) {
                    word.unicodeScalars.append(w)
                    i += 1
                }
                tokens.append(Token(text: word, kind: .identifier, line: line))
            } else if c == "-" && at(i + 1) == ">" {
                tokens.append(Token(text: "->", kind: .punctuation, line: line))
                i += 2
            } else if c.properties.isWhitespace {
                i += 1
            } else {
                tokens.append(Token(text: String(c), kind: .punctuation, line: line))
                i += 1
            }
        }
        return tokens
    }

    /// The number of `#` opening a raw string at `i` (`#"`, `##"`), or nil.
    static func rawStringStart(_ chars: [Unicode.Scalar], _ i: Int) -> Int? {
        var k = i
        while k < chars.count && chars[k] == "#" { k += 1 }
        return k > i && k < chars.count && chars[k] == "\"" ? k - i : nil
    }

    // MARK: Parsing

    let file: String
    let tokens: [Token]
    var i = 0

    init(file: String, source: String) {
        self.file = file
        tokens = Self.tokenize(source)
    }

    /// Every declaration of the file.
    static func read(file: String, source: String) throws(Failure) -> [Declaration] {
        var reader = SwiftDeclarations(file: file, source: source)
        do {
            return try reader.declarations(until: nil)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(message: "\(error)", origin: nil)
        }
    }

    var peek: String? { i < tokens.count ? tokens[i].text : nil }
    var peekIsIdentifier: Bool { i < tokens.count && tokens[i].kind == .identifier }
    func token(_ k: Int) -> Token? { k >= 0 && k < tokens.count ? tokens[k] : nil }
    var origin: Origin { Origin(file: file, line: token(i)?.line ?? token(tokens.count - 1)?.line ?? 1) }

    mutating func next() -> String? {
        defer { i += 1 }
        return peek
    }

    func failure(_ message: String, at origin: Origin? = nil) -> Failure {
        Failure(message: message, origin: origin ?? self.origin)
    }

    mutating func expect(_ text: String, after what: String) throws {
        guard peek == text, token(i)?.kind == .punctuation else {
            throw failure("expected '\(text)' after \(what), found \(peek.map { "'\($0)'" } ?? "the end of the file")")
        }
        i += 1
    }

    /// Skips a balanced group that starts at the current `open` token.
    mutating func skipGroup(_ open: String, _ close: String) {
        guard peek == open else { return }
        var depth = 0
        while let t = token(i) {
            i += 1
            guard t.kind == .punctuation else { continue }
            if t.text == open { depth += 1 }
            if t.text == close {
                depth -= 1
                if depth == 0 { return }
            }
        }
    }

    /// Skips the rest of the line the token before the current one is on (a `#if` condition).
    mutating func skipRestOfLine() {
        guard let line = token(i - 1)?.line else { return }
        while let t = token(i), t.line == line { i += 1 }
    }

    static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "package", "open", "final", "nonisolated", "mutating",
        "nonmutating", "override", "required", "convenience", "lazy", "weak", "unowned", "indirect", "dynamic",
        "optional", "consuming", "borrowing", "distributed", "isolated", "prefix", "postfix", "infix",
    ]

    /// Attributes that are not property wrappers (the uppercase ones; lowercase attributes never are).
    static let plainAttributes: Set<String> = ["MainActor", "Sendable", "ObservationIgnored", "ObservationTracked"]

    /// Declarations until `}` (consumed) or the end of the file.
    mutating func declarations(until close: String?) throws -> [Declaration] {
        var out: [Declaration] = []
        var isStatic = false
        var attributes: [String] = []
        // The depth of `#if` blocks inside this body: a property declared in one is conditional.
        var conditional = 0
        while let t = token(i) {
            if t.kind == .punctuation && t.text == close {
                i += 1
                return out
            }
            if t.kind == .punctuation && t.text == "@" {
                i += 1
                var name = next() ?? ""
                while peek == "." && token(i + 1)?.kind == .identifier {
                    i += 1
                    name += "." + (next() ?? "")
                }
                if peek == "(" && token(i)?.line == token(i - 1)?.line { skipGroup("(", ")") }
                attributes.append(name)
                continue
            }
            if t.kind == .punctuation && t.text == "#" {
                i += 1
                let directive = next() ?? ""
                switch directive {
                case "if":
                    conditional += 1
                    skipRestOfLine()
                case "elseif":
                    skipRestOfLine()
                case "else":
                    break
                case "endif":
                    conditional = max(0, conditional - 1)
                default:
                    // A freestanding macro (#Preview, #warning): its arguments and trailing closures.
                    if peek == "(" { skipGroup("(", ")") }
                    while true {
                        if peek == "{" {
                            skipGroup("{", "}")
                        } else if peekIsIdentifier, token(i + 1)?.text == ":", token(i + 2)?.text == "{" {
                            i += 2
                            skipGroup("{", "}")
                        } else {
                            break
                        }
                    }
                }
                continue
            }
            if t.kind != .identifier {
                i += 1
                continue
            }
            if Self.modifiers.contains(t.text) {
                i += 1
                if peek == "(" { skipGroup("(", ")") }
                continue
            }
            if t.text == "static" || t.text == "class" && ["var", "let", "func"].contains(token(i + 1)?.text ?? "") {
                isStatic = true
                i += 1
                continue
            }
            let at = origin
            switch t.text {
            case "struct":
                i += 1
                out.append(.structure(try structure(at: at)))
            case "enum":
                i += 1
                out.append(.enumeration(try enumeration(at: at)))
            case "extension":
                i += 1
                let name = qualifiedName()
                if peek == "<" { skipGroup("<", ">") }
                let conforms = conformances()
                try expect("{", after: "extension \(name)")
                out.append(.extensionOf(name, conforms, try declarations(until: "}"), at))
            case "typealias":
                i += 1
                let name = next() ?? ""
                if peek == "<" { skipGroup("<", ">") }
                try expect("=", after: "typealias \(name)")
                out.append(.alias(name, try typeRef(), at))
            case "var", "let":
                i += 1
                let stored = try properties(
                    isLet: t.text == "let" || isStatic, conditional: conditional > 0,
                    wrapper: attributes.first { $0.first?.isUppercase == true && !Self.plainAttributes.contains($0) })
                if !isStatic { out += stored.map(Declaration.property) }
            case "case":
                i += 1
                out += try cases().map(Declaration.enumCase)
            case "init":
                i += 1
                while peek == "?" || peek == "!" { i += 1 }
                var isDecoder = false
                if peek == "(" {
                    let start = i
                    isDecoder = token(i + 1)?.text == "from"
                    skipGroup("(", ")")
                    isDecoder = isDecoder && tokens[start..<i].contains { $0.text == "Decoder" }
                }
                skipSignatureAndBody()
                if isDecoder { out.append(.decoderInit(at)) }
            case "func", "subscript", "deinit", "macro", "operator", "precedencegroup", "associatedtype":
                i += 1
                skipSignatureAndBody()
            case "class", "actor", "protocol":
                i += 1
                while let p = peek, p != "{" && p != "}" { i += 1 }
                skipGroup("{", "}")
            case "import":
                i += 1
                if peekIsIdentifier,
                    ["struct", "enum", "class", "protocol", "typealias", "func", "var", "let"]
                        .contains(peek ?? "")
                {
                    i += 1
                }
                _ = qualifiedName()
            default:
                i += 1
            }
            isStatic = false
            attributes = []
        }
        if close != nil { throw failure("a '{' is never closed (the file ends first)") }
        return out
    }

    /// Skips a function's (or initialiser's, subscript's) signature and body.
    mutating func skipSignatureAndBody() {
        while let p = peek, p != "{" && p != "}" {
            if p == "(" {
                skipGroup("(", ")")
            } else if token(i)?.kind == .identifier
                && ["var", "let", "func", "struct", "enum", "case", "init", "typealias", "static"].contains(p)
                && token(i - 1)?.text != "."
            {
                return  // a requirement without a body
            } else {
                i += 1
            }
        }
        if peek == "{" { skipGroup("{", "}") }
    }

    /// `A.B.C` at the current token.
    mutating func qualifiedName() -> String {
        var name = next() ?? ""
        while peek == "." && token(i + 1)?.kind == .identifier {
            i += 1
            name += "." + (next() ?? "")
        }
        return name
    }

    /// `: A, B.C & D` up to the body's `{` (a `where` clause and `#if` lines inside skipped).
    mutating func conformances() -> [String] {
        var out: [String] = []
        guard peek == ":" else {
            while let p = peek, p != "{" { i += 1 }
            return out
        }
        i += 1
        while let t = token(i), !(t.kind == .punctuation && t.text == "{") {
            if t.kind == .identifier && t.text == "where" {
                while let p = peek, p != "{" { i += 1 }
                break
            }
            if t.kind == .punctuation && t.text == "#" {
                i += 2
                if token(i - 1)?.text == "if" || token(i - 1)?.text == "elseif" { skipRestOfLine() }
                continue
            }
            if t.kind == .identifier {
                out.append(qualifiedName())
                if peek == "<" { skipGroup("<", ">") }
                continue
            }
            i += 1
        }
        return out
    }

    /// `<T, U: P>` after a type's name, as written.
    mutating func genericParameters() -> String? {
        guard peek == "<" else { return nil }
        let start = i
        skipGroup("<", ">")
        return tokens[start..<i].map { $0.text == "," ? ", " : $0.text }.joined()
    }

    mutating func structure(at origin: Origin) throws -> StructDecl {
        let name = next() ?? ""
        let generic = genericParameters()
        var decl = StructDecl(name: name, conformances: conformances(), genericParameters: generic, origin: origin)
        try expect("{", after: "struct \(name)")
        for member in try declarations(until: "}") {
            if case .property(let p) = member {
                decl.properties.append(p)
            } else {
                decl.nested.append(member)
            }
        }
        return decl
    }

    mutating func enumeration(at origin: Origin) throws -> EnumDecl {
        let name = next() ?? ""
        let generic = genericParameters()
        var decl = EnumDecl(name: name, conformances: conformances(), genericParameters: generic, origin: origin)
        try expect("{", after: "enum \(name)")
        for member in try declarations(until: "}") {
            switch member {
            case .enumCase(let c): decl.cases.append(c)
            case .property, .decoderInit: break
            default: decl.nested.append(member)
            }
        }
        return decl
    }

    /// `case a, b = "x", c(Int)`.
    mutating func cases() throws -> [Case] {
        var out: [Case] = []
        while let name = next() {
            var c = Case(name: name, raw: nil, hasAssociatedValues: false)
            if peek == "(" {
                skipGroup("(", ")")
                c.hasAssociatedValues = true
            }
            if peek == "=" {
                i += 1
                var literal = next() ?? ""
                if literal == "-", let n = next() { literal = "-" + n }
                // A number's fraction: `1.5`.
                while peek == ".", let fraction = token(i + 1), fraction.kind == .identifier,
                    fraction.text.first?.isNumber == true
                {
                    i += 2
                    literal += "." + fraction.text
                }
                c.raw = literal
            }
            out.append(c)
            guard peek == "," else { break }
            i += 1
        }
        return out
    }

    /// The stored properties of `var a: T, b, c: U = x` after `var`/`let` (`b` and `c` are both `U`, as Swift
    /// reads it). A `let` with an initial value is not decoded (the synthesized `init(from:)` skips it); a `var`
    /// with one is, and its key is required all the same.
    mutating func properties(isLet: Bool, conditional: Bool, wrapper: String?) throws -> [Property] {
        var out: [Property] = []
        var pending: [(String, Origin)] = []
        while true {
            let at = origin
            if peek == "(" {
                skipGroup("(", ")")
                if peek == ":" {
                    i += 1
                    _ = try typeRef()
                }
                if peek == "=" {
                    i += 1
                    skipExpression()
                }
                if !isLet {
                    out.append(
                        Property(
                            name: "(…)", type: .notCodable("a tuple"), origin: at, conditional: conditional,
                            wrapper: nil,
                            unreadable: "a tuple pattern (var (a, b) = …) declares no property this reader can name"))
                }
                guard peek == "," else { break }
                i += 1
                continue
            }
            guard peekIsIdentifier, let name = next() else {
                throw failure("expected a property name after var/let, found \(peek.map { "'\($0)'" } ?? "the end")")
            }
            var type: TypeRef?
            if peek == ":" {
                i += 1
                type = try typeRef()
            }
            var stored = true
            var hasValue = false
            if peek == "=" {
                i += 1
                skipExpression()
                hasValue = true
            }
            if peek == "{" {
                // Observers (willSet/didSet) keep a property stored; a getter makes it computed.
                stored = ["willSet", "didSet"].contains(token(i + 1)?.text ?? "")
                skipGroup("{", "}")
            }
            if let type {
                for (earlier, earlierAt) in pending {
                    out.append(
                        Property(
                            name: earlier, type: type, origin: earlierAt, conditional: conditional, wrapper: wrapper))
                }
                pending = []
                if stored && !(isLet && hasValue) {
                    out.append(Property(name: name, type: type, origin: at, conditional: conditional, wrapper: wrapper))
                }
            } else if hasValue {
                for (untyped, untypedAt) in pending + (!isLet && stored ? [(name, at)] : []) {
                    out.append(
                        Property(
                            name: untyped, type: .notCodable(""), origin: untypedAt, conditional: conditional,
                            wrapper: wrapper,
                            unreadable:
                                "the property \(untyped) has no type annotation (write var \(untyped): Type = …)"))
                }
                pending = []
            } else if stored {
                pending.append((name, at))
            }
            guard peek == "," else { break }
            i += 1
        }
        for (name, at) in pending {
            out.append(
                Property(
                    name: name, type: .notCodable(""), origin: at, conditional: conditional, wrapper: wrapper,
                    unreadable: "the property \(name) has no type annotation (write \(name): Type)"))
        }
        return out
    }

    /// Skips an initial value: to the next `,` or declaration at depth 0 (or the end of its line, when a new
    /// declaration starts on the next).
    mutating func skipExpression() {
        var depth = 0
        let starts: Set<String> = [
            "var", "let", "func", "struct", "enum", "case", "init", "static", "typealias", "extension", "class",
            "subscript", "deinit",
        ]
        while let t = token(i) {
            let afterDot = token(i - 1)?.text == "."
            if depth == 0 && !afterDot {
                if t.kind == .punctuation && [",", "}", "@", "#", ";"].contains(t.text) { return }
                if t.kind == .identifier && (starts.contains(t.text) || Self.modifiers.contains(t.text)) { return }
                if t.kind == .punctuation && t.text == "{" {
                    // A closure value, or a computed body after the value (not valid Swift): skipped.
                    skipGroup("{", "}")
                    continue
                }
            }
            if t.kind == .punctuation {
                if t.text == "(" || t.text == "[" { depth += 1 }
                if t.text == ")" || t.text == "]" { depth -= 1 }
                if t.text == "{" { depth += 1 }
                if t.text == "}" { depth -= 1 }
            }
            i += 1
        }
    }

    mutating func typeRef() throws -> TypeRef {
        var type: TypeRef
        while peek == "@" {
            // A type attribute (@Sendable, @escaping, @MainActor, @convention(c)): skipped; what follows decides.
            i += 2
            if ["convention", "differentiable"].contains(token(i - 1)?.text ?? "") && peek == "(" {
                skipGroup("(", ")")
            }
        }
        if peekIsIdentifier, ["some", "any", "inout", "borrowing", "consuming", "sending"].contains(peek ?? "") {
            let word = next() ?? ""
            let inner = try typeRef()
            if word == "some" || word == "any" { return .notCodable("\(word) \(inner.spelled)") }
            return inner
        }
        if peek == "[" {
            i += 1
            let first = try typeRef()
            if peek == ":" {
                i += 1
                type = .dictionary(first, try typeRef())
            } else {
                type = .array(first)
            }
            try expect("]", after: "an array or dictionary type")
        } else if peek == "(" {
            // A tuple or function type: skipped with its result type.
            skipGroup("(", ")")
            while peekIsIdentifier, ["async", "throws", "rethrows"].contains(peek ?? "") {
                i += 1
                if peek == "(" { skipGroup("(", ")") }
            }
            if peek == "->" {
                i += 1
                _ = try typeRef()
                return .notCodable("a function type")
            }
            type = .notCodable("a tuple type")
        } else {
            guard peekIsIdentifier, var name = next(), name.first.map({ $0 == "_" || $0.isLetter }) == true else {
                throw failure("expected a type, found \(peek.map { "'\($0)'" } ?? "the end of the file")")
            }
            var arguments: [TypeRef] = []
            while true {
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
                    try expect(">", after: "the generic arguments of \(name)")
                }
                guard peek == ".", let member = token(i + 1), member.kind == .identifier,
                    member.text != "Type" && member.text != "Protocol"
                else { break }
                i += 1
                name += "." + (next() ?? "")
            }
            type = .named(name, arguments)
        }
        while peek == "?" || peek == "!" {
            i += 1
            type = .optional(type)
        }
        if peek == ".", ["Type", "Protocol"].contains(token(i + 1)?.text ?? "") {
            i += 2
            return .notCodable("the metatype \(type.spelled).Type")
        }
        return type
    }
}
