import ArgumentParser
import Dispatch
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushMock
import KKPushSystem
import Logging

/// `kkpush mock`: the mock APNs server.
struct MockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock",
        abstract: "A mock APNs server: HTTP/2 over TLS, answers like Apple's, with fault injection.",
        subcommands: [MockServeCommand.self, MockCertsCommand.self]
    )
}

/// `kkpush mock serve`: runs the mock until SIGINT or SIGTERM.
struct MockServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the mock APNs server (sandbox and production listeners, plus an admin API) until interrupted.",
        discussion: """
            Defaults: sandbox on 127.0.0.1:2197, production on 127.0.0.1:2198, admin API on 127.0.0.1:2199 \
            (0 picks a free port). The server certificate is Certificates/server.crt and server.key, found from \
            the working directory or the executable (or $KKPUSH_CERTIFICATES); clients trust Certificates/ca.crt. \
            Client certificates (mTLS) are accepted if they chain to Certificates/wwdr.crt. The keys of \
            Certificates/keys.json are registered unless --no-default-keys.

            Extra keys: repeat --key-file P8 --key-id KID --team-id TEAM, in the same order; \
            --key-environment (sandbox, production or both) is given once per key or not at all.

            Limits: at most --max-connections client connections at once (both listeners; beyond it the oldest \
            connection not yet speaking HTTP/2, else not yet authenticated, makes room, else the new one is closed \
            at accept); a connection must send its first request within --first-request-timeout seconds of its \
            TLS handshake (which has --handshake-timeout), and a request body must end within --body-timeout seconds (else RST_STREAM \
            REFUSED_STREAM); a stream past max_concurrent_streams gets RST_STREAM REFUSED_STREAM; a body over \
            5120 bytes is answered 413 PayloadTooLarge at once.

            Connections: resets (RST_STREAM) of finished streams are ignored; more than reset_limit (200) resets \
            of pending streams in reset_window_s (30) get GOAWAY ENHANCE_YOUR_CALM. Every GOAWAY names the highest \
            stream the mock judged; delayed answers up to it are still sent (for at most goaway_grace_s, 5). The \
            admin API's POST /restart restarts both listeners on the same ports, keeping all state. GET /metrics \
            on the admin port serves Prometheus metrics (requests by environment, status and reason; latency; \
            open connections and streams; faults fired; provider tokens).

            Admin API: loopback only unless --admin-host says otherwise. An admin token (--admin-token or \
            KKPUSH_ADMIN_TOKEN; requests send Authorization: Bearer <token>) is required whenever the admin API \
            or the APNs listeners (--host) are bound beyond loopback. For a sender elsewhere, `kkpush mock certs` \
            issues a certificate for the name it connects to. Requests with \
            an Origin header (from a browser) are refused with 403, except from the admin API's own web console. \
            POST /keys reads a "file" only from inside the certificates folder.

            Web console: open the admin URL (GET /) in a browser: devices, the live delivery log, faults, the \
            clock, and a test-push form sent by kkpush's own client to this mock (signed with the first .p8 key \
            it accepts). With an admin token the page asks for it and keeps it in the tab's sessionStorage.

            Broadcast: two more listeners serve Apple's channel-management API, one per environment \
            (--sandbox-channel-port, --production-channel-port; the banner's channels: line); broadcasts go to \
            POST /4/broadcasts/apps/<bundleId> on the APNs listeners. The admin API's GET /channels lists \
            channels and subscribers, POST /channels/<id>/subscribers {"token"} subscribes a device.

            Logs: GET /log keeps the newest --log-capacity deliveries (100000), GET /rejections the newest \
            --rejection-capacity rejected requests (1000); each answers a page (limit, 1000 by default, at most \
            100000) with total, truncated and the cursors next_after and next_before to page through with after= \
            and before= (sequence numbers), and says how many entries were dropped (dropped, missed). For a run of \
            200000 pushes, give --log-capacity 200000 or more.

            --config FILE reads JSON: {"sandbox_port", "production_port", "admin_port", "admin_host", "strict", \
            "max_concurrent_streams", "one_stream_until_auth", "idle_timeout_s", "first_request_timeout_s", \
            "body_timeout_s", "max_connections", "goaway_grace_s", "reset_limit", "reset_window_s", \
            "delivery_log_capacity", "rejection_log_capacity", "sandbox_channel_port", "production_channel_port", "max_channels_per_app", \
            "certificates_directory", "keys": [{"key_id","team_id","file","environments"}], \
            "devices": [{"token","environment","topic","unregistered_at_ms"}], \
            "faults": [{"kind":"respond|delay|goaway|close|reset|stall|blackhole","status","reason","delay_ms","after_streams","idle_ms",\
            "token"|"topic","count","skip"}]}. Flags override the file. Unknown keys, wrong types and invalid values \
            are refused, naming the field (e.g. devices[1].token) and the nearest known key.

            Certificates: --cert and --key name the chain (the leaf, then its intermediates) and key every listener \
            serves; --production-cert and --production-key serve the production listeners under another, e.g. a \
            stand-in of Apple's USERTrust chain from `kkpush mock certs --chain usertrust` beside the test CA's \
            (kkpush tls check shows what each serves).

            Exit status: 0 after a clean stop on SIGINT/SIGTERM; 69 if the server cannot start (a port in use: \
            mock-bind); 2 if the config file or a key file cannot be used; 64 for bad flags.
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"
    @Option(parsing: .unconditional, help: "Port of the sandbox listener (0: any free port).")
    var sandboxPort: Int?
    @Option(parsing: .unconditional, help: "Port of the production listener (0: any free port).")
    var productionPort: Int?
    @Option(parsing: .unconditional, help: "Port of the admin API on 127.0.0.1 (0: any free port).")
    var adminPort: Int?
    @Option(
        parsing: .unconditional,
        help: "Port of the sandbox channel-management listener (Apple's is 2195; default 0: any free port).")
    var sandboxChannelPort: Int?
    @Option(
        parsing: .unconditional,
        help: "Port of the production channel-management listener (Apple's is 2196; default 0: any free port).")
    var productionChannelPort: Int?
    @Option(
        parsing: .unconditional,
        help: "Broadcast channels per app and environment before CannotCreateChannelConfig (default 10000).")
    var maxChannelsPerApp: Int?
    @Option(help: "Address of the admin API (default 127.0.0.1; any other needs an admin token).")
    var adminHost: String?
    @Option(
        help:
            "Require 'Authorization: Bearer <token>' on the admin API (at least 16 characters; default $KKPUSH_ADMIN_TOKEN; prefer it or --admin-token-file)."
    )
    var adminToken: String?
    @Option(name: .customLong("admin-token-file"), help: "A file holding the admin token ('-' for stdin).")
    var adminTokenFile: String?
    @Flag(help: "Run without the admin API.")
    var noAdmin = false

    @Option(help: "Folder with server.crt, server.key, ca.crt, wwdr.crt and keys.json.")
    var certificates: String?
    @Option(name: .customLong("cert"), help: "Server certificate (PEM).")
    var certFile: String?
    @Option(name: .customLong("key"), help: "Server certificate's private key (PEM).")
    var keyFile: String?
    @Option(
        name: .customLong("production-cert"),
        help: "Serve the production listeners under this chain instead (PEM: the leaf, then its intermediates).")
    var productionCertFile: String?
    @Option(name: .customLong("production-key"), help: "The private key of --production-cert (PEM).")
    var productionKeyFile: String?
    @Option(name: .customLong("ca"), help: "The CA clients should trust (reported; default Certificates/ca.crt).")
    var caFile: String?
    @Option(
        name: .customLong("client-ca"),
        help: "The CA client certificates must chain to (default Certificates/wwdr.crt).")
    var clientCAFile: String?

    @Option(name: .customLong("key-file"), help: "A provider key (.p8 or public key PEM) to accept; repeatable.")
    var providerKeyFiles: [String] = []
    @Option(name: .customLong("key-id"), help: "The key id of each --key-file.")
    var providerKeyIDs: [String] = []
    @Option(name: .customLong("team-id"), help: "The team id of each --key-file.")
    var providerTeamIDs: [String] = []
    @Option(
        name: .customLong("key-environment"),
        help: "The environment each --key-file is limited to (sandbox, production, both).")
    var providerKeyEnvironments: [String] = []
    @Flag(help: "Do not register the keys of Certificates/keys.json.")
    var noDefaultKeys = false

    @Flag(help: "Answer BadDeviceToken for well-formed tokens the mock does not know.")
    var strict = false
    @Option(parsing: .unconditional, help: "SETTINGS_MAX_CONCURRENT_STREAMS, 1 to 100000 (default 1000).")
    var maxConcurrentStreams: Int?
    @Flag(help: "Allow 1 stream on token connections until the first valid provider token, as APNs does.")
    var oneStreamUntilAuth = false
    @Option(
        parsing: .unconditional,
        help: "Close connections idle this many seconds after their TLS handshake, 0.001 to 31536000 (default 3600).")
    var idleTimeout: Double?
    @Option(
        parsing: .unconditional,
        help: "Close a connection whose TLS handshake has not finished within this many seconds (default 10).")
    var handshakeTimeout: Double?
    @Option(
        parsing: .unconditional,
        help: "Close a connection that sends no request within this many seconds of its TLS handshake (default 10).")
    var firstRequestTimeout: Double?
    @Option(
        parsing: .unconditional,
        help: "Reset a stream whose request body does not end within this many seconds (default 30).")
    var bodyTimeout: Double?
    @Option(
        parsing: .unconditional,
        help:
            "Client connections open at once, both listeners together (default: sized from the open-file limit); at the cap the oldest half-open, then unauthenticated, connection makes room."
    )
    var maxConnections: Int?
    @Option(
        parsing: .unconditional,
        help: "How many accepted notifications the delivery log keeps, 1 to 10000000 (default 100000).")
    var logCapacity: Int?
    @Option(
        parsing: .unconditional,
        help: "How many rejected requests GET /rejections keeps, 1 to 10000000 (default 1000).")
    var rejectionCapacity: Int?
    @Option(help: "A JSON config file (see above).")
    var config: String?
    @Option(
        name: .customLong("saved-pushes"),
        help: "Keep the web console's saved pushes in this JSON file (read at start, written on every change).")
    var savedPushes: String?
    @Option(
        name: .customLong("activity-attributes"),
        help: ArgumentHelp(
            "The app's ActivityAttributes description (payload activity-attributes): Live Activity deliveries that would not decode get warnings in the log.",
            valueName: "file"))
    var activityAttributes: String?

    @Flag(help: "Print where it listens as one JSON line.")
    var json = false
    @Flag(name: .shortAndLong, help: "Log connections and requests to stderr.")
    var verbose = false

    func validate() throws {
        let n = providerKeyFiles.count
        guard providerKeyIDs.count == n, providerTeamIDs.count == n else {
            throw ValidationError(
                "Give --key-file, --key-id and --team-id the same number of times (got \(n), \(providerKeyIDs.count), \(providerTeamIDs.count))."
            )
        }
        guard providerKeyEnvironments.isEmpty || providerKeyEnvironments.count == n else {
            throw ValidationError("Give --key-environment once per --key-file, or not at all.")
        }
        for e in providerKeyEnvironments where e.lowercased() != "both" && APNsEnvironment(lenient: e) == nil {
            throw ValidationError("--key-environment '\(e)' is not sandbox, production or both.")
        }
        for (flag, values) in [("--key-id", providerKeyIDs), ("--team-id", providerTeamIDs)] {
            for value in values where value.isEmpty || value.contains(where: \.isWhitespace) {
                throw ValidationError("\(flag) '\(value)' is empty or has spaces: give the 10-character id.")
            }
        }
        for (name, port) in [
            ("--sandbox-port", sandboxPort), ("--production-port", productionPort), ("--admin-port", adminPort),
            ("--sandbox-channel-port", sandboxChannelPort), ("--production-channel-port", productionChannelPort),
        ] {
            if let port, !(0...65535).contains(port) {
                throw ValidationError("\(name) \(port) is not a port (0-65535).")
            }
        }
        if (certFile == nil) != (keyFile == nil) {
            throw ValidationError("Give --cert and --key together.")
        }
        if (productionCertFile == nil) != (productionKeyFile == nil) {
            throw ValidationError("Give --production-cert and --production-key together.")
        }
        try NumericFlags.seconds(idleTimeout, flag: "--idle-timeout", in: MockServerConfiguration.timeoutRange)
        try NumericFlags.seconds(
            handshakeTimeout, flag: "--handshake-timeout", in: MockServerConfiguration.timeoutRange)
        try NumericFlags.seconds(firstRequestTimeout, flag: "--first-request-timeout", in: Self.requestTimeoutRange)
        try NumericFlags.seconds(bodyTimeout, flag: "--body-timeout", in: Self.requestTimeoutRange)
        try NumericFlags.integer(maxConnections, flag: "--max-connections", in: 1...100_000)
        try NumericFlags.integer(maxChannelsPerApp, flag: "--max-channels-per-app", in: 1...1_000_000)
        if adminToken != nil, adminTokenFile != nil {
            throw ValidationError("Give --admin-token or --admin-token-file, not both.")
        }
        if let adminToken, !MockServerConfiguration.isUsableAdminToken(adminToken) {
            throw ValidationError(
                "--admin-token must be at least 16 printable ASCII characters without spaces (e.g. $(openssl rand -hex 16))."
            )
        }
        if host.trimmingWhitespace().isEmpty {
            throw ValidationError("--host is empty: give an address, e.g. 127.0.0.1.")
        }
        if let adminHost, adminHost.trimmingWhitespace().isEmpty {
            throw ValidationError("--admin-host is empty: give an address, e.g. 127.0.0.1.")
        }
        try NumericFlags.integer(maxConcurrentStreams, flag: "--max-concurrent-streams", in: 1...100_000)
        try NumericFlags.integer(logCapacity, flag: "--log-capacity", in: 1...10_000_000)
        try NumericFlags.integer(rejectionCapacity, flag: "--rejection-capacity", in: 1...10_000_000)
    }

    /// The seconds `--first-request-timeout` and `--body-timeout` accept.
    static let requestTimeoutRange: ClosedRange<Double> = 0.001...3600

    /// The mock's inputs as this command names them: the library's API names (`(certificateFile)`) → the flags.
    static let flagWords = FlagWords(flags: [
        "host": "--host", "adminHost": "--admin-host", "certificatesDirectory": "--certificates",
        "certificateFile": "--cert", "privateKeyFile": "--key", "productionCertificateFile": "--production-cert",
        "productionPrivateKeyFile": "--production-key", "caFile": "--ca", "clientCAFile": "--client-ca",
        "keyFiles": "--key-file", "savedPushesFile": "--saved-pushes", "configFile": "--config",
    ])

    /// The files the flags name, for KKPushMock to check (exit 2, naming the flag) before the server starts.
    var files: MockServerFiles {
        var files = MockServerFiles()
        files.configFile = config
        files.certificatesDirectory = certificates
        files.certificateFile = certFile
        files.privateKeyFile = keyFile
        files.productionCertificateFile = productionCertFile
        files.productionPrivateKeyFile = productionKeyFile
        files.caFile = caFile
        files.clientCAFile = clientCAFile
        files.savedPushesFile = savedPushes
        files.keyFiles = providerKeyFiles.indices.map { i in
            let environment =
                i < providerKeyEnvironments.count ? APNsEnvironment(lenient: providerKeyEnvironments[i]) : nil
            return MockServerFiles.KeyFile(
                path: providerKeyFiles[i], keyID: providerKeyIDs[i], teamID: providerTeamIDs[i],
                environments: environment.map { [$0] } ?? [])
        }
        // The flag itself (`--cert`), not in parentheses: the message reads "The server certificate --cert FILE …".
        files.label = { Self.flagWords.flags[$0] ?? "(\($0))" }
        return files
    }

    func makeConfiguration() throws -> MockServerConfiguration {
        var c = MockServerConfiguration()
        c.sandboxPort = 2197
        c.productionPort = 2198
        c.adminPort = 2199
        // The files first (the config file's settings, then the files the flags name), then the flags' values.
        try files.apply(to: &c)
        if let activityAttributes {
            c.activityAttributes = try PayloadActivityAttributesCommand.load(activityAttributes)
        }
        c.host = host
        if let sandboxPort { c.sandboxPort = sandboxPort }
        if let productionPort { c.productionPort = productionPort }
        if let adminPort { c.adminPort = adminPort }
        if let sandboxChannelPort { c.sandboxChannelPort = sandboxChannelPort }
        if let productionChannelPort { c.productionChannelPort = productionChannelPort }
        if let maxChannelsPerApp { c.maxChannelsPerApp = maxChannelsPerApp }
        if let adminHost { c.adminHost = adminHost }
        // The flag, then its file, then KKPUSH_ADMIN_TOKEN (the secrets' precedence); checked wherever it came from.
        if let token = try Secrets.resolve(Secrets.adminToken, flag: adminToken, file: adminTokenFile), !token.isEmpty {
            try BackendServeCommand.checkAdminToken(
                token,
                origin: adminToken != nil
                    ? "--admin-token" : adminTokenFile.map { "--admin-token-file \($0)" } ?? "KKPUSH_ADMIN_TOKEN")
            c.adminToken = token
        }
        if noAdmin { c.adminPort = nil }
        try Self.checkDistinctPorts([
            ("--sandbox-port", c.sandboxPort, sandboxPort != nil),
            ("--production-port", c.productionPort, productionPort != nil),
            ("--admin-port", c.adminPort, adminPort != nil),
            ("--sandbox-channel-port", c.sandboxChannelPort, sandboxChannelPort != nil),
            ("--production-channel-port", c.productionChannelPort, productionChannelPort != nil),
        ])
        c.registerDefaultKeys = !noDefaultKeys
        if strict { c.strictDeviceTokens = true }
        if let maxConcurrentStreams { c.maxConcurrentStreams = maxConcurrentStreams }
        if oneStreamUntilAuth { c.oneStreamUntilAuthenticated = true }
        if let idleTimeout { c.idleTimeout = idleTimeout }
        if let handshakeTimeout { c.handshakeTimeout = handshakeTimeout }
        if let firstRequestTimeout { c.firstRequestTimeout = firstRequestTimeout }
        if let bodyTimeout { c.streamBodyTimeout = bodyTimeout }
        if let maxConnections { c.maxConnections = maxConnections }
        if let logCapacity { c.deliveryLogCapacity = logCapacity }
        if let rejectionCapacity { c.rejectionLogCapacity = rejectionCapacity }
        if verbose {
            var logger = Logger(label: "kkpush.mock", factory: { StreamLogHandler.standardError(label: $0) })
            logger.logLevel = .debug
            c.logger = logger
        }
        return c
    }

    /// Two listeners on one port: the second bind would fail with "in use" by the mock itself. `ports`: each
    /// listener's flag, its port (nil when off; 0 picks a free one, so never clashes) and whether the flag gave it.
    static func checkDistinctPorts(_ ports: [(flag: String, port: Int?, given: Bool)]) throws {
        let named = ports.compactMap { entry in entry.port.flatMap { $0 == 0 ? nil : (entry.flag, $0, entry.given) } }
        for (i, (flag, port, given)) in named.enumerated() {
            guard let other = named[(i + 1)...].first(where: { $0.1 == port }) else { continue }
            func shown(_ flag: String, _ given: Bool) -> String { given ? flag : "\(flag) (by default or --config)" }
            throw CLIError.usage(
                .mockPortsClash,
                "\(shown(flag, given)) and \(shown(other.0, other.2)) are both \(port): each of the mock's listeners needs a port of its own.",
                fix: "Give them different ports, or 0 to pick free ones (the banner and --json say which).")
        }
    }

    /// The mock library's errors name its configuration (`adminToken`, `certificateFile`); a user of `mock serve`
    /// gives flags, so the fix of those names the flags instead.
    static func inFlagWords(_ error: KKPushError) -> KKPushError {
        var error = error
        switch error.code {
        case .mockAdminTokenRequired:
            error.fix =
                "Give --admin-token (or set KKPUSH_ADMIN_TOKEN) whenever the admin API or a listener is bound beyond loopback, keep them on 127.0.0.1, or run with --no-admin."
        case .mockCertificateMissing:
            error.fix =
                "Run from the kkpush checkout (it has Certificates/), set KKPUSH_CERTIFICATES, or pass --cert and --key."
        default: break
        }
        return flagWords.apply(error)
    }

    func run() async throws {
        // Caught from before the server starts: a SIGTERM right after the "listening" line stops it cleanly (exit 0).
        let signals = TerminationSignals()
        defer { signals.cancel() }
        // A config file or key file that cannot be used exits 2, --json errors go to stdout; a server that
        // cannot start (a port in use: mock-bind) exits 69.
        let sender = MockConsoleSender()
        let (server, configuration) = try await reportingErrors {
            () async throws -> (MockAPNsServer, MockServerConfiguration) in
            do {
                var configuration = try makeConfiguration()
                configuration.testPushSender = sender.hook
                return (try await MockAPNsServer.start(configuration: configuration), configuration)
            } catch let error as KKPushError {
                throw Self.inFlagWords(error)
            }
        }
        sender.useKeys { [weak server] in server?.keys ?? [] }
        announce(MockServerAnnouncement(server: server, configuration: configuration, listenHost: host))
        _ = await signals.wait()
        do {
            try await server.shutdown()
        } catch {
            StandardError.line("warning: shutdown: \(ErrorWords.describe(error))")
        }
        if !json { StandardError.line("mock APNs server stopped") }
    }

    /// A key's topics as the banner shows them: the bundle ids of a topic-specific key, else any.
    static func topicsText(_ key: MockKey) -> String {
        key.topics.isEmpty ? "any topic" : "topics \(key.topics.sorted().joined(separator: ", "))"
    }

    /// The banner, or with --json one compact line (a script reads the first line of the output to find the ports).
    private func announce(_ announcement: MockServerAnnouncement) {
        let text =
            json ? Output.json(encoding: announcement).description : announcement.textLines.joined(separator: "\n")
        CommandIO.current.write(bytes: Array((text + "\n").utf8))
    }
}

extension MockServerAnnouncement: CommandReport {
    /// The banner. Bound to every interface, the URLs show loopback (what a client on this machine uses) and say so.
    var textLines: [String] {
        let everywhere = ["0.0.0.0", "::", "[::]"].contains(listenHost.trimmingWhitespace())
        func listener(_ endpoint: APNsEndpoint) -> String {
            everywhere
                ? "\(endpoint.baseURL) (listening on \(listenHost) port \(endpoint.port): every interface)"
                : endpoint.baseURL
        }
        let tokenNote = adminTokenHint.map { " (token \($0))" } ?? " (no token)"
        var lines = [
            "kkpush mock APNs server",
            "  sandbox:    \(listener(sandbox))",
            "  production: \(listener(production))",
            "  channels:   sandbox \(listener(sandboxChannels)), production \(listener(productionChannels))",
            "  admin API:  \(adminURL.map { $0 + tokenNote } ?? "off")",
            "  console:    \(consoleURL.map { "\($0) (the web console: deliveries, rejections, keys, test pushes)" } ?? "off (--no-admin)")",
            "  trust CA:   \(caFile ?? "(none found; trust the server certificate itself)")",
        ]
        for k in keys {
            let envs =
                k.environments.isEmpty
                ? "sandbox+production"
                : APNsEnvironment.allCases.filter { k.environments.contains($0) }.map(\.rawValue).joined(separator: "+")
            lines.append("  key:        \(k.keyID) (team \(k.teamID), \(envs), \(MockServeCommand.topicsText(k)))")
        }
        lines.append(
            "  logs:       the newest \(deliveryLogCapacity) deliveries (--log-capacity), \(rejectionLogCapacity) rejections (--rejection-capacity)"
        )
        lines.append("  unknown tokens: \(strictDeviceTokens ? "rejected (BadDeviceToken)" : "accepted")")
        lines.append("Stop with Ctrl-C (SIGINT) or SIGTERM.")
        return lines
    }
}
