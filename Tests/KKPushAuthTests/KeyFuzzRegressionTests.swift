import Foundation
import KKPushAuth
import KKPushCore
import Testing

/// Inputs the fuzz target `p8` found (issue #15).
@Suite("Keys found by fuzzing")
struct KeyFuzzRegressionTests {
    /// `AuthKey_KKTEST0001.p8` as SEC1 with one base64 digit of the private scalar changed ('3' for '4'): the
    /// public key inside is still KKTEST0001's. It loaded, and signed tokens that its own public key (the
    /// one the mock registers from the same file, and `jwt verify --key` uses) refused.
    static let mismatched = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEII3VVcQL/D/ZHV/pPvfaI7FVTZ/OuIbXZxcvF/HEn+XsoAoGCCqGSM49
        AwEHoUQDQgAEHR8eLdowOk5bT8KLN/e4Zs5kfImKndWF7CJC1XOHaFFgj77e9lJx
        qKmvQGsebqMFQfVZ82/jyTYi4TzvoUv5Hg==
        -----END EC PRIVATE KEY-----

        """

    @Test("a key whose public part is not its private part's is refused as damaged")
    func mismatchedKeyPair() throws {
        let error = #expect(throws: KKPushError.self) { try ES256PrivateKey(pem: Self.mismatched) }
        #expect(error?.code.rawValue == "key-inconsistent")
        let publicError = #expect(throws: KKPushError.self) { try ES256PublicKey(pem: Self.mismatched) }
        #expect(publicError?.code.rawValue == "key-inconsistent")
    }

    @Test(
        "the intact keys still load and verifies its own signatures",
        arguments: [
            "AuthKey_KKTEST0001.p8", "AuthKey_KKTEST0002.p8",
        ])
    func intactKeys(file: String) throws {
        let key = try ES256PrivateKey(pem: Fixtures.text(file))
        let message = Array("kkpush".utf8)
        #expect(key.publicKey.isValidSignature(try key.signature(for: message), for: message))
        #expect(try ES256PublicKey(pem: Fixtures.text(file)) == key.publicKey)
    }
}
