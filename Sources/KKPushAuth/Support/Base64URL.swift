/// Base64url (RFC 4648 §5) without padding, as JWTs use it; also plain base64 for PEM bodies.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Sextet values for every byte: 0...63 for both alphabets (`-`/`+` = 62, `_`/`/` = 63), 255 otherwise.
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 255, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "+"))] = 62
        t[Int(UInt8(ascii: "/"))] = 63
        return t
    }()

    /// Encodes `bytes` as base64url without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: encodeBytes(bytes, alphabet: alphabet, pad: false), as: UTF8.self)
    }

    /// Encodes `bytes` as standard base64 with padding (the PEM body alphabet).
    public static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: encodeBytes(bytes, alphabet: standardAlphabet, pad: true), as: UTF8.self)
    }

    /// Encodes `bytes` as base64url without padding, appending the ASCII bytes to `output`.
    public static func encode(_ bytes: some Collection<UInt8>, into output: inout [UInt8]) {
        output.append(contentsOf: encodeBytes(bytes, alphabet: alphabet, pad: false))
    }

    /// Decodes base64url, with or without padding. Returns nil for any character outside the
    /// base64url alphabet (standard `+` and `/` are refused: JWTs never contain them).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decodeBytes(Array(text.utf8), allowStandard: false, ignoreWhitespace: false)
    }

    /// Decodes standard base64 or base64url, skipping white space (PEM bodies, keys kept in
    /// environment variables). Returns nil for any other character or a bad length.
    public static func decodeLenient(_ text: some StringProtocol) -> [UInt8]? {
        decodeBytes(Array(text.utf8), allowStandard: true, ignoreWhitespace: true)
    }

    private static func encodeBytes(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = b1 == nil ? nil : iterator.next()
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 {
                out.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)])
                if let b2 {
                    out.append(alphabet[Int(b2 & 0x3F)])
                } else if pad {
                    out.append(UInt8(ascii: "="))
                }
            } else if pad {
                out.append(UInt8(ascii: "="))
                out.append(UInt8(ascii: "="))
            }
        }
        return out
    }

    private static func decodeBytes(_ input: [UInt8], allowStandard: Bool, ignoreWhitespace: Bool) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        for c in input {
            if ignoreWhitespace, c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { continue }
            if c == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // Nothing but padding (and white space) may follow padding.
            if padding > 0 { return nil }
            if !allowStandard, c == UInt8(ascii: "+") || c == UInt8(ascii: "/") { return nil }
            let v = table[Int(c)]
            if v == 255 { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // 6 leftover bits can never come from a valid encoding; more than 2 pad characters neither.
        if bits >= 6 || padding > 2 { return nil }
        return out
    }
}
