internal import COpenSSL
import KKPushCore

/// An EC P-256 public key for verifying ES256 signatures (provider tokens, device JWTs).
///
/// Two keys are equal when their SubjectPublicKeyInfo encodings are.
public struct ES256PublicKey: Sendable, Hashable {
    let handle: PKeyHandle
    /// The SubjectPublicKeyInfo DER.
    public let subjectPublicKeyInfo: [UInt8]

    /// The public part of a private key's handle. Falls back to sharing the private handle if
    /// OpenSSL cannot re-read the encoded public key (it only verifies with it).
    init(derivedFrom privateHandle: PKeyHandle) {
        if let spki = try? privateHandle.subjectPublicKeyInfo(),
            let pkey = withDERPointer(spki, { d2i_PUBKEY(nil, &$0, $1) })
        {
            handle = PKeyHandle(pkey)
            subjectPublicKeyInfo = spki
        } else {
            OpenSSLErrorQueue.clear()
            handle = privateHandle
            subjectPublicKeyInfo = []
        }
    }

    /// Loads a public key from SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`) or its bare
    /// base64 body. A private-key PEM (`.p8`) is accepted too: its public key is derived.
    /// `field` names where the text came from in messages ("public key", "key in APNS_KEY").
    public init(pem: String, field: String = "public key") throws {
        let handle = try KeyLoader.loadP256(text: pem, kind: .publicKey, field: field)
        self.init(derivedFrom: handle)
        if subjectPublicKeyInfo.isEmpty {
            throw OpenSSLErrorQueue.error(code: .keyEncode, message: "OpenSSL could not encode the public key.")
        }
    }

    /// Loads a public key (or a `.p8` private key, whose public key is used) from a file. `label` names the
    /// input in messages, before the path (`(keyPath)`, `APNS_KEY_PATH`; a command line gives its flag); nil
    /// names the path alone.
    public init(contentsOfFile path: String, label: String? = nil) throws {
        let text = try readKeyFile(path, label: label)
        let handle = try KeyLoader.loadP256(text: text, kind: .publicKey, field: "key file '\(path)'")
        self.init(derivedFrom: handle)
        if subjectPublicKeyInfo.isEmpty {
            throw OpenSSLErrorQueue.error(
                code: .keyEncode, message: "OpenSSL could not encode the public key of '\(path)'.")
        }
    }

    /// True if `signature` is a valid ECDSA P-256/SHA-256 signature of `message`. Accepts the raw
    /// 64-byte `r‖s` (JWS) and the ASN.1 DER form (as `openssl dgst -sign` and Java produce).
    public func isValidSignature(_ signature: [UInt8], for message: some Collection<UInt8>) -> Bool {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(message)
        let hashed = bytes.withUnsafeBufferPointer { buffer in
            digest.withUnsafeMutableBufferPointer { SHA256(buffer.baseAddress, buffer.count, $0.baseAddress) != nil }
        }
        guard hashed else { return false }
        if signature.count == 64, let der = try? ECDSASignature.der(fromRaw: signature),
            verify(der: der, digest: digest)
        {
            return true
        }
        // A 64-byte value could in principle be DER too; anything else can only be DER.
        return signature.first == 0x30 && verify(der: signature, digest: digest)
    }

    private func verify(der: [UInt8], digest: [UInt8]) -> Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, handle.pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_verify_init(ctx) == 1 else { return false }
        return der.withUnsafeBufferPointer { sig in
            digest.withUnsafeBufferPointer { EVP_PKEY_verify(ctx, sig.baseAddress, sig.count, $0.baseAddress, 32) }
        } == 1
    }

    /// The key as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    public func pemRepresentation() throws -> String {
        guard !subjectPublicKeyInfo.isEmpty else {
            throw KKPushError(code: .keyEncode, message: "The public key could not be encoded.")
        }
        return PEMBlock.encode(label: "PUBLIC KEY", der: subjectPublicKeyInfo)
    }

    /// Equal when the encoded public keys are equal.
    public static func == (lhs: ES256PublicKey, rhs: ES256PublicKey) -> Bool {
        lhs.subjectPublicKeyInfo == rhs.subjectPublicKeyInfo
    }

    /// Hashes the encoded public key.
    public func hash(into hasher: inout Hasher) { hasher.combine(subjectPublicKeyInfo) }
}
