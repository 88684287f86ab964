package import Foundation

/// One certificate of a chain, as the trust check shows it.
package struct ServerCertificate: Sendable, Equatable {
    /// The subject in RFC 2253 form (the encoded order reversed, as `openssl x509 -nameopt RFC2253` prints it; most
    /// specific first for a name encoded in the usual order): `CN=api.push.apple.com,O=Apple Inc.,...`.
    package var subject: String
    /// The issuer, in the same form.
    package var issuer: String
    /// The subject's common name, if it has one.
    package var commonName: String?
    /// The issuer's common name, if it has one.
    package var issuerCommonName: String?
    package var notBefore: Date
    package var notAfter: Date
    /// The key's algorithm: `RSA`, `EC`, `Ed25519`, ...
    package var keyType: String
    /// The key's size in bits (an RSA modulus, an EC curve's order).
    package var keyBits: Int
    /// SHA-256 of the certificate's DER, upper-case hex pairs joined by colons (`openssl x509 -fingerprint`'s form).
    package var sha256: String
    /// SHA-256 of the SubjectPublicKeyInfo's DER, base64: the form of a public-key pin (`sha256/<this>`).
    package var spkiSHA256: String
    /// Subject and issuer are the same name: a root (or a self-signed leaf).
    package var selfIssued: Bool
    /// basicConstraints says CA:TRUE.
    package var isCA: Bool

    /// The common name, else the whole subject: how messages name it.
    package var displayName: String { commonName ?? subject }
}

/// What the check trusted the chain against.
package enum TrustAnchors: Sendable, Equatable {
    /// The system's CA bundle (a PEM file of roots: Debian's `/etc/ssl/certs/ca-certificates.crt`).
    case systemBundle(path: String)
    /// A PEM file of CA certificates the caller gave.
    case caFile(path: String)
    /// A folder of CA certificates named by subject hash (`c_rehash`/`update-ca-certificates`' layout).
    case caFolder(path: String)
    /// A pin set: SHA-256 hashes of certificates or of their public keys; the chain is accepted if one of its
    /// certificates (served, or the root the bundle `completedFrom` completes it with) matches one.
    case pins([String], completedFrom: String?)

    /// Where the roots come from, for messages.
    package var description: String {
        switch self {
        case .systemBundle(let path): "the system CA bundle \(path)"
        case .caFile(let path): "the CA file \(path)"
        case .caFolder(let path): "the CA folder \(path)"
        case .pins(let pins, _): "the pin set (\(pins.count) pin\(pins.count == 1 ? "" : "s"))"
        }
    }
}

/// The outcome of one trust check: the chain a server served, the root it ends in, and whether the trust anchors
/// accept it.
package struct ServerTrustReport: Sendable {
    /// Trusted, or not (why is in ``problem``).
    package enum Verdict: String, Sendable {
        case trusted
        case notTrusted = "not-trusted"
    }

    /// What a missing certificate is. A server sends its intermediates and need not send its root, so when it sends
    /// only its own certificate and the store lacks that certificate's issuer, the chain alone does not say which the
    /// issuer is: a root the store lacks, or an intermediate the server omits.
    package enum MissingKind: String, Sendable {
        /// The root the chain ends in: sent by the server (self-signed) and not in the store; the issuer of a served
        /// intermediate; a name the store holds with another key (a namesake); or a root the check knows by name
        /// (Apple's USERTrust root, the mock's test CA).
        case root
        /// An intermediate the server did not send: an issuer the check knows by name as one (Apple's APNs
        /// intermediate, the stand-in's).
        case intermediate
        /// The issuer of the server's certificate, neither sent nor in the store, that the chain does not show to be
        /// a root or an intermediate.
        case issuer
    }

    /// Where the root the chain ends in was found.
    package enum RootSource: String, Sendable {
        /// The server sent it (a server need not send its root).
        case served
        /// The trust store holds it (the chain was completed with it).
        case trustStore = "trust-store"
    }

    package var host: String
    package var port: Int
    /// The name sent as SNI and checked against the certificate (none for an IP address: its address is checked).
    package var serverName: String?
    /// The negotiated TLS version (`TLSv1.3`).
    package var tlsVersion: String
    /// The negotiated ALPN protocol (`h2`), nil if the server chose none.
    package var alpn: String?
    /// The chain as served, leaf first.
    package var served: [ServerCertificate]
    /// The root the chain ends in, if one was found (served, or from the trust store), and where.
    package var root: ServerCertificate?
    package var rootSource: RootSource?
    package var anchors: TrustAnchors
    package var verdict: Verdict
    /// OpenSSL's verify result (`X509_V_OK` is 0) and its text, for a chain that did not verify against the store.
    package var verifyCode: Int
    package var problem: String?
    /// The certificate the chain needs and the store does not have: the issuer of the last certificate the chain
    /// could be built to (its name, RFC 2253), when that is why it failed.
    package var missingIssuer: String?
    /// The missing issuer's common name.
    package var missingIssuerCommonName: String?
    /// What the missing certificate is, as far as the chain tells (``MissingKind``); nil when none is missing.
    package var missingKind: MissingKind?
    /// True when the missing certificate is known to be the root.
    package var missingIsRoot: Bool { missingKind == .root }
    /// True when the store holds a certificate with the missing certificate's name but another key: the chain was
    /// signed by a namesake (a stand-in, or a TLS-inspecting proxy), not by the certificate the store trusts.
    package var storeHasNamesake: Bool = false
    /// The file of the CA folder that holds the missing certificate under another name than its subject hash
    /// (`<hash>.0`), where OpenSSL does not look: the folder needs `openssl rehash`.
    package var missingUnhashedFile: String? = nil
    /// The pin that matched, with the certificate it matched (pin sets only).
    package var matchedPin: String?
    /// What to do (nil when trusted).
    package var fix: String?
}
