import Foundation
import KKPushCore
import KKPushSystem

/// An existing enrollment store (SQLite) a user names for reading (`diagnose --store`, `token verify --db`).
public enum EnrollmentStoreFile {
    /// The 16 bytes every SQLite 3 database file starts with.
    static let header = Array("SQLite format 3\u{0}".utf8)

    /// Checks that `path` is an existing SQLite database before it is opened, so that a missing file, a
    /// folder, an empty file or another kind of file is an input error (exit 2), and never becomes a new,
    /// empty database. `label` names the input in messages, before the path (a command line gives its flag);
    /// nil names the path alone.
    public static func checkExisting(_ path: String, label input: String? = nil) throws {
        let fix = "Give the enrollment database the backend writes (backendServeCommand)."
        let named = input.map { " \($0)" } ?? ""
        let label = "The enrollment database\(named) \(path)"
        if path.isEmpty {
            throw KKPushError(
                code: .filePathEmpty, message: "The enrollment database path\(named) is empty.", fix: fix)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw KKPushError(code: .storeMissing, message: "\(label) does not exist.", fix: fix)
        }
        if isDirectory.boolValue {
            throw KKPushError(
                code: .fileIsDirectory, message: "\(label) is a folder, not a file.",
                fix: "Give the path of the database file inside it.")
        }
        // A pipe or device is never a database (and opening a FIFO without a writer would wait forever).
        try InputFile.checkRegular(path, what: "enrollment database", label: input)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw KKPushError(
                code: .fileUnreadable, message: "\(label) cannot be read.",
                fix: "Make it readable by this user (ls -l \(path)).")
        }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: header.count)) ?? Data())
        if head.isEmpty {
            throw KKPushError(code: .fileEmpty, message: "\(label) is empty (0 bytes), not a database.", fix: fix)
        }
        guard head == header else {
            throw KKPushError(code: .storeMalformed, message: "\(label) is not an SQLite database.", fix: fix)
        }
    }
}
