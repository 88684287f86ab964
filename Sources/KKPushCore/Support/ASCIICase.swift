extension String {
    /// `lowercased()`, without making a new string when there is nothing to lower: the common case for the
    /// header names, paths and tokens the mock reads on every request (HTTP/2 header names are lowercase on
    /// the wire). Only an all-ASCII string without `A`–`Z` is returned as it is; anything else goes through
    /// `lowercased()`, so the result is always the same.
    package var lowercasedIfNeeded: String {
        // The mock reads every header name of every request through this.
        containsUTF8Byte { $0 >= 0x80 || (0x41...0x5A).contains($0) } ? lowercased() : self
    }

    /// Whether any byte of the UTF-8 form matches, read as contiguous bytes (`withUTF8`): `utf8.contains(where:)`
    /// cost about 30 instructions a byte on the mock's hot path, this a few.
    package func containsUTF8Byte(where matches: (UInt8) -> Bool) -> Bool {
        var text = self
        return text.withUTF8 { $0.contains(where: matches) }
    }
}

extension UInt8 {
    /// True for the ASCII bytes 0-9, a-f and A-F.
    var isASCIIHexDigit: Bool {
        switch self {
        case 0x30...0x39, 0x41...0x46, 0x61...0x66: true
        default: false
        }
    }

    /// `A`–`Z` as `a`–`z`; every other byte as it is.
    var asciiLowercased: UInt8 { (0x41...0x5A).contains(self) ? self | 0x20 : self }

    /// True for the ASCII bytes 0-9 and a-f: a digit of a token in the form it is sent.
    package var isLowercaseASCIIHexDigit: Bool {
        switch self {
        case 0x30...0x39, 0x61...0x66: true
        default: false
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes start with `prefix` (ASCII), upper- or lowercase alike.
    func hasASCIIPrefixIgnoringCase(_ prefix: StaticString) -> Bool {
        guard count >= prefix.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        for i in 0..<expected.count where self[i].asciiLowercased != expected[i].asciiLowercased { return false }
        return true
    }

    /// Whether these bytes are `text` (ASCII), upper- or lowercase alike.
    func equalsASCIIIgnoringCase(_ text: StaticString) -> Bool {
        count == text.utf8CodeUnitCount && hasASCIIPrefixIgnoringCase(text)
    }
}
