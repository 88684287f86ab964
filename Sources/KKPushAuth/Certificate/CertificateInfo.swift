public import Foundation
public import KKPushCore

/// One topic in Apple's topic extension (`1.2.840.113635.100.6.3.6`), with its kind.
public struct CertificateTopic: Sendable, Codable, Hashable {
    /// The topic, for example `nl.kantinekoning.app.voip`.
    public var topic: String
    /// Its kind: `app`, `voip`, `complication`, or nil if the certificate does not say.
    public var kind: String?

    /// Creates a topic.
    public init(topic: String, kind: String?) {
        self.topic = topic
        self.kind = kind
    }
}

/// What an APNs client certificate says (spec §6): who it is for, which topics and environments,
/// and when it is valid.
public struct CertificateInfo: Sendable, Codable, Equatable {
    /// Apple's OID for "valid for the development (sandbox) environment".
    public static let developmentOID = "1.2.840.113635.100.6.3.1"
    /// Apple's OID for "valid for the production environment".
    public static let productionOID = "1.2.840.113635.100.6.3.2"
    /// Apple's OID for the list of topics (universal and multi-topic certificates).
    public static let topicsOID = "1.2.840.113635.100.6.3.6"
    /// Warn when a certificate expires within this many days.
    public static let expiryWarningDays = 30

    /// The subject, `UID=…, CN=…, OU=…, O=…, C=…` in certificate order.
    public var subject: String
    /// The subject's common name, for example `Apple Push Services: nl.kantinekoning.app`.
    public var commonName: String?
    /// The subject's `UID`: the bundle id, and the default topic.
    public var bundleID: String?
    /// Every topic the certificate allows: the bundle id, then those in the topic extension.
    public var topics: [String]
    /// The topic extension's entries with their kinds (empty if the extension is absent).
    public var topicEntries: [CertificateTopic]
    /// The environments the certificate is valid for (from Apple's environment OIDs).
    public var environments: [APNsEnvironment]
    /// Start of validity.
    public var notBefore: Date
    /// End of validity.
    public var notAfter: Date
    /// The issuer, in the same form as ``subject``.
    public var issuer: String
    /// The serial number in upper-case hex.
    public var serialNumber: String?
    /// SHA-256 of the DER certificate, upper-case hex.
    public var sha256Fingerprint: String
    /// Whether the certificate is a certificate authority's (basic constraints `CA:TRUE`, or an old
    /// self-signed root), as OpenSSL's `X509_check_ca` judges it: one that signs others, never a push client's.
    public var isCertificateAuthority = false

    /// Reads a DER certificate.
    public init(der: [UInt8]) throws {
        guard let handle = X509Handle.parse(der: der) else {
            throw OpenSSLErrorQueue.error(
                code: .certificateUnreadable, message: "The \(der.count) bytes are not a DER X.509 certificate.")
        }
        try self.init(handle: handle)
    }

    /// Reads a PEM certificate (the first `CERTIFICATE` block).
    public init(pem: String) throws {
        let handles = try CertificateDecoder.certificates(from: Array(pem.utf8), source: "The PEM text")
        try self.init(handle: handles[0])
    }

    /// Reads a certificate file: PEM, DER (`.cer`) or PKCS#12 (`.p12`, which needs `password`
    /// unless it has none).
    /// `passwordHint` says how the user gives the password (the command's flags), for the fix of a
    /// wrong or missing one.
    public init(
        contentsOfFile path: String, password: String? = nil,
        passwordHint: String = ClientCredential.defaultPasswordHint
    ) throws {
        try self.init(
            bytes: readFileBytes(path, what: "certificate"), password: password, name: path, passwordHint: passwordHint)
    }

    /// Reads a certificate file's bytes, as ``init(contentsOfFile:password:)`` does once it has read
    /// the file: PEM, DER or PKCS#12. `name` stands for the file name in error messages.
    public init(
        bytes: [UInt8], password: String? = nil, name path: String = "the certificate data",
        passwordHint: String = ClientCredential.defaultPasswordHint
    ) throws {
        if let handle = try? CertificateDecoder.certificates(from: bytes, source: "'\(path)'").first {
            try self.init(handle: handle)
        } else if PKCS12Loader.looksLikePKCS12(bytes) {
            self = try ClientCredential.loadPKCS12(
                bytes: bytes, path: path, password: password, passwordHint: passwordHint
            ).info
        } else {
            _ = try CertificateDecoder.certificates(from: bytes, source: "The file '\(path)'")
            throw KKPushError(code: .certificateUnreadable, message: "The file '\(path)' is not a certificate.")
        }
    }

    /// Findings for a certificate used at `now`:
    /// - `certificate-expired` / `certificate-not-yet-valid` (error): outside its validity;
    /// - `certificate-expiring` (warning): expires within 30 days;
    /// - `certificate-not-apns` (error): no Apple environment OID, so not an APNs certificate (a CA's is named as such).
    public func problems(now: Date) -> [Problem] {
        var problems: [Problem] = []
        let formatter = ISO8601DateFormatter()
        if now >= notAfter {
            problems.append(
                Problem(
                    .error, code: .certificateExpired,
                    message:
                        "The certificate for \(bundleID ?? commonName ?? subject) expired on \(formatter.string(from: notAfter)); APNs refuses the TLS handshake (BadCertificate).",
                    fix:
                        "Create a new APNs certificate on developer.apple.com (or switch to token auth with a .p8 key, which does not expire)."
                ))
        } else if now < notBefore {
            problems.append(
                Problem(
                    .error, code: .certificateNotYetValid,
                    message: "The certificate is valid only from \(formatter.string(from: notBefore)).",
                    fix: "Check this machine's clock."))
        } else {
            let days = notAfter.timeIntervalSince(now) / 86_400
            if days <= Double(Self.expiryWarningDays) {
                problems.append(
                    Problem(
                        .warning, code: .certificateExpiring,
                        message:
                            "The certificate expires in \(Int(days.rounded(.down))) day\(Int(days) == 1 ? "" : "s"), on \(formatter.string(from: notAfter)).",
                        fix: "Renew it on developer.apple.com now and deploy the new .p12 before it expires."))
            }
        }
        if environments.isEmpty {
            let what =
                isCertificateAuthority
                ? "It is a certificate authority's certificate (it signs other certificates), not an APNs client certificate: it has"
                : "The certificate has"
            problems.append(
                Problem(
                    .error, code: .certificateNotApns,
                    message:
                        "\(what) neither of Apple's APNs environment extensions (\(Self.developmentOID), \(Self.productionOID)), so APNs refuses it (BadCertificate).",
                    fix:
                        "Use the 'Apple Push Notification service SSL' certificate for the app, exported with its key as .p12."
                ))
        }
        return problems
    }

    // MARK: Apple's topic extension

    /// Apple's topic list: a SEQUENCE of `UTF8String topic` each followed by `SEQUENCE { UTF8String
    /// kind }` (Pushy's layout). Tolerant: a topic without a kind gets nil; unknown items are skipped.
    static func parseTopics(_ der: [UInt8]) -> [CertificateTopic] {
        guard let (outer, _) = DERElement.parseOne(der[...]), outer.tag == DERElement.sequence,
            let items = outer.children
        else { return [] }
        var result: [CertificateTopic] = []
        for item in items {
            if let topic = item.string {
                result.append(CertificateTopic(topic: topic, kind: nil))
            } else if item.tag == DERElement.sequence, let kind = item.children?.first?.string, !result.isEmpty,
                result[result.count - 1].kind == nil
            {
                result[result.count - 1].kind = kind
            }
        }
        return result
    }
}
