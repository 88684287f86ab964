internal import COpenSSL
import Foundation
import KKPushCore

/// Reads what ``ServerCertificate`` shows from an OpenSSL `X509` (borrowed: not freed here).
enum CertificateReading {
    static func describe(_ x509: OpaquePointer) -> ServerCertificate {
        let subject = X509_get_subject_name(x509)
        let issuer = X509_get_issuer_name(x509)
        let key = X509_get0_pubkey(x509)
        let keyType = key.flatMap { EVP_PKEY_get0_type_name($0) }.map { String(cString: $0) } ?? "unknown"
        return ServerCertificate(
            subject: name(subject), issuer: name(issuer), commonName: commonName(subject),
            issuerCommonName: commonName(issuer), notBefore: date(X509_get0_notBefore(x509)),
            notAfter: date(X509_get0_notAfter(x509)), keyType: keyType,
            keyBits: key.map { Int(EVP_PKEY_get_bits($0)) } ?? 0,
            sha256: hexPairs(certificateSHA256(x509)), spkiSHA256: Data(spkiSHA256(x509)).base64EncodedString(),
            selfIssued: subject != nil && issuer != nil && X509_NAME_cmp(subject, issuer) == 0,
            isCA: X509_check_ca(x509) > 0)
    }

    /// SHA-256 of the certificate's DER.
    static func certificateSHA256(_ x509: OpaquePointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else { return [] }
        return Array(digest.prefix(Int(length)))
    }

    /// SHA-256 of the DER SubjectPublicKeyInfo (what a public-key pin hashes).
    static func spkiSHA256(_ x509: OpaquePointer) -> [UInt8] {
        guard let publicKey = X509_get_X509_PUBKEY(x509) else { return [] }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509_PUBKEY(publicKey, &buffer)
        guard length > 0, let buffer else { return [] }
        defer { kk_openssl_free(buffer) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        guard EVP_Digest(buffer, Int(length), &digest, &digestLength, EVP_sha256(), nil) == 1 else { return [] }
        return Array(digest.prefix(Int(digestLength)))
    }

    static func hexPairs(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// A name in RFC 2253 form, UTF-8 kept.
    static func name(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, kk_xn_flag_rfc2253_utf8()) >= 0 else { return "" }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = kk_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { return "" }
        return String(
            decoding: UnsafeRawBufferPointer(start: data, count: Int(length)).bindMemory(to: UInt8.self), as: UTF8.self)
    }

    /// A name's common name (the last CN entry), if it has one.
    static func commonName(_ name: OpaquePointer?) -> String? {
        guard let name else { return nil }
        var index: Int32 = -1
        var last: Int32 = -1
        while case let next = X509_NAME_get_index_by_NID(name, NID_commonName, index), next >= 0 {
            last = next
            index = next
        }
        guard last >= 0, let entry = X509_NAME_get_entry(name, last), let value = X509_NAME_ENTRY_get_data(entry)
        else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, value)
        guard length >= 0, let utf8 else { return nil }
        defer { kk_openssl_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var seconds: Int64 = 0
        guard let time, kk_asn1_time_epoch(time, &seconds) == 1 else { return Date(timeIntervalSince1970: 0) }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
