/// A minimal DER reader: just enough to classify key files and read Apple's topic extension.
/// It never traps on bad input; every malformed length or truncation returns nil.
struct DERElement: Sendable, Equatable {
    /// The identifier octet (for example `0x30` SEQUENCE, `0x0C` UTF8String).
    var tag: UInt8
    /// The content octets.
    var content: ArraySlice<UInt8>

    static let sequence: UInt8 = 0x30
    static let integer: UInt8 = 0x02
    static let bitString: UInt8 = 0x03
    static let octetString: UInt8 = 0x04
    static let null: UInt8 = 0x05
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let printableString: UInt8 = 0x13
    static let ia5String: UInt8 = 0x16

    /// Reads consecutive elements from `bytes`; nil if they do not parse exactly.
    static func parseAll(_ bytes: ArraySlice<UInt8>) -> [DERElement]? {
        var rest = bytes
        var out: [DERElement] = []
        // Bounded by the input: every element consumes at least two bytes.
        while !rest.isEmpty {
            guard let (element, remainder) = parseOne(rest) else { return nil }
            out.append(element)
            rest = remainder
        }
        return out
    }

    /// Reads one element from the front of `bytes`, returning it and what follows.
    static func parseOne(_ bytes: ArraySlice<UInt8>) -> (DERElement, ArraySlice<UInt8>)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { return nil }
        let tag = bytes[index]
        // High-tag-number form is not needed here.
        guard tag & 0x1F != 0x1F else { return nil }
        index += 1
        guard index < bytes.endIndex else { return nil }
        var length = Int(bytes[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, bytes.endIndex - index >= count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length >= 0, bytes.endIndex - index >= length else { return nil }
        let content = bytes[index..<(index + length)]
        return (DERElement(tag: tag, content: content), bytes[(index + length)...])
    }

    /// The children of a constructed element; nil if they do not parse.
    var children: [DERElement]? { DERElement.parseAll(content) }

    /// The content as text, for the string types.
    var string: String? {
        switch tag {
        case DERElement.utf8String, DERElement.printableString, DERElement.ia5String:
            return String(validating: content, as: UTF8.self)
        default:
            return nil
        }
    }
}
