import KKPushAuth
import Testing

@Suite("Base64URL")
struct JWTBase64URLEncodingTests {
    @Test("Round trip of every length 0...66 through bytes that use '-' and '_'", arguments: 0...66)
    func roundTrip(length: Int) throws {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: 251 &* $0 &+ 0xFB) }
        let encoded = Base64URL.encode(bytes)
        #expect(!encoded.contains("="))
        #expect(!encoded.contains("+"))
        #expect(!encoded.contains("/"))
        #expect(Base64URL.decode(encoded) == bytes)
        // Standard base64 of the same bytes decodes leniently to the same.
        #expect(Base64URL.decodeLenient(Base64URL.encodeStandard(bytes)) == bytes)
    }

    @Test(
        "Known vectors (RFC 4648)",
        arguments: [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test("Invalid input is refused", arguments: ["Zm9v!", "Z", "Zm9v+g", "Zm=9v", "Zm9vY"])
    func invalid(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
