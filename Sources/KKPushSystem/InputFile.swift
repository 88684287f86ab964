import CKKPushSystem
import Foundation
public import KKPushCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading a file the user named, and checking a path the user wants written, with errors a user can act on.
///
/// Every command reads its inputs through ``read(_:what:flag:maximumSize:allowEmpty:)`` so that a missing file,
/// a folder, an unreadable file, an empty one and one far too large are each named the same way everywhere,
/// with the flag that gave the path. `-` reads standard input.
public enum InputFile {
    /// The descriptor `-` reads: the process's standard input, or the one a command run in process was given.
    @TaskLocal public static var standardInput: Int32 = STDIN_FILENO

    /// Reads `path` (or standard input for `-`).
    ///
    /// - Parameters:
    ///   - what: what the file should hold, for messages ("payload file", "signing key").
    ///   - flag: the option that named it (`--payload`), or nil for a positional argument.
    ///   - maximumSize: refuse files larger than this many bytes (read no further).
    ///   - allowEmpty: whether an empty file (or empty standard input) is acceptable.
    public static func read(
        _ path: String, what: String, flag: String? = nil, maximumSize: Int? = nil, allowEmpty: Bool = false
    ) throws -> [UInt8] {
        let label = flag.map { "\($0) \(path)" } ?? "'\(path)'"
        let bytes: [UInt8]
        if path == "-" {
            let data = FileHandle(fileDescriptor: standardInput, closeOnDealloc: false).readDataToEndOfFile()
            bytes = [UInt8](data)
        } else {
            try checkFile(path, what: what, flag: flag)
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                let reason = errno
                throw KKPushError(
                    code: .fileUnreadable, message: "The \(what) \(label) cannot be read: \(describe(reason)).",
                    fix: reason == EACCES ? "Make it readable by this user (ls -l \(path))." : "Check the file.")
            }
            defer { close(fd) }
            var collected: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    let reason = errno
                    if reason == EINTR { continue }
                    throw KKPushError(
                        code: .fileUnreadable, message: "The \(what) \(label) cannot be read: \(describe(reason)).",
                        fix: "Give a regular file.")
                }
                if n == 0 { break }
                collected.append(contentsOf: chunk[0..<n])
                if let maximumSize, collected.count > maximumSize { break }
            }
            bytes = collected
        }
        if let maximumSize, bytes.count > maximumSize {
            throw KKPushError(
                code: .fileTooLarge,
                message: "The \(what) \(label) is larger than \(maximumSize) bytes, the most a \(what) can be.",
                fix: "Check that \(flag ?? "the argument") names the \(what) and not another file.")
        }
        if !allowEmpty, bytes.isEmpty {
            throw KKPushError(
                code: .fileEmpty,
                message: path == "-"
                    ? "Standard input is empty; a \(what) was expected." : "The \(what) \(label) is empty.",
                fix: path == "-"
                    ? "Pipe the \(what) into kkpush, or give its path." : "Give the \(what) that holds the content.")
        }
        return bytes
    }

    /// Checks that `path` names a file that exists, before it is opened: not empty, not the file's content given
    /// in its place (``inlineContentError(_:what:flag:)``), not missing, not a folder, reachable. `holds` (what the
    /// file should hold, "one device token per line") is added to the fixes. Every reader of a user's file starts
    /// here, so each of these is named the same way everywhere, with the flag that gave the path.
    public static func checkFile(_ path: String, what: String, flag: String?, holds: String? = nil) throws {
        let label = flag.map { "\($0) \(path)" } ?? "'\(path)'"
        if path.isEmpty {
            throw KKPushError(
                code: .filePathEmpty, message: "The \(what) path\(flag.map { " (\($0))" } ?? "") is empty.",
                fix: "Give the path of the \(what)\(holds.map { " (\($0))" } ?? ""), or - for standard input.")
        }
        var info = kk_file_status()
        if kk_stat(path, &info) != 0 {
            let reason = errno
            if let inline = inlineContentError(path, what: what, flag: flag) { throw inline }
            if reason == ENOENT || reason == ENOTDIR {
                throw KKPushError(
                    code: .fileMissing, message: "The \(what) \(label) does not exist.",
                    fix: missingFix(path) + (holds.map { " The file holds \($0)." } ?? ""))
            }
            throw KKPushError(
                code: .fileUnreadable, message: "The \(what) \(label) cannot be read: \(describe(reason)).",
                fix: "Check the path and the permissions of its folders.")
        }
        if info.is_directory != 0 {
            let file = what.hasSuffix(" file") ? what : what + " file"
            throw KKPushError(
                code: .fileIsDirectory, message: "The \(what) \(label) is a folder, not a file.",
                fix: "Give the path of the \(file) inside it\(holds.map { " (\($0))" } ?? "").")
        }
    }

    /// Reads a file as UTF-8 text (see ``read(_:what:flag:maximumSize:allowEmpty:)``).
    public static func readText(
        _ path: String, what: String, flag: String? = nil, maximumSize: Int? = nil, allowEmpty: Bool = false
    ) throws -> String {
        let bytes = try read(path, what: what, flag: flag, maximumSize: maximumSize, allowEmpty: allowEmpty)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let label = flag.map { "\($0) \(path)" } ?? "'\(path)'"
            throw KKPushError(
                code: .fileNotText, message: "The \(what) \(label) is not UTF-8 text.",
                fix: "Give the \(what) as UTF-8 text (this file holds binary data).")
        }
        return text
    }

    /// Checks that `path` can be created or replaced, before any work is done, so that the error comes first and
    /// names the path: its folder must exist and be a folder, and the path itself must not be a folder.
    public static func checkWritable(_ path: String, what: String, flag: String? = nil) throws {
        let label = flag.map { "\($0) \(path)" } ?? "'\(path)'"
        if path == "-" { return }
        if path.isEmpty {
            throw KKPushError(
                code: .outputPathEmpty, message: "The \(what) path\(flag.map { " (\($0))" } ?? "") is empty.",
                fix: "Give a file path, or - for standard output.")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw KKPushError(
                code: .outputIsDirectory, message: "The \(what) \(label) is a folder.",
                fix: "Give a file path inside it, for example \(path.hasSuffix("/") ? path : path + "/")out.json.")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) {
            throw KKPushError(
                code: .outputFolderMissing,
                message: "The folder of the \(what) \(label) does not exist (\(folder)).",
                fix: "Create it first (mkdir -p \(folder)), or give a path in an existing folder.")
        }
        if !isDirectory.boolValue {
            throw KKPushError(
                code: .outputFolderMissing, message: "The \(what) \(label) lies under \(folder), which is a file.",
                fix: "Give a path in a folder.")
        }
        if access(folder, W_OK) != 0 {
            throw KKPushError(
                code: .outputNotWritable, message: "The folder of the \(what) \(label) is not writable (\(folder)).",
                fix: "Choose a folder this user can write, or change its permissions.")
        }
    }

    /// A sentence for an errno value ("No such file or directory").
    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }

    /// The error for a path that is not a file but looks like the file's content (a JSON object or array, a
    /// PEM block: `--payload '{"aps":…}'`), which a user gives expecting the flag to take the text itself;
    /// nil if `path` does not look like content.
    public static func inlineContentError(_ path: String, what: String, flag: String?) -> KKPushError? {
        let text = path.drop { $0 == " " || $0 == "\n" || $0 == "\t" }
        let kind: String
        if text.hasPrefix("{") || text.hasPrefix("[") {
            kind = "JSON"
        } else if text.hasPrefix("-----BEGIN") {
            kind = "a PEM block"
        } else {
            return nil
        }
        let shown = text.count > 40 ? text.prefix(40) + "…" : text
        let taker = flag.map { "\($0) takes" } ?? "The argument takes"
        return KKPushError(
            code: .fileGivenInline,
            message:
                "\(taker) the path of the \(what) (or - for standard input), but was given \(kind) itself: \(shown)",
            fix: "Save the \(kind == "JSON" ? "JSON" : "PEM") in a file and give its path, or give - and pipe it in "
                + "(printf '%s' '…' | … -).")
    }

    private static func missingFix(_ path: String) -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) || !isDirectory.boolValue {
            return "Check the path: its folder \(folder) does not exist either."
        }
        return "Check the path (relative paths start at \(FileManager.default.currentDirectoryPath))."
    }
}
