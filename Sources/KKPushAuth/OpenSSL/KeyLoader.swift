internal import COpenSSL
import Foundation
import KKPushCore

/// Owns an `EVP_PKEY` and frees it on deinit. Immutable after creation, so it may be shared
/// between threads (OpenSSL 3 allows concurrent use of one key by separate operation contexts).
final class PKeyHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// `RSA 2048-bit`, `EC secp384r1 (384-bit)`, `ED25519`…: what the key is, for error messages.
    var kindDescription: String {
        let id = EVP_PKEY_get_base_id(pointer)
        let bits = EVP_PKEY_get_bits(pointer)
        if id == EVP_PKEY_EC {
            return "EC on \(groupName ?? "an unknown curve") (\(bits)-bit)"
        }
        if id == EVP_PKEY_RSA { return "RSA (\(bits)-bit)" }
        let name = OBJ_nid2sn(id).map { String(cString: $0) } ?? "key type \(id)"
        return "\(name) (\(bits)-bit)"
    }

    /// True for an EC key.
    var isEC: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC }

    /// The EC group name as OpenSSL reports it (`prime256v1`, `secp384r1`), nil if none.
    var groupName: String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        let ok = buffer.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_utf8_string_param(pointer, OSSL_PKEY_PARAM_GROUP_NAME, $0.baseAddress, $0.count, &length)
        }
        guard ok == 1 else {
            OpenSSLErrorQueue.clear()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// True for an EC key on P-256.
    var isP256: Bool {
        guard isEC, let name = groupName else { return false }
        return name == "prime256v1" || name == "P-256" || name == "secp256r1"
    }

    /// True if the key's public part is the one its private part makes (`EVP_PKEY_pairwise_check`). A
    /// PKCS#8 or SEC1 key carries both; OpenSSL reads them as given, so an edited or damaged file can
    /// pair a private key with another key's public key.
    var publicKeyMatchesPrivateKey: Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(ctx) }
        return EVP_PKEY_pairwise_check(ctx) == 1
    }

    /// The SubjectPublicKeyInfo DER of the key's public part.
    func subjectPublicKeyInfo() throws -> [UInt8] {
        OpenSSLErrorQueue.clear()
        guard let der = derBytes({ i2d_PUBKEY(pointer, $0) }) else {
            throw OpenSSLErrorQueue.error(code: .keyEncode, message: "OpenSSL could not encode the public key.")
        }
        return der
    }
}

/// Turns key text (PEM with armour, or a bare base64 body) into an `EVP_PKEY`, saying exactly
/// what was found when it is not what is wanted.
enum KeyLoader {
    static let p8Fix =
        "Use the .p8 file Apple gave you for the key (developer.apple.com → Certificates, Identifiers & Profiles → Keys): "
        + "a PKCS#8 PEM ('-----BEGIN PRIVATE KEY-----') holding an EC P-256 key, or its base64 body."

    enum Kind { case privateKey, publicKey }

    /// Classifies DER by its outer structure: PKCS#8, encrypted PKCS#8, SPKI, or something else.
    private static func classify(_ der: [UInt8]) -> String? {
        guard let (outer, rest) = DERElement.parseOne(der[...]), rest.isEmpty, outer.tag == DERElement.sequence,
            let children = outer.children, children.count >= 2
        else { return nil }
        if children[0].tag == DERElement.sequence {
            switch children[1].tag {
            case DERElement.octetString: return "ENCRYPTED PRIVATE KEY"
            case DERElement.bitString: return "PUBLIC KEY"
            default: return nil
            }
        }
        if children[0].tag == DERElement.integer {
            if children[1].tag == DERElement.sequence { return "PRIVATE KEY" }  // PKCS#8
            if children[1].tag == DERElement.octetString { return "EC PRIVATE KEY" }  // SEC1
            if children[1].tag == DERElement.integer { return "RSA PRIVATE KEY" }  // PKCS#1
            if children.count >= 3, children[1].tag == DERElement.sequence { return "CERTIFICATE" }
        }
        if children[0].tag == DERElement.sequence, children.count == 3 { return "CERTIFICATE" }
        return nil
    }

    /// Finds the key's DER and its PEM label (or the label its structure implies, for a bare body).
    static func der(from text: String, field: String) throws -> (label: String, der: [UInt8]) {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty else {
            throw KKPushError(code: .keyEmpty, message: "The \(field) is empty.", fix: p8Fix)
        }
        if trimmed.contains("-----BEGIN ") {
            guard let blocks = PEMBlock.blocks(in: trimmed), !blocks.isEmpty else {
                throw KKPushError(
                    code: .keyUnreadable,
                    message: "The \(field) has PEM armour but its body is not valid base64 or its END line is missing.",
                    fix: p8Fix)
            }
            // Prefer a key block over certificates or parameters in the same file; two keys are ambiguous.
            let keyBlocks = blocks.filter { $0.block.label.hasSuffix("KEY") }
            if keyBlocks.count > 1 {
                throw KKPushError(
                    code: .keyMultiple,
                    message:
                        "The \(field) holds \(keyBlocks.count) keys (\(keyBlocks.map { "'\($0.block.label)'" }.joined(separator: ", "))); the loader cannot tell which one to use.",
                    fix: "Keep one key per file: " + p8Fix)
            }
            let keyBlock = keyBlocks.first ?? blocks[0]
            if keyBlock.hasHeaders {
                throw KKPushError(
                    code: .keyEncrypted,
                    message:
                        "The \(field) is a password-protected PEM ('\(keyBlock.block.label)' with Proc-Type/DEK-Info headers).",
                    fix: "Export it unencrypted, or use the original .p8 from Apple: " + p8Fix)
            }
            return (keyBlock.block.label, keyBlock.block.der)
        }
        guard let der = Base64URL.decodeLenient(trimmed), !der.isEmpty else {
            throw KKPushError(
                code: .keyUnreadable,
                message:
                    "The \(field) is neither a PEM key nor a base64 key body (\(trimmed.count) characters, starting '\(Redaction.prefix(trimmed, keep: 8))').",
                fix: p8Fix)
        }
        guard let label = classify(der) else {
            throw KKPushError(
                code: .keyUnreadable,
                message:
                    "The \(field) is base64, but the \(der.count) bytes are not a DER key (PKCS#8, SEC1 or SubjectPublicKeyInfo).",
                fix: p8Fix)
        }
        return (label, der)
    }

    /// Loads an ES256 (EC P-256) key of the given kind from PEM or a bare body.
    static func loadP256(text: String, kind: Kind, field: String) throws -> PKeyHandle {
        let (label, der) = try der(from: text, field: field)
        switch label {
        case "ENCRYPTED PRIVATE KEY":
            throw KKPushError(
                code: .keyEncrypted,
                message:
                    "The \(field) is an encrypted PKCS#8 key ('ENCRYPTED PRIVATE KEY'); it is needed unencrypted, as Apple issues it.",
                fix:
                    "Decrypt it once: openssl pkcs8 -in encrypted.p8 -out AuthKey_KEYID.p8 (and keep it secret), or download a new key from Apple."
            )
        case "CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE":
            throw KKPushError(
                code: .keyIsCertificate,
                message: "The \(field) is a certificate, not a key.",
                fix: kind == .privateKey
                    ? p8Fix : "Give the P-256 public key (SubjectPublicKeyInfo PEM) or the .p8 private key.")
        default: break
        }
        OpenSSLErrorQueue.clear()
        let pkey: OpaquePointer?
        if label == "PUBLIC KEY" {
            guard kind == .publicKey else {
                throw KKPushError(
                    code: .keyIsPublic,
                    message: "The \(field) is a public key ('PUBLIC KEY'); signing needs the private key.",
                    fix: p8Fix)
            }
            pkey = withDERPointer(der) { d2i_PUBKEY(nil, &$0, $1) }
        } else if label.hasSuffix("PRIVATE KEY") {
            pkey = withDERPointer(der) { d2i_AutoPrivateKey(nil, &$0, $1) }
        } else {
            throw KKPushError(
                code: .keyUnreadable,
                message: "The \(field) is a PEM '\(label)', not a key.",
                fix: p8Fix)
        }
        guard let pkey else {
            throw OpenSSLErrorQueue.error(
                code: .keyUnreadable,
                message: "The \(field) is a PEM '\(label)' that OpenSSL cannot read as a key (\(der.count) bytes).",
                fix: p8Fix)
        }
        let handle = PKeyHandle(pkey)
        guard handle.isEC else {
            throw KKPushError(
                code: .keyNotEc,
                message:
                    "The \(field) is not an EC key: found \(handle.kindDescription). APNs provider tokens need an EC P-256 key (ES256).",
                fix: p8Fix)
        }
        guard handle.isP256 else {
            throw KKPushError(
                code: .keyNotP256,
                message:
                    "The \(field) is not on P-256: found \(handle.kindDescription). APNs provider tokens need the P-256 curve (prime256v1), as Apple's .p8 keys are.",
                fix: p8Fix)
        }
        // Tokens are signed with the private part and checked (by the mock, by `jwt verify`) with the
        // public part: a key whose two parts disagree signs tokens nothing that uses it can verify.
        guard label == "PUBLIC KEY" || handle.publicKeyMatchesPrivateKey else {
            throw KKPushError(
                code: .keyInconsistent,
                message:
                    "The \(field) is damaged: its public key is not the one its private key makes, so tokens signed with it do not verify.",
                fix: "Use the .p8 file exactly as Apple issued it (an edited or corrupted copy will not do): " + p8Fix)
        }
        return handle
    }
}
