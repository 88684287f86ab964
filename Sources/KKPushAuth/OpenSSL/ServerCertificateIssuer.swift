internal import COpenSSL
public import Foundation
import KKPushCore
import KKPushSystem

/// Issues a TLS server certificate from a CA (the test CA of `Certificates/`), so a client that verifies
/// host names can reach the mock under a name or address of the user's choosing.
///
/// The new certificate has an EC P-256 key, the subject `CN=<first name>`, the CA's subject as issuer,
/// `basicConstraints CA:FALSE`, `keyUsage digitalSignature`, `extendedKeyUsage serverAuth` and a
/// `subjectAltName` with every name (`DNS:`) and address (`IP:`) given, signed with SHA-256.
public enum ServerCertificateIssuer {
    /// A certificate and its new private key, both PEM.
    public struct Issued: Sendable {
        /// The certificate (`-----BEGIN CERTIFICATE-----`).
        public var certificatePEM: String
        /// Its private key, PKCS#8 (`-----BEGIN PRIVATE KEY-----`).
        public var privateKeyPEM: String
        /// The host names it holds (`DNS:` entries), in order.
        public var hostNames: [String]
        /// The addresses it holds (`IP:` entries), in order.
        public var addresses: [String]
        /// The certificate's serial number (hex).
        public var serial: String
        /// The end of its validity.
        public var notAfter: Date
    }

    /// The longest validity: 825 days, the most Apple's platforms accept for a TLS server certificate.
    public static let dayRange = 1...825

    /// Issues a certificate for `hostNames` and `addresses`, valid from 5 minutes ago for `days` days,
    /// signed by the CA (`caCertificatePEM` and its key `caKeyPEM`; PEM text). Throws a ``KKPushError``
    /// naming the bad name, address or file.
    public static func issue(
        hostNames: [String], addresses: [String], days: Int, caCertificatePEM: String, caKeyPEM: String,
        now: Date = Date()
    ) throws -> Issued {
        let names = try hostNames.map(checkedHostName)
        let ips = try addresses.map(checkedAddress)
        guard !names.isEmpty || !ips.isEmpty else {
            throw KKPushError(
                code: .certIssueNoNames, message: "No host name or address to issue the certificate for.",
                fix: "Give at least one host name (hostNames) or IP address (addresses).")
        }
        guard dayRange.contains(days) else {
            throw KKPushError(
                code: .certIssueDaysRange, message: "A validity of \(days) days is out of range.",
                fix:
                    "Give \(dayRange.lowerBound) to \(dayRange.upperBound) days (825 is the most Apple's platforms accept)."
            )
        }
        let ca = try loadCACertificate(caCertificatePEM)
        let caKey = try loadCAKey(caKeyPEM)
        OpenSSLErrorQueue.clear()
        guard X509_check_private_key(ca.pointer, caKey.pointer) == 1 else {
            OpenSSLErrorQueue.clear()
            throw KKPushError(
                code: .certIssueCaKeyInvalid, message: "The CA key is not the key of the CA certificate.",
                fix: "Give the ca.key that belongs to ca.crt (both from the same Certificates/ folder).")
        }
        let key = try generateP256Key()
        guard let x509 = X509_new() else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not allocate a certificate.")
        }
        let certificate = X509Handle(x509)
        let serial = try setSerial(x509)
        guard X509_set_version(x509, 2) == 1,
            X509_time_adj_ex(X509_getm_notBefore(x509), 0, -300, nil) != nil,
            X509_time_adj_ex(X509_getm_notAfter(x509), Int32(days), 0, nil) != nil,
            X509_set_issuer_name(x509, X509_get_subject_name(ca.pointer)) == 1,
            X509_set_pubkey(x509, key.pointer) == 1
        else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not fill in the certificate.")
        }
        try setSubject(x509, commonName: names.first ?? ips[0])
        let alternativeNames = (names.map { "DNS:\($0)" } + ips.map { "IP:\($0)" }).joined(separator: ",")
        try addExtensions(
            to: x509, issuer: ca.pointer,
            [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
                (NID_subject_alt_name, alternativeNames),
            ])
        guard X509_sign(x509, caKey.pointer, EVP_sha256()) > 0 else {
            throw OpenSSLErrorQueue.error(
                code: .certIssueFailed, message: "OpenSSL could not sign the certificate with the CA key.")
        }
        return Issued(
            certificatePEM: try certificate.pem(), privateKeyPEM: try privateKeyPEM(key), hostNames: names,
            addresses: ips, serial: serial, notAfter: now.addingTimeInterval(Double(days) * 86_400))
    }

    /// What is wrong with a host name for a certificate's DNS entries (the rule; each caller names the input in its
    /// own words: the library its parameter, the command line its flag).
    public enum HostNameProblem: Sendable, Equatable, CustomStringConvertible {
        case empty
        /// An IPv4 or IPv6 address: it belongs in the certificate as an IP entry.
        case ipAddress
        case tooLong
        case badLabel
        case badCharacter(label: String)

        public var description: String {
            switch self {
            case .empty: "is empty"
            case .ipAddress: "is an IP address"
            case .tooLong: "is longer than 253 characters"
            case .badLabel: "has an empty label or one longer than 63 characters"
            case .badCharacter(let label): "has a character a host name cannot hold in '\(label)'"
            }
        }
    }

    /// The problem with `raw` as a DNS name, if any (nil: ``checkedHostName(_:)`` accepts it).
    public static func hostNameProblem(_ raw: String) -> HostNameProblem? {
        let name = raw.trimmingWhitespace().lowercased()
        if name.isEmpty { return .empty }
        if IPAddressText.canonical(name) != nil { return .ipAddress }
        guard name.utf8.count <= 253 else { return .tooLong }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if index == 0, label == "*", labels.count > 2 { continue }
            guard !label.isEmpty, label.utf8.count <= 63 else { return .badLabel }
            guard label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }),
                label.first != "-", label.last != "-"
            else { return .badCharacter(label: String(label)) }
        }
        return nil
    }

    /// A DNS name as a certificate holds it (lowercased); `*.` may start it. Throws naming the name.
    public static func checkedHostName(_ raw: String) throws -> String {
        if let problem = hostNameProblem(raw) {
            throw KKPushError(
                code: .certIssueHost, message: "Host name '\(raw)' \(problem).",
                fix: problem == .ipAddress
                    ? "Give it as an IP address (addresses), so it goes in as an IP entry."
                    : "Give a DNS name such as mock.example.test (letters, digits, '-' and '.'); IP addresses go in addresses."
            )
        }
        return raw.trimmingWhitespace().lowercased()
    }

    /// An IPv4 or IPv6 address in its canonical text form. Throws naming the address.
    public static func checkedAddress(_ raw: String) throws -> String {
        var text = raw.trimmingWhitespace()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        guard let canonical = IPAddressText.canonical(text) else {
            throw KKPushError(
                code: .certIssueIp, message: "'\(raw)' is not an IPv4 or IPv6 address.",
                fix: "Give an address such as 10.0.0.2 or fd00::2; host names go in hostNames.")
        }
        return canonical
    }

    private static func loadCACertificate(_ pem: String) throws -> X509Handle {
        let certificates = try CertificateDecoder.certificates(from: Array(pem.utf8), source: "The CA certificate")
        return certificates[0]
    }

    private static func loadCAKey(_ pem: String) throws -> PKeyHandle {
        OpenSSLErrorQueue.clear()
        let bytes = Array(pem.utf8)
        let key = bytes.withUnsafeBytes { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            throw OpenSSLErrorQueue.error(
                code: .certIssueCaKeyUnreadable, message: "The CA key is not an unencrypted PEM private key.",
                fix: "Give the CA's private key (ca.key, -----BEGIN PRIVATE KEY-----).")
        }
        return PKeyHandle(key)
    }

    private static func generateP256Key() throws -> PKeyHandle {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL has no EC key generation.")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not make a P-256 key.")
        }
        return PKeyHandle(key)
    }

    /// A random positive 128-bit serial; returns it in hex.
    private static func setSerial(_ x509: OpaquePointer) throws -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not make a serial.")
        }
        bytes[0] = (bytes[0] & 0x7F) | 0x40
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not make a serial.")
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(x509)) != nil else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not set the serial.")
        }
        return bytes.map { String(format: "%02X", $0) }.joined()
    }

    private static func setSubject(_ x509: OpaquePointer, commonName: String) throws {
        guard let name = X509_NAME_new() else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not make a subject.")
        }
        defer { X509_NAME_free(name) }
        let cn = String(commonName.prefix(64))
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, -1, -1, 0) == 1,
            X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "kkpush test", -1, -1, 0) == 1,
            X509_set_subject_name(x509, name) == 1
        else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not set the subject.")
        }
    }

    private static func addExtensions(
        to x509: OpaquePointer, issuer: OpaquePointer, _ extensions: [(Int32, String)]
    ) throws {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer, x509, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw OpenSSLErrorQueue.error(
                    code: .certIssueFailed, message: "OpenSSL refused the extension \(value).")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else {
                throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not add \(value).")
            }
        }
    }

    private static func privateKeyPEM(_ key: PKeyHandle) throws -> String {
        OpenSSLErrorQueue.clear()
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not allocate a buffer.")
        }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL could not encode the key.")
        }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = kk_bio_get_mem_data(bio, &data)
        guard length > 0, let data else {
            throw OpenSSLErrorQueue.error(code: .certIssueFailed, message: "OpenSSL wrote no key.")
        }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}
