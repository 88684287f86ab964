import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// Problem codes are typed (`Problem.Code`, not a string literal): each is declared once, as a static member, in the
/// module that reports it (`Problem+Codes.swift` in KKPushCore, `<Module>ProblemCodes.swift` elsewhere), and is
/// either one of APNs's reasons, spelt as APNs spells it, or a kebab-case code of kkpush's own.
struct ProblemCodeTests {
    /// One declaration: the file, the member's name and the code it prints (nil when it is an APNs reason's).
    struct Declaration {
        var file: String
        var name: String
        var code: String
    }

    static let sources = Repository.root.appendingPathComponent("Sources")

    /// Every Swift file under `Sources/`, with its text.
    static func sourceFiles() throws -> [(name: String, text: String)] {
        var out: [(String, String)] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            out.append(
                (
                    file.path.replacingOccurrences(of: sources.path + "/", with: ""),
                    try String(contentsOf: file, encoding: .utf8)
                ))
        }
        return out
    }

    static func isCodesFile(_ name: String) -> Bool {
        name.hasSuffix("ProblemCodes.swift") || name.hasSuffix("/Problem+Codes.swift")
    }

    /// The declarations of every codes file: `public static let name = Self(rawValue: "code")` for kkpush's own,
    /// `public static let name = Self(APNsReason.name)` for APNs's reasons.
    static func declarations() throws -> [Declaration] {
        let own = try NSRegularExpression(pattern: #"static let (\w+) = Self\(rawValue: "([^"]*)"\)"#)
        let reason = try NSRegularExpression(pattern: #"static let (\w+) = Self\(APNsReason\.(\w+)\)"#)
        let any = try NSRegularExpression(pattern: #"static let \w+"#)
        var out: [Declaration] = []
        for (name, text) in try sourceFiles() where isCodesFile(name) {
            let range = NSRange(text.startIndex..., in: text)
            func group(_ m: NSTextCheckingResult, _ i: Int) -> String { String(text[Range(m.range(at: i), in: text)!]) }
            let owns = own.matches(in: text, range: range)
            let reasons = reason.matches(in: text, range: range)
            for m in owns { out.append(Declaration(file: name, name: group(m, 1), code: group(m, 2))) }
            for m in reasons {
                #expect(group(m, 1) == group(m, 2), "\(name): \(group(m, 1)) is declared as APNsReason.\(group(m, 2))")
                let member = group(m, 2)
                // APNsReason's members are its reasons with a lowercase first letter (`badDeviceToken`).
                let spelt = member.prefix(1).uppercased() + member.dropFirst()
                out.append(Declaration(file: name, name: member, code: spelt))
            }
            // No declaration in another form (it would escape these checks).
            #expect(
                any.numberOfMatches(in: text, range: range) == owns.count + reasons.count,
                "\(name) declares a code in another form")
        }
        return out
    }

    @Test("Every declared problem code is unique, and kebab-case or an APNs reason name")
    func declaredCodes() throws {
        let declared = try Self.declarations()
        #expect(declared.count > 100, "found \(declared.count) codes")
        let kebab = try Regex("^[a-z0-9]+(-[a-z0-9]+)*$")
        for d in declared {
            let isReason = APNsReason(rawValue: d.code).isKnown
            #expect(
                isReason || d.code.wholeMatch(of: kebab) != nil,
                "\(d.file): \(d.name) = \(d.code) is neither kebab-case nor an APNs reason")
            // A kebab-case code is the member's name spelt out (`backgroundWithAlert` is `background-with-alert`,
            // `backgroundPriority10` is `background-priority-10`).
            if !isReason {
                var spelt = ""
                var previous: Character = "-"
                for c in d.name {
                    if c.isUppercase || (c.isNumber && !previous.isNumber) { spelt += "-" }
                    spelt += c.lowercased()
                    previous = c
                }
                #expect(spelt == d.code, "\(d.file): \(d.name) prints \(d.code)")
            }
        }
        let byCode = Dictionary(grouping: declared, by: \.code).filter { $0.value.count > 1 }
        #expect(byCode.isEmpty, "declared more than once: \(byCode.mapValues { $0.map(\.file) })")
        let byName = Dictionary(grouping: declared, by: \.name).filter { $0.value.count > 1 }
        #expect(byName.isEmpty, "members declared more than once: \(byName.mapValues { $0.map(\.file) })")
    }

    @Test("Every diagnosis code (KantineKoning's DiagnosisCode) is unique and kebab-case")
    func diagnosisCodes() throws {
        let own = try NSRegularExpression(pattern: #"static let (\w+) = Self\(rawValue: "([^"]*)"\)"#)
        var codes: [String: [String]] = [:]
        for (name, text) in try Self.sourceFiles() where name.hasPrefix("KantineKoning/") {
            // The declaration and its extensions, each up to its closing brace at the start of a line.
            for opening in ["public struct DiagnosisCode:", "extension DiagnosisCode {"] {
                var rest = text[...]
                while let start = rest.range(of: opening) {
                    let end = rest[start.upperBound...].range(of: "\n}\n")?.upperBound ?? rest.endIndex
                    let block = String(rest[start.lowerBound..<end])
                    for m in own.matches(in: block, range: NSRange(block.startIndex..., in: block)) {
                        let code = String(block[Range(m.range(at: 2), in: block)!])
                        codes[code, default: []].append(name)
                    }
                    rest = rest[end...]
                }
            }
        }
        #expect(codes.count > 50, "found \(codes.count) codes")
        let kebab = try Regex("^[a-z0-9]+(-[a-z0-9]+)*$")
        for (code, files) in codes {
            #expect(code.wholeMatch(of: kebab) != nil, "\(files): \(code) is not kebab-case")
            #expect(files.count == 1, "\(code) is declared in \(files)")
        }
    }

    @Test("No problem code is made from a string outside the codes files")
    func noCodeFromAString() throws {
        for (name, text) in try Self.sourceFiles() where !Self.isCodesFile(name) {
            #expect(!text.contains("extension Problem.Code"), "\(name) declares problem codes")
            #expect(!text.contains("Problem.Code(rawValue:"), "\(name) makes a problem code from a string")
        }
    }

    @Test("A problem code prints and encodes as its string alone")
    func printsAsItsString() throws {
        let problem = Problem(.error, code: .badDeviceToken, message: "m", fix: "f")
        #expect(problem.code.rawValue == "BadDeviceToken" && problem.description == "error BadDeviceToken: m Fix: f")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(problem), as: UTF8.self)
        #expect(json == #"{"code":"BadDeviceToken","fix":"f","message":"m","severity":"error"}"#)
        #expect(try JSONDecoder().decode(Problem.self, from: Data(json.utf8)) == problem)
        #expect(Problem.Code.backgroundWithAlert.rawValue == "background-with-alert")
        #expect(Problem.Code(APNsReason.payloadTooLarge) == .payloadTooLarge)
    }
}
