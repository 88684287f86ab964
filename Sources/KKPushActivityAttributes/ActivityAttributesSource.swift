package import KKPushCore

/// Reads an app's `ActivityAttributes` type from its Swift source into an ``ActivityAttributesDescription``: what the
/// compiler's synthesized `Codable` decodes, field by field, with the JSON key and type the device's `JSONDecoder`
/// reads.
///
/// What it reads, as the compiler does:
/// - the types of several files together (`extension`s, a type declared in another file, `typealias`es at any
///   level): give every file that declares a type the Live Activity uses;
/// - stored properties (`var`/`let`, several per declaration: `let x, y: Double` makes both `Double`; a `let` with a
///   value is not decoded, a `var` with one is), nested structs, enums with `String` or integer raw values (each
///   case's raw value, implicit ones included);
/// - `CodingKeys`: a property's JSON key is its case's raw value, and a property without a case is not decoded;
/// - Foundation's and the standard library's names for the JSON types (`TimeInterval`, `CGFloat`, `Decimal`,
///   `Float64`, `Int32`, `Swift.String`, `Foundation.Date`, `Set<T>`, …);
/// - `ActivityKit.ActivityAttributes` written qualified, or the conformance added by an extension;
/// - backticked names (`` `default` ``), comments and attributes anywhere, raw and multi-line strings;
/// - a property inside `#if … #endif` in its type's body: decoded only by the builds that compile it, so it is read
///   as not required (a value sent for it is still checked); declarations inside a top-level `#if` are read as
///   written.
///
/// What it cannot follow it refuses by name, with the file and line: a generic type (its fields depend on the
/// argument), an own `init(from:)`, a property wrapper, an enum with associated values or without a raw type, a
/// property without a type annotation, a type none of the files declares.
///
/// A hand reader, not SwiftSyntax. swift-syntax 603 (the version for Swift 6.3) parses any Swift, but what decides a
/// Live Activity's JSON is above the syntax: the synthesized `Codable` rules, `CodingKeys`, type aliases across files,
/// enum raw values, which this reader and a SwiftSyntax one would implement alike. On real `ActivityAttributes` files
/// of public apps both read every declaration the same (the fixtures in `Tests/KKPushActivityAttributesTests`), and
/// swift-syntax costs every fresh build of `kkpush` about 100 s of compile time on 2 cores in debug and several minutes
/// in release (CI builds both), against well under a second for these two files. Only `payload activity-attributes`
/// links this target.
package enum ActivityAttributesSource {
    /// One Swift file: its name as the user gave it (errors name it) and its text.
    package struct File: Sendable {
        package var name: String
        package var text: String
        package init(name: String, text: String) {
            self.name = name
            self.text = text
        }
    }

    /// The description of the `ActivityAttributes` type `name` declared across `files` (nil: the only one there).
    /// Throws `activity-attributes-source` naming the file, the line and the construct it cannot read.
    package static func describe(_ files: [File], name: String? = nil) throws(KKPushError)
        -> ActivityAttributesDescription
    {
        let fileNames = files.map(\.name)
        var index = Index()
        do {
            for file in files {
                index.add(try SwiftDeclarations.read(file: file.name, source: file.text), prefix: "")
            }
            index.applyExtensions()
            let chosen = try index.activityAttributes(named: name)
            return try index.describe(chosen)
        } catch {
            throw failure(error, files: fileNames)
        }
    }

    /// The description of the `ActivityAttributes` type in one Swift source; `sourceName` (its path) names it in
    /// errors.
    package static func describe(_ source: String, name: String? = nil, sourceName: String = "the source")
        throws(KKPushError) -> ActivityAttributesDescription
    {
        try describe([File(name: sourceName, text: source)], name: name)
    }

    static func failure(_ failure: SwiftDeclarations.Failure, files: [String]) -> KKPushError {
        let which: String
        if let origin = failure.origin {
            which =
                "The Swift source '\(origin.file)' cannot be read as an ActivityAttributes type: line \(origin.line): "
        } else if files.count == 1 {
            which = "The Swift source '\(files[0])' cannot be read as an ActivityAttributes type: "
        } else {
            which =
                "The Swift sources \(files.map { "'\($0)'" }.joined(separator: ", ")) cannot be read as an ActivityAttributes type: "
        }
        return KKPushError(
            code: .activityAttributesSource, message: which + failure.message + ".",
            fix:
                "Give every file that declares the ActivityAttributes struct, its ContentState and the types they use; or write the description's JSON by hand."
        )
    }

    // MARK: Resolving

    typealias Failure = SwiftDeclarations.Failure
    typealias Origin = SwiftDeclarations.Origin
    typealias TypeRef = SwiftDeclarations.TypeRef

    /// What an extension adds to a type: conformances, `CodingKeys`, an `init(from:)`.
    struct Extension {
        var name: String
        var conformances: [String]
        var members: [SwiftDeclarations.Declaration]
        var scope: String
    }

    struct Index {
        var structs: [String: SwiftDeclarations.StructDecl] = [:]
        var enums: [String: SwiftDeclarations.EnumDecl] = [:]
        var aliases: [String: (TypeRef, Origin)] = [:]
        /// Per qualified type name: its `CodingKeys` (property name → JSON key) and where its own `init(from:)` is.
        var codingKeys: [String: [String: String]] = [:]
        var decoders: [String: Origin] = [:]
        var extraConformances: [String: [String]] = [:]
        var extensions: [Extension] = []

        mutating func add(_ declarations: [SwiftDeclarations.Declaration], prefix: String) {
            let owner = String(prefix.dropLast())
            for declaration in declarations {
                switch declaration {
                case .structure(var s):
                    s.qualifiedName = prefix + s.name
                    // The same struct twice (both branches of a top-level #if): the first is read.
                    if structs[s.qualifiedName] == nil { structs[s.qualifiedName] = s }
                    add(s.nested, prefix: s.qualifiedName + ".")
                case .enumeration(var e):
                    e.qualifiedName = prefix + e.name
                    if e.name == "CodingKeys" && !owner.isEmpty {
                        codingKeys[owner] = Self.keys(of: e)
                    }
                    if enums[e.qualifiedName] == nil { enums[e.qualifiedName] = e }
                    add(e.nested, prefix: e.qualifiedName + ".")
                case .alias(let name, let type, let origin):
                    aliases[prefix + name] = (type, origin)
                case .extensionOf(let name, let conformances, let members, _):
                    extensions.append(Extension(name: name, conformances: conformances, members: members, scope: ""))
                case .decoderInit(let origin):
                    if !owner.isEmpty { decoders[owner] = origin }
                case .property, .enumCase:
                    break
                }
            }
        }

        /// The property → JSON key map of a `CodingKeys` enum: a `String` raw value renames, any other key is the
        /// case's name.
        static func keys(of e: SwiftDeclarations.EnumDecl) -> [String: String] {
            let renames = e.conformances.contains { ["String", "Swift.String"].contains($0) }
            var out: [String: String] = [:]
            for c in e.cases { out[c.name] = renames ? (c.raw ?? c.name) : c.name }
            return out
        }

        /// Extensions add their members to the type they extend, once every file is read (the type may be declared
        /// in a later file, or through a type alias).
        mutating func applyExtensions() {
            for e in extensions {
                let target = resolveName(e.name, in: "") ?? e.name
                extraConformances[target, default: []] += e.conformances
                add(e.members, prefix: target + ".")
            }
        }

        func conforms(_ s: SwiftDeclarations.StructDecl) -> Bool {
            (s.conformances + extraConformances[s.qualifiedName, default: []]).contains {
                $0 == "ActivityAttributes" || $0 == "ActivityKit.ActivityAttributes"
            }
        }

        func activityAttributes(named name: String?) throws(Failure) -> SwiftDeclarations.StructDecl {
            let candidates = structs.values.filter(conforms).sorted { $0.qualifiedName < $1.qualifiedName }
            if let name {
                if let found = candidates.first(where: { $0.qualifiedName == name || $0.name == name }) {
                    return found
                }
                // Conforming through a protocol of another module (one that refines ActivityAttributes): a struct
                // of that name with a ContentState is read too.
                if let found = structs.values.first(where: {
                    ($0.qualifiedName == name || $0.name == name) && member("ContentState", of: $0.qualifiedName) != nil
                }) {
                    return found
                }
                throw Failure(
                    message:
                        "no struct \(name) conforming to ActivityAttributes (found: \(candidates.isEmpty ? "none" : candidates.map(\.qualifiedName).joined(separator: ", ")))",
                    origin: nil)
            }
            guard candidates.count == 1, let only = candidates.first else {
                throw Failure(
                    message: candidates.isEmpty
                        ? "no struct conforming to ActivityAttributes"
                        : "several ActivityAttributes types (\(candidates.map(\.qualifiedName).joined(separator: ", "))); name the one to read (activityAttributesName)",
                    origin: nil)
            }
            return only
        }

        /// `name` declared as a member type of `owner` (a nested struct or enum, or a member typealias).
        func member(_ name: String, of owner: String) -> String? {
            let qualified = owner + "." + name
            if structs[qualified] != nil || enums[qualified] != nil { return qualified }
            if let (alias, _) = aliases[qualified], case .named(let target, let args) = alias, args.isEmpty {
                return resolveName(target, in: owner)
            }
            return nil
        }

        func describe(_ chosen: SwiftDeclarations.StructDecl) throws(Failure) -> ActivityAttributesDescription {
            if let generic = chosen.genericParameters {
                throw Failure(
                    message:
                        "\(chosen.qualifiedName) is generic (\(chosen.name)\(generic)): ActivityKit needs one concrete type, and this reader does not follow generic types",
                    origin: chosen.origin)
            }
            let attributes = try fields(of: chosen, depth: 0)
            guard let stateName = member("ContentState", of: chosen.qualifiedName) else {
                throw Failure(
                    message: "\(chosen.name) has no ContentState struct (nor typealias ContentState = X)",
                    origin: chosen.origin)
            }
            guard let state = structs[stateName] else {
                throw Failure(
                    message: "\(chosen.name).ContentState is \(stateName), which is not a struct this reader reads",
                    origin: enums[stateName]?.origin ?? chosen.origin)
            }
            return ActivityAttributesDescription(
                name: chosen.name, attributes: attributes, contentState: try fields(of: state, depth: 0))
        }

        /// The qualified name `name` means inside `scope` (innermost first), through type aliases.
        func resolveName(_ name: String, in scope: String, depth: Int = 0) -> String? {
            var parts = scope.split(separator: ".").map(String.init)
            while true {
                let candidate = (parts + [name]).joined(separator: ".")
                if structs[candidate] != nil || enums[candidate] != nil { return candidate }
                if let (alias, _) = aliases[candidate], case .named(let target, let args) = alias, args.isEmpty,
                    depth < 8
                {
                    return resolveName(target, in: parts.joined(separator: "."), depth: depth + 1)
                }
                if parts.isEmpty { return nil }
                parts.removeLast()
            }
        }

        /// The alias `name` means inside `scope`, if it is one (to a type that is not a plain name).
        func resolveAlias(_ name: String, in scope: String) -> (TypeRef, String)? {
            var parts = scope.split(separator: ".").map(String.init)
            while true {
                let candidate = (parts + [name]).joined(separator: ".")
                if structs[candidate] != nil || enums[candidate] != nil { return nil }
                if let (alias, _) = aliases[candidate] { return (alias, parts.joined(separator: ".")) }
                if parts.isEmpty { return nil }
                parts.removeLast()
            }
        }

        func fields(of s: SwiftDeclarations.StructDecl, depth: Int) throws(Failure) -> [ActivityAttributesDescription
            .Field]
        {
            if let origin = decoders[s.qualifiedName] {
                throw Failure(
                    message:
                        "\(s.qualifiedName) has its own init(from:), so its JSON is whatever that code decodes; this reader follows only the synthesized Codable",
                    origin: origin)
            }
            if let generic = s.genericParameters {
                throw Failure(
                    message:
                        "\(s.qualifiedName) is generic (\(s.name)\(generic)); this reader does not follow generic types",
                    origin: s.origin)
            }
            guard depth < 16 else { throw Failure(message: "\(s.qualifiedName) nests itself", origin: s.origin) }
            let keys = codingKeys[s.qualifiedName]
            var out: [ActivityAttributesDescription.Field] = []
            for p in s.properties {
                let key: String
                if let keys {
                    // Not in CodingKeys: not decoded (the compiler requires it to have a value).
                    guard let renamed = keys[p.name] else { continue }
                    key = renamed
                } else {
                    key = p.name
                }
                if let unreadable = p.unreadable {
                    throw Failure(message: "\(s.qualifiedName): \(unreadable)", origin: p.origin)
                }
                if let wrapper = p.wrapper {
                    throw Failure(
                        message:
                            "\(s.qualifiedName).\(p.name) has the property wrapper @\(wrapper), whose Codable form this reader does not follow",
                        origin: p.origin)
                }
                var type = try fieldType(
                    p.type, in: s.qualifiedName, owner: "\(s.qualifiedName).\(p.name)", at: p.origin, depth)
                if p.conditional, !type.isOptional { type = .optional(type) }
                out.append(ActivityAttributesDescription.Field(key, type))
            }
            return out
        }

        /// The standard library's and Foundation's names of the JSON types, and the module prefixes they are
        /// written with.
        static let prefixes = ["Swift.", "Foundation.", "CoreGraphics.", "CoreFoundation.", "CoreLocation."]
        static let integers: Set<String> = [
            "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Int128",
            "UInt128",
        ]
        static let numbers: Set<String> = [
            "Double", "Float", "Float16", "Float32", "Float64", "Float80", "CGFloat", "Decimal", "TimeInterval",
            "CFTimeInterval", "CLLocationDegrees", "CLLocationDistance", "CLLocationSpeed", "CLLocationDirection",
            "CLLocationAccuracy",
        ]

        func fieldType(_ type: TypeRef, in scope: String, owner: String, at origin: Origin, _ depth: Int)
            throws(Failure) -> ActivityAttributesDescription.FieldType
        {
            func recurse(_ t: TypeRef) throws(Failure) -> ActivityAttributesDescription.FieldType {
                try fieldType(t, in: scope, owner: owner, at: origin, depth)
            }
            switch type {
            case .notCodable(let text):
                throw Failure(message: "\(owner) has the type \(text), which is not Codable", origin: origin)
            case .optional(let t): return .optional(try recurse(t))
            case .array(let t): return .array(try recurse(t))
            case .dictionary(let key, let value):
                guard case .named(let keyName, []) = key, Self.bare(keyName) == "String" else {
                    throw Failure(
                        message:
                            "\(owner) is \(type.spelled): only [String: T] dictionaries are read (JSONDecoder reads other keys as an array of keys and values)",
                        origin: origin)
                }
                return .dictionary(try recurse(value))
            case .named(let written, let args):
                let name = Self.bare(written)
                switch (name, args.count) {
                case ("Optional", 1): return .optional(try recurse(args[0]))
                case ("Array", 1), ("Set", 1), ("ContiguousArray", 1): return .array(try recurse(args[0]))
                case ("ClosedRange", 1), ("Range", 1): return .range(try recurse(args[0]))
                case ("Dictionary", 2): return try recurse(.dictionary(args[0], args[1]))
                default: break
                }
                if args.isEmpty {
                    switch name {
                    case "String", "Substring", "Character": return .string
                    case _ where Self.integers.contains(name): return .int
                    case _ where Self.numbers.contains(name): return .double
                    case "Bool": return .bool
                    case "Date": return .date
                    case "URL": return .url
                    case "UUID": return .uuid
                    default: break
                    }
                }
                if let (alias, aliasScope) = resolveAlias(written, in: scope), depth < 16 {
                    return try fieldType(alias, in: aliasScope, owner: owner, at: origin, depth + 1)
                }
                guard let qualified = resolveName(written, in: scope) else {
                    if name == "Data" {
                        throw Failure(
                            message:
                                "\(owner) is Data (JSONDecoder's default reads it from base64 text), which this reader does not describe",
                            origin: origin)
                    }
                    throw Failure(
                        message:
                            "\(owner) has the type \(type.spelled), which none of the files given declares (give the file that declares \(written) too)",
                        origin: origin)
                }
                if !args.isEmpty {
                    throw Failure(
                        message:
                            "\(owner) has the generic type \(type.spelled); this reader does not follow generic types",
                        origin: origin)
                }
                if let s = structs[qualified] {
                    return .object(name: s.name, fields: try fields(of: s, depth: depth + 1))
                }
                guard let e = enums[qualified] else {
                    throw Failure(message: "\(owner) has the type \(written), which is not read", origin: origin)
                }
                return try enumeration(e, owner: owner)
            }
        }

        func enumeration(_ e: SwiftDeclarations.EnumDecl, owner: String) throws(Failure)
            -> ActivityAttributesDescription.FieldType
        {
            if let generic = e.genericParameters {
                throw Failure(
                    message:
                        "\(owner) is the generic enum \(e.name)\(generic); this reader does not follow generic types",
                    origin: e.origin)
            }
            if decoders[e.qualifiedName] != nil {
                throw Failure(
                    message:
                        "\(owner) is the enum \(e.name), which has its own init(from:); this reader follows only the synthesized Codable",
                    origin: decoders[e.qualifiedName])
            }
            if let c = e.cases.first(where: \.hasAssociatedValues) {
                throw Failure(
                    message:
                        "\(owner) is the enum \(e.name), whose case \(c.name) has associated values (its Codable form is not read)",
                    origin: e.origin)
            }
            let raw = e.conformances.map(Self.bare).first {
                $0 == "String" || Self.integers.contains($0) || Self.numbers.contains($0) || $0 == "Character"
            }
            guard let raw, raw == "String" || Self.integers.contains(raw) else {
                throw Failure(
                    message: raw == nil
                        ? "\(owner) is the enum \(e.name), which has no String or Int raw type (its Codable form is not read)"
                        : "\(owner) is the enum \(e.name), whose raw type \(raw!) this reader does not follow (String or an integer type)",
                    origin: e.origin)
            }
            if raw == "String" {
                return .enumeration(name: e.name, raw: .string, values: e.cases.map { $0.raw ?? $0.name })
            }
            // Integer raw values: implicit ones count up from the last explicit one.
            var values: [String] = []
            var nextValue = 0
            for c in e.cases {
                if let text = c.raw, let n = Int(text.replacingUnderscores) {
                    values.append(String(n))
                    nextValue = n + 1
                } else {
                    values.append(String(nextValue))
                    nextValue += 1
                }
            }
            return .enumeration(name: e.name, raw: .int, values: values)
        }

        static func bare(_ name: String) -> String {
            for prefix in prefixes where name.hasPrefix(prefix) { return String(name.dropFirst(prefix.count)) }
            return name
        }
    }
}

extension ActivityAttributesDescription.FieldType {
    var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }
}

extension String {
    /// `1_000` → `1000`.
    fileprivate var replacingUnderscores: String { filter { $0 != "_" } }
}
