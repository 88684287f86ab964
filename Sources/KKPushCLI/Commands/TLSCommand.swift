import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushTrust

/// `kkpush tls`: what an APNs host serves over TLS, and whether this machine trusts it.
struct TLSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls",
        abstract: "Check the TLS chain an APNs host serves against a trust store or pins.",
        subcommands: [TLSCheckCommand.self]
    )
}

/// `kkpush tls check`: one handshake, the chain served, the root it ends in and the trust store's verdict.
struct TLSCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Show the chain a host serves and whether the trust store (or a pin set) accepts it.",
        discussion: """
            Makes one TLS handshake as an APNs provider does (SNI, ALPN h2, TLS 1.2 or later), then prints each \
            certificate served (subject, issuer, validity, key, SHA-256 fingerprint and public-key pin), the root \
            the chain ends in (sent, or found in the trust store) and whether the trust store accepts the chain: \
            the system CA bundle by default (/etc/ssl/certs/ca-certificates.crt, Debian's ca-certificates), or \
            --ca-file, --ca-path (a folder of certificates under their subject-hash names: openssl rehash DIR), or \
            a set of --pin hashes. When it does not, it names the root or intermediate that is missing (or, when \
            the server sends only its own certificate and its issuer is unknown, says it may be either) and what \
            to do.

            --pin matches the chain's certificates and the root it is completed with: from --ca-file or --ca-path \
            when given with the pins, else from the system bundle. A stand-in's root (the mock's) is in no system \
            bundle: pin it with --ca-file DIR/root.crt.

            Apple serves APNs (sandbox and production, token and certificate connections alike) under the root \
            "USERTrust RSA Certification Authority"; Debian's ca-certificates ships it as \
            USERTrust_RSA_Certification_Authority.crt. A sender with a pinned or older trust store fails there.

            HOST defaults to --environment's APNs host (api.sandbox.push.apple.com or api.push.apple.com), PORT to \
            443. Try it on the mock: kkpush mock certs --chain usertrust --out DIR, then kkpush mock serve --cert \
            DIR/server.crt --key DIR/server.key, and kkpush tls check 127.0.0.1:2197 --ca-file DIR/root.crt.

            Exit status: 0 trusted; 1 not trusted; 69 no connection or no TLS handshake; 2 a CA file or folder \
            that cannot be used (missing, no certificate, a folder without hash links) or a pin that is not one.
            """)

    @Argument(help: "The host to check, HOST[:PORT] ([::1]:PORT for IPv6; default: --environment's APNs host).")
    var target: String?
    @Option(help: "The APNs environment whose host to check when no HOST is given: sandbox or production.")
    var environment: String = "sandbox"
    @Option(name: .customLong("ca-file"), help: "Trust the CA certificates in this PEM file instead of the system's.")
    var caFile: String?
    @Option(
        name: .customLong("ca-path"),
        help: "Trust the CA folder (certificates under subject-hash names: openssl rehash DIR) instead of the system's."
    )
    var caPath: String?
    @Option(
        name: .customLong("pin"),
        help:
            "Accept the chain if a certificate matches: sha256/BASE64 of a public key, or a SHA-256 in hex (repeatable; with --ca-file or --ca-path the chain is completed from it)."
    )
    var pins: [String] = []
    @Option(parsing: .unconditional, help: "Seconds for the connection and handshake (1 to 300).")
    var timeout = 10
    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard APNsEnvironment(lenient: environment) != nil else {
            throw ValidationError("--environment '\(environment)' is not sandbox or production.")
        }
        if caFile != nil, caPath != nil {
            throw ValidationError("Give --ca-file or --ca-path, not both (--pin may go with either).")
        }
        try NumericFlags.integer(timeout, flag: "--timeout", in: 1...300)
        if let target, Self.split(target) == nil {
            throw ValidationError(
                "'\(target)' is not HOST or HOST:PORT (a port from 1 to 65535; [ADDRESS]:PORT for IPv6).")
        }
    }

    /// `HOST[:PORT]` as host and port (443 when none); nil when the port is not a port.
    static func split(_ text: String) -> (host: String, port: Int)? {
        var host = text
        var port = 443
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let number = Int(text[text.index(after: colon)...]) else { return nil }
            port = number
        }
        guard !host.isEmpty, (1...65_535).contains(port) else { return nil }
        return (host, port)
    }

    /// The library's words for this command: its own inputs, and the common ones (`caFile`) its fixes name.
    static let words = FlagWords(
        flags: FlagWords.common.flags.merging(["caPath": "--ca-path", "pins": "--pin", "host": "HOST[:PORT]"]) {
            $1
        })

    func run() async throws {
        let report = try await reportingErrors(exitCode: ExitStatus.unavailable) {
            () async throws -> ServerTrustReport in
            do {
                let (host, port) =
                    target.flatMap(Self.split)
                    ?? (APNsEnvironment(lenient: environment) == .production
                        ? (APNsEndpoint.production.host, APNsEndpoint.production.port)
                        : (APNsEndpoint.sandbox.host, APNsEndpoint.sandbox.port))
                let anchors: ServerTrustCheck.Anchors
                if !pins.isEmpty {
                    anchors = .pins(try pins.map(ServerTrustCheck.Pin.init), caFile: caFile, caFolder: caPath)
                } else if let caFile {
                    anchors = .caFile(caFile)
                } else if let caPath {
                    anchors = .caFolder(caPath)
                } else {
                    anchors = .system
                }
                return try await ServerTrustCheck.runOffThread(
                    host: host, port: port, anchors: anchors, timeout: timeout)
            } catch let error as KKPushError {
                throw Self.words.apply(error)
            }
        }
        if json {
            Output.printJSON(Self.words.apply(Self.json(report)))
        } else {
            for line in Self.text(report) { print(Self.words.apply(line)) }
        }
        if report.verdict != .trusted { throw ExitCode(ExitStatus.failed) }
    }

    // MARK: Output

    static func date(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    static func json(_ certificate: ServerCertificate) -> JSONValue {
        [
            "subject": .string(certificate.subject), "issuer": .string(certificate.issuer),
            "common_name": JSONValue(certificate.commonName), "not_before": .string(date(certificate.notBefore)),
            "not_after": .string(date(certificate.notAfter)), "key_type": .string(certificate.keyType),
            "key_bits": .int(certificate.keyBits), "sha256": .string(certificate.sha256),
            "spki_sha256": .string(certificate.spkiSHA256), "self_issued": .bool(certificate.selfIssued),
            "ca": .bool(certificate.isCA),
        ]
    }

    static func anchorsJSON(_ anchors: TrustAnchors) -> JSONValue {
        switch anchors {
        case .systemBundle(let path): ["kind": "system", "path": .string(path)]
        case .caFile(let path): ["kind": "ca-file", "path": .string(path)]
        case .caFolder(let path): ["kind": "ca-path", "path": .string(path)]
        case .pins(let pins, let bundle):
            ["kind": "pins", "pins": .array(pins.map(JSONValue.string)), "completed_from": JSONValue(bundle)]
        }
    }

    static func json(_ report: ServerTrustReport) -> JSONValue {
        var missing: JSONValue = .null
        if let issuer = report.missingIssuer {
            missing = [
                "name": .string(issuer), "common_name": JSONValue(report.missingIssuerCommonName),
                "kind": .string(report.missingKind?.rawValue ?? "issuer"),
                "store_has_namesake": .bool(report.storeHasNamesake),
                "unhashed_file": JSONValue(report.missingUnhashedFile),
            ]
        }
        return [
            "host": .string(report.host), "port": .int(report.port), "server_name": JSONValue(report.serverName),
            "tls_version": .string(report.tlsVersion), "alpn": JSONValue(report.alpn),
            "chain": .array(report.served.map(json)), "root": report.root.map(json) ?? .null,
            "root_source": JSONValue(report.rootSource?.rawValue), "trust_store": anchorsJSON(report.anchors),
            "verdict": .string(report.verdict.rawValue), "trusted": .bool(report.verdict == .trusted),
            "verify_code": .int(report.verifyCode), "problem": JSONValue(report.problem), "missing": missing,
            "matched_pin": JSONValue(report.matchedPin), "fix": JSONValue(report.fix),
        ]
    }

    static func describe(_ certificate: ServerCertificate, label: String) -> [String] {
        [
            "\(label) \(certificate.displayName)",
            "    subject:  \(certificate.subject)",
            "    issuer:   \(certificate.issuer)",
            "    valid:    \(date(certificate.notBefore)) to \(date(certificate.notAfter))",
            "    key:      \(certificate.keyType) \(certificate.keyBits)",
            "    sha256:   \(certificate.sha256)",
            "    pin:      sha256/\(certificate.spkiSHA256)",
        ]
    }

    static func text(_ report: ServerTrustReport) -> [String] {
        let host = report.host.contains(":") ? "[\(report.host)]" : report.host
        var lines = [
            "\(host):\(report.port): \(report.tlsVersion), ALPN \(report.alpn ?? "none")"
                + (report.serverName.map { ", SNI \($0)" } ?? "")
        ]
        lines.append("Chain served (\(report.served.count), leaf first):")
        for (index, certificate) in report.served.enumerated() {
            lines += describe(certificate, label: "  \(index)")
        }
        if let root = report.root {
            let source = report.rootSource == .served ? "sent by the server" : "from the trust store"
            lines.append("Root (\(source)):")
            lines += describe(root, label: "  ")
        } else {
            lines.append("Root: not found (the server did not send it and the trust store does not hold it)")
        }
        if case .pins(_, let completedFrom) = report.anchors {
            lines.append(
                "Trust store: \(report.anchors.description), the chain completed from \(completedFrom ?? "nothing (no system CA bundle)")"
            )
        } else {
            lines.append("Trust store: \(report.anchors.description)")
        }
        if let pin = report.matchedPin { lines.append("Pin matched: \(pin)") }
        switch report.verdict {
        case .trusted:
            lines.append("Verdict: trusted")
        case .notTrusted:
            lines.append("Verdict: NOT trusted: \(report.problem ?? "verification failed")")
            if let name = report.missingIssuerCommonName ?? report.missingIssuer {
                let namesake = report.storeHasNamesake ? " (the trust store's namesake has another key)" : ""
                let kind: String =
                    switch report.missingKind {
                    case .root: "the root"
                    case .intermediate: "the intermediate"
                    case .issuer, nil: "the issuer"
                    }
                let either =
                    report.missingKind == .issuer ? " (a root or an intermediate: the chain does not show which)" : ""
                lines.append("Missing: \(kind) \"\(name)\"\(namesake)\(either)")
            }
            if let fix = report.fix { lines.append("Fix: \(fix)") }
        }
        return lines
    }
}
