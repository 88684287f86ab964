internal import COpenSSL
import Foundation
import KKPushCore

/// Makes a ``StandInChain``'s keys and certificates on OpenSSL: RSA keys, SHA-256 signatures, a self-signed root,
/// an intermediate (`pathlen:0`) and a `serverAuth` leaf.
enum ChainIssuing {
    static func make(
        root: StandInChain.Subject, intermediate: StandInChain.Subject, leaf: StandInChain.Subject,
        hostNames: [String], addresses: [String], days: Int, now: Date
    ) throws -> StandInChain {
        ERR_clear_error()
        let rootKey = try rsaKey(bits: root.keyBits)
        defer { EVP_PKEY_free(rootKey) }
        let intermediateKey = try rsaKey(bits: intermediate.keyBits)
        defer { EVP_PKEY_free(intermediateKey) }
        let leafKey = try rsaKey(bits: leaf.keyBits)
        defer { EVP_PKEY_free(leafKey) }

        let rootCertificate = try certificate(
            subject: root, key: rootKey, issuer: nil, issuerKey: rootKey, days: days, now: now,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        defer { X509_free(rootCertificate) }
        let intermediateCertificate = try certificate(
            subject: intermediate, key: intermediateKey, issuer: rootCertificate, issuerKey: rootKey, days: days,
            now: now,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign"),
                (NID_ext_key_usage, "serverAuth,clientAuth"), (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        defer { X509_free(intermediateCertificate) }
        let alternativeNames = (hostNames.map { "DNS:\($0)" } + addresses.map { "IP:\($0)" }).joined(separator: ",")
        let leafCertificate = try certificate(
            subject: leaf, key: leafKey, issuer: intermediateCertificate, issuerKey: intermediateKey, days: days,
            now: now,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"), (NID_subject_alt_name, alternativeNames),
            ])
        defer { X509_free(leafCertificate) }
        return StandInChain(
            rootPEM: try pem(rootCertificate), intermediatePEM: try pem(intermediateCertificate),
            leafPEM: try pem(leafCertificate), leafKeyPEM: try keyPEM(leafKey),
            certificates: [rootCertificate, intermediateCertificate, leafCertificate].map(CertificateReading.describe))
    }

    private static func failure(_ message: String) -> KKPushError {
        ERR_clear_error()
        return KKPushError(
            code: .trustChainIssueFailed, message: message, fix: "Retry; check that OpenSSL 3 is installed.")
    }

    private static func rsaKey(bits: Int) throws -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else {
            throw failure("OpenSSL has no RSA key generation.")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw failure("OpenSSL could not make an RSA \(bits) key.") }
        return key
    }

    private static func certificate(
        subject: StandInChain.Subject, key: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer, days: Int,
        now: Date, extensions: [(Int32, String)]
    ) throws -> OpaquePointer {
        guard let x509 = X509_new() else { throw failure("OpenSSL could not allocate a certificate.") }
        do {
            guard let name = X509_NAME_new() else { throw failure("OpenSSL could not make a name.") }
            defer { X509_NAME_free(name) }
            for (field, value) in subject.attributes {
                guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1 else {
                    throw failure("OpenSSL refused the name entry \(field)=\(value).")
                }
            }
            var serial = [UInt8](repeating: 0, count: 16)
            guard RAND_bytes(&serial, Int32(serial.count)) == 1 else {
                throw failure("OpenSSL could not make a serial.")
            }
            serial[0] = (serial[0] & 0x7F) | 0x40
            guard let number = BN_bin2bn(serial, Int32(serial.count), nil) else {
                throw failure("OpenSSL could not make a serial.")
            }
            defer { BN_free(number) }
            var start = Int(now.timeIntervalSince1970) - 3600
            guard X509_set_version(x509, 2) == 1, BN_to_ASN1_INTEGER(number, X509_get_serialNumber(x509)) != nil,
                X509_time_adj_ex(X509_getm_notBefore(x509), 0, 0, &start) != nil,
                X509_time_adj_ex(X509_getm_notAfter(x509), Int32(days), 3600, &start) != nil,
                X509_set_subject_name(x509, name) == 1,
                X509_set_issuer_name(x509, issuer.flatMap { X509_get_subject_name($0) } ?? name) == 1,
                X509_set_pubkey(x509, key) == 1
            else { throw failure("OpenSSL could not fill in the certificate \(subject.commonName).") }
            var context = X509V3_CTX()
            X509V3_set_ctx(&context, issuer ?? x509, x509, nil, nil, 0)
            for (nid, value) in extensions {
                guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                    throw failure("OpenSSL refused the extension \(value).")
                }
                defer { X509_EXTENSION_free(ext) }
                guard X509_add_ext(x509, ext, -1) == 1 else { throw failure("OpenSSL could not add \(value).") }
            }
            guard X509_sign(x509, issuerKey, EVP_sha256()) > 0 else {
                throw failure("OpenSSL could not sign \(subject.commonName).")
            }
            return x509
        } catch {
            X509_free(x509)
            throw error
        }
    }

    private static func pem(_ x509: OpaquePointer) throws -> String {
        try bioText { PEM_write_bio_X509($0, x509) == 1 }
    }

    private static func keyPEM(_ key: OpaquePointer) throws -> String {
        try bioText { PEM_write_bio_PKCS8PrivateKey($0, key, nil, nil, 0, nil, nil) == 1 }
    }

    private static func bioText(_ write: (OpaquePointer) -> Bool) throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("OpenSSL could not allocate a buffer.") }
        defer { BIO_free(bio) }
        guard write(bio) else { throw failure("OpenSSL could not write PEM.") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = kk_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { throw failure("OpenSSL wrote no PEM.") }
        return String(
            decoding: UnsafeRawBufferPointer(start: data, count: Int(length)).bindMemory(to: UInt8.self), as: UTF8.self)
    }
}
