import Foundation
import KKPushCore
import KKPushSystem
import KKPushTestSupport
import Testing

/// `InputFile`'s checks of a path the user named, on the real file system: the one place every reader of a user's
/// file (whole, or line by line) learns what is wrong with the path.
@Suite("InputFile: a user's file checked and read")
struct UserFileReadingTests {
    /// The error `body` throws, as a KKPushError.
    func failure(_ body: () throws -> Void) -> KKPushError? {
        do {
            try body()
            return nil
        } catch {
            return error as? KKPushError
        }
    }

    @Test("checkFile: empty, content given as the path, missing, missing folder, under a file, a folder, a file")
    func checkFile() throws {
        try withTemporaryDirectory { folder in
            let file = folder + "/tokens.txt"
            try Data("a\n".utf8).write(to: URL(fileURLWithPath: file))
            let holds = "one device token per line"
            func check(_ path: String) -> KKPushError? {
                failure { try InputFile.checkFile(path, what: "token file", label: "--tokens", holds: holds) }
            }

            let empty = check("")
            #expect(empty?.code == .filePathEmpty)
            #expect(empty?.message == "The token file path (--tokens) is empty.")
            #expect(empty?.fix == "Give the path of the token file (\(holds)), or - for standard input.")

            #expect(check(#"{"aps":{}}"#)?.code == .fileGivenInline)
            #expect(check("-----BEGIN PRIVATE KEY-----")?.code == .fileGivenInline)

            let missing = check(folder + "/none.txt")
            #expect(missing?.code == .fileMissing)
            #expect(missing?.message == "The token file --tokens \(folder)/none.txt does not exist.")
            #expect(missing?.fix?.hasSuffix("The file holds \(holds).") == true, "\(missing?.fix ?? "")")

            let noFolder = check(folder + "/nowhere/none.txt")
            #expect(noFolder?.code == .fileMissing)
            #expect(noFolder?.fix?.contains("its folder \(folder)/nowhere does not exist either") == true)

            // A path through a file: ENOTDIR, reported as missing.
            #expect(check(file + "/inside.txt")?.code == .fileMissing)

            let isFolder = check(folder)
            #expect(isFolder?.code == .fileIsDirectory)
            #expect(isFolder?.message == "The token file --tokens \(folder) is a folder, not a file.")
            #expect(isFolder?.fix == "Give the path of the token file inside it (\(holds)).")

            #expect(check(file) == nil)
        }
    }

    @Test("read: the same checks first, then the size and emptiness limits; a positional path is quoted")
    func read() throws {
        try withTemporaryDirectory { folder in
            let file = folder + "/p.json"
            let emptyFile = folder + "/empty.json"
            try Data(#"{"aps":{}}"#.utf8).write(to: URL(fileURLWithPath: file))
            try Data().write(to: URL(fileURLWithPath: emptyFile))

            #expect(try InputFile.read(file, what: "payload file", label: "--payload") == Array(#"{"aps":{}}"#.utf8))
            let isFolder = failure { _ = try InputFile.read(folder, what: "payload file") }
            #expect(isFolder?.code == .fileIsDirectory)
            #expect(isFolder?.message == "The payload file '\(folder)' is a folder, not a file.")
            #expect(isFolder?.fix == "Give the path of the payload file inside it.")
            let missing = failure {
                _ = try InputFile.read(folder + "/x.json", what: "payload file", label: "--payload")
            }
            #expect(missing?.code == .fileMissing)
            #expect(missing?.fix?.contains("relative paths start at") == true)
            #expect(failure { _ = try InputFile.read(emptyFile, what: "payload file") }?.code == .fileEmpty)
            #expect(try InputFile.read(emptyFile, what: "payload file", allowEmpty: true).isEmpty)
            let large = failure {
                _ = try InputFile.read(file, what: "payload file", label: "--payload", maximumSize: 4)
            }
            #expect(large?.code == .fileTooLarge)
        }
    }
}
