import Foundation
import KKPushCore

/// Raw file descriptors for result files (never truncated) and the flags of the ones inherited.
package enum FileDescriptors {
    /// Writes all of `bytes` to `descriptor`, again after EINTR; stops quietly at any other failure (a closed
    /// stdout or stderr must not end a run). False when not everything was written.
    package static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = write(descriptor, base + offset, bytes.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Why a descriptor could not be opened: the `errno` value and its words.
    package struct OpenFailure: Error {
        package let code: Int32
        package var text: String { ErrorWords.systemText(errno: code) }
    }

    /// Opens `path` for writing at its end (created with mode 0644 if missing, never truncated, closed on exec).
    package static func openForAppend(_ path: String) -> Result<Int32, OpenFailure> {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        return fd >= 0 ? .success(fd) : .failure(OpenFailure(code: errno))
    }

    /// Opens `path` for writing (an existing file such as /dev/null); -1 if it cannot be.
    package static func openForWriting(_ path: String) -> Int32 { open(path, O_WRONLY) }

    /// False only when the descriptor's flags could be read and lack O_APPEND (the shell's `>`).
    package static func isAppending(_ descriptor: Int32) -> Bool { fcntl(descriptor, F_GETFL) & O_APPEND != 0 }
}
