import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport
import Testing

@Suite("Provider tokens")
struct ProviderTokenSigningTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A token with the given header and claims, signed by `key` (raw r‖s) unless `signature` is given.
    static func token(
        header: [String: JSONValue], claims: [String: JSONValue], key: ES256PrivateKey, signature: [UInt8]? = nil
    ) throws -> String {
        let signed =
            Base64URL.encode(JSONValue.object(header).encoded()) + "."
            + Base64URL.encode(JSONValue.object(claims).encoded())
        let sig = try signature ?? key.signature(for: Array(signed.utf8))
        return signed + "." + Base64URL.encode(sig)
    }

    @Test("kkpush tokens have the exact header and claims, and sign as raw r‖s")
    func shape() throws {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
        let token = try ProviderToken.sign(
            keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Self.now.addingTimeInterval(0.9), key: key)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(!token.contains("="))
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        #expect(try JSONValue.parse(header) == .object(["alg": .string("ES256"), "kid": .string("KKTEST0001")]))
        #expect(try JSONValue.parse(claims) == .object(["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000)]))
        // iat is a JSON integer in the text itself, not a string or decimal.
        #expect(String(decoding: claims, as: UTF8.self).contains("\"iat\":1800000000"))
        #expect(Base64URL.decode(parts[2])?.count == 64)
        let decoded = try ProviderToken.decode(token)
        #expect(decoded.kid == "KKTEST0001")
        #expect(decoded.iss == "KKTEAM0001")
        #expect(decoded.iat == 1_800_000_000)
        #expect(
            ProviderToken.verify(token, key: key.publicKey, now: Self.now)
                == .valid(ProviderTokenClaims(keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Self.now)))
    }

    @Test("Ids with JSON metacharacters are escaped, not interpolated")
    func escaping() throws {
        let key = try ES256PrivateKey.generate()
        let nasty = "A\"B\\C\n}"
        let token = try ProviderToken.sign(keyID: nasty, teamID: "T\",\"x\":\"y", issuedAt: Self.now, key: key)
        let decoded = try ProviderToken.decode(token)
        #expect(decoded.kid == nasty)
        #expect(decoded.iss == "T\",\"x\":\"y")
        #expect(decoded.claims.count == 2)
    }

    // MARK: Interoperability with the openssl command line

    @Test(
        "Tokens signed by kkpush verify with `openssl dgst -sha256 -verify`",
        arguments: ["AuthKey_KKTEST0001.p8", "AuthKey_KKTEST0002.p8", "generated"])
    func opensslVerifiesKKPush(keyName: String) async throws {
        let key =
            try keyName == "generated"
            ? ES256PrivateKey.generate() : ES256PrivateKey(contentsOfFile: Fixtures.path(keyName))
        try await withTemporaryDirectory { dir in
            try key.publicKey.pemRepresentation().write(toFile: dir + "/pub.pem", atomically: true, encoding: .utf8)
            // Several tokens: ECDSA signatures vary (random k), so check more than one.
            for offset in 0..<5 {
                let token = try ProviderToken.sign(
                    keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Self.now.addingTimeInterval(Double(offset)),
                    key: key)
                let parts = token.split(separator: ".")
                let raw = try #require(Base64URL.decode(parts[2]))
                #expect(raw.count == 64)
                try Data(ECDSASignature.der(fromRaw: raw)).write(to: URL(fileURLWithPath: dir + "/sig.der"))
                try Data("\(parts[0]).\(parts[1])".utf8).write(to: URL(fileURLWithPath: dir + "/data"))
                let result = try await run([
                    "openssl", "dgst", "-sha256", "-verify", dir + "/pub.pem", "-signature", dir + "/sig.der",
                    dir + "/data",
                ])
                #expect(result.status == 0, "openssl: \(result.stdoutText) \(result.stderr)")
                #expect(result.stdoutText.contains("Verified OK"))
                // And a tampered message does not verify.
                try Data("\(parts[0]).\(parts[1])x".utf8).write(to: URL(fileURLWithPath: dir + "/data"))
                let tampered = try await run([
                    "openssl", "dgst", "-sha256", "-verify", dir + "/pub.pem", "-signature", dir + "/sig.der",
                    dir + "/data",
                ])
                #expect(tampered.status != 0)
            }
        }
    }

    enum SignatureForm: String, CaseIterable, Sendable { case der, raw }

    @Test(
        "Tokens signed by `openssl dgst -sha256 -sign` (Apple's recipe), DER and raw, verify in kkpush",
        arguments: SignatureForm.allCases)
    func kkpushVerifiesOpenSSL(form: SignatureForm) async throws {
        let keyPath = Fixtures.path("AuthKey_KKTEST0001.p8")
        let publicKey = try ES256PublicKey(contentsOfFile: keyPath)
        let iat = Int(Self.now.timeIntervalSince1970)
        try await withTemporaryDirectory { dir in
            // Apple's A10 recipe, with the JSON typed as text just as the shell recipe does.
            let header = Base64URL.encode(Array(#"{ "alg": "ES256", "kid": "KKTEST0001" }"#.utf8))
            let claims = Base64URL.encode(Array("{ \"iss\": \"KKTEAM0001\", \"iat\": \(iat) }".utf8))
            let signed = header + "." + claims
            try Data(signed.utf8).write(to: URL(fileURLWithPath: dir + "/data"))
            let result = try await run(["openssl", "dgst", "-sha256", "-binary", "-sign", keyPath, dir + "/data"])
            #expect(result.status == 0, "\(result.stderr)")
            let der = [UInt8](result.stdout)
            #expect(der.first == 0x30)
            let signature = form == .der ? der : try ECDSASignature.raw(fromDER: der)
            let token = signed + "." + Base64URL.encode(signature)
            let verification = ProviderToken.verify(token, key: publicKey, now: Self.now.addingTimeInterval(10))
            #expect(
                verification
                    == .valid(ProviderTokenClaims(keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Self.now)))
            // The other key does not verify it.
            let other = try ES256PublicKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0002.p8"))
            #expect(ProviderToken.verify(token, key: other, now: Self.now).failure?.code.rawValue == "bad-signature")
        }
    }

    // MARK: Every failure reason

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var code: String
        var reason: APNsReason = .invalidProviderToken
        var make: @Sendable (ES256PrivateKey) throws -> String
        var testDescription: String { name }
    }

    static let goodHeader: [String: JSONValue] = ["alg": .string("ES256"), "kid": .string("KKTEST0001")]
    static let goodClaims: [String: JSONValue] = ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000)]

    static let cases: [Case] = [
        Case(name: "valid (control)", code: "valid") { try token(header: goodHeader, claims: goodClaims, key: $0) },
        Case(name: "valid with typ JWT", code: "valid") {
            try token(header: goodHeader.merging(["typ": .string("JWT")]) { a, _ in a }, claims: goodClaims, key: $0)
        },
        Case(name: "two parts", code: "malformed") { k in
            String(
                try token(header: goodHeader, claims: goodClaims, key: k).split(separator: ".").prefix(2).joined(
                    separator: "."))
        },
        Case(name: "header not base64url", code: "malformed") { k in
            "e30+."
                + (try token(header: goodHeader, claims: goodClaims, key: k).split(separator: ".").dropFirst().joined(
                    separator: "."))
        },
        Case(name: "header not JSON", code: "malformed") { k in
            Base64URL.encode(Array("{alg:ES256".utf8)) + "."
                + (try token(header: goodHeader, claims: goodClaims, key: k).split(separator: ".").dropFirst().joined(
                    separator: "."))
        },
        Case(name: "claims an array", code: "malformed") { k in
            let s = Base64URL.encode(JSONValue.object(goodHeader).encoded()) + "." + Base64URL.encode(Array("[1]".utf8))
            return s + "." + Base64URL.encode(try k.signature(for: Array(s.utf8)))
        },
        Case(name: "empty signature", code: "malformed") { k in
            String(
                try token(header: goodHeader, claims: goodClaims, key: k).split(separator: ".").prefix(2).joined(
                    separator: ".")) + "."
        },
        Case(name: "alg HS256", code: "wrong-alg") {
            try token(header: ["alg": .string("HS256"), "kid": .string("KKTEST0001")], claims: goodClaims, key: $0)
        },
        Case(name: "alg missing", code: "wrong-alg") {
            try token(header: ["kid": .string("KKTEST0001")], claims: goodClaims, key: $0)
        },
        Case(name: "alg none", code: "wrong-alg") {
            try token(header: ["alg": .string("none"), "kid": .string("KKTEST0001")], claims: goodClaims, key: $0)
        },
        Case(name: "kid missing", code: "missing-kid") {
            try token(header: ["alg": .string("ES256")], claims: goodClaims, key: $0)
        },
        Case(name: "kid a number", code: "missing-kid") {
            try token(header: ["alg": .string("ES256"), "kid": .int(12)], claims: goodClaims, key: $0)
        },
        Case(name: "iss missing", code: "missing-claim") {
            try token(header: goodHeader, claims: ["iat": .int(1_800_000_000)], key: $0)
        },
        Case(name: "iat missing", code: "missing-claim") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001")], key: $0)
        },
        Case(name: "extra claim aud", code: "extra-claim") {
            try token(header: goodHeader, claims: goodClaims.merging(["aud": .string("apns")]) { a, _ in a }, key: $0)
        },
        Case(name: "kid in the claims (old APNSwift)", code: "extra-claim") {
            try token(
                header: goodHeader, claims: goodClaims.merging(["kid": .string("KKTEST0001")]) { a, _ in a }, key: $0)
        },
        Case(name: "iat a string (old APNSwift)", code: "iat-not-integer") {
            try token(
                header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .string("1800000000")], key: $0)
        },
        Case(name: "iat a decimal", code: "iat-not-integer") {
            try token(
                header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .double(1_800_000_000.5)], key: $0)
        },
        Case(name: "signed by another key", code: "bad-signature") {
            _ = $0
            return try token(header: goodHeader, claims: goodClaims, key: ES256PrivateKey.generate())
        },
        Case(name: "claims altered after signing", code: "bad-signature") { k in
            let original = try token(header: goodHeader, claims: goodClaims, key: k).split(separator: ".")
            let altered = Base64URL.encode(
                JSONValue.object(["iss": .string("KKTEAM0002"), "iat": .int(1_800_000_000)]).encoded())
            return "\(original[0]).\(altered).\(original[2])"
        },
        Case(name: "signature of 63 bytes", code: "bad-signature") { k in
            try token(header: goodHeader, claims: goodClaims, key: k, signature: Array(repeating: 7, count: 63))
        },
        Case(name: "iat 2 minutes ahead", code: "iat-in-future") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_120)], key: $0)
        },
        Case(name: "iat 61 minutes old", code: "expired", reason: .expiredProviderToken) {
            try token(
                header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 3660)], key: $0)
        },
        Case(name: "iat 59 minutes old (control)", code: "valid") {
            try token(
                header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_000 - 3540)], key: $0)
        },
        // Out-of-range iats used to trap (Int(age) of ~9.2e18 s) in jwt verify and in the mock.
        Case(name: "iat -9223372036854775000", code: "iat-out-of-range") {
            try token(
                header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(-9_223_372_036_854_775_000)],
                key: $0)
        },
        Case(name: "iat Int.min", code: "iat-out-of-range") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(Int.min)], key: $0)
        },
        Case(name: "iat Int.max", code: "iat-out-of-range") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(Int.max)], key: $0)
        },
        Case(name: "iat -1 (before 1970)", code: "iat-out-of-range") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(-1)], key: $0)
        },
        Case(name: "iat 30 s ahead, within skew (control)", code: "valid") {
            try token(header: goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .int(1_800_000_030)], key: $0)
        },
    ]

    @Test("Each failure has its code and APNs reason", arguments: cases)
    func failures(testCase: Case) throws {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
        let token = try testCase.make(key)
        let result = ProviderToken.verify(token, key: key.publicKey, now: Self.now)
        switch result {
        case .valid(let claims):
            #expect(testCase.code == "valid", "expected \(testCase.code), got valid")
            #expect(claims.keyID == "KKTEST0001")
        case .invalid(let failure):
            #expect(failure.code.rawValue == testCase.code, "\(failure)")
            #expect(failure.apnsReason == testCase.reason)
            #expect(!failure.message.isEmpty)
        }
    }

    @Test("sign refuses an issue time outside 1970...9999 (Int(2^63) used to trap)")
    func signOutOfRange() throws {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
        for seconds in [Double(Int64.max), Double(Int64.min), -1, 1e300, .infinity, .nan] {
            #expect(throws: KKPushError.self) {
                try ProviderToken.sign(
                    keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Date(timeIntervalSince1970: seconds), key: key)
            }
        }
        let last = try ProviderToken.sign(
            keyID: "KKTEST0001", teamID: "KKTEAM0001", issuedAt: Date(timeIntervalSince1970: 253_402_300_799), key: key)
        #expect(try ProviderToken.decode(last).iat == 253_402_300_799)
    }

    @Test("decode reports iat nil for a string iat, and strips a 'bearer ' prefix")
    func decodeDetails() throws {
        let key = try ES256PrivateKey.generate()
        let token = try Self.token(
            header: Self.goodHeader, claims: ["iss": .string("KKTEAM0001"), "iat": .string("1800000000")], key: key)
        let decoded = try ProviderToken.decode("bearer " + token)
        #expect(decoded.iat == nil)
        #expect(decoded.claims["iat"] == .string("1800000000"))
        #expect(decoded.signature.count == 64)
        #expect(decoded.signedPart == token.split(separator: ".").prefix(2).joined(separator: "."))
        #expect(throws: ProviderTokenFailure.self) { try ProviderToken.decode("a.b") }
    }
}
