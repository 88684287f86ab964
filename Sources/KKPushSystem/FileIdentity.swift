import CKKPushSystem
import Foundation

/// Whether two names are the same file (device and inode), e.g. `--output` being the token file.
package enum FileIdentity {
    /// Both paths exist and are the same file.
    package static func same(path: String, as other: String) -> Bool {
        var a = kk_file_status()
        var b = kk_file_status()
        guard kk_stat(path, &a) == 0, kk_stat(other, &b) == 0 else { return false }
        return a.device == b.device && a.inode == b.inode
    }

    /// The descriptor is a regular file, and it is the file at `path`.
    package static func same(descriptor: Int32, path: String) -> Bool {
        var a = kk_file_status()
        var b = kk_file_status()
        guard kk_fstat(descriptor, &a) == 0, kk_stat(path, &b) == 0 else { return false }
        return a.is_regular != 0 && a.device == b.device && a.inode == b.inode
    }
}

/// Access checks for the user running kkpush.
package enum FileAccess {
    /// The user may write to `path` (access(2) with W_OK).
    package static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }
}
