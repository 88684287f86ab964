import CoreFoundation
import Foundation

/// Whether two names are the same file (device and inode), e.g. `--output` being the token file.
enum FileIdentity {
    /// Both paths exist and are the same file.
    static func same(path: String, as other: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat(path, &a) == 0, stat(other, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// The descriptor is a regular file, and it is the file at `path`.
    static func same(descriptor: Int32, path: String) -> Bool {
        var a = stat()
        var b = stat()
        guard fstat(descriptor, &a) == 0, stat(path, &b) == 0 else { return false }
        return (a.st_mode & S_IFMT) == S_IFREG && a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }
}

/// Access checks for the user running kkpush.
enum FileAccess {
    /// The user may write to `path` (access(2) with W_OK).
    static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }
}
