internal import COpenSSL
import Foundation
import KKPushCore

/// A client certificate and its private key, for certificate-based (mTLS) APNs authentication.
public struct ClientCredential: Sendable {
    let certificate: X509Handle
    let key: PKeyHandle
    let chain: [X509Handle]
    /// What the certificate says.
    public var info: CertificateInfo

    /// Where the certificate and key came from, for the message when they do not belong together.
    enum Source {
        /// One file holding both (a .p12).
        case bundle(String)
        /// A certificate file and a key file.
        case pair(certificate: String, key: String)

        var mismatch: String {
            switch self {
            case .bundle(let path):
                "The private key in '\(path)' does not belong to the certificate in the same file."
            case .pair(let certificate, let key):
                "The private key in '\(key)' does not belong to the certificate in '\(certificate)'."
            }
        }
    }

    init(certificate: X509Handle, key: PKeyHandle, chain: [X509Handle], source: Source) throws {
        OpenSSLErrorQueue.clear()
        guard X509_check_private_key(certificate.pointer, key.pointer) == 1 else {
            throw OpenSSLErrorQueue.error(
                code: .certificateKeyMismatch,
                message: source.mismatch,
                fix:
                    "Use the key that was generated with this certificate's signing request, or export the certificate together with its own key (Keychain Access → My Certificates → export both as .p12)."
            )
        }
        self.certificate = certificate
        self.key = key
        self.chain = chain
        self.info = try CertificateInfo(handle: certificate)
    }

    /// Where a password comes from, for the fix of a wrong or missing password, in the library's words (its
    /// `password` argument). A command line passes its own flags (`kkpush send`: `--cert-password`, …).
    public static let defaultPasswordHint = "the password argument"

    /// Loads a `.p12` (PKCS#12). `password` nil or empty opens files without one. Files encrypted
    /// with the old RC2/3DES algorithms are opened by loading OpenSSL 3's legacy provider; if
    /// that is not installed, the error names the fix. `passwordHint` says how the user gives the
    /// password (the command's flags), for the fix of a wrong or missing one.
    public static func loadPKCS12(
        path: String, password: String?, passwordHint: String = defaultPasswordHint
    ) throws -> ClientCredential {
        try loadPKCS12(
            bytes: readFileBytes(path, what: ".p12"), path: path, password: password, passwordHint: passwordHint)
    }

    /// Loads a `.p12` from its bytes, as ``loadPKCS12(path:password:)`` does once it has read the file;
    /// `name` stands for the file name in error messages.
    public static func loadPKCS12(bytes: [UInt8], password: String?, name: String = "the .p12 data") throws
        -> ClientCredential
    {
        try loadPKCS12(bytes: bytes, path: name, password: password)
    }

    static func loadPKCS12(
        bytes: [UInt8], path: String, password: String?, passwordHint: String = defaultPasswordHint
    ) throws -> ClientCredential {
        let parsed = try PKCS12Loader.parse(bytes: bytes, path: path, password: password, passwordHint: passwordHint)
        return try ClientCredential(
            certificate: parsed.certificate, key: parsed.key, chain: parsed.chain, source: .bundle(path))
    }

    /// Loads a PEM (or DER) certificate and a PEM private key, which may be encrypted with `password`.
    /// `keyLabel` names the key's input in messages, before its path (a command line gives its flag); nil names
    /// the path alone.
    public static func loadPEM(
        certificatePath: String, keyPath: String, password: String?, passwordHint: String = defaultPasswordHint,
        keyLabel: String? = nil
    ) throws -> ClientCredential {
        let certificates = try CertificateDecoder.certificates(
            from: readFileBytes(certificatePath, what: "certificate"), source: "'\(certificatePath)'")
        let keyBytes = try readFileBytes(keyPath, what: "key", label: keyLabel)
        return try credential(
            certificates: certificates, certificateName: certificatePath, keyBytes: keyBytes, keyName: keyPath,
            password: password, passwordHint: passwordHint)
    }

    /// Loads a PEM (or DER) certificate and a PEM private key from their bytes, as
    /// ``loadPEM(certificatePath:keyPath:password:)`` does once it has read the files; the names stand
    /// for the file names in error messages.
    public static func loadPEM(
        certificate: [UInt8], certificateName: String = "the certificate data", key: [UInt8],
        keyName: String = "the key data", password: String?
    ) throws -> ClientCredential {
        let certificates = try CertificateDecoder.certificates(from: certificate, source: "'\(certificateName)'")
        return try credential(
            certificates: certificates, certificateName: certificateName, keyBytes: key, keyName: keyName,
            password: password)
    }

    private static func credential(
        certificates: [X509Handle], certificateName: String, keyBytes: [UInt8], keyName: String, password: String?,
        passwordHint: String = defaultPasswordHint
    ) throws -> ClientCredential {
        let key = try loadPrivateKey(pem: keyBytes, path: keyName, password: password, passwordHint: passwordHint)
        return try ClientCredential(
            certificate: certificates[0], key: key, chain: Array(certificates.dropFirst()),
            source: .pair(certificate: certificateName, key: keyName))
    }

    /// The certificate as PEM.
    public func certificatePEM() throws -> String { try certificate.pem() }

    /// The certificates that came with it (intermediates), as PEM; empty if none.
    public func chainPEM() throws -> String { try chain.map { try $0.pem() }.joined() }

    /// The private key as unencrypted PKCS#8 PEM, for libcurl. Secret: never log it.
    public func privateKeyPEM() throws -> String {
        let bio = try MemoryBIO()
        OpenSSLErrorQueue.clear()
        guard PEM_write_bio_PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw OpenSSLErrorQueue.error(code: .keyEncode, message: "OpenSSL could not write the client key as PEM.")
        }
        return bio.string()
    }

    /// The kind of the private key, for example `RSA (2048-bit)`.
    public var keyDescription: String { key.kindDescription }

    private static func loadPrivateKey(
        pem: [UInt8], path: String, password: String?, passwordHint: String
    ) throws -> PKeyHandle {
        let text = String(decoding: pem, as: UTF8.self)
        let encrypted = text.contains("ENCRYPTED")
        if encrypted, password == nil || password == "" {
            throw KKPushError(
                code: .keyEncrypted, message: "The key file '\(path)' is encrypted and no password was given.",
                fix: "Give its password (\(passwordHint)), or decrypt it: openssl pkey -in \(path) -out key.pem")
        }
        OpenSSLErrorQueue.clear()
        let bio = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }
        guard let bio else {
            throw OpenSSLErrorQueue.error(code: .opensslAlloc, message: "OpenSSL could not allocate a BIO.")
        }
        defer { BIO_free(bio) }
        // Never OpenSSL's default callback, which would prompt on the terminal.
        let callback: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
            buffer, size, _, user in
            guard let buffer, let user else { return 0 }
            let password = user.assumingMemoryBound(to: CChar.self)
            let length = min(Int(strlen(password)), Int(size))
            memcpy(buffer, password, length)
            return Int32(length)
        }
        let pkey: OpaquePointer? =
            if let password {
                password.withCString {
                    PEM_read_bio_PrivateKey(bio, nil, callback, UnsafeMutableRawPointer(mutating: $0))
                }
            } else {
                PEM_read_bio_PrivateKey(bio, nil, callback, nil)
            }
        guard let pkey else {
            throw OpenSSLErrorQueue.error(
                code: encrypted ? .keyPassword : .keyUnreadable,
                message: encrypted
                    ? "The key file '\(path)' could not be decrypted with the password given."
                    : "The key file '\(path)' is not a PEM private key OpenSSL can read.",
                fix: encrypted
                    ? "Give the password the key was encrypted with (\(passwordHint))."
                    : "Give the certificate's private key as PEM (-----BEGIN PRIVATE KEY-----).")
        }
        return PKeyHandle(pkey)
    }
}

/// PKCS#12 parsing, with the legacy provider loaded on demand.
enum PKCS12Loader {
    struct Parsed {
        var certificate: X509Handle
        var key: PKeyHandle
        var chain: [X509Handle]
    }

    /// Loads OpenSSL 3's default and legacy providers into the default library context, once.
    /// (Loading any provider explicitly stops the default one loading implicitly, so both are loaded.)
    static let legacyProviderLoaded: Bool = {
        guard let defaultProvider = OSSL_PROVIDER_load(nil, "default") else { return false }
        guard let legacyProvider = OSSL_PROVIDER_load(nil, "legacy") else { return false }
        // Kept for the life of the process (never unloaded); held here so leak checkers see them in use.
        loadedProviders = [defaultProvider, legacyProvider]
        return true
    }()

    nonisolated(unsafe) private static var loadedProviders: [OpaquePointer] = []

    /// True if the bytes parse as a PKCS#12 structure.
    static func looksLikePKCS12(_ bytes: [UInt8]) -> Bool {
        OpenSSLErrorQueue.clear()
        guard let p12 = withDERPointer(bytes, { d2i_PKCS12(nil, &$0, $1) }) else {
            OpenSSLErrorQueue.clear()
            return false
        }
        PKCS12_free(p12)
        return true
    }

    static func parse(
        bytes: [UInt8], path: String, password: String?, passwordHint: String = ClientCredential.defaultPasswordHint
    ) throws -> Parsed {
        OpenSSLErrorQueue.clear()
        guard let p12 = withDERPointer(bytes, { d2i_PKCS12(nil, &$0, $1) }) else {
            throw OpenSSLErrorQueue.error(
                code: .p12Unreadable, message: "The file '\(path)' is not a PKCS#12 (.p12) file.",
                fix: "Export the certificate with its key from Keychain Access as .p12, or give PEM files.")
        }
        defer { PKCS12_free(p12) }

        // Find the password that opens the MAC first, so a wrong password is reported as such.
        let candidates: [String?] = (password == nil || password == "") ? [nil, ""] : [password]
        var chosen: String??
        if PKCS12_mac_present(p12) == 1 {
            for candidate in candidates {
                let ok =
                    if let candidate {
                        candidate.withCString { PKCS12_verify_mac(p12, $0, -1) }
                    } else {
                        PKCS12_verify_mac(p12, nil, 0)
                    }
                if ok == 1 {
                    chosen = .some(candidate)
                    break
                }
            }
            guard let chosen else {
                throw OpenSSLErrorQueue.error(
                    code: .p12Password,
                    message: password == nil || password == ""
                        ? "The file '\(path)' needs a password."
                        : "The password does not open '\(path)' (its MAC does not verify).",
                    fix: "Give the password it was exported with (\(passwordHint)).")
            }
            _ = chosen
        } else {
            chosen = .some(password)
        }
        let usePassword = chosen ?? password

        func attempt() -> (OpaquePointer?, OpaquePointer?, OpaquePointer?, Bool) {
            OpenSSLErrorQueue.clear()
            var pkey: OpaquePointer?
            var cert: OpaquePointer?
            var ca: OpaquePointer?
            let ok =
                if let usePassword {
                    usePassword.withCString { PKCS12_parse(p12, $0, &pkey, &cert, &ca) }
                } else {
                    PKCS12_parse(p12, nil, &pkey, &cert, &ca)
                }
            return (pkey, cert, ca, ok == 1)
        }

        var (pkey, cert, ca, ok) = attempt()
        if !ok {
            let firstError = OpenSSLErrorQueue.drain() ?? ""
            let needsLegacy =
                firstError.contains("unsupported") || firstError.contains("RC2") || firstError.contains("fetch")
            guard needsLegacy else {
                throw KKPushError(
                    code: .p12Unreadable, message: "OpenSSL cannot read the contents of '\(path)'.",
                    fix: "Re-export it from Keychain Access, or give the certificate and key as PEM files.",
                    underlying: firstError.isEmpty ? nil : KKPushError.Cause(firstError))
            }
            guard legacyProviderLoaded else {
                throw OpenSSLErrorQueue.error(
                    code: .p12Legacy,
                    message:
                        "'\(path)' is encrypted with RC2/3DES, which OpenSSL 3 reads only with its legacy provider, and that provider could not be loaded.",
                    fix: "Install OpenSSL's legacy provider (legacy.so in OPENSSL_MODULES), or convert the file once: "
                        + "openssl pkcs12 -legacy -in old.p12 -nodes -out both.pem && openssl pkcs12 -export -in both.pem -out new.p12"
                )
            }
            (pkey, cert, ca, ok) = attempt()
            guard ok else {
                throw OpenSSLErrorQueue.error(
                    code: .p12Unreadable,
                    message: "OpenSSL cannot read '\(path)' even with the legacy provider loaded.",
                    fix:
                        "Convert it: openssl pkcs12 -legacy -in old.p12 -nodes -out both.pem && openssl pkcs12 -export -in both.pem -out new.p12"
                )
            }
        }
        var chain: [X509Handle] = []
        if let ca {
            let count = kk_sk_x509_num(ca)
            for index in 0..<max(count, 0) {
                if let x = kk_sk_x509_value(ca, index), X509_up_ref(x) == 1 { chain.append(X509Handle(x)) }
            }
            kk_sk_x509_pop_free(ca)
        }
        guard let cert else {
            if let pkey { EVP_PKEY_free(pkey) }
            throw KKPushError(
                code: .p12NoCertificate, message: "'\(path)' holds no certificate with a matching key.",
                fix: "Export the certificate together with its private key.")
        }
        let certificate = X509Handle(cert)
        guard let pkey else {
            throw KKPushError(
                code: .p12NoKey, message: "'\(path)' holds a certificate but no private key.",
                fix: "In Keychain Access, expand the certificate and export both the certificate and its key.")
        }
        return Parsed(certificate: certificate, key: PKeyHandle(pkey), chain: chain)
    }
}
