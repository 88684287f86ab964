public import Foundation
import KKPushCore

/// A Mach-O executable as far as `kkpush build inspect` needs it: its slices (one in a thin file, one per architecture
/// in a universal one), each with its file type and code signature.
///
/// The reader takes untrusted bytes: every offset, size and count is checked against the structure that holds it
/// before it is used (at most 32 slices, load commands inside `sizeofcmds` and the slice, at most 64 blobs in a code
/// signature, each inside it), and what cannot be read is a ``KKPushError`` naming the file, the slice and the
/// structure, never a trap or a guess.
public struct MachOFile: Sendable, Hashable {
    /// True for a universal ("fat") file (magic `0xcafebabe`, or `0xcafebabf` with 64-bit offsets); false for a thin
    /// one.
    public var isUniversal: Bool
    /// The slices in file order: the one image of a thin file, or one per architecture of a universal file.
    public var slices: [MachOSlice]

    /// Creates a file from its parts (for tests and tools that build one).
    public init(isUniversal: Bool, slices: [MachOSlice]) {
        self.isUniversal = isUniversal
        self.slices = slices
    }

    /// The most slices a universal file may list (Apple's tools build two or three).
    public static let maximumSlices = 32

    /// Reads a thin (32- or 64-bit, in the byte order its magic says) or universal (32- or 64-bit fat header)
    /// Mach-O file and the code signature of each slice.
    ///
    /// - Parameters:
    ///   - data: the whole file.
    ///   - what: what the file is, for errors (`"Payload/KantineKoning.app/KantineKoning"`).
    /// - Throws: ``KKPushError``, its message naming `what`, the slice and the structure:
    ///   - `build-macho-not-macho`: the file does not start with a Mach-O or universal magic.
    ///   - `build-macho-truncated`: a header, load command, segment, slice or the code signature runs past the end of
    ///     the file (the file was cut short).
    ///   - `build-macho-malformed`: a count, size or offset that cannot be right (no slices or more than 32, a load
    ///     command smaller than 8 bytes, a SuperBlob with more than 64 blobs or a blob outside it, a slice whose
    ///     header disagrees with the fat header, ...).
    ///   - `build-macho-entitlements-unreadable`: the entitlements blob (XML) or DER entitlements blob cannot be read.
    public static func parse(_ data: Data, what: String) throws -> MachOFile {
        let file = MachOBytes(data: data, context: MachOReadContext(what: what))
        guard file.count >= 4 else {
            throw file.context.error(
                .buildMachoNotMacho, "the Mach-O header",
                "the file has \(file.count) bytes, too few for any Mach-O or universal magic number")
        }
        let magic = try file.uint32(at: 0, .big, "the magic number")
        if magic == fatMagic || magic == fatMagic64 {
            return MachOFile(isUniversal: true, slices: try parseFat(file, is64: magic == fatMagic64))
        }
        guard thinMagics.contains(magic) else {
            throw file.context.error(
                .buildMachoNotMacho, "the Mach-O header",
                "the file starts with \(machOHex(magic)), which is no Mach-O magic (0xfeedfacf, 0xfeedface or either "
                    + "byte-swapped) and no universal magic (0xcafebabe, 0xcafebabf)")
        }
        let slice = try parseSlice(file, offset: 0, expectedCPU: nil, context: file.context, sliceName: nil)
        return MachOFile(isUniversal: false, slices: [slice])
    }

    /// True when `prefix` starts with a Mach-O (`0xfeedface`, `0xfeedfacf`, or either byte-swapped) or universal
    /// (`0xcafebabe`, `0xcafebabf`) magic: for telling a bare executable from other files. Four bytes are enough.
    ///
    /// Java class files also start with `0xcafebabe`; ``parse(_:what:)`` tells them apart (a class file's version
    /// reads as more than 32 slices).
    public static func hasMachOMagic(_ prefix: Data) -> Bool {
        guard prefix.count >= 4 else { return false }
        let bytes = prefix.prefix(4)
        let magic = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return magic == fatMagic || magic == fatMagic64 || thinMagics.contains(magic)
    }

    // MARK: - Constants (<mach-o/fat.h>, <mach-o/loader.h>)

    static let fatMagic: UInt32 = 0xcafe_babe
    static let fatMagic64: UInt32 = 0xcafe_babf
    /// MH_MAGIC, MH_CIGAM, MH_MAGIC_64, MH_CIGAM_64 as read big-endian.
    static let thinMagics: Set<UInt32> = [0xfeed_face, 0xcefa_edfe, 0xfeed_facf, 0xcffa_edfe]
    static let loadCommandSegment: UInt32 = 0x1
    static let loadCommandSegment64: UInt32 = 0x19
    static let loadCommandCodeSignature: UInt32 = 0x1d

    // MARK: - Universal files

    private static func parseFat(_ file: MachOBytes, is64: Bool) throws -> [MachOSlice] {
        let count = try file.uint32(at: 4, .big, "the universal header")
        guard count >= 1, count <= maximumSlices else {
            throw file.context.error(
                .buildMachoMalformed, "the universal header",
                "it lists \(count) slices; a universal file has from 1 to \(maximumSlices)")
        }
        let sliceCount = Int(count)
        let entrySize = is64 ? 32 : 20
        _ = try file.window(
            at: 8, length: sliceCount * entrySize,
            "the universal header's table of \(sliceCount) slices (\(is64 ? "fat_arch_64" : "fat_arch"))")
        var slices: [MachOSlice] = []
        for index in 0..<sliceCount {
            let entry = 8 + index * entrySize
            let name = "slice \(index + 1) of \(sliceCount)"
            let cpuType = try file.uint32(at: entry, .big, "the fat_arch entry of \(name)")
            let cpuSubtype = try file.uint32(at: entry + 4, .big, "the fat_arch entry of \(name)")
            let rawOffset: UInt64
            let rawSize: UInt64
            if is64 {
                rawOffset = try file.uint64(at: entry + 8, .big, "the fat_arch_64 entry of \(name)")
                rawSize = try file.uint64(at: entry + 16, .big, "the fat_arch_64 entry of \(name)")
            } else {
                rawOffset = UInt64(try file.uint32(at: entry + 8, .big, "the fat_arch entry of \(name)"))
                rawSize = UInt64(try file.uint32(at: entry + 12, .big, "the fat_arch entry of \(name)"))
            }
            let architecture = architectureName(cpuType: cpuType, cpuSubtype: cpuSubtype)
            let described = "\(name) (\(architecture), offset \(machOHex(rawOffset)), \(rawSize) bytes)"
            guard let offset = Int(exactly: rawOffset), let size = Int(exactly: rawSize),
                file.contains(offset: offset, length: size)
            else {
                throw file.context.error(
                    .buildMachoTruncated, described,
                    "the slice runs past the end of the file (\(file.count) bytes)")
            }
            let context = MachOReadContext(what: file.context.what, slice: described)
            let sliceBytes = try file.window(at: offset, length: size, described).with(context: context)
            slices.append(
                try parseSlice(
                    sliceBytes, offset: offset, expectedCPU: (cpuType, cpuSubtype), context: context,
                    sliceName: name))
        }
        return slices
    }

    // MARK: - One image

    private static func parseSlice(
        _ bytes: MachOBytes, offset: Int, expectedCPU: (type: UInt32, subtype: UInt32)?,
        context: MachOReadContext, sliceName: String?
    ) throws -> MachOSlice {
        let magic = try bytes.uint32(at: 0, .big, "the Mach-O header")
        let order: MachOBytes.ByteOrder
        let headerSize: Int
        switch magic {
        case 0xfeed_face: (order, headerSize) = (.big, 28)
        case 0xcefa_edfe: (order, headerSize) = (.little, 28)
        case 0xfeed_facf: (order, headerSize) = (.big, 32)
        case 0xcffa_edfe: (order, headerSize) = (.little, 32)
        default:
            throw context.error(
                .buildMachoMalformed, "the Mach-O header",
                "the slice starts with \(machOHex(magic)), which is no Mach-O magic")
        }
        _ = try bytes.window(at: 0, length: headerSize, "the Mach-O header")
        let cpuType = try bytes.uint32(at: 4, order, "the Mach-O header")
        let cpuSubtype = try bytes.uint32(at: 8, order, "the Mach-O header")
        let fileType = try bytes.uint32(at: 12, order, "the Mach-O header")
        let commandCount = try bytes.uint32(at: 16, order, "the Mach-O header")
        let commandsSize = try bytes.uint32(at: 20, order, "the Mach-O header")
        let architecture = architectureName(cpuType: cpuType, cpuSubtype: cpuSubtype)

        // From here on, errors name the architecture too.
        var context = context
        if let sliceName {
            context.slice = "\(sliceName) (\(architecture), offset \(machOHex(offset)))"
        } else {
            context.slice = "the \(architecture) image"
        }
        let bytes = bytes.with(context: context)

        if let expected = expectedCPU,
            expected.type != cpuType || expected.subtype & 0x00ff_ffff != cpuSubtype & 0x00ff_ffff
        {
            throw context.error(
                .buildMachoMalformed, "the Mach-O header",
                "its CPU type is \(architecture), but the universal header lists the slice as "
                    + architectureName(cpuType: expected.type, cpuSubtype: expected.subtype))
        }

        let commandsEnd = headerSize + Int(commandsSize)
        _ = try bytes.window(
            at: headerSize, length: Int(commandsSize),
            "the load commands (sizeofcmds \(commandsSize) bytes after the \(headerSize)-byte header)")
        guard commandCount <= commandsSize / 8 else {
            throw context.error(
                .buildMachoMalformed, "the load commands",
                "the header claims \(commandCount) of them in \(commandsSize) bytes, and each takes at least 8")
        }

        var signatureCommand: (dataOffset: UInt32, dataSize: UInt32)?
        var position = headerSize
        for index in 0..<Int(commandCount) {
            let name = "load command \(index + 1) of \(commandCount) at offset \(machOHex(position))"
            guard position <= commandsEnd - 8 else {
                throw context.error(
                    .buildMachoMalformed, name, "it starts past the end of the load commands (sizeofcmds)")
            }
            let command = try bytes.uint32(at: position, order, name)
            let size = Int(try bytes.uint32(at: position + 4, order, name))
            guard size >= 8, size <= commandsEnd - position else {
                throw context.error(
                    .buildMachoMalformed, name,
                    "its cmdsize is \(size); it must be at least 8 and end inside the load commands "
                        + "(\(commandsEnd - position) bytes left)")
            }
            let window = try bytes.window(at: position, length: size, name)
            switch command {
            case loadCommandCodeSignature:
                let name = "the LC_CODE_SIGNATURE load command (\(index + 1) of \(commandCount))"
                guard size >= 16 else {
                    throw context.error(.buildMachoMalformed, name, "its cmdsize is \(size), less than 16")
                }
                guard signatureCommand == nil else {
                    throw context.error(.buildMachoMalformed, name, "the slice has more than one")
                }
                signatureCommand = (try window.uint32(at: 8, order, name), try window.uint32(at: 12, order, name))
            case loadCommandSegment, loadCommandSegment64:
                try checkSegment(window, is64: command == loadCommandSegment64, order: order, slice: bytes, name: name)
            default:
                break
            }
            position += size
        }

        var signature: CodeSignature?
        if let command = signatureCommand {
            let name =
                "the code signature (LC_CODE_SIGNATURE: \(command.dataSize) bytes at offset "
                + "\(machOHex(command.dataOffset)) in the slice)"
            let region = try bytes.window(at: Int(command.dataOffset), length: Int(command.dataSize), name)
            signature = try CodeSignature.parse(region)
        }
        return MachOSlice(
            architecture: architecture, offset: offset, size: bytes.count, fileType: fileType,
            codeSignature: signature)
    }

    /// A segment's file range must lie inside the slice: a file cut short shows here even when it is not signed.
    private static func checkSegment(
        _ command: MachOBytes, is64: Bool, order: MachOBytes.ByteOrder, slice: MachOBytes, name: String
    ) throws {
        let minimumSize = is64 ? 72 : 56
        guard command.count >= minimumSize else {
            throw command.context.error(
                .buildMachoMalformed, name,
                "its cmdsize is \(command.count); a \(is64 ? "LC_SEGMENT_64" : "LC_SEGMENT") takes \(minimumSize)")
        }
        let nameBytes = try command.bytes(at: 8, length: 16, name).prefix { $0 != 0 }
        let segment = String(decoding: nameBytes, as: UTF8.self)
        let fileOffset: UInt64
        let fileSize: UInt64
        if is64 {
            fileOffset = try command.uint64(at: 40, order, name)
            fileSize = try command.uint64(at: 48, order, name)
        } else {
            fileOffset = UInt64(try command.uint32(at: 32, order, name))
            fileSize = UInt64(try command.uint32(at: 36, order, name))
        }
        guard let offset = Int(exactly: fileOffset), let size = Int(exactly: fileSize),
            slice.contains(offset: offset, length: size)
        else {
            throw command.context.error(
                .buildMachoTruncated, "segment \(segment) (\(name))",
                "its \(fileSize) bytes at offset \(machOHex(fileOffset)) run past the end of the slice "
                    + "(\(slice.count) bytes)")
        }
    }

    // MARK: - Architectures (<mach/machine.h>)

    /// The name Apple's tools give a CPU type and subtype (`arm64`, `arm64e`, `armv7`, `x86_64`, ...), or
    /// `cputype 0x…/0x…` for one this reader does not name. The subtype's top byte (capability bits, such as
    /// arm64e's pointer-authentication ABI version) is ignored.
    public static func architectureName(cpuType: UInt32, cpuSubtype: UInt32) -> String {
        let subtype = cpuSubtype & 0x00ff_ffff
        let name: String? =
            switch (cpuType, subtype) {
            case (7, 3): "i386"
            case (0x0100_0007, 3): "x86_64"
            case (0x0100_0007, 8): "x86_64h"
            case (12, 6): "armv6"
            case (12, 9): "armv7"
            case (12, 11): "armv7s"
            case (12, 12): "armv7k"
            case (0x0100_000c, 0), (0x0100_000c, 1): "arm64"
            case (0x0100_000c, 2): "arm64e"
            case (0x0200_000c, 0), (0x0200_000c, 1): "arm64_32"
            default: nil
            }
        return name ?? "cputype \(machOHex(cpuType))/\(machOHex(cpuSubtype))"
    }
}

/// One architecture's image in a Mach-O file.
public struct MachOSlice: Sendable, Hashable {
    /// `arm64`, `arm64e`, `armv7`, `armv7s`, `x86_64`, `i386`, ..., or `cputype 0x…/0x…` for another CPU.
    public var architecture: String
    /// Where the slice starts in the file (0 for a thin file).
    public var offset: Int
    /// The slice's size in bytes.
    public var size: Int
    /// The Mach-O file type: `MH_EXECUTE` = 2, `MH_DYLIB` = 6, `MH_BUNDLE` = 8, ...
    public var fileType: UInt32
    /// The slice's code signature, or nil when it has no `LC_CODE_SIGNATURE` load command (unsigned).
    public var codeSignature: CodeSignature?

    /// `MH_EXECUTE`: an executable (an app's or an app extension's main binary).
    public static let fileTypeExecute: UInt32 = 2
    /// `MH_DYLIB`: a dynamic library (a framework's binary).
    public static let fileTypeDylib: UInt32 = 6
    /// `MH_BUNDLE`: a loadable bundle.
    public static let fileTypeBundle: UInt32 = 8

    /// Creates a slice from its parts (for tests and tools that build one).
    public init(architecture: String, offset: Int, size: Int, fileType: UInt32, codeSignature: CodeSignature?) {
        self.architecture = architecture
        self.offset = offset
        self.size = size
        self.fileType = fileType
        self.codeSignature = codeSignature
    }
}
