import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@testable import KKPushCLI

/// What a user reads of an error is a sentence: never Foundation's `Error Domain=NSCocoaErrorDomain Code=3840 …`
/// nor a Swift enum case (`missingEndOfCentralDirectoryRecord`); a UTF-8 byte order mark and Latin-1 text are
/// named as such, with the place and the fix.
@Suite("Errors in words: encodings named, no raw Foundation or Swift text")
struct ErrorWordsCLITests {
    /// Writes `bytes` to a new file named `name` in a fresh folder; the caller removes the folder.
    static func file(_ name: String, _ bytes: [UInt8]) throws -> (folder: URL, path: String) {
        let folder = try makeTemporaryDirectory(prefix: "kkpush-words")
        let path = folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (folder, path)
    }

    static let bom: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(#"{"aps":{"alert":"Hallo"}}"#.utf8)
    static let latin1: [UInt8] = Array(#"{"aps":{"alert":"caf"#.utf8) + [0xE9] + Array(#""}}"#.utf8)

    @Test("A UTF-8 BOM is named, with the fix, in a payload, an import and an enrollment file")
    func byteOrderMark() async throws {
        let (folder, path) = try Self.file("bom.json", Self.bom)
        defer { try? FileManager.default.removeItem(at: folder) }
        for args in [
            ["payload", "lint", path], ["backend", "import", path, "--db", folder.path + "/x.sqlite"],
            ["diagnose", "--enrollment", path],
        ] {
            let r = try await CLI.run(args)
            #expect(r.status != 0)
            let text = r.stdout + r.stderr
            #expect(text.contains("byte order mark (UTF-8 BOM, bytes EF BB BF)"), "\(args): \(text)")
            #expect(!text.contains("unexpected byte 0xef"), "\(args): \(text)")
        }
    }

    @Test("Latin-1 text is named: the byte, the character it would be, where, and how to convert")
    func latin1() async throws {
        let (folder, path) = try Self.file("latin1.json", Self.latin1)
        defer { try? FileManager.default.removeItem(at: folder) }
        let lint = try await CLI.run(["payload", "lint", path])
        #expect(lint.stdout.contains("byte 0xE9 ('é' in Latin-1)"), "\(lint.stdout)")
        #expect(lint.stdout.contains("(at byte 20)"), "\(lint.stdout)")
        #expect(lint.stdout.contains("iconv -f latin1 -t utf-8"), "\(lint.stdout)")
        let imported = try await CLI.run(["backend", "import", path, "--db", folder.path + "/x.sqlite"])
        #expect(imported.status == 2)
        #expect(imported.stderr.contains("looks like Latin-1"), "\(imported.stderr)")
    }

    @Test("A damaged zip's error has no Swift enum case name")
    func damagedZip() async throws {
        let (folder, path) = try Self.file("App.ipa", Array("PK\u{05}\u{06}garbage".utf8))
        defer { try? FileManager.default.removeItem(at: folder) }
        let r = try await CLI.run(["build", "inspect", path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("is not a zip archive that can be read"), "\(r.stderr)")
        #expect(!r.stderr.contains("missingEndOfCentralDirectoryRecord"), "\(r.stderr)")
    }

    @Test("An underlying Foundation error or enum case is left out; a sentence or an errno reason is kept")
    func causes() throws {
        var jsonError: (any Error)?
        do { _ = try JSONSerialization.jsonObject(with: Data("{".utf8)) } catch { jsonError = error }
        let foundation = try #require(jsonError)
        #expect(String(describing: foundation).contains("Error Domain="), "the raw text this test is about")
        let wrapped = KKPushError(code: .fileUnreadable, message: "The file x cannot be read.", underlying: foundation)
        let rendered = try #require(ErrorReport.render(wrapped, json: false))
        #expect(rendered.message == "The file x cannot be read.", "\(rendered.message)")
        #expect(ErrorWords.cause(KKPushError.Cause("missingEndOfCentralDirectoryRecord")) == nil)
        #expect(
            ErrorWords.cause(NSError(domain: NSPOSIXErrorDomain, code: Int(ENOENT))) == "no such file or directory")
        #expect(ErrorWords.cause(KKPushError.Cause("the server closed the connection")) != nil)
    }

    @Test("Foundation's file errors in words: the system's reason under them, else their code; never 'CocoaError'")
    func cocoaErrors() throws {
        let folder = try makeTemporaryDirectory(prefix: "kkpush-words")
        defer { try? FileManager.default.removeItem(at: folder) }
        // What Foundation throws on Linux: a CocoaError whose underlying POSIXError does not cast to NSError.
        var caught: [(any Error, String)] = []
        do { _ = try Data(contentsOf: folder) } catch { caught.append((error, "is a directory")) }
        do { _ = try Data(contentsOf: folder.appendingPathComponent("none")) } catch {
            caught.append((error, "no such file or directory"))
        }
        do { try Data("x".utf8).write(to: folder, options: .atomic) } catch { caught.append((error, "is a directory")) }
        #expect(caught.count == 3)
        for (error, words) in caught {
            #expect(ErrorWords.describe(error) == words, "\(error)")
            #expect(ErrorWords.cause(error) == words, "\(error)")
        }
        // Without a reason under it: its code in words.
        #expect(ErrorWords.describe(CocoaError(.fileReadNoSuchFile)) == "no such file")
        #expect(ErrorWords.describe(CocoaError(.fileWriteNoPermission)) == "permission denied")
        #expect(ErrorWords.describe(CocoaError(.fileWriteOutOfSpace)) == "no space is left on the disk")
        #expect(!ErrorWords.describe(CocoaError(CocoaError.Code(rawValue: 99_999))).contains("without a description"))
        // A decoding error: what and where, not the enum's dump.
        struct Shape: Decodable { var count: Int }
        do { _ = try JSONDecoder().decode(Shape.self, from: Data(#"{"count":"x"}"#.utf8)) } catch {
            #expect(ErrorWords.describe(error) == "a value has the wrong type at `count`", "\(error)")
        }
    }

    /// What should never reach a user in an error or a report: a library's placeholder unmapped (`(caFile)`,
    /// `(FILE)`), an internal type's name, a JSON type said twice or with the wrong article, one SQLSTATE twice.
    static func leaks(_ text: String) -> [String] {
        var found: [String] = []
        for match in text.matches(of: /\(([a-z]+[A-Z][A-Za-z]*|FILE)\)/)
        where !["iOS", "macOS"].contains(String(match.1)) {
            found.append(String(match.0))
        }
        for marker in ["without a description", "CocoaError", "DecodingError", "Error Domain=", "null null"]
        where text.contains(marker) {
            found.append(marker)
        }
        for match in text.matches(of: /\ba (?:Int\w*|UInt\w*|object|array|null|Optional\w*|Elsewhere)\b/) {
            found.append(String(match.0))
        }
        let states = text.matches(of: /SQLSTATE/).count
        if states > 1 { found.append("SQLSTATE \(states) times") }
        return found
    }

    @Test("Representative errors and reports carry no placeholder, internal name, doubled word or doubled SQLSTATE")
    func noLeaks() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-leaks")
        defer { try? FileManager.default.removeItem(at: dir) }
        func write(_ text: String, _ name: String) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        var outputs: [(String, CLIResult)] = []
        func run(_ args: [String]) async throws {
            outputs.append((args.joined(separator: " "), try await CLI.run(args)))
        }
        // The Swift reader's error names the file (it said "The Swift source (FILE)").
        try await run(["payload", "activity-attributes", try write("struct Plain { var x: Int }", "Plain.swift")])
        // A Live Activity checked against the app's types: a null and a missing Int ("is null null", "is a Int").
        let description = dir.appendingPathComponent("match.json").path
        let swift = try write(
            """
            struct MatchAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var home: Int
                    var away: Int
                }
            }
            """,
            "MatchAttributes.swift")
        #expect(try await CLI.run(["payload", "activity-attributes", swift, "--out", description]).status == 0)
        let update = try write(
            #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"home":null}}}"#, "update.json")
        try await run(["payload", "lint", update, "--activity-attributes", description])
        // JSON types with their article ("is a object").
        try await run([
            "payload", "lint", try write(#"{"aps":{"alert":{"title":{},"loc-args":[1]},"sound":[]}}"#, "a.json"),
        ])
        // The mock's saved pushes file that is no such file (Foundation's errors).
        try await run([
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--no-admin", "--saved-pushes",
            try write("{", "saved.json"),
        ])
        let lintOutput = outputs[1].1.stdout
        #expect(lintOutput.contains("aps.content-state.home is null, but the app decodes Int"), "\(lintOutput)")
        #expect(lintOutput.contains("(Int) is not optional"), "\(lintOutput)")
        #expect(outputs[2].1.stdout.contains("'aps.alert.title' is an object"), "\(outputs[2].1.stdout)")

        // tls check's report on the mock (its root is in no system bundle): its fix names --ca-file, not (caFile).
        try await withMockServer(configuration: .forTests()) { server in
            let target = "127.0.0.1:\(server.sandboxEndpoint.port)"
            try await run(["tls", "check", target, "--timeout", "10"])
            try await run(["tls", "check", target, "--timeout", "10", "--json"])
        }
        #expect(
            outputs.suffix(2).allSatisfy { $0.1.stdout.contains("(--ca-file)") }, "\(outputs.suffix(2).map(\.1.stdout))"
        )

        // PostgreSQL's refusal: its text and SQLSTATE once each (the cause repeated both).
        let pg = try await PostgresServer.sharedServer()
        let database = try await pg.newDatabase("leaks")
        #expect(try await CLI.run(["backend", "migrate", "--db", pg.url(database)]).status == 0)
        let role = "reader_\(UUID().uuidString.prefix(6).lowercased())"
        try await pg.runSQL(
            "CREATE ROLE \(role) LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role);", database: database)
        let rows = try write(
            #"[{"device_id":"d1","tenant_slug":"vv","team_codes":["A"],"role":"manager","hardware_identifier":"h1","apns_token":"\#(String(repeating: "ab", count: 32))","build_environment":"development","updated_at":"2027-01-15T09:30:00Z"}]"#,
            "rows.json")
        let readerURL = pg.url(database).replacingOccurrences(of: "postgres://kkpush@", with: "postgres://\(role)@")
        try await run(["backend", "import", rows, "--db", readerURL])
        let refused = try #require(outputs.last).1
        #expect(refused.status != 0 && refused.stderr.contains("SQLSTATE 42501"), "\(refused.stderr)")
        #expect(refused.stderr.components(separatedBy: "permission denied").count == 2, "\(refused.stderr)")

        for (command, r) in outputs {
            let found = Self.leaks(r.stdout + "\n" + r.stderr)
            #expect(found.isEmpty, "kkpush \(command): \(found)\n\(r.stdout)\n\(r.stderr)")
        }
    }
}
