import KKPushCore

#if canImport(Glibc)
    public import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writing a whole file so that no reader ever sees half of it: the bytes go to a temporary file in the same
/// folder, are flushed to disk, and the temporary file is renamed over the path.
public enum AtomicFile {
    /// Why a write failed: the `errno` of the step that failed (the temporary file is removed).
    public struct Failure: Error, Sendable {
        /// The C library's error number.
        public var errno: Int32
        /// Its words ("No space left on device").
        public var text: String { ErrorWords.systemText(errno: errno) }
    }

    /// Writes `bytes` to `path`, created with permission `mode` (less the umask).
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(folder).\(name).\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(errno: errno) }
        var failure: Int32 = 0
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = systemWrite(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += n
            }
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw Failure(errno: failure)
        }
    }
}

/// The C library's `write(2)` (inside ``AtomicFile`` the name `write` is its own).
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
    #else
        Darwin.write(fd, buffer, count)
    #endif
}
