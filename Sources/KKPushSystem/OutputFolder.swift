import Foundation
package import KKPushCore

#if canImport(Glibc)
    package import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A folder a command writes a set of files into (a certificate and its key): created if missing, never replacing a
/// file unless asked to, each file written atomically with its own mode. Errors name the folder by `label`, the
/// caller's name for it, and the way to allow replacing by `forceLabel`.
package struct OutputFolder: Sendable {
    package var path: String
    package var label: String
    package var forceLabel: String

    package init(_ path: String, label: String = "(out)", forceLabel: String = "(force)") {
        self.path = path
        self.label = label
        self.forceLabel = forceLabel
    }

    /// `name` inside the folder.
    package func file(_ name: String) -> String { path + "/" + name }

    /// Creates the folder if missing and checks that `names` may be written into it: none of them exists unless
    /// `replace`. Throws ``KKPushError/Code/outputIsFile``, ``KKPushError/Code/outputExists`` or
    /// ``KKPushError/Code/outputNotWritable``.
    package func prepare(_ names: [String], replace: Bool) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw KKPushError(
                    code: .outputIsFile, message: "\(label) \(path) is a file, not a folder.",
                    fix: "Give a folder for \(names.prefix(2).joined(separator: " and ")) (it is created if missing).")
            }
        } else {
            try InputFile.checkWritable(path, what: "certificate folder", label: label)
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            } catch {
                throw KKPushError(
                    code: .outputNotWritable,
                    message: "\(label) \(path) could not be created (\(error.localizedDescription)).",
                    fix: "Give a folder this user can create.")
            }
        }
        for name in names where !replace && FileManager.default.fileExists(atPath: file(name)) {
            throw KKPushError(
                code: .outputExists, message: "\(file(name)) exists; nothing was written.",
                fix: "Give \(forceLabel) to replace it, or another \(label) folder.")
        }
        if let first = names.first { try InputFile.checkWritable(file(first), what: "certificate", label: label) }
    }

    /// Writes `text` to the file `name` with `mode`, atomically. Throws ``KKPushError/Code/outputNotWritable``.
    package func write(_ text: String, to name: String, mode: mode_t) throws {
        do {
            try AtomicFile.write(Array(text.utf8), to: file(name), mode: mode)
        } catch {
            throw KKPushError(
                code: .outputNotWritable, message: "\(file(name)) could not be written.",
                fix: "Check the folder's permissions and free space.")
        }
    }
}
