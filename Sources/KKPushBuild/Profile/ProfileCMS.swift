internal import COpenSSL
import Foundation
import KKPushCore

/// Reading a provisioning profile's CMS SignedData with OpenSSL: its content (the plist) and its signature.
enum ProfileCMS {
    /// The content and what its signature says.
    struct Envelope {
        var content: Data
        var signature: ProfileSignature
    }

    /// Opens the CMS in `data` (DER, or BER with indefinite lengths), takes the content it carries and checks its
    /// signature and the signer's chain against `trustedRoots` (DER or PEM).
    static func open(_ data: Data, what: String, trustedRoots: [Data]) throws -> Envelope {
        let roots = try trustedRoots.enumerated().flatMap { index, root in
            try ProfileX509.certificates(from: root, what: "trusted root \(index + 1) given to read \(what)")
        }
        ProfileOpenSSL.clearErrors()
        var consumed = 0
        let parsed = data.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var pointer: UnsafePointer<UInt8>? = base
            let cms = d2i_CMS_ContentInfo(nil, &pointer, raw.count)
            if let pointer { consumed = pointer - base }
            return cms
        }
        guard let cms = parsed else {
            throw ProfileOpenSSL.error(
                code: .buildProfileUnreadable,
                message:
                    "\(what) starts like a signed profile (a CMS structure) but cannot be read as one "
                    + "(\(data.count) bytes): it is truncated or damaged.",
                fix: "Download the profile again from Xcode or the developer portal; do not edit it.")
        }
        defer { CMS_ContentInfo_free(cms) }
        if consumed < data.count, data[data.startIndex.advanced(by: consumed)...].contains(where: { $0 != 0 }) {
            throw KKPushError(
                code: .buildProfileTrailingData,
                message: "\(what) has \(data.count - consumed) bytes after the end of its CMS structure.",
                fix: "Download the profile again; something appended to it.")
        }
        let type = CMS_get0_type(cms).map(ProfileX509.objectName) ?? "unknown"
        guard let object = CMS_get0_type(cms), OBJ_obj2nid(object) == NID_pkcs7_signed else {
            throw KKPushError(
                code: .buildProfileNotSignedData,
                message: "\(what) is a CMS structure of type \(type), not the SignedData a provisioning profile is.",
                fix: "Give the .mobileprovision or .provisionprofile file as downloaded.")
        }
        guard let slot = CMS_get0_content(cms), let octets = slot.pointee else {
            ProfileOpenSSL.clearErrors()
            throw KKPushError(
                code: .buildProfileNoContent,
                message: "\(what) is a CMS SignedData without the content (a detached signature): it holds no plist.",
                fix: "Give the .mobileprovision or .provisionprofile file as downloaded.")
        }
        let length = Int(ASN1_STRING_length(octets))
        var content = Data()
        if length > 0, let bytes = ASN1_STRING_get0_data(octets) { content = Data(bytes: bytes, count: length) }
        return Envelope(content: content, signature: verify(cms, roots: roots))
    }

    // MARK: Signature

    private static func verify(_ cms: OpaquePointer, roots: [ProfileX509]) -> ProfileSignature {
        // Find the signer certificates among those the CMS carries, so they can be named even when a check fails.
        ProfileOpenSSL.clearErrors()
        _ = CMS_set1_signers_certs(cms, nil, 0)
        ProfileOpenSSL.clearErrors()
        guard let infos = CMS_get0_SignerInfos(cms), kk_sk_cms_signerinfo_num(infos) > 0,
            let info = kk_sk_cms_signerinfo_value(infos, 0)
        else {
            return ProfileSignature(state: .invalid, detail: "The CMS SignedData has no signer.")
        }
        var signerPointer: OpaquePointer?
        CMS_SignerInfo_get0_algs(info, nil, &signerPointer, nil, nil)
        guard let signerPointer else {
            return ProfileSignature(
                state: .invalid,
                detail: "The CMS SignedData does not carry the certificate of its signer, so it cannot be verified.")
        }
        let signer = ProfileX509(borrowing: signerPointer)
        let signerSubject = signer.displayName
        let signerIssuer = signer.issuerDisplayName

        let signatureFailure = verifySignature(cms)
        let chain = verifyChain(signer: signer, cms: cms, roots: roots)
        let state: ProfileSignature.State
        let detail: String
        if let signatureFailure {
            state = .invalid
            detail = "The CMS signature does not verify: \(signatureFailure)."
        } else if let anchor = chain.anchor, !signer.isProfileSigner {
            state = .chainUntrusted
            detail =
                "The CMS signature verifies and the signer chains to \(anchor), but the signer (\(signerSubject)) is "
                + "not a provisioning profile signing certificate."
        } else if let anchor = chain.anchor {
            state = .verified
            detail = "The CMS signature verifies and the signer chains to \(anchor) (dates not checked)."
        } else {
            state = .chainUntrusted
            detail =
                "The CMS signature verifies, but the signer does not chain to a trusted root: \(chain.failure ?? "?")."
        }
        return ProfileSignature(
            state: state, signerSubject: signerSubject, signerIssuer: signerIssuer, chain: chain.names,
            trustAnchor: state == .verified ? chain.anchor : nil, detail: detail)
    }

    /// Checks the signature over the content with the signer certificate the CMS carries; nil if it verifies, else
    /// OpenSSL's reason.
    private static func verifySignature(_ cms: OpaquePointer) -> String? {
        ProfileOpenSSL.clearErrors()
        guard let store = X509_STORE_new() else { return "OpenSSL could not allocate a certificate store" }
        defer { X509_STORE_free(store) }
        guard let method = BIO_s_mem(), let out = BIO_new(method) else {
            return "OpenSSL could not allocate a memory BIO"
        }
        defer { BIO_free(out) }
        let flags = UInt32(CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY)
        if CMS_verify(cms, nil, store, nil, out, flags) == 1 {
            ProfileOpenSSL.clearErrors()
            return nil
        }
        return ProfileOpenSSL.drainErrors() ?? "OpenSSL gave no reason"
    }

    private struct Chain {
        var names: [String]
        var anchor: String?
        var failure: String?
    }

    /// Chains `signer` to `roots`, with the CMS's certificates as untrusted intermediates and no date checks.
    private static func verifyChain(signer: ProfileX509, cms: OpaquePointer, roots: [ProfileX509]) -> Chain {
        ProfileOpenSSL.clearErrors()
        defer { ProfileOpenSSL.clearErrors() }
        let fallback = Chain(names: [signer.displayName], anchor: nil, failure: "OpenSSL could not set up the check")
        guard let store = X509_STORE_new() else { return fallback }
        defer { X509_STORE_free(store) }
        for root in roots { _ = X509_STORE_add_cert(store, root.pointer) }
        _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_NO_CHECK_TIME))
        guard let context = X509_STORE_CTX_new() else { return fallback }
        defer { X509_STORE_CTX_free(context) }
        let untrusted = CMS_get1_certs(cms)
        defer { if let untrusted { kk_sk_x509_pop_free(untrusted) } }
        guard X509_STORE_CTX_init(context, store, signer.pointer, untrusted) == 1 else { return fallback }
        let verified = X509_verify_cert(context) == 1
        var certificates: [ProfileX509] = []
        if let built = X509_STORE_CTX_get0_chain(context) {
            for index in 0..<kk_sk_x509_num(built) {
                if let certificate = kk_sk_x509_value(built, index) {
                    certificates.append(ProfileX509(borrowing: certificate))
                }
            }
        }
        let names = certificates.isEmpty ? [signer.displayName] : certificates.map(\.displayName)
        if verified {
            return Chain(names: names, anchor: names.last, failure: nil)
        }
        let code = X509_STORE_CTX_get_error(context)
        let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
        return Chain(names: names, anchor: nil, failure: reason)
    }
}

/// An `X509`, owned (freed on deinit) or borrowed from a structure that owns it.
final class ProfileX509 {
    let pointer: OpaquePointer
    private let owned: Bool

    init(owning pointer: OpaquePointer) {
        self.pointer = pointer
        owned = true
    }

    init(borrowing pointer: OpaquePointer) {
        self.pointer = pointer
        owned = false
    }

    deinit { if owned { X509_free(pointer) } }

    /// Parses exactly one DER certificate; nil if the bytes are anything else.
    static func parse(der: Data) -> ProfileX509? {
        ProfileOpenSSL.clearErrors()
        var consumed = 0
        let parsed = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            var pointer: UnsafePointer<UInt8>? = base
            let x509 = d2i_X509(nil, &pointer, raw.count)
            if let pointer { consumed = pointer - base }
            return x509
        }
        guard let parsed else { return nil }
        let certificate = ProfileX509(owning: parsed)
        return consumed == der.count ? certificate : nil
    }

    /// Every certificate in `data`: each CERTIFICATE block of a PEM text, or one DER certificate.
    static func certificates(from data: Data, what: String) throws -> [ProfileX509] {
        let isPEM = String(decoding: data.prefix(4096), as: UTF8.self).contains("-----BEGIN ")
        if isPEM {
            ProfileOpenSSL.clearErrors()
            var certificates: [ProfileX509] = []
            data.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, let bio = BIO_new_mem_buf(base, Int32(raw.count)) else { return }
                defer { BIO_free(bio) }
                // Bounded by the text: each read consumes one block.
                while let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                    certificates.append(ProfileX509(owning: x509))
                }
            }
            ProfileOpenSSL.clearErrors()
            guard !certificates.isEmpty else {
                throw KKPushError(
                    code: .buildProfileTrustedRootUnreadable,
                    message: "The \(what) is PEM but holds no certificate OpenSSL can read.",
                    fix: "Give the root certificate as PEM (-----BEGIN CERTIFICATE-----) or DER.")
            }
            return certificates
        }
        guard let certificate = parse(der: data) else {
            throw ProfileOpenSSL.error(
                code: .buildProfileTrustedRootUnreadable,
                message: "The \(what) is neither a PEM nor a DER certificate (\(data.count) bytes).",
                fix: "Give the root certificate as PEM (-----BEGIN CERTIFICATE-----) or DER.")
        }
        return [certificate]
    }

    /// The common names of the certificates Apple signs provisioning profiles with. Security framework's
    /// provisioning-profile-signing policies require such a leaf: anyone with an Apple development certificate holds
    /// a key that chains to Apple Root CA too, and must not be able to sign a profile.
    static let profileSignerNames = [
        "Apple iPhone OS Provisioning Profile Signing", "Mac OS X Provisioning Profile Signing",
    ]

    /// The marker extensions of Apple's provisioning profile signing certificates: iPhone OS until 2023, iPhone OS
    /// since 2023, Mac OS X.
    static let profileSignerMarkers = [
        "1.2.840.113635.100.6.2.2.1", "1.2.840.113635.100.6.58", "1.2.840.113635.100.4.11",
    ]

    /// Whether this is a provisioning profile signing certificate: it has one of ``profileSignerNames`` as its common
    /// name, or one of ``profileSignerMarkers``.
    var isProfileSigner: Bool {
        guard let name = X509_get_subject_name(pointer) else { return false }
        let commonName = Self.entry(of: name, nid: NID_commonName)
        return Self.profileSignerNames.contains { $0 == commonName }
            || Self.profileSignerMarkers.contains(where: hasExtension)
    }

    /// Whether the certificate has an extension with the dotted `oid`.
    func hasExtension(_ oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ProfileOpenSSL.clearErrors()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// The digest of the DER with `type`, uppercase hex without separators.
    func digest(_ type: OpaquePointer?) -> String? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard let type, X509_digest(pointer, type, &digest, &length) == 1 else {
            ProfileOpenSSL.clearErrors()
            return nil
        }
        return digest.prefix(Int(length)).map { String(format: "%02X", $0) }.joined()
    }

    /// The subject's common name, or the whole subject when it has none.
    var displayName: String {
        guard let name = X509_get_subject_name(pointer) else { return "?" }
        return Self.entry(of: name, nid: NID_commonName) ?? Self.oneLine(name)
    }

    /// The issuer's common name, or the whole issuer name when it has none.
    var issuerDisplayName: String {
        guard let name = X509_get_issuer_name(pointer) else { return "?" }
        return Self.entry(of: name, nid: NID_commonName) ?? Self.oneLine(name)
    }

    /// A name on one line, RFC 2253 form with UTF-8 kept (`openssl … -nameopt RFC2253,-esc_msb`).
    static func oneLine(_ name: OpaquePointer) -> String {
        guard let method = BIO_s_mem(), let bio = BIO_new(method) else { return "?" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, kk_xn_flag_rfc2253_utf8()) >= 0 else {
            ProfileOpenSSL.clearErrors()
            return "?"
        }
        var bytes: UnsafeMutablePointer<CChar>?
        let length = kk_bio_get_mem_data(bio, &bytes)
        guard length > 0, let bytes else { return "" }
        return bytes.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// The first entry of `nid` in `name` as UTF-8, nil if there is none.
    static func entry(of name: OpaquePointer, nid: Int32) -> String? {
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry))
        guard length >= 0, let utf8 else {
            ProfileOpenSSL.clearErrors()
            return nil
        }
        defer { kk_openssl_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    /// An object's short name (`pkcs7-envelopedData`), or its dotted OID.
    static func objectName(_ object: OpaquePointer) -> String {
        let nid = OBJ_obj2nid(object)
        if nid != NID_undef, let name = OBJ_nid2sn(nid) { return String(cString: name) }
        var buffer = [CChar](repeating: 0, count: 128)
        let length = buffer.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
        guard length > 0 else { return "?" }
        return String(decoding: buffer.prefix(Int(min(length, 127))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The certificate as a ``SigningCertificate``; nil if its subject cannot be read.
    func signingCertificate() -> SigningCertificate? {
        guard let subjectName = X509_get_subject_name(pointer) else { return nil }
        guard let sha1 = digest(EVP_sha1()), let serial = serialNumber else { return nil }
        return SigningCertificate(
            subject: Self.oneLine(subjectName),
            commonName: Self.entry(of: subjectName, nid: NID_commonName),
            organizationalUnit: Self.entry(of: subjectName, nid: NID_organizationalUnitName),
            notBefore: X509_get0_notBefore(pointer).flatMap(Self.date),
            notAfter: X509_get0_notAfter(pointer).flatMap(Self.date),
            sha1: sha1,
            serialNumber: serial)
    }

    private var serialNumber: String? {
        guard let integer = X509_get0_serialNumber(pointer), let bn = ASN1_INTEGER_to_BN(integer, nil) else {
            ProfileOpenSSL.clearErrors()
            return nil
        }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return nil }
        defer { kk_openssl_free(hex) }
        return String(cString: hex)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>) -> Date? {
        var seconds: Int64 = 0
        guard kk_asn1_time_epoch(time, &seconds) == 1 else {
            ProfileOpenSSL.clearErrors()
            return nil
        }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}

/// OpenSSL's per-thread error queue, for the profile reader.
enum ProfileOpenSSL {
    static func clearErrors() { ERR_clear_error() }

    /// Takes every queued error (oldest first) and joins their reasons with `; `; nil if none.
    static func drainErrors() -> String? {
        var texts: [String] = []
        // Bounded: the queue holds at most ERR_NUM_ERRORS (16) entries.
        for _ in 0..<32 {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) {
                let text = String(cString: reason)
                if !texts.contains(text) { texts.append(text) }
            } else {
                texts.append(String(format: "error %lX", code))
            }
        }
        return texts.isEmpty ? nil : texts.joined(separator: "; ")
    }

    /// A ``KKPushError`` with the queued OpenSSL errors as its underlying cause.
    static func error(code: KKPushError.Code, message: String, fix: String) -> KKPushError {
        KKPushError(code: code, message: message, fix: fix, underlying: drainErrors().map(KKPushError.Cause.init))
    }
}
