internal import COpenSSL
package import Foundation
import KKPushCore

/// Whether a TLS server's certificate chain is trusted here: one handshake as an APNs provider makes it (SNI, ALPN
/// `h2`), the chain served, the root it ends in (sent, or found in the store), and the verdict of a trust store
/// (the system bundle, a CA file or folder) or of a pin set, with the root or intermediate that is missing and
/// what to install.
///
/// Apple serves APNs under certificates that chain to "USERTrust RSA Certification Authority" (sandbox and
/// production, token and certificate connections alike); a provider whose trust store or pins predate that cannot
/// connect, and this check says so by name.
package enum ServerTrustCheck {
    /// What the chain is trusted against.
    package enum Anchors: Sendable, Equatable {
        /// The system's CA bundle (``systemBundle()``).
        case system
        /// A PEM file of CA certificates.
        case caFile(String)
        /// A folder of CA certificates in subject-hash layout.
        case caFolder(String)
        /// SHA-256 pins of certificates or public keys (``Pin``). The chain is completed from `caFile` or `caFolder`
        /// when given, else from the system bundle when there is one, so a pinned root the server does not send
        /// still matches: a stand-in's root (the mock's) is in no system bundle, so its pin matches only with its
        /// root file given.
        case pins([Pin], caFile: String? = nil, caFolder: String? = nil)
    }

    /// A SHA-256 pin: `sha256/<base64>` or 44 base64 characters (a SubjectPublicKeyInfo hash, as HPKP and most
    /// pinning libraries write it), or 64 hex digits, colons allowed (a certificate's fingerprint, or its public
    /// key's hash).
    package struct Pin: Sendable, Equatable, CustomStringConvertible {
        /// The 32 bytes.
        package var digest: [UInt8]
        /// The pin as given.
        package var description: String

        /// Parses a pin; throws ``KKPushError/Code/trustPinInvalid`` naming it.
        package init(_ text: String) throws {
            let given = text.trimmingCharacters(in: .whitespaces)
            var body = given
            if body.lowercased().hasPrefix("sha256/") { body = String(body.dropFirst(7)) }
            let hex = body.replacingOccurrences(of: ":", with: "")
            if hex.count == 64, hex.allSatisfy(\.isHexDigit) {
                var bytes: [UInt8] = []
                var index = hex.startIndex
                while index < hex.endIndex {
                    let next = hex.index(index, offsetBy: 2)
                    bytes.append(UInt8(hex[index..<next], radix: 16)!)
                    index = next
                }
                digest = bytes
            } else if let data = Data(base64Encoded: body), data.count == 32 {
                digest = Array(data)
            } else {
                throw KKPushError(
                    code: .trustPinInvalid, message: "'\(given)' is not a SHA-256 pin (pins).",
                    fix:
                        "Give sha256/ and the base64 SHA-256 of a public key (44 characters), or a certificate's SHA-256 fingerprint in hex (64 digits, colons allowed)."
                )
            }
            description = given
        }
    }

    /// Where the system's CA bundle is looked for, in order: Debian and Ubuntu (`ca-certificates`), Fedora and
    /// RHEL, Alpine and others, then OpenSSL's own default.
    package static var systemBundleCandidates: [String] {
        [
            "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem",
            String(cString: X509_get_default_cert_file()),
        ]
    }

    /// The system's CA bundle: the first of ``systemBundleCandidates`` that exists.
    package static func systemBundle() -> String? {
        systemBundleCandidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// The name of the root Apple serves APNs under.
    package static let appleRootName = "USERTrust RSA Certification Authority"
    /// The file Debian's and Ubuntu's `ca-certificates` package installs it as.
    package static let appleRootDebianFile = "USERTrust_RSA_Certification_Authority.crt"

    /// Connects to `host`:`port`, reads the chain served and judges it against `anchors` at time `now`.
    /// `systemBundle` replaces ``systemBundle()`` (tests). Throws ``KKPushError/Code/trustConnect`` or
    /// ``KKPushError/Code/trustHandshake`` when no handshake was made, and an input error for unusable anchors.
    package static func run(
        host: String, port: Int, anchors: Anchors, timeout: Int = 10, now: Date = Date(),
        systemBundle bundle: String? = nil
    ) throws -> ServerTrustReport {
        guard (1...65_535).contains(port), !host.isEmpty, !host.contains(where: \.isWhitespace) else {
            throw KKPushError(
                code: .trustHostInvalid, message: "'\(host)' port \(port) is not a host and port to connect to (host).",
                fix: "Give a host name or address and a port from 1 to 65535, e.g. api.push.apple.com:443.")
        }
        let storeFile: String?
        let storeFolder: String?
        let described: TrustAnchors
        switch anchors {
        case .pins(let pins, let file, let folder) where file != nil || folder != nil:
            storeFile = file
            storeFolder = folder
            described = .pins(pins.map(\.description), completedFrom: file ?? folder)
        case .system, .pins:
            let found = bundle ?? systemBundle()
            if case .pins(let pins, _, _) = anchors {
                described = .pins(pins.map(\.description), completedFrom: found)
            } else {
                guard let found else {
                    throw KKPushError(
                        code: .trustSystemBundleMissing,
                        message: "No system CA bundle was found (\(systemBundleCandidates.joined(separator: ", "))).",
                        fix:
                            "Install the system's CA certificates (Debian and Ubuntu: apt-get install ca-certificates), or give a CA file (caFile)."
                    )
                }
                described = .systemBundle(path: found)
            }
            storeFile = found
            storeFolder = nil
        case .caFile(let path):
            storeFile = path
            storeFolder = nil
            described = .caFile(path: path)
        case .caFolder(let path):
            storeFile = nil
            storeFolder = path
            described = .caFolder(path: path)
        }
        let folderContents = try storeFolder.map(CAFolderContents.read)
        let store = try ChainVerification.store(file: storeFile, folder: storeFolder)
        defer { X509_STORE_free(store) }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let isAddress = ChainVerification.isAddress(bare)
        let serverName = isAddress ? nil : bare
        let fetched = try ServerChainFetch.fetch(host: bare, port: port, serverName: serverName, timeout: timeout)
        let verification = ChainVerification.verify(chain: fetched.chain, store: store, host: bare, now: now)
        let served = fetched.chain.map(CertificateReading.describe)
        var report = judge(
            served: served, verification: verification, anchors: described, host: bare, now: now,
            folder: folderContents)
        report.port = port
        report.serverName = serverName
        report.tlsVersion = fetched.tlsVersion
        report.alpn = fetched.alpn
        if case .pins(let pins, _, _) = anchors { applyPins(pins, to: &report, verification: verification) }
        return report
    }

    /// ``run(host:port:anchors:timeout:now:systemBundle:)`` on a thread of its own: the check blocks on its socket
    /// for up to `timeout` seconds, which an async caller must not do on Swift's cooperative threads.
    package static func runOffThread(
        host: String, port: Int, anchors: Anchors, timeout: Int = 10, systemBundle bundle: String? = nil
    ) async throws -> ServerTrustReport {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        try run(host: host, port: port, anchors: anchors, timeout: timeout, systemBundle: bundle)
                    })
            }
            thread.name = "kkpush.trust-check"
            thread.start()
        }
    }

    /// The verdict on a chain from the store's verification (no pins). `folder`: what the CA folder holds, when the
    /// store is one.
    ///
    /// A missing certificate is classified by what the chain shows (``ServerTrustReport/MissingKind``): the served
    /// chain is built as far as the store allows; when it stops at a self-signed certificate the server sent, that
    /// is the root the store lacks; when it stops at a served intermediate, that intermediate's issuer is taken for
    /// the root (chains have one intermediate); when it stops at the server's own certificate, its issuer may be
    /// either (a private CA such as the mock's signs its leaves directly): it is called a root or an intermediate
    /// only when the store holds a namesake (roots are what stores hold) or the check knows the name, and otherwise
    /// said to be either, with both fixes. The choice: naming a root an intermediate (or the reverse) sends the
    /// user to fix the wrong side, the client's trust store or the server's chain file.
    static func judge(
        served: [ServerCertificate], verification: ChainVerification, anchors: TrustAnchors, host: String, now: Date,
        folder: CAFolderContents? = nil
    ) -> ServerTrustReport {
        var report = ServerTrustReport(
            host: host, port: 0, serverName: nil, tlsVersion: "", alpn: nil, served: served, root: nil,
            rootSource: nil, anchors: anchors, verdict: verification.verified ? .trusted : .notTrusted,
            verifyCode: verification.code, problem: verification.text, missingIssuer: nil,
            missingIssuerCommonName: nil, missingKind: nil, matchedPin: nil, fix: nil)
        if verification.verified, let last = verification.built.last {
            report.root = last
            report.rootSource = verification.lastFromStore ? .trustStore : .served
            return report
        }
        if let last = served.last, last.selfIssued {
            report.root = last
            report.rootSource = .served
        }
        let where_ = anchors.description
        if ChainVerification.missingIssuerCodes.contains(verification.code) {
            let last = verification.built.last ?? served.last!
            let name: String
            if last.selfIssued {
                // The server sent a root the store does not have (or a self-signed leaf).
                report.missingIssuer = last.subject
                report.missingIssuerCommonName = last.commonName
                report.missingKind = .root
                name = last.displayName
            } else {
                report.missingIssuer = last.issuer
                report.missingIssuerCommonName = last.issuerCommonName
                name = last.issuerCommonName ?? last.issuer
                report.missingKind = classify(
                    issuer: name, ofCA: last.isCA, storeHasNamesake: verification.storeHasIssuerName)
            }
            let onlyLeaf = !last.isCA && !last.selfIssued
            let sentOnlyLeaf = served.count == 1 && onlyLeaf
            switch report.missingKind {
            case .intermediate where sentOnlyLeaf:
                report.problem =
                    "the server sent only its own certificate, and the intermediate \"\(name)\" that issued it is not in \(where_)"
                report.fix =
                    "The server must send its intermediate certificates after its own (a chain file: the leaf, then the intermediate); a client cannot be expected to hold them. A mock or stand-in is served with its whole chain file."
            case .intermediate:
                report.problem = "the chain's issuer \"\(name)\" is neither sent by the server nor in \(where_)"
                report.fix =
                    "The server must send every intermediate certificate; or add \"\(name)\" to the trust store."
            case .issuer:
                report.problem =
                    (sentOnlyLeaf
                        ? "the server sent only its own certificate, and its issuer"
                        : "the issuer of the server's certificate")
                    + " \"\(name)\" is neither sent nor in \(where_): either a root \(where_) lacks, or an intermediate the server omits (the chain does not show which)"
                report.fix =
                    "If \"\(name)\" is a root (a private CA's, as a test server's often is), add it to the trust store (caFile); if it is an intermediate, the server must send it after its own certificate (a chain file: the leaf, then the intermediate)."
            default:
                if verification.storeHasIssuerName {
                    report.storeHasNamesake = true
                    report.problem =
                        "the chain ends in a root named \"\(name)\", and \(where_) holds a root of that name, but with another key: not the one that signed this chain"
                    report.fix =
                        "The chain was made by a namesake of the real root: a stand-in, such as the mock, trusted through its own root file (caFile), or a TLS-inspecting proxy re-signing the server's certificates (let APNs traffic bypass it, or add the proxy's root to the trust store)."
                } else {
                    let sent = last.selfIssued && served.contains(last) ? ", sent by the server," : ","
                    report.problem = "the chain ends in the root \"\(name)\"\(sent) which \(where_) does not hold"
                    report.fix = rootFix(name)
                }
            }
            if let folder, let issuer = report.missingIssuer,
                let unhashed = folder.unlinked.first(where: { $0.subject == issuer }),
                case .caFolder(let path) = anchors
            {
                report.missingUnhashedFile = unhashed.file
                report.problem =
                    "\(where_) holds \"\(name)\" (in \(unhashed.file)), but not under its subject-hash name \(unhashed.hashName), the only name OpenSSL looks a certificate up by"
                report.fix =
                    "Run openssl rehash \(path) (c_rehash \(path) on older systems) to add the hash links, then check again."
            }
        } else if verification.code == ChainVerification.hostnameMismatch
            || verification.code == ChainVerification.ipMismatch
        {
            report.problem = "the certificate \"\(served[0].displayName)\" does not name \(host)"
            report.fix =
                "Connect by a name the certificate holds (its subjectAltName), or serve a certificate issued for \(host)."
        } else if verification.code == ChainVerification.expired || served.contains(where: { $0.notAfter < now }) {
            report.fix =
                "Renew the expired certificate on the server; if it is not expired, check this machine's clock (timedatectl)."
        } else {
            report.fix = "See the chain above for the certificate OpenSSL refused (\(verification.text ?? "unknown"))."
        }
        return report
    }

    /// The roots the check knows by name: Apple's, and the mock's own test CA (`Certificates/ca.crt`, which signs
    /// the mock's certificates directly).
    package static let knownRootNames: Set<String> = Set(StandInChain.shapes.values.map(\.root.commonName)).union([
        appleRootName, mockTestCAName,
    ])
    /// The intermediates the check knows by name: Apple's APNs intermediate (and so the stand-in's).
    package static let knownIntermediateNames: Set<String> = Set(
        StandInChain.shapes.values.map(\.intermediate.commonName))
    /// The common name of the mock's test CA (`Certificates/ca.crt`).
    package static let mockTestCAName = "kkpush test CA"

    /// What the missing issuer `name` of the last certificate the chain was built to is: see ``judge``.
    static func classify(issuer name: String, ofCA: Bool, storeHasNamesake: Bool) -> ServerTrustReport.MissingKind {
        if knownIntermediateNames.contains(name) { return .intermediate }
        if ofCA || storeHasNamesake || knownRootNames.contains(name) { return .root }
        return .issuer
    }

    /// What to do when `root` is the missing root: for Apple's root, the package that ships it.
    package static func rootFix(_ root: String) -> String {
        if root == mockTestCAName {
            return
                "\"\(root)\" is the mock's test CA, which signs the mock's own certificates: trust its file, Certificates/ca.crt (caFile), as a sender of the mock does; no system bundle holds it."
        }
        if root == appleRootName {
            return
                "Install the root \"\(appleRootName)\" into the trust store: APNs has served its certificates under it since 2025 (token and certificate connections alike). Debian's and Ubuntu's ca-certificates package ships it as \(appleRootDebianFile) (apt-get install ca-certificates, then update-ca-certificates); a CA file or pin set of the provider's own needs that root (or its public key's hash) added."
        }
        return
            "Add the root \"\(root)\" to the trust store (caFile), or trust the CA file the server's operator gives; a stand-in (the mock) is trusted through its own CA file."
    }

    /// The verdict of a pin set: trusted when a certificate of the chain (served, or completed from the CA file,
    /// folder or system bundle) matches a pin, and the chain has no problem other than a root the store lacks.
    static func applyPins(_ pins: [Pin], to report: inout ServerTrustReport, verification: ChainVerification) {
        var candidates = report.served
        var root = report.root
        if let last = verification.built.last, verification.lastFromStore {
            candidates.append(last)
            if last.selfIssued { root = last }
        }
        if let root = report.root, !candidates.contains(root) { candidates.append(root) }
        for certificate in candidates {
            let certificateDigest = hexDigest(certificate.sha256)
            let keyDigest = Data(base64Encoded: certificate.spkiSHA256).map(Array.init) ?? []
            if let pin = pins.first(where: { $0.digest == certificateDigest || $0.digest == keyDigest }) {
                report.matchedPin = "\(pin.description) (\(certificate.displayName))"
                break
            }
        }
        let otherProblem =
            !verification.verified && !ChainVerification.missingIssuerCodes.contains(verification.code)
        if report.matchedPin != nil, !otherProblem {
            report.verdict = .trusted
            report.problem = nil
            report.fix = nil
            report.missingIssuer = nil
            report.missingIssuerCommonName = nil
            report.missingKind = nil
            report.storeHasNamesake = false
            return
        }
        report.verdict = .notTrusted
        guard report.matchedPin == nil else { return }
        report.problem = "no certificate of the chain matches a pin"
        let advice = "pin a root's public key rather than a leaf's: it outlives the server's certificate renewals"
        if let root {
            let source = candidates.prefix(report.served.count).contains(root) ? "sent by the server" : "completed"
            report.fix =
                "The server's certificates or keys changed (APNs moved to the root \"\(appleRootName)\" in 2025), or the pins are another chain's; \(advice). The chain's root \"\(root.displayName)\" (\(source)) is sha256/\(root.spkiSHA256)."
            return
        }
        // The root is not known: the server did not send it and the store the chain was completed from lacks it.
        // Naming the last certificate served "the root" would hand out the wrong pin.
        var store = "a trust store (no system CA bundle was found)"
        if case .pins(_, let completedFrom?) = report.anchors { store = completedFrom }
        let missing = report.missingIssuerCommonName ?? report.missingIssuer ?? "its issuer"
        let namesake =
            report.storeHasNamesake
            ? " (it holds a root of that name with another key: this chain was signed by a namesake, a stand-in such as the mock's or a TLS-inspecting proxy)"
            : ""
        var fix =
            report.missingIsRoot
            ? "The chain's root \"\(missing)\" is neither sent by the server nor in \(store)\(namesake), so a pin of it cannot match here: give the root's certificate as a CA file (caFile) with the pins, and the chain is completed from it."
            : "The chain stops at \"\(missing)\", neither sent by the server nor in \(store), so a pin of it or of a certificate above it cannot match here: give those certificates as a CA file (caFile) with the pins, or have the server send its whole chain."
        if let last = report.served.last {
            let what =
                last.selfIssued
                ? "a self-signed certificate" : last.isCA ? "the intermediate" : "the server's own certificate"
            fix +=
                " The last certificate served, \(what) \"\(last.displayName)\", is sha256/\(last.spkiSHA256); \(advice)."
        }
        report.fix = fix
    }

    static func hexDigest(_ pairs: String) -> [UInt8] {
        pairs.split(separator: ":").compactMap { UInt8($0, radix: 16) }
    }
}
