import Foundation

/// Takes the property list out of a provisioning profile's bytes.
///
/// A profile is a CMS `ContentInfo` holding a `SignedData` whose encapsulated content is the XML property list,
/// uncompressed. Apple writes it in DER, and then the plist is one contiguous run of bytes. But BER (indefinite
/// lengths, as `openssl cms -sign -stream` writes and some older profiles are) may split the content into several
/// OCTET STRING segments (4096 bytes each from OpenSSL), with a segment header between them: scanning the raw bytes
/// for `<?xml`…`</plist>`, as Firebase does, would then hand the parser a plist with those headers in the middle.
///
/// So this first walks the CMS structure just far enough to take out the content, joining the segments (a small
/// BER reader: definite and indefinite lengths, bounded by the data and by a nesting depth; the signature is not
/// looked at), and then scans that content, or the raw bytes when they are not CMS (or are cut short before the
/// content ends), for the first `<?xml` (or `<plist`) and the first `</plist>` after it.
enum ProfileContent {
    /// The property list's bytes, `<?xml`…`</plist>` inclusive, or nil if there is none.
    static func propertyList(in data: Data) -> Data? {
        let bytes = [UInt8](data)
        if let content = BERReader(bytes: bytes).signedDataContent(), let plist = scan(content) {
            return plist
        }
        return scan(bytes)
    }

    /// The bytes from the first `<?xml` (or `<plist`) to the first `</plist>` after it, inclusive.
    static func scan(_ bytes: [UInt8]) -> Data? {
        let starts = [Array("<?xml".utf8), Array("<plist".utf8)].compactMap { find($0, in: bytes, from: 0) }
        guard let start = starts.min() else { return nil }
        let endTag = Array("</plist>".utf8)
        guard let end = find(endTag, in: bytes, from: start) else { return nil }
        return Data(bytes[start..<(end + endTag.count)])
    }

    /// The index of the first occurrence of `needle` in `bytes` at or after `from`.
    private static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, from >= 0, from <= bytes.count - needle.count else {
            return nil
        }
        let first = needle[0]
        var index = from
        while index <= bytes.count - needle.count {
            if bytes[index] == first && bytes[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}

/// Just enough BER (X.690) to reach a CMS SignedData's encapsulated content. Every read is bounds-checked; a
/// malformed or truncated structure gives nil.
struct BERReader {
    let bytes: [UInt8]

    /// The deepest nesting followed (a profile needs 3 or 4 levels under the content).
    static let maximumDepth = 16

    /// id-signedData, 1.2.840.113549.1.7.2, as encoded in an OBJECT IDENTIFIER.
    static let signedDataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]

    struct Header {
        var tag: UInt8
        /// Where the contents start.
        var contentStart: Int
        /// The contents' length; nil for an indefinite length (contents end at an end-of-contents `00 00`).
        var length: Int?

        var isConstructed: Bool { tag & 0x20 != 0 }
    }

    /// The identifier and length octets at `offset`.
    func header(at offset: Int) -> Header? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let tag = bytes[offset]
        guard tag & 0x1F != 0x1F else { return nil }  // a high tag number: nothing in a profile has one
        let lengthByte = bytes[offset + 1]
        var contentStart = offset + 2
        let length: Int?
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else if lengthByte == 0x80 {
            guard tag & 0x20 != 0 else { return nil }  // only constructed encodings may be indefinite
            length = nil
        } else {
            let count = Int(lengthByte & 0x7F)
            guard count <= 4, contentStart + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[contentStart..<(contentStart + count)] { value = value << 8 | Int(byte) }
            contentStart += count
            length = value
        }
        return Header(tag: tag, contentStart: contentStart, length: length)
    }

    /// The header at `offset` if its tag is `tag`.
    func header(at offset: Int, tag: UInt8) -> Header? {
        guard let header = header(at: offset), header.tag == tag else { return nil }
        return header
    }

    /// The offset just past the whole element at `offset` (inside the data).
    func end(ofElementAt offset: Int, depth: Int = 0) -> Int? {
        guard depth <= Self.maximumDepth, let header = header(at: offset) else { return nil }
        if let length = header.length {
            let end = header.contentStart + length
            return end <= bytes.count ? end : nil
        }
        var cursor = header.contentStart
        while cursor + 2 <= bytes.count {
            if bytes[cursor] == 0 && bytes[cursor + 1] == 0 { return cursor + 2 }
            guard let next = end(ofElementAt: cursor, depth: depth + 1) else { return nil }
            cursor = next
        }
        return nil
    }

    /// Appends the octets of the OCTET STRING at `offset` to `octets`, its segments joined when it is constructed,
    /// and returns the offset just past it.
    func appendOctets(at offset: Int, to octets: inout [UInt8], depth: Int = 0) -> Int? {
        guard depth <= Self.maximumDepth, let header = header(at: offset) else { return nil }
        switch header.tag {
        case 0x04:  // primitive OCTET STRING
            guard let length = header.length, header.contentStart + length <= bytes.count else { return nil }
            octets += bytes[header.contentStart..<(header.contentStart + length)]
            return header.contentStart + length
        case 0x24:  // constructed OCTET STRING: segments, each an OCTET STRING
            var cursor = header.contentStart
            if let length = header.length {
                let end = header.contentStart + length
                guard end <= bytes.count else { return nil }
                while cursor < end {
                    guard let next = appendOctets(at: cursor, to: &octets, depth: depth + 1), next <= end else {
                        return nil
                    }
                    cursor = next
                }
                return end
            }
            while cursor + 2 <= bytes.count {
                if bytes[cursor] == 0 && bytes[cursor + 1] == 0 { return cursor + 2 }
                guard let next = appendOctets(at: cursor, to: &octets, depth: depth + 1) else { return nil }
                cursor = next
            }
            return nil
        default:
            return nil
        }
    }

    /// The encapsulated content of a CMS SignedData (RFC 5652):
    /// `ContentInfo { contentType id-signedData, [0] SignedData { version, digestAlgorithms,
    /// encapContentInfo { eContentType, [0] OCTET STRING }, ... } }`. Nil if the bytes are not one, or end before
    /// the content does.
    func signedDataContent() -> [UInt8]? {
        guard let contentInfo = header(at: 0, tag: 0x30) else { return nil }
        var cursor = contentInfo.contentStart
        guard let contentType = header(at: cursor, tag: 0x06), let typeEnd = end(ofElementAt: cursor),
            bytes[contentType.contentStart..<typeEnd].elementsEqual(Self.signedDataOID)
        else { return nil }
        guard let explicit = header(at: typeEnd, tag: 0xA0),
            let signedData = header(at: explicit.contentStart, tag: 0x30)
        else { return nil }
        cursor = signedData.contentStart
        // version INTEGER, digestAlgorithms SET
        guard header(at: cursor, tag: 0x02) != nil, let versionEnd = end(ofElementAt: cursor),
            header(at: versionEnd, tag: 0x31) != nil, let algorithmsEnd = end(ofElementAt: versionEnd),
            let encapsulated = header(at: algorithmsEnd, tag: 0x30)
        else { return nil }
        cursor = encapsulated.contentStart
        // eContentType OBJECT IDENTIFIER (id-data for a profile; not required), then eContent [0] EXPLICIT.
        guard header(at: cursor, tag: 0x06) != nil, let eContentTypeEnd = end(ofElementAt: cursor),
            let eContent = header(at: eContentTypeEnd, tag: 0xA0)
        else { return nil }
        var octets: [UInt8] = []
        guard appendOctets(at: eContent.contentStart, to: &octets) != nil else { return nil }
        return octets
    }
}
