/// Makes `apns-id` and `apns-unique-id` values: random version-4 UUIDs, lowercase, without a
/// system call per value (xoshiro256** seeded once per connection from the system's generator).
/// Identifiers, not secrets: uniqueness is all they need.
struct RequestIDGenerator {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        s0 = system.next()
        s1 = system.next()
        s2 = system.next()
        s3 = system.next()
        if s0 | s1 | s2 | s3 == 0 { s0 = 1 }
    }

    private mutating func nextWord() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// A new lowercase UUID, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    mutating func next() -> String {
        var hi = nextWord()
        var lo = nextWord()
        hi = (hi & ~0xF000) | 0x4000  // version 4
        lo = (lo & ~(0xC000 << 48)) | (0x8000 << 48)  // variant 10
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            let d = digits.utf8Start
            var out = 0
            func put(_ word: UInt64, _ nibbles: Int, _ shift: Int) {
                var i = nibbles - 1
                while i >= 0 {
                    buffer[out] = d[Int((word >> UInt64(shift + i * 4)) & 0xF)]
                    out += 1
                    i -= 1
                }
            }
            put(hi, 8, 32)
            buffer[out] = UInt8(ascii: "-")
            out += 1
            put(hi, 4, 16)
            buffer[out] = UInt8(ascii: "-")
            out += 1
            put(hi, 4, 0)
            buffer[out] = UInt8(ascii: "-")
            out += 1
            put(lo, 4, 48)
            buffer[out] = UInt8(ascii: "-")
            out += 1
            put(lo, 12, 0)
            return out
        }
    }
}
