import Foundation
import KKPushCore

/// A bounds-checked window on part of a file's bytes: every read names what it reads, and one that would leave the
/// window throws instead of trapping. Offsets are relative to the window; all arithmetic on them is checked.
struct MachOBytes {
    /// The byte order of multi-byte integers.
    enum ByteOrder { case big, little }

    /// The whole file.
    let data: Data
    /// Where the window starts, counted from `data.startIndex`.
    let base: Int
    /// How many bytes the window holds.
    let count: Int
    /// Who to blame in an error: the file and the slice.
    let context: MachOReadContext

    init(data: Data, context: MachOReadContext) {
        self.data = data
        self.base = 0
        self.count = data.count
        self.context = context
    }

    private init(data: Data, base: Int, count: Int, context: MachOReadContext) {
        self.data = data
        self.base = base
        self.count = count
        self.context = context
    }

    /// True when `length` bytes from `offset` lie inside the window.
    func contains(offset: Int, length: Int) -> Bool {
        guard offset >= 0, length >= 0 else { return false }
        let (end, overflow) = offset.addingReportingOverflow(length)
        return !overflow && end <= count
    }

    /// The window of `length` bytes at `offset`, or a `build-macho-truncated` error naming `structure`.
    func window(at offset: Int, length: Int, _ structure: @autoclosure () -> String) throws -> MachOBytes {
        try require(offset: offset, length: length, structure())
        return MachOBytes(data: data, base: base + offset, count: length, context: context)
    }

    /// The same bytes, blamed on another slice.
    func with(context: MachOReadContext) -> MachOBytes {
        MachOBytes(data: data, base: base, count: count, context: context)
    }

    /// A copy of `length` bytes at `offset`.
    func bytes(at offset: Int, length: Int, _ structure: @autoclosure () -> String) throws -> Data {
        try require(offset: offset, length: length, structure())
        let start = data.startIndex + base + offset
        return data.subdata(in: start..<(start + length))
    }

    /// The byte at `offset`.
    func uint8(at offset: Int, _ structure: @autoclosure () -> String) throws -> UInt8 {
        try require(offset: offset, length: 1, structure())
        return data[data.startIndex + base + offset]
    }

    /// The 32-bit integer at `offset`.
    func uint32(at offset: Int, _ order: ByteOrder, _ structure: @autoclosure () -> String) throws -> UInt32 {
        try require(offset: offset, length: 4, structure())
        let start = data.startIndex + base + offset
        var value: UInt32 = 0
        for i in 0..<4 {
            let byte = UInt32(data[start + (order == .big ? i : 3 - i)])
            value = value << 8 | byte
        }
        return value
    }

    /// The 64-bit integer at `offset`.
    func uint64(at offset: Int, _ order: ByteOrder, _ structure: @autoclosure () -> String) throws -> UInt64 {
        try require(offset: offset, length: 8, structure())
        let start = data.startIndex + base + offset
        var value: UInt64 = 0
        for i in 0..<8 {
            let byte = UInt64(data[start + (order == .big ? i : 7 - i)])
            value = value << 8 | byte
        }
        return value
    }

    /// The NUL-terminated UTF-8 string at `offset`, which must end inside the window.
    func cString(at offset: Int, _ structure: @autoclosure () -> String) throws -> String {
        try require(offset: offset, length: 1, structure())
        let start = data.startIndex + base + offset
        let end = data.startIndex + base + count
        guard let nul = data[start..<end].firstIndex(of: 0) else {
            throw context.error(
                .buildMachoMalformed, structure(), "the string at offset \(machOHex(offset)) has no terminating NUL")
        }
        guard let string = String(data: data.subdata(in: start..<nul), encoding: .utf8) else {
            throw context.error(.buildMachoMalformed, structure(), "the string is not UTF-8")
        }
        return string
    }

    private func require(offset: Int, length: Int, _ structure: @autoclosure () -> String) throws {
        guard contains(offset: offset, length: length) else {
            throw context.error(
                .buildMachoTruncated, structure(),
                "\(length) bytes at offset \(machOHex(offset)) run past the end of the \(count) bytes there are")
        }
    }
}

/// Who to blame in a reader error: the file (`what`) and, once known, the slice.
struct MachOReadContext: Sendable {
    var what: String
    var slice: String?

    /// A `KKPushError` with `code`, saying which structure of which slice of which file could not be read, and why.
    func error(
        _ code: KKPushError.Code, _ structure: String, _ problem: String, underlying: (any Error & Sendable)? = nil
    ) -> KKPushError {
        let place = slice.map { "\(what), \($0)" } ?? what
        let fix: String =
            switch code.rawValue {
            case "build-macho-truncated":
                "The file is cut short: copy it again from the build (the .ipa, .app or .xcarchive) and check its size."
            case "build-macho-entitlements-unreadable":
                "Re-sign the build with Xcode's codesign; check the .entitlements file it was signed with."
            default:
                "Check this is the executable Xcode built and signed, not damaged or rewritten by another tool."
            }
        return KKPushError(
            code: code, message: "\(place): cannot read \(structure): \(problem).", fix: fix, underlying: underlying)
    }
}

/// `0x…` for offsets and magic numbers in messages.
func machOHex<T: BinaryInteger>(_ value: T) -> String {
    value < 0 ? "-0x" + String(value.magnitude, radix: 16) : "0x" + String(value, radix: 16)
}
