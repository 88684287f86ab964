/// Device tokens for tests.
public enum TestTokens {
    /// A random 32-byte token (64 lowercase hex digits).
    public static func random() -> String {
        (0..<32).map { _ in hex(UInt8.random(in: 0...255)) }.joined()
    }

    /// `count` random tokens, all different.
    public static func random(_ count: Int) -> [String] {
        var seen = Set<String>()
        var tokens: [String] = []
        while tokens.count < count {
            let token = random()
            if seen.insert(token).inserted { tokens.append(token) }
        }
        return tokens
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
    }
}

/// A 32-byte token as APNs issues them (64 lowercase hex digits), for table tests.
public let token64 = "5f0c1b6d9e2a47f3b8c0d1e2f3a4b5c6d7e8f90112233445566778899aabbccd"
/// The Kantine Koning bundle id of the model tests (the transport tests use `nl.kantinekoning.app`).
public let bundleID = "com.kantinekoning.app"
