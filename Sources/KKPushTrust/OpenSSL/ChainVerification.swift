internal import COpenSSL
import Foundation
import KKPushCore
import KKPushSystem

/// A served chain verified against a trust store, as OpenSSL's `X509_verify_cert` does it for a TLS client: the
/// leaf for `serverAuth` and the host's name (or address), the other served certificates as untrusted
/// intermediates, the store's certificates as roots.
struct ChainVerification {
    /// `X509_V_OK` (0), or why not.
    var code: Int
    var text: String?
    /// The chain as built (leaf first): whole when verified; up to the last certificate whose issuer was found
    /// otherwise.
    var built: [ServerCertificate]
    /// Whether the last certificate of ``built`` came from the store (not served).
    var lastFromStore: Bool
    /// When an issuer is missing: whether the store holds certificates with its name all the same (another key:
    /// a stand-in's root, or a TLS-inspecting proxy's chain against the real root).
    var storeHasIssuerName = false

    var verified: Bool { code == 0 }

    /// Loads the store: a PEM file of roots, or a folder in subject-hash layout. Throws
    /// ``KKPushError/Code/trustAnchorsUnreadable``.
    static func store(file: String?, folder: String?) throws -> OpaquePointer {
        ERR_clear_error()
        guard let store = X509_STORE_new() else {
            throw KKPushError(
                code: .trustAnchorsUnreadable, message: "OpenSSL could not make a trust store.", fix: "Retry.")
        }
        if let file {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory)
            if !exists || isDirectory.boolValue {
                X509_STORE_free(store)
                throw KKPushError(
                    code: .trustAnchorsUnreadable,
                    message: exists
                        ? "\(file) is a folder, not a CA file (caFile)."
                        : "The CA file \(file) does not exist (caFile).",
                    fix: exists
                        ? "Give a folder of CA certificates as a CA folder (caPath), or a PEM file of CA certificates here."
                        : "Give a PEM file of CA certificates (-----BEGIN CERTIFICATE-----), such as the system's ca-certificates.crt."
                )
            }
        }
        if let file, X509_STORE_load_file(store, file) != 1 {
            X509_STORE_free(store)
            ERR_clear_error()
            throw KKPushError(
                code: .trustAnchorsUnreadable,
                message: "The CA file \(file) holds no certificate OpenSSL can read (caFile).",
                fix:
                    "Give a PEM file of CA certificates (-----BEGIN CERTIFICATE-----), such as the system's ca-certificates.crt."
            )
        }
        // The folder itself was read first (CAFolderContents): what OpenSSL does not check (that it exists, holds
        // certificates, under their hash names) has been said by then.
        if let folder, X509_STORE_load_path(store, folder) != 1 {
            X509_STORE_free(store)
            ERR_clear_error()
            throw KKPushError(
                code: .trustAnchorsUnreadable,
                message: "The CA folder \(folder) cannot be used as a trust store (caPath).",
                fix:
                    "Give a folder of certificates named by subject hash (what update-ca-certificates or openssl rehash makes)."
            )
        }
        return store
    }

    /// Verifies `chain` (leaf first; borrowed) against `store` (borrowed) for `host` at time `now`.
    static func verify(chain: [OpaquePointer], store: OpaquePointer, host: String, now: Date) -> ChainVerification {
        ERR_clear_error()
        guard let context = X509_STORE_CTX_new(), let untrusted = kk_sk_x509_new_null() else {
            return ChainVerification(
                code: -1, text: "OpenSSL could not set up verification", built: [], lastFromStore: false)
        }
        defer {
            X509_STORE_CTX_free(context)
            kk_sk_x509_free(untrusted)
        }
        for certificate in chain.dropFirst() { _ = kk_sk_x509_push(untrusted, certificate) }
        guard X509_STORE_CTX_init(context, store, chain[0], untrusted) == 1 else {
            return ChainVerification(
                code: -1, text: "OpenSSL could not set up verification", built: [], lastFromStore: false)
        }
        _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER)
        if let parameters = X509_STORE_CTX_get0_param(context) {
            X509_VERIFY_PARAM_set_time(parameters, Int(now.timeIntervalSince1970))
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            if isAddress(bare) {
                _ = X509_VERIFY_PARAM_set1_ip_asc(parameters, bare)
            } else {
                _ = X509_VERIFY_PARAM_set1_host(parameters, bare, 0)
            }
        }
        let result = X509_verify_cert(context)
        let code = result == 1 ? 0 : Int(X509_STORE_CTX_get_error(context))
        var built: [ServerCertificate] = []
        var lastPointer: OpaquePointer? = nil
        if let stack = X509_STORE_CTX_get0_chain(context) {
            for index in 0..<kk_sk_x509_num(stack) {
                guard let certificate = kk_sk_x509_value(stack, index) else { continue }
                built.append(CertificateReading.describe(certificate))
                lastPointer = certificate
            }
        }
        var storeHasIssuerName = false
        if result != 1, missingIssuerCodes.contains(code), let lastPointer {
            let selfIssued = X509_NAME_cmp(X509_get_subject_name(lastPointer), X509_get_issuer_name(lastPointer)) == 0
            let name = selfIssued ? X509_get_subject_name(lastPointer) : X509_get_issuer_name(lastPointer)
            if let found = X509_STORE_CTX_get1_certs(context, name) {
                storeHasIssuerName = kk_sk_x509_num(found) > 0
                kk_sk_x509_pop_free(found)
            }
        }
        let servedDigests = Set(chain.map(CertificateReading.certificateSHA256))
        let lastFromStore =
            lastPointer.map { !servedDigests.contains(CertificateReading.certificateSHA256($0)) } ?? false
        ERR_clear_error()
        return ChainVerification(
            code: code, text: code == 0 ? nil : String(cString: X509_verify_cert_error_string(Int(code))),
            built: built, lastFromStore: lastFromStore, storeHasIssuerName: storeHasIssuerName)
    }

    /// The verify codes that mean "an issuer is not in the store".
    static let missingIssuerCodes: Set<Int> = [
        Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY), Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT),
        Int(X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN), Int(X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT),
    ]
    static let hostnameMismatch = Int(X509_V_ERR_HOSTNAME_MISMATCH)
    static let ipMismatch = Int(X509_V_ERR_IP_ADDRESS_MISMATCH)
    static let expired = Int(X509_V_ERR_CERT_HAS_EXPIRED)

    static func isAddress(_ text: String) -> Bool { IPAddressText.canonical(text) != nil }
}
