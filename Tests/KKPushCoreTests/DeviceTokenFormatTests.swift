import KKPushCore
import KKPushTestSupport
import PropertyBased
import Testing

/// Random tokens: 32 to 100 random bytes.
private let tokenBytes = Gen.uint8(in: 0...255).array(of: 32...100)

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let text = String(byte, radix: 16)
        return text.count == 1 ? "0" + text : text
    }.joined()
}

/// How `NSData.description` printed a token before iOS 13: `<0a1b2c3d 4e5f...>`, groups of 4 bytes.
private func oldDescription(_ bytes: [UInt8]) -> String {
    var groups: [String] = []
    var index = 0
    while index < bytes.count {
        groups.append(hex(Array(bytes[index..<min(index + 4, bytes.count)])))
        index += 4
    }
    return "<" + groups.joined(separator: " ") + ">"
}

@Suite("Device tokens")
struct DeviceTokenFormatTests {
    @Test("the old <…> description form normalises to the hex token, and says so")
    func oldFormRoundTrip() async {
        await propertyCheck(input: tokenBytes) { bytes in
            let result = DeviceToken.normalize(oldDescription(bytes))
            #expect(result.token == hex(bytes))
            #expect(result.problems.allSatisfy { $0.severity == .warning && $0.code.rawValue == "token-normalized" })
            #expect(!result.problems.isEmpty)
        }
    }

    @Test("uppercase normalises to lowercase; a normalised token normalises to itself with no problems")
    func idempotent() async {
        await propertyCheck(input: tokenBytes, Gen.bool) { bytes, upper in
            let token = hex(bytes)
            let first = DeviceToken.normalize(upper ? token.uppercased() : token)
            #expect(first.token == token)
            #expect(first.problems.isEmpty == !upper)
            let second = DeviceToken.normalize(token)
            #expect(second.token == token)
            #expect(second.problems.isEmpty)
            #expect(DeviceToken.isWellFormed(token))
        }
    }

    @Test("any non-hex character makes it an error naming the character")
    func nonHex() async {
        await propertyCheck(input: tokenBytes, Gen.character(in: "g"..."z"), Gen.int(in: 0...63)) {
            bytes, bad, position in
            var characters = Array(hex(bytes))
            characters[position] = bad
            let result = DeviceToken.normalize(String(characters))
            #expect(result.token == nil)
            #expect(result.problems.errors.map(\.code.rawValue) == ["BadDeviceToken"])
            #expect(result.problems.errors.first?.message.contains("'\(bad)'") == true)
        }
    }

    @Test(
        "length bounds",
        arguments: [
            (0, "MissingDeviceToken"), (2, "BadDeviceToken"), (62, "BadDeviceToken"), (63, "BadDeviceToken"),
            (64, nil), (65, "BadDeviceToken"), (108, nil), (160, nil), (400, nil), (402, "BadDeviceToken"),
        ] as [(Int, String?)])
    func lengths(_ count: Int, _ code: String?) {
        let token = String(repeating: "a", count: count)
        let result = DeviceToken.normalize(token)
        #expect(result.problems.errors.first?.code.rawValue == code)
        #expect((result.token == nil) == (code != nil))
    }

    @Test("white space around and inside is stripped")
    func whitespace() {
        let result = DeviceToken.normalize("  \(token64.prefix(32)) \(token64.dropFirst(32))\n")
        #expect(result.token == token64)
        #expect(result.problems.count == 2)
    }

    @Test("a token is shown in logs as 12 characters and …")
    func redacted() {
        #expect(DeviceToken.redacted(token64) == String(token64.prefix(12)) + "…")
    }
}
