import Foundation
import KKPushAuth
import KKPushCore
import Testing

@Suite("Decoding provider tokens for diagnosis")
struct DecodedProviderTokenTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var header: [String: JSONValue]
        var claims: [String: JSONValue]
        var codes: [String]
        var testDescription: String { name }
    }

    static let header: [String: JSONValue] = ["alg": .string("ES256"), "kid": .string("KKTEST0001")]

    static let cases: [Case] = [
        Case(
            name: "30 minutes old: fine", header: header,
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 1800)], codes: []),
        Case(
            name: "5 minutes old: too young to refresh", header: header,
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 300)], codes: ["too-young-to-refresh"]),
        Case(
            name: "2 hours old: expired", header: header,
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 7200)], codes: ["expired"]),
        Case(
            name: "in the future", header: header,
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 + 600)], codes: ["iat-in-future"]),
        Case(
            name: "string iat", header: header, claims: ["iss": .string("KKTEAM0001"), "iat": .string("1799998000")],
            codes: ["iat-not-integer"]),
        Case(
            name: "kid equals iss", header: ["alg": .string("ES256"), "kid": .string("KKTEAM0001")],
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 1800)], codes: ["key-team-swapped"]),
        Case(
            name: "HS256 and an extra claim", header: ["alg": .string("HS256"), "kid": .string("KKTEST0001")],
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 1800), "exp": .int(1)],
            codes: ["wrong-alg", "extra-claim"]),
        Case(
            name: "nothing", header: [:], claims: [:],
            codes: ["wrong-alg", "missing-kid", "missing-claim", "missing-claim"]),
        // Out of range: no age is computed (Int(age) of ~9.2e18 s used to trap in jwt decode).
        Case(
            name: "iat -9223372036854775000", header: header,
            claims: ["iss": .string("KKTEAM0001"), "iat": .int(-9_223_372_036_854_775_000)], codes: ["iat-out-of-range"]
        ),
        Case(
            name: "iat Int.max", header: header, claims: ["iss": .string("KKTEAM0001"), "iat": .int(Int.max)],
            codes: ["iat-out-of-range"]),
    ]

    @Test("Warnings for jwt decode", arguments: cases)
    func problems(testCase: Case) throws {
        let signed =
            Base64URL.encode(JSONValue.object(testCase.header).encoded()) + "."
            + Base64URL.encode(JSONValue.object(testCase.claims).encoded())
        let token = signed + "." + Base64URL.encode(try ES256PrivateKey.generate().signature(for: Array(signed.utf8)))
        let decoded = try ProviderToken.decode(token)
        let problems = decoded.problems(now: Self.now)
        #expect(problems.map(\.code.rawValue) == testCase.codes)
        if case .int(let iat) = testCase.claims["iat"], InputNumbers.unixSeconds.contains(Int64(iat)) {
            #expect(decoded.age(now: Self.now) == Self.now.timeIntervalSince1970 - Double(iat))
        } else {
            #expect(decoded.age(now: Self.now) == nil)
        }
    }
}
