import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushCore
import KKPushMock
import KKPushSystem
import KKPushTrust

/// `kkpush mock certs`: a server certificate for the mock under other names and addresses, from the test CA.
struct MockCertsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certs",
        abstract: "Issue a server certificate for the mock under a host name or address, from the test CA.",
        discussion: """
            The mock's own certificate (Certificates/server.crt) names only localhost, 127.0.0.1 and ::1. A sender \
            on another host or in a container verifies the host name it connects to, so it needs a certificate \
            for that name. This command issues one, signed by the test CA (ca.crt and ca.key of the Certificates \
            folder): an EC P-256 key, serverAuth, a subjectAltName with every --host (DNS) and --ip (IP) and, \
            unless --no-loopback, localhost, 127.0.0.1 and ::1 too. It writes server.crt and server.key (mode 600) \
            into --out, and never replaces them without --force.

            Then serve with it, and have the sender trust the CA:
              kkpush mock serve --host 0.0.0.0 --cert DIR/server.crt --key DIR/server.key --admin-token TOKEN
              curl --cacert Certificates/ca.crt https://NAME:2197/...
              kkpush send --url https://NAME:2197 --ca-file Certificates/ca.crt ...
            These certificates are for tests: the CA's key is in the repository.

            --chain usertrust makes a stand-in for the chain Apple serves APNs under instead, with keys made \
            here: a root "USERTrust RSA Certification Authority" (RSA 4096, the real root's subject), an \
            intermediate "Apple Public Server RSA CA 12 - G1" (RSA 2048) and an RSA 2048 server certificate for \
            the names given (and loopback). It writes server.crt (the leaf, then the intermediate: what the mock \
            serves), server.key, leaf.crt, intermediate.crt and root.crt. Serve it and check a trust store \
            against it:
              kkpush mock serve --cert DIR/server.crt --key DIR/server.key
              kkpush tls check 127.0.0.1:2197 --ca-file DIR/root.crt
            """)

    @Option(name: .customLong("host"), help: "A DNS name for the certificate (repeatable).")
    var hosts: [String] = []
    @Option(name: .customLong("ip"), help: "An IPv4 or IPv6 address for the certificate (repeatable).")
    var addresses: [String] = []
    @Option(help: "Folder to write server.crt and server.key into (created if missing).")
    var out = "mock-certs"
    @Option(help: "The folder with the CA's ca.crt and ca.key (default: the Certificates folder kkpush finds).")
    var certs: String?
    @Option(parsing: .unconditional, help: "Days the certificate is valid (1 to 825).")
    var days = 365
    @Option(
        help:
            "Make a stand-in chain with a real root's name instead of issuing from the test CA: usertrust (Apple's APNs chain)."
    )
    var chain: String?
    @Flag(help: "Leave localhost, 127.0.0.1 and ::1 out of the certificate.")
    var noLoopback = false
    @Flag(help: "Replace server.crt and server.key if --out already has them.")
    var force = false
    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if let chain, StandInChain.shapes[chain] == nil {
            throw ValidationError(
                "--chain '\(chain)' is not a chain kkpush makes: \(StandInChain.shapes.keys.sorted().joined(separator: ", "))."
            )
        }
        if chain != nil, noLoopback, hosts.isEmpty, addresses.isEmpty {
            throw ValidationError("Give at least one --host NAME or --ip ADDRESS for the certificate.")
        }
        if chain == nil, hosts.isEmpty, addresses.isEmpty {
            throw ValidationError("Give at least one --host NAME or --ip ADDRESS for the certificate.")
        }
        // The library's rules, in the command line's words (the flags).
        for host in hosts {
            switch ServerCertificateIssuer.hostNameProblem(host) {
            case nil: break
            case .ipAddress?:
                throw ValidationError(
                    "--host '\(host)' is an IP address: give it with --ip, so it goes in as an IP entry.")
            case let problem?:
                throw ValidationError(
                    "--host '\(host)' \(problem). Give a DNS name such as mock.example.test (letters, digits, '-' and '.'), and addresses with --ip."
                )
            }
        }
        for address in addresses where (try? ServerCertificateIssuer.checkedAddress(address)) == nil {
            throw ValidationError(
                "--ip '\(address)' is not an IPv4 or IPv6 address. Give an address such as 10.0.0.2 or fd00::2; give host names with --host."
            )
        }
        try NumericFlags.integer(days, flag: "--days", in: ServerCertificateIssuer.dayRange)
    }

    func run() async throws {
        let out = OutputFolder(out, label: "--out", forceLabel: "--force")
        guard let chain, let shape = StandInChain.shapes[chain] else {
            let report = try await reportingErrors {
                try MockCertificateReport.issue(
                    hostNames: hosts, addresses: addresses, loopback: !noLoopback, days: days, caFolder: certs,
                    caFolderLabel: "--certs", out: out, replace: force)
            }
            Output.printReport(report, json: json)
            return
        }
        let report = try await reportingErrors {
            let (names, ips) = ServerCertificateIssuer.subjectNames(
                hostNames: hosts, addresses: addresses, loopback: !noLoopback)
            return try StandInChainReport.write(
                shape: shape, hostNames: names.map(ServerCertificateIssuer.checkedHostName),
                addresses: ips.map(ServerCertificateIssuer.checkedAddress), days: days, out: out, replace: force)
        }
        Output.printReport(report, json: json)
    }
}

extension MockCertificateReport: CommandReport {
    var textLines: [String] {
        let until = notAfter.formatted(.iso8601)
        let host = serveName.contains(":") ? "[\(serveName)]" : serveName
        return [
            "Issued a server certificate for \((hostNames + addresses).joined(separator: ", ")), valid until \(until), signed by \(caFile).",
            "  certificate:  \(certificate)",
            "  private key:  \(privateKey) (mode 600)",
            "Serve with it (beyond loopback the admin API needs a token):",
            "  kkpush mock serve --host 0.0.0.0 --cert \(certificate) --key \(privateKey) --admin-token \"$KKPUSH_ADMIN_TOKEN\"",
            "Senders trust \(caFile):",
            "  kkpush send --url https://\(host):2197 --ca-file \(caFile) ...",
            "  curl --cacert \(caFile) https://\(host):2197/3/device/TOKEN ...",
        ]
    }
}

extension StandInChainReport: CommandReport {
    var textLines: [String] {
        ["Made a stand-in \(chain) chain (keys made here, not the real ones):"]
            + certificates.reversed().map {
                "  \($0.displayName) (\($0.keyType) \($0.keyBits)), issued by \($0.issuerCommonName ?? $0.issuer)"
            } + [
                "  chain served:  \(certificateChain) (leaf, then intermediate)",
                "  private key:   \(privateKey) (mode 600)",
                "  leaf only:     \(leaf)",
                "  intermediate:  \(intermediate)",
                "  root:          \(root)",
                "Serve it, and check a trust store against it:",
                "  kkpush mock serve --cert \(certificateChain) --key \(privateKey) --ca \(root)",
                "  kkpush tls check 127.0.0.1:2197 --ca-file \(root)",
            ]
    }
}
