import Foundation
import KKPushCore
import ZIPFoundation

/// The files of a build, wherever they are: the members of an `.ipa` (a zip) or a folder on disk (an `.app`, an
/// `.xcarchive`). Paths are relative and `/`-separated. Every read is bounded: a member is never read past `limit`
/// bytes, whatever its header claims, so a zip bomb or a lying size stops at the limit with an error.
protocol BuildFileTree {
    /// What the tree is, for messages ("dist/App.ipa").
    var name: String { get }
    /// Every file path in the tree (folders are not listed).
    var paths: [String] { get }
    /// Reads one file, whole, refusing more than `limit` bytes.
    func read(_ path: String, limit: Int) throws -> Data
}

/// How much kkpush reads of one member, at most.
enum BuildReadLimit {
    /// An Info.plist, a profile, an entitlements file, a DistributionSummary.plist.
    static let smallFile = 4 << 20
    /// An executable: real app executables are tens of megabytes; Mach-O signatures sit at each slice's end, so the
    /// whole file is read (never the whole archive).
    static let executable = 512 << 20
    /// Members of an archive, at most.
    static let entries = 200_000
}

/// An `.ipa` (or any zip) read with ZIPFoundation: the central directory first, then one member at a time,
/// inflated through zlib in 64 KiB chunks into a buffer that refuses to grow past the limit.
final class ZipFileTree: BuildFileTree {
    let name: String
    let archive: Archive
    let paths: [String]
    private let entries: [String: Entry]

    init(url: URL, name: String) throws {
        self.name = name
        do {
            archive = try Archive(url: url, accessMode: .read)
        } catch {
            throw KKPushError(
                code: .buildZipUnreadable,
                message:
                    "\(name) is not a zip archive that can be read (no end-of-central-directory record, or a damaged one).",
                fix:
                    "An .ipa is a zip of Payload/<App>.app: check the file was copied whole (compare its size and checksum).",
                underlying: KKPushError.Cause(String(describing: error)))
        }
        var map: [String: Entry] = [:]
        var list: [String] = []
        var count = 0
        for entry in archive {
            count += 1
            if count > BuildReadLimit.entries {
                throw KKPushError(
                    code: .buildZipTooManyEntries,
                    message: "\(name) has more than \(BuildReadLimit.entries) members; the reader stops there.",
                    fix: "Pass the .app folder or the executable itself.")
            }
            guard entry.type == .file else { continue }
            let path = entry.path
            if map[path] == nil { list.append(path) }
            map[path] = entry
        }
        entries = map
        paths = list
    }

    func read(_ path: String, limit: Int) throws -> Data {
        guard let entry = entries[path] else {
            throw KKPushError(code: .buildFileMissing, message: "\(name) has no member \(path).", fix: nil)
        }
        if entry.uncompressedSize > UInt64(limit) {
            throw KKPushError(
                code: .buildMemberTooLarge,
                message:
                    "\(name): \(path) declares \(entry.uncompressedSize) bytes uncompressed, over kkpush's limit of \(limit) for such a file.",
                fix:
                    "A real build's \((path as NSString).lastPathComponent) is far smaller: check the archive was not tampered with."
            )
        }
        var out = Data()
        out.reserveCapacity(Int(min(entry.uncompressedSize, UInt64(limit))))
        var overflowed = false
        do {
            _ = try archive.extract(entry, bufferSize: 64 * 1024, skipCRC32: false) { chunk in
                if out.count + chunk.count > limit {
                    overflowed = true
                    throw KKPushError(code: .buildMemberTooLarge, message: "", fix: nil)
                }
                out.append(chunk)
            }
        } catch {
            if overflowed {
                throw KKPushError(
                    code: .buildMemberTooLarge,
                    message:
                        "\(name): \(path) inflates past kkpush's limit of \(limit) bytes although its header says \(entry.uncompressedSize) (a zip bomb, or a damaged archive); reading stopped there.",
                    fix: "Rebuild or re-download the archive; do not unpack it.")
            }
            throw KKPushError(
                code: .buildZipDamaged,
                message:
                    "\(name): the member \(path) cannot be inflated (damaged or truncated data, or a bad checksum).",
                fix: "Check the file was copied whole.", underlying: KKPushError.Cause(String(describing: error)))
        }
        return out
    }
}

/// A folder on disk: an `.app`, an `.xcarchive`, an export folder.
final class DirectoryFileTree: BuildFileTree {
    let name: String
    let root: URL
    let paths: [String]

    init(url: URL, name: String) throws {
        self.name = name
        root = url.standardizedFileURL
        var list: [String] = []
        let base = root.path.hasSuffix("/") ? root.path : root.path + "/"
        if let walker = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [], errorHandler: { _, _ in true })
        {
            for case let item as URL in walker {
                if list.count >= BuildReadLimit.entries { break }
                guard (try? item.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
                let full = item.standardizedFileURL.path
                if full.hasPrefix(base) { list.append(String(full.dropFirst(base.count))) }
            }
        }
        paths = list.sorted()
    }

    func read(_ path: String, limit: Int) throws -> Data {
        let url = root.appendingPathComponent(path)
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
        guard let size = (attributes?[.size] as? NSNumber)?.intValue else {
            throw KKPushError(code: .buildFileMissing, message: "\(name) has no file \(path).", fix: nil)
        }
        if size > limit {
            throw KKPushError(
                code: .buildMemberTooLarge,
                message: "\(name): \(path) is \(size) bytes, over kkpush's limit of \(limit) for such a file.",
                fix: "Check it is the file Xcode wrote.")
        }
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            return try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw KKPushError(
                code: .buildFileUnreadable, message: "\(name): \(path) cannot be read.",
                fix: "Check its permissions.",
                underlying: KKPushError.Cause(String(describing: error)))
        }
    }
}
