internal import COpenSSL
import KKPushCore

/// Converts ECDSA P-256 signatures between the JWS form (raw 64-byte `r‖s`) and the ASN.1 DER
/// form OpenSSL and `openssl dgst -sign` use.
public enum ECDSASignature {
    /// The DER `ECDSA-Sig-Value` for a raw 64-byte `r‖s` signature.
    public static func der(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count == 64 else {
            throw KKPushError(
                code: .signatureLength,
                message: "A raw ES256 signature is 64 bytes (r‖s); this one is \(raw.count) bytes.")
        }
        OpenSSLErrorQueue.clear()
        guard let sig = ECDSA_SIG_new() else {
            throw OpenSSLErrorQueue.error(code: .opensslAlloc, message: "OpenSSL could not allocate an ECDSA_SIG.")
        }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            throw OpenSSLErrorQueue.error(
                code: .opensslAlloc, message: "OpenSSL could not allocate the signature numbers.")
        }
        // ECDSA_SIG_set0 takes ownership of r and s on success.
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw OpenSSLErrorQueue.error(
                code: .signatureEncode, message: "OpenSSL could not build the ECDSA signature.")
        }
        guard let der = derBytes({ i2d_ECDSA_SIG(sig, $0) }) else {
            throw OpenSSLErrorQueue.error(
                code: .signatureEncode, message: "OpenSSL could not DER-encode the signature.")
        }
        return der
    }

    /// The raw 64-byte `r‖s` for a DER `ECDSA-Sig-Value`.
    public static func raw(fromDER der: some Collection<UInt8>) throws -> [UInt8] {
        let bytes = Array(der)
        OpenSSLErrorQueue.clear()
        let parsed = withDERPointer(bytes) { d2i_ECDSA_SIG(nil, &$0, $1) }
        guard let sig = parsed else {
            throw OpenSSLErrorQueue.error(
                code: .signatureMalformed,
                message: "The \(bytes.count)-byte signature is not a DER ECDSA signature.")
        }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let r, let s, let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard ok else {
            throw OpenSSLErrorQueue.error(
                code: .signatureMalformed,
                message: "The DER signature's r or s does not fit in 32 bytes: it is not a P-256 signature.")
        }
        return out
    }
}
