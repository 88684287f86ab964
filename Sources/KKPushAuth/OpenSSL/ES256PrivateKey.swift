internal import COpenSSL
import Foundation
import KKPushCore
import KKPushSystem
import Synchronization

/// An EC P-256 private key for ES256: the key inside Apple's `.p8` file.
///
/// Loading parses the PEM once; signing reuses the parsed `EVP_PKEY` and a small pool of
/// initialised signing contexts, so there is no per-signature setup beyond hashing.
public struct ES256PrivateKey: Sendable {
    let signer: ES256Signer

    init(handle: PKeyHandle) { signer = ES256Signer(handle: handle) }

    /// Loads a key from a PEM text (`-----BEGIN PRIVATE KEY-----`, as in Apple's `.p8`) or from
    /// the bare base64 body (as deployments keep it in an environment variable).
    ///
    /// Throws a ``KKPushError`` saying what was found for RSA keys (`key-not-ec`), other curves
    /// (`key-not-p256`), encrypted keys (`key-encrypted`), public keys, certificates and garbage.
    ///
    /// `field` names where the text came from in messages ("private key", "key in APNS_KEY").
    public init(pem: String, field: String = "private key") throws {
        self.init(handle: try KeyLoader.loadP256(text: pem, kind: .privateKey, field: field))
    }

    /// Loads a key from a `.p8` file. `label` names the input in messages, before the path (`(keyPath)`,
    /// `APNS_KEY_PATH`; a command line gives its flag); nil names the path alone.
    public init(contentsOfFile path: String, label: String? = nil) throws {
        let text = try readKeyFile(path, label: label)
        self.init(handle: try KeyLoader.loadP256(text: text, kind: .privateKey, field: "key file '\(path)'"))
    }

    /// Generates a new random P-256 key.
    public static func generate() throws -> ES256PrivateKey {
        OpenSSLErrorQueue.clear()
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLErrorQueue.error(code: .keyGenerate, message: "OpenSSL could not create an EC key context.")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
            EVP_PKEY_generate(ctx, &pkey) == 1, let pkey
        else {
            throw OpenSSLErrorQueue.error(code: .keyGenerate, message: "OpenSSL could not generate a P-256 key.")
        }
        return ES256PrivateKey(handle: PKeyHandle(pkey))
    }

    /// The matching public key.
    public var publicKey: ES256PublicKey {
        // Encoding the public part of a valid key cannot fail short of memory exhaustion; the
        // public key is computed once per private key and kept.
        signer.publicKey
    }

    /// Signs `message` with ECDSA P-256 over SHA-256; returns the raw 64-byte `r‖s` (JWS form).
    public func signature(for message: some Collection<UInt8>) throws -> [UInt8] {
        try ECDSASignature.raw(fromDER: signer.signDER(message))
    }

    /// Signs `message` and returns the DER signature, as `openssl dgst -sha256 -sign` writes it.
    public func derSignature(for message: some Collection<UInt8>) throws -> [UInt8] {
        try signer.signDER(message)
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `.p8` form. Handle as a secret.
    public func pemRepresentation() throws -> String {
        let bio = try MemoryBIO()
        OpenSSLErrorQueue.clear()
        guard PEM_write_bio_PrivateKey(bio.pointer, signer.handle.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrorQueue.error(code: .keyEncode, message: "OpenSSL could not write the private key as PEM.")
        }
        return bio.string()
    }
}

/// The largest key file read, in bytes: a `.p8` is about 250 bytes.
let maximumKeyFileSize = 64 * 1024

/// Reads a key file as text through ``InputFile`` (missing, a folder, unreadable, too large: each its own
/// message naming the path); an empty file is left to ``KeyLoader``, which says what a key file holds.
func readKeyFile(_ path: String, label: String? = nil) throws -> String {
    let data = try InputFile.read(path, what: "key", label: label, maximumSize: maximumKeyFileSize, allowEmpty: true)
    guard let text = String(validating: data, as: UTF8.self) else {
        throw KKPushError(
            code: .keyUnreadable, message: "The key file '\(path)' is not text (a binary DER file?).",
            fix: KeyLoader.p8Fix)
    }
    return text
}

/// The signing half of a key: the `EVP_PKEY` plus a pool of contexts already set up for
/// `EVP_PKEY_sign`, so concurrent signers each take one instead of building a new one.
final class ES256Signer: Sendable {
    let handle: PKeyHandle
    let publicKey: ES256PublicKey
    private let pool = Mutex<[SignContext]>([])
    private static let maxPooled = 8

    /// An initialised `EVP_PKEY_CTX` for signing, freed on deinit.
    final class SignContext: @unchecked Sendable {
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
        deinit { EVP_PKEY_CTX_free(pointer) }
    }

    init(handle: PKeyHandle) {
        self.handle = handle
        // A valid EC key always has an encodable public part.
        publicKey = ES256PublicKey(derivedFrom: handle)
    }

    private func makeContext() throws -> SignContext {
        OpenSSLErrorQueue.clear()
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, handle.pointer, nil) else {
            throw OpenSSLErrorQueue.error(code: .signSetup, message: "OpenSSL could not create a signing context.")
        }
        let context = SignContext(ctx)
        guard EVP_PKEY_sign_init(ctx) == 1 else {
            throw OpenSSLErrorQueue.error(code: .signSetup, message: "OpenSSL could not initialise ECDSA signing.")
        }
        return context
    }

    /// ECDSA over SHA-256(`message`), DER-encoded.
    func signDER(_ message: some Collection<UInt8>) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let hashed =
            message.withContiguousStorageIfAvailable { buffer in
                digest.withUnsafeMutableBufferPointer {
                    SHA256(buffer.baseAddress, buffer.count, $0.baseAddress) != nil
                }
            }
            ?? Array(message).withUnsafeBufferPointer { buffer in
                digest.withUnsafeMutableBufferPointer {
                    SHA256(buffer.baseAddress, buffer.count, $0.baseAddress) != nil
                }
            }
        guard hashed else {
            throw OpenSSLErrorQueue.error(code: .signFailed, message: "OpenSSL could not hash the message.")
        }
        let context = try pool.withLock { $0.popLast() } ?? makeContext()
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        OpenSSLErrorQueue.clear()
        let status = der.withUnsafeMutableBufferPointer { out in
            digest.withUnsafeBufferPointer {
                EVP_PKEY_sign(context.pointer, out.baseAddress, &length, $0.baseAddress, 32)
            }
        }
        guard status == 1 else {
            // The context is not returned to the pool: its state after a failure is unknown.
            throw OpenSSLErrorQueue.error(code: .signFailed, message: "OpenSSL could not sign with the P-256 key.")
        }
        pool.withLock { if $0.count < Self.maxPooled { $0.append(context) } }
        return Array(der.prefix(length))
    }
}
