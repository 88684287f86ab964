import Foundation
import KKPushBackend
import KKPushCore
import KKPushTestSupport
import KantineKoning
import Testing

@Suite("Device JWT (HS256 through OpenSSL)")
struct DeviceSessionJWTTests {
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))

    var claims: DeviceClaims {
        DeviceClaims(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3", "JO11-5"], role: .manager,
            hardwareIdentifier: BackendFixtures.phoneA, issuedAt: 1_800_000_000, expiresAt: 1_800_003_600)
    }

    @Test("Sign then verify returns the claims; iat and exp are JSON integers")
    func roundTrip() throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let token = try jwt.sign(claims)
        #expect(try jwt.verify(token, tenant: "vvwilhelmus") == claims)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        let payloadData = try #require(Data(base64Encoded: payload))
        let object = try #require(try JSONSerialization.jsonObject(with: payloadData) as? [String: Any])
        #expect(object["iat"] is NSNumber && !(object["iat"] is String))
        #expect(
            Set(object.keys) == ["device_id", "tenant_slug", "team_codes", "role", "hardware_identifier", "iat", "exp"])
    }

    @Test("A token verified before is still checked for expiry and tenant every time; a forged one never passes")
    func verifiedBefore() throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let token = try jwt.sign(claims)
        #expect(try jwt.verify(token, tenant: "vvwilhelmus") == claims)
        #expect(try jwt.verify(token, tenant: "vvwilhelmus") == claims)
        #expect(throws: KKPushError.self) { try jwt.verify(token, tenant: "agovv") }
        // The same claims under another secret: a different text, so checked (and refused) in full.
        let forged = try DeviceJWT(secret: BackendFixtures.secret + "x", clock: clock).sign(claims)
        #expect(forged != token)
        #expect(throws: KKPushError.self) { try jwt.verify(forged, tenant: "vvwilhelmus") }
        clock.advance(by: 3600 + 61)
        do {
            _ = try jwt.verify(token, tenant: "vvwilhelmus")
            Issue.record("an expired token passed because it was verified before")
        } catch let error as KKPushError {
            #expect(error.code.rawValue == "jwt-expired")
        }
    }

    @Test("The signature equals HMAC-SHA256 computed by the openssl binary")
    func knownAnswer() async throws {
        // A JWT's signature is HMAC-SHA256(secret, header.payload); compare with an independent
        // implementation: `openssl dgst -sha256 -hmac <secret> -binary`, run at test time.
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        let token = try jwt.sign(claims)
        let signingInput = token.split(separator: ".").prefix(2).joined(separator: ".")
        let mac = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"), ["dgst", "-sha256", "-hmac", BackendFixtures.secret, "-binary"],
            stdin: Data(signingInput.utf8), timeout: 30
        ).stdout
        #expect(mac.count == 32)
        let expected = mac.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(String(token.split(separator: ".")[2]) == expected)
    }

    @Test(
        "Failures have stable codes",
        arguments: ["bad-signature", "tampered", "expired", "malformed", "wrong-tenant", "alg-none", "future"])
    func failures(_ kind: String) throws {
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: clock)
        var token = try jwt.sign(claims)
        var tenant: String? = "vvwilhelmus"
        let expected: String
        switch kind {
        case "bad-signature":
            token = try DeviceJWT(secret: "a-different-secret-for-testing", clock: clock).sign(claims)
            expected = "jwt-bad-signature"
        case "tampered":
            var c = claims
            c.teamCodes.append("JO13-1")
            let forged = try DeviceJWT(secret: "a-different-secret-for-testing", clock: clock).sign(c)
            let parts = token.split(separator: ".")
            token = [String(parts[0]), String(forged.split(separator: ".")[1]), String(parts[2])].joined(separator: ".")
            expected = "jwt-bad-signature"
        case "expired":
            clock.advance(by: 3600 + 61)
            expected = "jwt-expired"
        case "malformed":
            token = "abc.def"
            expected = "jwt-malformed"
        case "wrong-tenant":
            tenant = "agovv"
            expected = "jwt-wrong-tenant"
        case "alg-none":
            let parts = token.split(separator: ".")
            let header = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64EncodedString().replacingOccurrences(
                of: "=", with: "")
            token = header + "." + parts[1] + "."
            expected = "jwt-unsupported-alg"
        default:
            clock.advance(by: -3600)
            expected = "jwt-not-yet-valid"
        }
        #expect {
            try jwt.verify(token, tenant: tenant)
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == expected
        }
    }

    @Test("Secrets that are empty or short are refused")
    func secrets() {
        #expect { try DeviceJWT(secret: "") } throws: { ($0 as? KKPushError)?.code.rawValue == "jwt-secret-empty" }
        #expect { try DeviceJWT(secret: "short") } throws: { ($0 as? KKPushError)?.code.rawValue == "jwt-secret-short" }
    }
}
