import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem

/// Where `--probe` sends (`diagnose --probe`, `audit --probe`): the two endpoints, their CA, Apple's port, a
/// proxy and how long to wait for each answer.
struct ProbeEndpointOptions: ParsableArguments {
    @Option(name: .long, help: "The sandbox endpoint for --probe (default Apple's), e.g. https://127.0.0.1:2197.")
    var sandboxUrl: String?

    @Option(name: .long, help: "The production endpoint for --probe (default Apple's).")
    var productionUrl: String?

    @Option(name: .long, help: "A CA file to trust for --sandbox-url/--production-url.")
    var caFile: String?

    @Option(name: .long, parsing: .unconditional, help: "Apple's port for --probe: 443 (the default) or 2197.")
    var port: Int?

    @Option(name: .long, help: ArgumentHelp("For --probe: " + ProxyHelp.text))
    var proxy: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "Seconds the probe waits for each answer (0.001 to 120; default 10).")
    var timeout: Double?

    /// The seconds `--timeout` accepts.
    static let timeoutRange: ClosedRange<Double> = 0.001...120

    /// The flags given, by name (for "only with --probe").
    var given: [String] {
        [
            ("--sandbox-url", sandboxUrl != nil), ("--production-url", productionUrl != nil),
            ("--ca-file", caFile != nil), ("--port", port != nil), ("--proxy", proxy != nil),
            ("--timeout", timeout != nil),
        ].filter(\.1).map(\.0)
    }

    /// The checks of the flags alone: the URLs parse, --ca-file goes with a URL, --port with Apple's hosts.
    /// `standInGiven`: another stand-in URL the command has (diagnose's channel-management URLs), which
    /// `--ca-file` serves too.
    func check(standInGiven: Bool = false) throws {
        try NumericFlags.seconds(timeout, flag: "--timeout", in: Self.timeoutRange)
        for (flag, url) in [("--sandbox-url", sandboxUrl), ("--production-url", productionUrl)] {
            guard let url else { continue }
            do { _ = try APNsEndpoint.parse(url: url) } catch let e as KKPushError {
                throw ValidationError("\(flag): \(e.message)\(e.fix.map { " \($0)" } ?? "")")
            }
        }
        if caFile != nil, sandboxUrl == nil, productionUrl == nil, !standInGiven {
            throw ValidationError(
                "--ca-file is the CA of a stand-in given with --sandbox-url or --production-url; Apple's hosts use the system's CAs."
            )
        }
        if port != nil, sandboxUrl != nil, productionUrl != nil {
            throw ValidationError(
                "--port picks Apple's port; with both --sandbox-url and --production-url it does nothing: put the port in the URLs."
            )
        }
        if let port, port != 443 && port != 2197 {
            throw ValidationError("--port must be 443 or 2197 (Apple's two APNs ports), not \(port).")
        }
    }

    /// The two endpoints (the CA file read first: an unreadable one is an input error).
    func endpoints() throws -> (sandbox: APNsEndpoint, production: APNsEndpoint) {
        if let caFile { _ = try InputFile.read(caFile, what: "CA file", label: "--ca-file", maximumSize: 1 << 20) }
        return try parsedEndpoints()
    }

    /// The two endpoints, the CA file not read (for a caller that reads it when it sends).
    func parsedEndpoints() throws -> (sandbox: APNsEndpoint, production: APNsEndpoint) {
        let sandbox =
            try sandboxUrl.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .sandbox) }
            ?? .apple(.sandbox, port: port ?? 443)
        let production =
            try productionUrl.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .production) }
            ?? .apple(.production, port: port ?? 443)
        return (sandbox, production)
    }

    /// `--timeout` (default 10 s) as a duration.
    func wait() throws -> Duration {
        let seconds = timeout ?? 10
        guard let wait = InputNumbers.duration(seconds: seconds, in: Self.timeoutRange) else {
            throw KKPushError(
                code: .diagnoseTimeoutRange, message: "--timeout \(InputNumbers.text(seconds)) is out of range.",
                fix: "Give a number of seconds from \(InputNumbers.describe(Self.timeoutRange)).")
        }
        return wait
    }
}

/// A client certificate for `--probe` (`diagnose`, `audit`): `--cert`, its password, its PEM key.
struct ProbeCertificateOptions: ParsableArguments {
    @Option(name: .long, help: "A client certificate: .p12, or PEM with --cert-key.")
    var cert: String?

    @Option(name: .long, help: "The .p12's password; prefer --cert-password-file or $APNS_CERT_PASSWORD.")
    var certPassword: String?

    @Option(name: .long, help: "A file holding the .p12's password ('-' for stdin).")
    var certPasswordFile: String?

    @Option(name: .long, help: "The PEM private key for a PEM --cert.")
    var certKey: String?

    /// The checks of the flags alone.
    func check() throws {
        try TextFlags.nonEmpty([
            ("--cert", cert), ("--cert-password-file", certPasswordFile), ("--cert-key", certKey),
        ])
        if certKey != nil, cert == nil {
            throw ValidationError("--cert-key is the private key of a PEM --cert: give --cert too.")
        }
        if certPassword != nil || certPasswordFile != nil, cert == nil {
            throw ValidationError("--cert-password and --cert-password-file are for --cert: give --cert too.")
        }
        if certPassword != nil, certPasswordFile != nil {
            throw ValidationError("Give --cert-password or --cert-password-file, not both.")
        }
    }
}
