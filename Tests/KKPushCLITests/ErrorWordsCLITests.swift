import Foundation
import KKPushCLISupport
import KKPushCore
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
}
