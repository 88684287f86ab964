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
/// Every command reads its inputs through ``read(_:what:label:maximumSize:allowEmpty:)`` so that a missing file,
/// a folder, an unreadable file, an empty one and one far too large are each named the same way everywhere,
/// with the flag that gave the path. `-` reads standard input.
public enum InputFile {
    /// The descriptor `-` reads: the process's standard input, or the one a command run in process was given.
    @TaskLocal public static var standardInput: Int32 = STDIN_FILENO

    /// How long a read of a named pipe (a FIFO, a process substitution `<(…)`) whose writer has it open waits for
    /// its first bytes. Between later bytes it waits six times as long.
    @TaskLocal public static var streamWait: Duration = .seconds(10)

    /// How long a FIFO that nothing has open for writing when kkpush opens it is given for a writer to come (a shell's
    /// `cat file > fifo &` started just before kkpush may not have opened its end yet) before it is refused with
    /// `file-no-writer`. Short on purpose: a FIFO without a writer never holds a command, whatever the caller's
    /// timeout (a read of a FIFO with no writer is at its end at once, so kkpush knows there is none).
    @TaskLocal public static var writerGrace: Duration = .milliseconds(500)

    /// Reads `path` (or standard input for `-`).
    ///
    /// A named pipe, a process substitution (`<(…)`) or a character device is read as a stream, up to
    /// `maximumSize`, never blocking forever: a FIFO that nothing has open for writing is `file-no-writer` within
    /// ``writerGrace`` (half a second), and one whose writer sends nothing within ``streamWait`` is too.
    ///
    /// - Parameters:
    ///   - what: what the file should hold, for messages ("payload file", "signing key").
    ///   - label: how the caller names the input in messages (a command line gives its option, `--payload`) (`--payload`), or nil for a positional argument.
    ///   - maximumSize: refuse files larger than this many bytes (read no further).
    ///   - allowEmpty: whether an empty file (or empty standard input) is acceptable.
    public static func read(
        _ path: String, what: String, label inputName: String? = nil, maximumSize: Int? = nil, allowEmpty: Bool = false
    ) throws -> [UInt8] {
        let label = inputName.map { "\($0) \(path)" } ?? "'\(path)'"
        let bytes: [UInt8]
        if path == "-" {
            bytes = try readAll(standardInput, label: "Standard input", what: what, limit: maximumSize, wait: nil)
        } else {
            try checkFile(path, what: what, label: inputName)
            // O_NONBLOCK: opening a FIFO without a writer returns at once (readAll then waits, bounded).
            let fd = systemPath(path).withUnsafeBufferPointer {
                open($0.baseAddress!, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            }
            if fd < 0 {
                let reason = errno
                throw KKPushError(
                    code: .fileUnreadable, message: "The \(what) \(label) cannot be read: \(describe(reason)).",
                    fix: reason == EACCES ? "Make it readable by this user (ls -l \(path))." : "Check the file.")
            }
            defer { close(fd) }
            var info = kk_file_status()
            let known = kk_fstat(fd, &info) == 0
            let isStream = known && info.is_regular == 0
            let isPipe = known && UInt8(truncatingIfNeeded: info.special_kind) == UInt8(ascii: "f")
            bytes = try readAll(
                fd, label: "The \(what) \(label)", what: what, limit: maximumSize, wait: isStream ? streamWait : nil,
                writerGrace: isPipe ? writerGrace : nil)
        }
        if let maximumSize, bytes.count > maximumSize {
            throw KKPushError(
                code: .fileTooLarge,
                message: "The \(what) \(label) is larger than \(maximumSize) bytes, the most a \(what) can be.",
                fix: "Check that \(inputName ?? "the argument") names the \(what) and not another file.")
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

    /// Reads `fd` to its end, or to one byte past `limit`. `wait` (a stream): how long to wait for the first
    /// bytes (six times as long between later ones) before `file-no-writer`; nil: plain blocking reads.
    /// `writerGrace` (a pipe opened with `O_NONBLOCK`): how long a pipe that nothing has open for writing is given
    /// for a writer before `file-no-writer`.
    static func readAll(
        _ fd: Int32, label: String, what: String, limit: Int?, wait: Duration?, writerGrace: Duration? = nil
    ) throws -> [UInt8] {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        if let writerGrace {
            // A read of a pipe nothing has open for writing ends at once (0 bytes); one whose writer is there but
            // has written nothing yet is EAGAIN (O_NONBLOCK). Without a writer, wait only the short grace: poll(2)
            // answers when one connects and writes (or connects and closes), never for the writer's absence.
            var n: Int
            repeat {
                n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            } while n < 0 && errno == EINTR
            if n > 0 {
                collected.append(contentsOf: chunk[0..<n])
            } else if n == 0, !waitReadable(fd, for: writerGrace) {
                throw KKPushError(
                    code: .fileNoWriter,
                    message:
                        "\(label) is a named pipe that nothing has open for writing (none came within \(Self.seconds(writerGrace)) s).",
                    fix:
                        "Start the program that writes the \(what) into the pipe first (cat FILE > PIPE &), or give a regular file (or - with the \(what) piped into standard input)."
                )
            }
        }
        while true {
            if let wait {
                let patience = collected.isEmpty ? wait : wait * 6
                if !waitReadable(fd, for: patience) {
                    let shown = Self.seconds(patience)
                    throw KKPushError(
                        code: .fileNoWriter,
                        message: collected.isEmpty
                            ? "\(label) is a named pipe nothing wrote into within \(shown) s."
                            : "\(label) is a named pipe that sent nothing more for \(shown) s after \(collected.count) bytes.",
                        fix:
                            "Start the program that writes the \(what) into the pipe first, or give a regular file (or - with the \(what) piped into standard input)."
                    )
                }
            }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                let reason = errno
                if reason == EINTR || (reason == EAGAIN && wait != nil) { continue }
                throw KKPushError(
                    code: .fileUnreadable, message: "\(label) cannot be read: \(describe(reason)).",
                    fix: "Give a regular file.")
            }
            if n == 0 { break }
            collected.append(contentsOf: chunk[0..<n])
            if let limit, collected.count > limit { break }
        }
        return collected
    }

    /// Whether `fd` has something to read (or its writer's end) within `duration`: poll(2), EINTR retried.
    static func waitReadable(_ fd: Int32, for duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            let ready = kk_wait_readable(fd, milliseconds(max(left, .zero)))
            if ready < 0, errno == EINTR { continue }
            return ready != 0
        }
    }

    /// `duration` in whole milliseconds, for poll(2).
    static func milliseconds(_ duration: Duration) -> Int32 {
        Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// `duration` in seconds as a message says it: `0.5`, `10`.
    static func seconds(_ duration: Duration) -> String {
        let ms = milliseconds(duration)
        return ms % 1000 == 0 ? "\(ms / 1000)" : String(format: "%.1f", Double(ms) / 1000)
    }

    /// `path` as the file system has it: the argument's own bytes when the name is not UTF-8.
    ///
    /// Swift reads a command line argument as UTF-8, replacing what is not (a latin-1 `é`) with U+FFFD, so the
    /// name would no longer exist; the argument's bytes are found again in the process's argv (the argument itself,
    /// or the value of `--flag=path`).
    public static func systemPath(_ path: String) -> [CChar] {
        guard path.unicodeScalars.contains("\u{FFFD}") else { return Array(path.utf8CString) }
        for i in 0..<Int(CommandLine.argc) {
            guard let arg = CommandLine.unsafeArgv[i] else { continue }
            let raw = UnsafeBufferPointer(start: arg, count: strlen(arg)).map { UInt8(bitPattern: $0) }
            if String(decoding: raw, as: UTF8.self) == path { return raw.map { CChar(bitPattern: $0) } + [0] }
            if let equals = raw.firstIndex(of: UInt8(ascii: "=")),
                String(decoding: raw[(equals + 1)...], as: UTF8.self) == path
            {
                return raw[(equals + 1)...].map { CChar(bitPattern: $0) } + [0]
            }
        }
        return Array(path.utf8CString)
    }

    /// What a path names when it is not a regular file or a folder (following links): "a named pipe (FIFO)", "a
    /// socket", "a character device", "a block device"; nil for a regular file, a folder, or a path that is not there.
    public static func specialKind(_ path: String) -> String? {
        var info = kk_file_status()
        guard systemPath(path).withUnsafeBufferPointer({ kk_stat($0.baseAddress!, &info) }) == 0 else { return nil }
        switch UInt8(truncatingIfNeeded: info.special_kind) {
        case UInt8(ascii: "f"): return "a named pipe (FIFO)"
        case UInt8(ascii: "s"): return "a socket"
        case UInt8(ascii: "c"): return "a character device"
        case UInt8(ascii: "b"): return "a block device"
        default: return nil
        }
    }

    /// Whether `path` must be copied to a file before a reader that needs random access (a zip, a database) can use
    /// it: standard input (`-`), a pipe or a device, or a name that is not UTF-8.
    public static func needsCopy(_ path: String) -> Bool {
        path == "-" || specialKind(path) != nil || path.unicodeScalars.contains("\u{FFFD}")
    }

    /// Reads `path` as ``read(_:what:label:maximumSize:allowEmpty:)`` does (a stream bounded by `maximumSize`, never
    /// waiting forever) into a new file in a private temporary folder, for a reader that needs random access; the
    /// caller removes the folder (the returned path's parent).
    public static func copyToTemporaryFile(
        _ path: String, what: String, label inputName: String? = nil, maximumSize: Int, suffix: String = ""
    ) throws -> String {
        let bytes = try read(path, what: what, label: inputName, maximumSize: maximumSize)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-input-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let copy = folder.appendingPathComponent("input" + suffix).path
        guard FileManager.default.createFile(atPath: copy, contents: Data(bytes)) else {
            try? FileManager.default.removeItem(at: folder)
            throw KKPushError(
                code: .fileUnreadable, message: "The \(what) could not be copied to a temporary file (\(copy)).",
                fix: "Check the free space in \(folder.deletingLastPathComponent().path), or give a regular file.")
        }
        return copy
    }

    /// Refuses `path` unless it is a regular file (or a folder, which the caller judges): a pipe, a socket or a
    /// device cannot be read at any offset, as a database or an archive must be (`file-not-regular`).
    public static func checkRegular(_ path: String, what: String, label inputName: String?) throws {
        guard let kind = specialKind(path) else { return }
        let label = inputName.map { "\($0) \(path)" } ?? "'\(path)'"
        throw KKPushError(
            code: .fileNotRegular,
            message:
                "The \(what) \(label) is \(kind), not a regular file, and it must be one (it is read at any offset).",
            fix: "Save it to a file first (cat \(path) > copy) and give that file's path.")
    }

    /// Checks that `path` names a file that exists, before it is opened: not empty, not the file's content given
    /// in its place (``inlineContentError(_:what:label:)``), not missing, not a folder, reachable. `holds` (what the
    /// file should hold, "one device token per line") is added to the fixes. Every reader of a user's file starts
    /// here, so each of these is named the same way everywhere, with the flag that gave the path.
    public static func checkFile(_ path: String, what: String, label inputName: String?, holds: String? = nil) throws {
        let label = inputName.map { "\($0) \(path)" } ?? "'\(path)'"
        if path.isEmpty {
            throw KKPushError(
                code: .filePathEmpty, message: "The \(what) path\(inputName.map { " (\($0))" } ?? "") is empty.",
                fix: "Give the path of the \(what)\(holds.map { " (\($0))" } ?? ""), or - for standard input.")
        }
        var info = kk_file_status()
        if systemPath(path).withUnsafeBufferPointer({ kk_stat($0.baseAddress!, &info) }) != 0 {
            let reason = errno
            if let inline = inlineContentError(path, what: what, label: inputName) { throw inline }
            if reason == ENOENT || reason == ENOTDIR {
                let notUTF8 =
                    path.unicodeScalars.contains("\u{FFFD}")
                    ? " Its name, as given, is not UTF-8 (shown with �), and no argument of this process has those bytes."
                    : ""
                throw KKPushError(
                    code: .fileMissing, message: "The \(what) \(label) does not exist.\(notUTF8)",
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

    /// Reads a file as UTF-8 text (see ``read(_:what:label:maximumSize:allowEmpty:)``).
    public static func readText(
        _ path: String, what: String, label inputName: String? = nil, maximumSize: Int? = nil, allowEmpty: Bool = false
    ) throws -> String {
        let bytes = try read(path, what: what, label: inputName, maximumSize: maximumSize, allowEmpty: allowEmpty)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let label = inputName.map { "\($0) \(path)" } ?? "'\(path)'"
            throw KKPushError(
                code: .fileNotText, message: "The \(what) \(label) is not UTF-8 text.",
                fix: "Give the \(what) as UTF-8 text (this file holds binary data).")
        }
        return text
    }

    /// Checks that `path` can be created or replaced, before any work is done, so that the error comes first and
    /// names the path: its folder must exist and be a folder, and the path itself must not be a folder.
    public static func checkWritable(_ path: String, what: String, label inputName: String? = nil) throws {
        let label = inputName.map { "\($0) \(path)" } ?? "'\(path)'"
        if path == "-" { return }
        if path.isEmpty {
            throw KKPushError(
                code: .outputPathEmpty, message: "The \(what) path\(inputName.map { " (\($0))" } ?? "") is empty.",
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
    public static func inlineContentError(_ path: String, what: String, label inputName: String?) -> KKPushError? {
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
        let taker = inputName.map { "\($0) takes" } ?? "The argument takes"
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
