internal import COpenSSL
import Foundation
import KKPushCore

/// Reading a certificate's fields with OpenSSL (the model is in `Certificate/CertificateInfo.swift`).
extension CertificateInfo {
    init(handle: X509Handle) throws {
        let x509 = handle.pointer
        guard let subjectName = X509_get_subject_name(x509), let issuerName = X509_get_issuer_name(x509) else {
            throw OpenSSLErrorQueue.error(code: .certificateUnreadable, message: "The certificate has no subject.")
        }
        let subjectEntries = Self.entries(of: subjectName)
        subject = Self.format(subjectEntries)
        issuer = Self.format(Self.entries(of: issuerName))
        commonName = subjectEntries.first { $0.name == "CN" }?.value
        bundleID = subjectEntries.first { $0.name == "UID" }?.value

        var environments: [APNsEnvironment] = []
        if Self.extensionData(x509, oid: Self.developmentOID) != nil { environments.append(.sandbox) }
        if Self.extensionData(x509, oid: Self.productionOID) != nil { environments.append(.production) }
        self.environments = environments
        isCertificateAuthority = X509_check_ca(x509) != 0

        topicEntries = Self.extensionData(x509, oid: Self.topicsOID).map(Self.parseTopics) ?? []
        var topics: [String] = bundleID.map { [$0] } ?? []
        for entry in topicEntries where !topics.contains(entry.topic) { topics.append(entry.topic) }
        self.topics = topics

        guard let start = X509_get0_notBefore(x509).flatMap(Self.date),
            let end = X509_get0_notAfter(x509).flatMap(Self.date)
        else {
            throw OpenSSLErrorQueue.error(
                code: .certificateUnreadable, message: "The certificate's validity dates cannot be read.")
        }
        notBefore = start
        notAfter = end
        serialNumber = Self.serial(x509)
        let der = try handle.der()
        var digest = [UInt8](repeating: 0, count: 32)
        _ = der.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { SHA256(input.baseAddress, input.count, $0.baseAddress) }
        }
        sha256Fingerprint = digest.map { String(format: "%02X", $0) }.joined()
    }

    // MARK: Reading the parts

    struct NameEntry {
        var name: String
        var value: String
    }

    static func entries(of name: OpaquePointer) -> [NameEntry] {
        let count = X509_NAME_entry_count(name)
        guard count > 0 else { return [] }
        var entries: [NameEntry] = []
        for index in 0..<count {
            guard let entry = X509_NAME_get_entry(name, index), let object = X509_NAME_ENTRY_get_object(entry) else {
                continue
            }
            let nid = OBJ_obj2nid(object)
            let short =
                nid == NID_undef ? oidText(object) : (OBJ_nid2sn(nid).map { String(cString: $0) } ?? oidText(object))
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry))
            guard length >= 0, let utf8 else {
                OpenSSLErrorQueue.clear()
                continue
            }
            entries.append(
                NameEntry(
                    name: short,
                    value: String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)))
            kk_openssl_free(utf8)
        }
        return entries
    }

    static func format(_ entries: [NameEntry]) -> String {
        entries.map { "\($0.name)=\($0.value)" }.joined(separator: ", ")
    }

    static func oidText(_ object: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = buffer.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
        guard length > 0 else { return "?" }
        return String(decoding: buffer.prefix(Int(min(length, 127))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The DER value of the extension with `oid`, nil if the certificate has none.
    static func extensionData(_ x509: OpaquePointer, oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(x509, object, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let length = Int(ASN1_STRING_length(data))
        guard length >= 0, let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>) -> Date? {
        var seconds: Int64 = 0
        guard kk_asn1_time_epoch(time, &seconds) == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    static func serial(_ x509: OpaquePointer) -> String? {
        guard let integer = X509_get0_serialNumber(x509), let bn = ASN1_INTEGER_to_BN(integer, nil) else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return nil }
        defer { kk_openssl_free(hex) }
        return String(cString: hex)
    }
}
