import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushMock
import KKPushStore
import KKPushTestSupport
import Testing

@testable import KKPushCLI

/// Every error goes through the one reporting path (`ErrorReport.render`): each error code the package declares,
/// thrown plainly or from a `validate()` (where ArgumentParser wraps it), reads as its own code, message and fix,
/// with an exit code of the README's table, never as a Swift value.
struct ErrorOutputAndExitCodeTests {
    /// A command whose `validate()` throws the error it is given, as a command's flag checks do.
    struct Thrower: ParsableCommand {
        nonisolated(unsafe) static var error: (any Error)?
        func validate() throws { if let error = Self.error { throw error } }
    }

    /// Every code declared in `Sources/` (`public static let name = Self("code", kind: .input)`).
    static func declaredCodes() throws -> [String] {
        try declaredKinds().keys.sorted()
    }

    /// Every code declared in `Sources/` and the kind its declaration gives it.
    static func declaredKinds() throws -> [String: KKPushError.Kind] {
        let sources = Repository.root.appendingPathComponent("Sources")
        let pattern = try NSRegularExpression(pattern: #"static let \w+ = Self\("([a-z0-9-]+)", kind: \.(\w+)\)"#)
        var codes: [String: KKPushError.Kind] = [:]
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard
                file.lastPathComponent.hasSuffix("ErrorCodes.swift") || file.lastPathComponent.hasPrefix("KKPushError")
            else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                if let code = Range(match.range(at: 1), in: text), let kind = Range(match.range(at: 2), in: text) {
                    codes[String(text[code])] = KKPushError.Kind(rawValue: String(text[kind]))
                }
            }
            // No code is declared any other way (its kind would be left out).
            #expect(!text.contains(": Self = \""), "\(file.lastPathComponent) declares a code without its kind")
        }
        return codes
    }

    static let tableExits: Set<Int32> = [1, 2, 64, 69, 74, 77]

    /// `error` thrown through ArgumentParser's parse, as `main` receives it.
    static func parsed(_ error: any Error) -> any Error {
        Thrower.error = error
        defer { Thrower.error = nil }
        do {
            _ = try Thrower.parseAsRoot([])
        } catch {
            return error
        }
        Issue.record("validate() did not throw")
        return error
    }

    @Test("Every declared error code reads as itself, plain or wrapped by ArgumentParser, with an exit of the table")
    func everyCode() throws {
        let codes = try Self.declaredCodes()
        #expect(codes.count > 200, "found \(codes.count) codes")
        let kinds = try Self.declaredKinds()
        for code in codes {
            let kind = try #require(kinds[code], "\(code) has no kind")
            let error = KKPushError(
                code: KKPushError.Code(code, kind: kind), message: "Message of \(code).", fix: "Fix it.")
            for thrown in [error as any Error, Self.parsed(error)] {
                for json in [false, true] {
                    let r = try #require(ErrorReport.render(thrown, json: json), "\(code)")
                    #expect(r.code == code && r.message == "Message of \(code)." && r.fix == "Fix it.", "\(r)")
                    #expect(Self.tableExits.contains(r.exit), "\(code) → \(r.exit)")
                    // The exit follows from the kind alone, whatever the code is called.
                    #expect(r.exit == ExitStatus.code(for: kind), "\(code) (\(kind)) → \(r.exit)")
                }
            }
            let cli = CLIError.usage(KKPushError.Code(rawValue: code), "CLI message.", fix: "CLI fix.")
            let r = try #require(ErrorReport.render(Self.parsed(cli), json: true))
            #expect(r == ErrorReport.Rendered(exit: 64, code: code, message: "CLI message.", fix: "CLI fix."))
        }
    }

    @Test("An error that is neither kkpush's nor the parser's is said in words, with a code, never as a dump")
    func foreignError() throws {
        struct Odd: Error {}
        let r = try #require(ErrorReport.render(CocoaError(.fileNoSuchFile), json: true))
        #expect(r.code == "unexpected-error" && r.exit == 1 && r.fix?.contains("report") == true)
        let odd = try #require(ErrorReport.render(Odd(), json: false))
        #expect(odd.message.contains("Odd") && odd.code == "unexpected-error")
    }

    @Test("Exit codes of one problem agree: the store's, the listeners', the parser-wrapped secret conflict")
    func agreedExits() throws {
        func exit(_ code: KKPushError.Code) -> Int32 { ExitStatus.code(for: KKPushError(code: code, message: "m")) }
        #expect(exit(.storeNotMigrated) == 2)
        #expect(exit(.storeSchemaMismatch) == 2)
        #expect(exit(.storeUnreachable) == 69)
        #expect(exit(.storeAuthFailed) == 77)
        #expect(exit(.mockBind) == 69)
        #expect(exit(.schemaMapSQLite) == 64)
        #expect(exit(.mockAdminTokenRequired) == 64)
        // A code known only by its string (a peer's error read back) is a failure, whatever it is called.
        #expect(exit(KKPushError.Code(rawValue: "store-not-migrated-elsewhere")) == 1)
    }
}
