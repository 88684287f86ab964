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
        if let target, ServerTrustCheck.hostAndPort(target) == nil {
            throw ValidationError(
                "'\(target)' is not HOST or HOST:PORT (a port from 1 to 65535; [ADDRESS]:PORT for IPv6).")
        }
    }

    /// The library's words for this command: its own inputs, and the common ones (`caFile`) its fixes name.
    static let words = FlagWords(
        flags: FlagWords.common.flags.merging(["caPath": "--ca-path", "pins": "--pin", "host": "HOST[:PORT]"]) {
            $1
        })

    func run() async throws {
        let endpoint = APNsEnvironment(lenient: environment) == .production ? APNsEndpoint.production : .sandbox
        let (host, port) = target.flatMap(ServerTrustCheck.hostAndPort) ?? (endpoint.host, endpoint.port)
        var report = try await reportingErrors {
            do {
                return try await ServerTrustCheck.check(
                    host: host, port: port, pins: pins, caFile: caFile, caFolder: caPath, timeout: timeout)
            } catch let error as KKPushError {
                throw Self.words.apply(error)
            }
        }
        // The library's words in this command's, before Output maps what is left with the common ones.
        report.problem = report.problem.map(Self.words.apply)
        report.fix = report.fix.map(Self.words.apply)
        Output.printReport(report, json: json)
        if report.verdict != .trusted { throw ExitCode(ExitStatus.failed) }
    }
}

extension ServerTrustReport: CommandReport {
    var textLines: [String] {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        var lines = [
            "\(shownHost):\(port): \(tlsVersion), ALPN \(alpn ?? "none")" + (serverName.map { ", SNI \($0)" } ?? "")
        ]
        lines.append("Chain served (\(served.count), leaf first):")
        for (index, certificate) in served.enumerated() {
            lines += certificate.textLines(label: "  \(index)")
        }
        if let root {
            lines.append("Root (\(rootSource == .served ? "sent by the server" : "from the trust store")):")
            lines += root.textLines(label: "  ")
        } else {
            lines.append("Root: not found (the server did not send it and the trust store does not hold it)")
        }
        if case .pins(_, let completedFrom) = anchors {
            lines.append(
                "Trust store: \(anchors.description), the chain completed from \(completedFrom ?? "nothing (no system CA bundle)")"
            )
        } else {
            lines.append("Trust store: \(anchors.description)")
        }
        if let matchedPin { lines.append("Pin matched: \(matchedPin)") }
        switch verdict {
        case .trusted:
            lines.append("Verdict: trusted")
        case .notTrusted:
            lines.append("Verdict: NOT trusted: \(problem ?? "verification failed")")
            if let name = missingIssuerCommonName ?? missingIssuer {
                let namesake = storeHasNamesake ? " (the trust store's namesake has another key)" : ""
                let kind: String =
                    switch missingKind {
                    case .root: "the root"
                    case .intermediate: "the intermediate"
                    case .issuer, nil: "the issuer"
                    }
                let either = missingKind == .issuer ? " (a root or an intermediate: the chain does not show which)" : ""
                lines.append("Missing: \(kind) \"\(name)\"\(namesake)\(either)")
            }
            if let fix { lines.append("Fix: \(fix)") }
        }
        return lines.map(TLSCheckCommand.words.apply)
    }
}

extension ServerCertificate {
    /// The certificate as `tls check` shows it, under `label`.
    func textLines(label: String) -> [String] {
        return [
            "\(label) \(displayName)",
            "    subject:  \(subject)",
            "    issuer:   \(issuer)",
            "    valid:    \(notBefore.formatted(.iso8601)) to \(notAfter.formatted(.iso8601))",
            "    key:      \(keyType) \(keyBits)",
            "    sha256:   \(sha256)",
            "    pin:      sha256/\(spkiSHA256)",
        ]
    }
}
