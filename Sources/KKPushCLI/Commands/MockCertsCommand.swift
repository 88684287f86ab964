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
        if let chain, let shape = StandInChain.shapes[chain] {
            try await reportingErrors { try makeStandIn(shape) }
            return
        }
        try await reportingErrors {
            let folder = try certs ?? caFolder()
            let caCertificate = folder + "/ca.crt"
            let caKey = folder + "/ca.key"
            let certificatePEM = try InputFile.readText(
                caCertificate, what: "CA certificate", label: "--certs", maximumSize: 1 << 20)
            let keyPEM = try InputFile.readText(caKey, what: "CA key", label: "--certs", maximumSize: 1 << 20)
            let certificatePath = out + "/server.crt"
            let keyPath = out + "/server.key"
            try prepareOutput(certificatePath, keyPath)
            let (names, ips) = namesWithLoopback()
            let issued = try ServerCertificateIssuer.issue(
                hostNames: names, addresses: ips, days: days, caCertificatePEM: certificatePEM, caKeyPEM: keyPEM)
            try write(issued.privateKeyPEM, to: keyPath, mode: 0o600)
            try write(issued.certificatePEM, to: certificatePath, mode: 0o644)
            report(issued, certificate: certificatePath, key: keyPath, ca: caCertificate)
        }
    }

    /// The names and addresses for the certificate: those given, then (unless `--no-loopback`) localhost, 127.0.0.1
    /// and ::1 where missing.
    private func namesWithLoopback() -> (names: [String], addresses: [String]) {
        var names = hosts
        var ips = addresses
        if !noLoopback {
            if !names.contains(where: { $0.lowercased() == "localhost" }) { names.append("localhost") }
            for loopback in ["127.0.0.1", "::1"]
            where !ips.compactMap({ try? ServerCertificateIssuer.checkedAddress($0) }).contains(loopback) {
                ips.append(loopback)
            }
        }
        return (names, ips)
    }

    /// `--chain`: a stand-in chain of `shape` written into `--out`.
    private func makeStandIn(_ shape: StandInChain.Shape) throws {
        let (names, ips) = namesWithLoopback()
        let checkedNames = try names.map(ServerCertificateIssuer.checkedHostName)
        let checkedAddresses = try ips.map(ServerCertificateIssuer.checkedAddress)
        let files = ["server.crt", "server.key", "leaf.crt", "intermediate.crt", "root.crt"].map { out + "/" + $0 }
        try prepareOutput(files[0], files[1], also: Array(files.dropFirst(2)))
        let made = try StandInChain.make(shape: shape, hostNames: checkedNames, addresses: checkedAddresses, days: days)
        try write(made.leafKeyPEM, to: files[1], mode: 0o600)
        try write(made.chainPEM, to: files[0], mode: 0o644)
        try write(made.leafPEM, to: files[2], mode: 0o644)
        try write(made.intermediatePEM, to: files[3], mode: 0o644)
        try write(made.rootPEM, to: files[4], mode: 0o644)
        if json {
            Output.printJSON([
                "chain": .string(shape.name), "certificate_chain": .string(files[0]), "private_key": .string(files[1]),
                "leaf": .string(files[2]), "intermediate": .string(files[3]), "root": .string(files[4]),
                "host_names": .array(checkedNames.map(JSONValue.string)),
                "addresses": .array(checkedAddresses.map(JSONValue.string)),
                "certificates": .array(made.certificates.map(TLSCheckCommand.json)),
            ])
            return
        }
        print("Made a stand-in \(shape.name) chain (keys made here, not the real ones):")
        for certificate in made.certificates.reversed() {
            print(
                "  \(certificate.displayName) (\(certificate.keyType) \(certificate.keyBits)), issued by \(certificate.issuerCommonName ?? certificate.issuer)"
            )
        }
        print("  chain served:  \(files[0]) (leaf, then intermediate)")
        print("  private key:   \(files[1]) (mode 600)")
        print("  leaf only:     \(files[2])")
        print("  intermediate:  \(files[3])")
        print("  root:          \(files[4])")
        print("Serve it, and check a trust store against it:")
        print("  kkpush mock serve --cert \(files[0]) --key \(files[1]) --ca \(files[4])")
        print("  kkpush tls check 127.0.0.1:2197 --ca-file \(files[4])")
    }

    /// The Certificates folder kkpush uses, or an error saying how to name one.
    private func caFolder() throws -> String {
        guard let found = MockServerConfiguration.findCertificatesDirectory() else {
            throw KKPushError(
                code: .fileMissing, message: "No Certificates folder with the test CA was found.",
                fix: "Give --certs DIR (a folder with ca.crt and ca.key), or run from the kkpush checkout.")
        }
        return found
    }

    /// Creates `--out` if missing, and refuses to replace existing files without `--force`.
    private func prepareOutput(_ certificatePath: String, _ keyPath: String, also: [String] = []) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw KKPushError(
                    code: .outputIsFile, message: "--out \(out) is a file, not a folder.",
                    fix: "Give a folder for server.crt and server.key (it is created if missing).")
            }
        } else {
            try InputFile.checkWritable(out, what: "certificate folder", label: "--out")
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
            } catch {
                throw KKPushError(
                    code: .outputNotWritable,
                    message: "--out \(out) could not be created (\(error.localizedDescription)).",
                    fix: "Give a folder this user can create.")
            }
        }
        for path in [certificatePath, keyPath] + also where !force && FileManager.default.fileExists(atPath: path) {
            throw KKPushError(
                code: .outputExists, message: "\(path) exists; nothing was written.",
                fix: "Give --force to replace it, or another --out folder.")
        }
        try InputFile.checkWritable(certificatePath, what: "certificate", label: "--out")
    }

    /// Writes `text` to `path` with `mode`, atomically.
    private func write(_ text: String, to path: String, mode: mode_t) throws {
        do {
            try AtomicFile.write(Array(text.utf8), to: path, mode: mode)
        } catch {
            throw KKPushError(
                code: .outputNotWritable, message: "\(path) could not be written.",
                fix: "Check the folder's permissions and free space.")
        }
    }

    private func report(_ issued: ServerCertificateIssuer.Issued, certificate: String, key: String, ca: String) {
        let until = ISO8601DateFormatter().string(from: issued.notAfter)
        if json {
            Output.printJSON([
                "certificate": .string(certificate), "private_key": .string(key), "ca_file": .string(ca),
                "host_names": .array(issued.hostNames.map(JSONValue.string)),
                "addresses": .array(issued.addresses.map(JSONValue.string)), "serial": .string(issued.serial),
                "not_after": .string(until),
            ])
            return
        }
        let names = (issued.hostNames + issued.addresses).joined(separator: ", ")
        print("Issued a server certificate for \(names), valid until \(until), signed by \(ca).")
        print("  certificate:  \(certificate)")
        print("  private key:  \(key) (mode 600)")
        let name = hosts.first ?? addresses.first ?? "localhost"
        let host = name.contains(":") ? "[\(name)]" : name
        print("Serve with it (beyond loopback the admin API needs a token):")
        print(
            "  kkpush mock serve --host 0.0.0.0 --cert \(certificate) --key \(key) --admin-token \"$KKPUSH_ADMIN_TOKEN\""
        )
        print("Senders trust \(ca):")
        print("  kkpush send --url https://\(host):2197 --ca-file \(ca) ...")
        print("  curl --cacert \(ca) https://\(host):2197/3/device/TOKEN ...")
    }
}
