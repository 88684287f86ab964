import Foundation
import KKPushAuth
import KKPushCore

/// Targets of KKPushAuth: provider tokens, `.p8` keys, certificates (PEM, DER, `.p12`), client credentials.
enum AuthTargets {
    static let all: [FuzzTarget] = [providerToken, p8, certificate, p12, pemCredential]

    /// A provider token as `jwt decode`, `jwt verify`, `diagnose --provider-token` and the mock read it.
    static let providerToken = FuzzTarget(
        name: "provider-token", maxLength: 2048,
        summary: "ProviderToken.decode + verify against the fixed key KKTEST0001 at a fixed time, problems(now:)"
    ) { bytes in
        let token = text(bytes)
        if let decoded = try? ProviderToken.decode(token) {
            _ = decoded.problems(now: FuzzFixtures.now)
            _ = decoded.age(now: FuzzFixtures.now)
            _ = decoded.issuedAt
            _ = JSONValue.object(decoded.header).encoded()
        }
        switch ProviderToken.verify(token, key: FuzzFixtures.publicKey, now: FuzzFixtures.now) {
        case .valid(let claims):
            fuzzCheck(!claims.keyID.isEmpty && !claims.teamID.isEmpty, "a valid token without kid or iss")
        case .invalid(let failure):
            _ = failure.description
        }
    }

    /// A `.p8` key (or a public key) as text: `--key`, `APNS_KEY_PATH`, the mock's key registry.
    /// Bytes that are not UTF-8 are refused before parsing, as the key-file reader does.
    static let p8 = FuzzTarget(
        name: "p8", maxLength: 4096,
        summary: "ES256PrivateKey(pem:) / ES256PublicKey(pem:) (PEM or bare base64); a loaded key signs and verifies"
    ) { bytes in
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        let message = Array("fuzz".utf8)
        if let key = try? ES256PrivateKey(pem: text) {
            guard let signature = try? key.signature(for: message) else {
                fuzzFailure("a loaded private key cannot sign")
            }
            fuzzCheck(key.publicKey.isValidSignature(signature, for: message), "a key's own signature does not verify")
        }
        if let key = try? ES256PublicKey(pem: text) {
            _ = key.isValidSignature([UInt8](repeating: 1, count: 64), for: message)
        }
    }

    /// A certificate file's bytes: PEM, DER or `.p12` (`cert inspect`, `--cert`), with the findings.
    static let certificate = FuzzTarget(
        name: "certificate", maxLength: 8192,
        summary: "CertificateInfo(bytes:) (PEM, DER, .p12 sniffing), CertificateInfo(der:), problems(now:)"
    ) { bytes in
        for info in [
            try? CertificateInfo(bytes: bytes, password: "kkpush"), try? CertificateInfo(der: bytes),
        ] {
            guard let info else { continue }
            _ = info.problems(now: FuzzFixtures.now)
            _ = try? JSONEncoder().encode(info)
        }
    }

    /// A `.p12` file's bytes, opened with the fixtures' password and with none.
    static let p12 = FuzzTarget(
        name: "p12", maxLength: 8192,
        summary: "ClientCredential.loadPKCS12(bytes:) with password 'kkpush' and none; the credential's PEM forms"
    ) { bytes in
        for password in ["kkpush", nil] {
            guard let credential = try? ClientCredential.loadPKCS12(bytes: bytes, password: password) else { continue }
            _ = try? credential.certificatePEM()
            _ = try? credential.chainPEM()
            _ = try? credential.privateKeyPEM()
            _ = credential.keyDescription
            _ = credential.info.problems(now: FuzzFixtures.now)
        }
    }

    /// A certificate and its key as PEM files (`--cert-pem`/`--key-pem`). Input: the certificate bytes,
    /// a NUL byte, the key bytes.
    static let pemCredential = FuzzTarget(
        name: "pem-credential", maxLength: 8192,
        summary: "ClientCredential.loadPEM(certificate:key:) (input: certificate NUL key), password 'kkpush'"
    ) { bytes in
        let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let certificate = Array(bytes[..<split])
        let key = split < bytes.endIndex ? Array(bytes[(split + 1)...]) : []
        for password in ["kkpush", nil] {
            guard let credential = try? ClientCredential.loadPEM(certificate: certificate, key: key, password: password)
            else { continue }
            _ = try? credential.privateKeyPEM()
            _ = credential.info.problems(now: FuzzFixtures.now)
        }
    }
}
