import Foundation

/// What a binary property list (`bplist00`, or any file that starts `bplist`) holds, checked before Foundation reads it.
///
/// swift-corelibs-foundation's `PropertyListSerialization` reads a binary plist with CoreFoundation's parser,
/// which accepts objects a property list cannot hold (a set, a keyed archiver's UID, a dictionary whose keys are
/// not strings), and then traps bridging them to Swift (a set of arrays is not `AnyHashable`; found by the fuzz
/// target `build-plist`). This walk reads the format's trailer, offset table and object markers and refuses such a
/// file with a reason; what passes it holds only the types of a property list, each dictionary keyed by strings,
/// no object inside itself. It is not a second parser: the values are still read by Foundation.
enum BinaryPropertyListShape {
    /// nil when `data` is not a binary plist or passes the walk; otherwise what is wrong with it.
    static func problem(in data: Data) -> String? {
        let bytes = [UInt8](data)
        // CoreFoundation takes any "bplist0?" (the version byte is not checked); every "bplist" start is walked.
        guard bytes.starts(with: Array("bplist".utf8)) else { return nil }
        guard bytes.count >= 8 + 1 + 32 else { return "it is shorter than a binary property list can be" }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let objectCount = integer(bytes, at: trailer + 8, size: 8)
        let top = integer(bytes, at: trailer + 16, size: 8)
        let tableStart = integer(bytes, at: trailer + 24, size: 8)
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            return "its trailer gives offsets of \(offsetSize) and references of \(referenceSize) bytes (1 to 8)"
        }
        guard let objectCount, let top, let tableStart, objectCount >= 1, top < objectCount,
            tableStart >= 8, tableStart <= trailer, objectCount <= (trailer - tableStart) / offsetSize
        else { return "its trailer does not describe an offset table inside the file" }
        var walk = Walk(
            bytes: bytes, offsetSize: offsetSize, referenceSize: referenceSize, objectCount: objectCount,
            tableStart: tableStart, end: tableStart)
        return walk.check(object: top, depth: 0)
    }

    /// A big-endian unsigned integer of `size` bytes at `offset`; nil when it does not fit in an `Int`.
    static func integer(_ bytes: [UInt8], at offset: Int, size: Int) -> Int? {
        var value: UInt64 = 0
        for i in 0..<size {
            guard value >> 56 == 0 else { return nil }
            value = value << 8 | UInt64(bytes[offset + i])
        }
        return value <= UInt64(Int.max) ? Int(value) : nil
    }

    private struct Walk {
        let bytes: [UInt8]
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let tableStart: Int
        /// Objects end where the offset table starts.
        let end: Int
        /// The containers on the path from the top object (a container inside itself is refused).
        var path: Set<Int> = []

        static let maximumDepth = 512

        mutating func check(object: Int, depth: Int) -> String? {
            guard depth <= Self.maximumDepth else { return "it nests deeper than \(Self.maximumDepth) levels" }
            guard let offset = self.offset(of: object) else { return "object \(object) starts outside the object area" }
            let marker = bytes[offset]
            switch marker >> 4 {
            case 0x0:
                guard marker == 0x08 || marker == 0x09 else {
                    return String(format: "object %d has the marker 0x%02x, not a property-list value", object, marker)
                }
                return nil
            case 0x1, 0x2, 0x3, 0x4, 0x5, 0x6:
                return nil
            case 0xA, 0xD:
                guard path.insert(object).inserted else { return "object \(object) contains itself" }
                defer { path.remove(object) }
                guard let (count, start) = count(at: offset) else { return "object \(object) has an unreadable size" }
                let isDictionary = marker >> 4 == 0xD
                let references = isDictionary ? 2 * count : count
                guard references <= (end - start) / referenceSize else {
                    return "object \(object) refers past the end of the object area"
                }
                for i in 0..<references {
                    guard let child = integer(bytes, at: start + i * referenceSize, size: referenceSize),
                        child < objectCount
                    else { return "object \(object) refers to an object that is not there" }
                    if isDictionary && i < count {
                        guard let keyOffset = self.offset(of: child), [0x5, 0x6].contains(bytes[keyOffset] >> 4)
                        else { return "dictionary \(object) has a key that is not a string" }
                    } else if let problem = check(object: child, depth: depth + 1) {
                        return problem
                    }
                }
                return nil
            case 0x8:
                return "object \(object) is a keyed archiver's UID, which a property list cannot hold"
            case 0xC:
                return "object \(object) is a set, which a property list cannot hold"
            default:
                return String(format: "object %d has the marker 0x%02x, not a property-list value", object, marker)
            }
        }

        /// Where object `object` starts, from the offset table; nil when that is outside the object area.
        func offset(of object: Int) -> Int? {
            guard let offset = integer(bytes, at: tableStart + object * offsetSize, size: offsetSize),
                offset >= 8, offset < end
            else { return nil }
            return offset
        }

        /// A container's element count (the marker's low nibble, or the integer after it when that is 0xF) and
        /// where its references start.
        func count(at offset: Int) -> (Int, Int)? {
            let nibble = Int(bytes[offset] & 0x0F)
            guard nibble == 0x0F else { return (nibble, offset + 1) }
            let intMarker = offset + 1
            guard intMarker < end, bytes[intMarker] >> 4 == 0x1 else { return nil }
            let size = 1 << Int(bytes[intMarker] & 0x0F)
            guard size <= 8, intMarker + 1 + size <= end,
                let value = integer(bytes, at: intMarker + 1, size: size)
            else { return nil }
            return (value, intMarker + 1 + size)
        }
    }
}
