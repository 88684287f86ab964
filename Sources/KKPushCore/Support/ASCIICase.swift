extension String {
    /// `lowercased()`, without making a new string when there is nothing to lower: the common case for the
    /// header names, paths and tokens the mock reads on every request (HTTP/2 header names are lowercase on
    /// the wire). Only an all-ASCII string without `A`–`Z` is returned as it is; anything else goes through
    /// `lowercased()`, so the result is always the same.
    package var lowercasedIfNeeded: String {
        utf8.allSatisfy { $0 < 0x80 && !(0x41...0x5A).contains($0) } ? self : lowercased()
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

    /// True for the ASCII bytes 0-9 and a-f: a digit of a token in the form it is sent.
    package var isLowercaseASCIIHexDigit: Bool {
        switch self {
        case 0x30...0x39, 0x61...0x66: true
        default: false
        }
    }
}
