import Foundation
package import KKPushCore

/// Reads a file (or stdin) line by line with a fixed buffer, never the whole file.
package final class LineReader: @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0
    /// The file's name in messages: the path, or "standard input".
    package let name: String

    /// Opens `path` (`-`: standard input). `what` and `label` (the option, or the setting, that gave the path) name
    /// it in messages; `holds` says what it should hold, for the fix.
    package init(path: String, what: String, label: String, holds: String) throws {
        if path == "-" {
            guard let f = fdopen(dup(InputFile.standardInput), "r") else {
                throw KKPushError(
                    code: .batchStdinUnreadable,
                    message: "Cannot read standard input: \(ErrorWords.systemText(errno: errno)).")
            }
            file = f
            name = "standard input"
        } else {
            try InputFile.checkFile(path, what: what, label: label, holds: holds)
            guard let f = fopen(path, "r") else {
                throw KKPushError(
                    code: .batchInputUnreadable,
                    message:
                        "Cannot open the \(what) \(label) \(path): \(ErrorWords.systemText(errno: errno).lowercased()).",
                    fix: "Make it readable by this user (ls -l \(path)); it holds \(holds).")
            }
            file = f
            name = "'\(path)'"
        }
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its line break, or nil at the end of the file. A read error (an I/O
    /// error, a directory) throws: it is never taken for the end of the file.
    package func next() throws(KKPushError) -> String? {
        while true {
            errno = 0
            let n = getline(&buffer, &capacity, file)
            if n >= 0, let buffer {
                var length = n
                while length > 0, buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D { length -= 1 }
                return buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
            }
            let code = errno
            if ferror(file) == 0 { return nil }
            clearerr(file)
            if code == EINTR || code == EAGAIN { continue }
            throw KKPushError(
                code: .batchInputReadError,
                message: "Cannot read \(name): \(ErrorWords.systemText(errno: code == 0 ? EIO : code)).",
                fix: "Give a readable regular file (or - for stdin); the lines before the error were handled.")
        }
    }

    /// The underlying file descriptor.
    package var descriptor: Int32 { fileno(file) }
}
