public import Foundation
public import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import Synchronization

/// A mock APNs server: HTTP/2 over TLS (ALPN `h2`), a listener per environment, answering as Apple
/// does, with simulated devices, a delivery log, fault injection and an admin HTTP API.
///
/// Scoped use (tests): ``withMockServer(configuration:isolation:_:)``. Long-running use (the CLI):
/// ``start(configuration:)`` and ``shutdown()``. See ``MockRequestProcessor`` for the validation
/// order and ``MockAdminServer`` for the admin endpoints.
public final class MockAPNsServer: Sendable {
    /// The configuration it was started with (keys and devices as given, not as changed since).
    public let configuration: MockServerConfiguration
    /// The sandbox listener: 127.0.0.1, its bound port, the CA to trust.
    public let sandboxEndpoint: APNsEndpoint
    /// The production listener: 127.0.0.1, its bound port, the CA to trust.
    public let productionEndpoint: APNsEndpoint
    /// The sandbox channel-management listener (Apple's `api-manage-broadcast.sandbox.push.apple.com:2195`).
    public let sandboxChannelEndpoint: APNsEndpoint
    /// The production channel-management listener (Apple's `api-manage-broadcast.push.apple.com:2196`).
    public let productionChannelEndpoint: APNsEndpoint
    /// The admin API's base URL, `http://127.0.0.1:<port>` (or its ``MockServerConfiguration/adminHost``), if it runs.
    public let adminURL: String?
    /// The CA certificate (PEM file) clients must trust.
    public let caFile: String?

    let state: MockState
    /// The two APNs listeners (replaced by ``restart()``) and the admin listener.
    private let listeners: Mutex<Listeners>
    let connections: ConnectionTracker
    private let logger: Logger
    /// Each environment's TLS settings (one context for both unless the production chain is another).
    private let sslContexts: [APNsEnvironment: TLSContext]
    private let restartLock = Mutex(false)
    /// The event loop group of its own that its listeners and connections run on
    /// (``MockServerConfiguration/ownEventLoopGroup``), shut down with it; nil: NIO's shared one.
    private let ownGroup: MultiThreadedEventLoopGroup?
    /// The loops its listeners and connections run on: its own group if it has one, else NIO's shared one.
    private var group: any EventLoopGroup { Self.group(own: ownGroup) }

    private static func group(own: MultiThreadedEventLoopGroup?) -> any EventLoopGroup {
        own ?? MultiThreadedEventLoopGroup.singleton
    }

    struct Listeners {
        var apns: [APNsEnvironment: any Channel]
        /// The channel-management listeners (kept across ``MockAPNsServer/restart()``).
        var management: [APNsEnvironment: any Channel] = [:]
        var admin: HTTP1Server?
        var stopped = false
    }

    private init(
        configuration: MockServerConfiguration, sandbox: APNsEndpoint, production: APNsEndpoint,
        channels: [APNsEnvironment: APNsEndpoint], adminURL: String?,
        caFile: String?, state: MockState, listeners: Listeners, connections: ConnectionTracker,
        sslContexts: [APNsEnvironment: TLSContext], ownGroup: MultiThreadedEventLoopGroup?
    ) {
        self.ownGroup = ownGroup
        self.sandboxChannelEndpoint = channels[.sandbox]!
        self.productionChannelEndpoint = channels[.production]!
        self.connections = connections
        self.configuration = configuration
        self.sandboxEndpoint = sandbox
        self.productionEndpoint = production
        self.adminURL = adminURL
        self.caFile = caFile
        self.state = state
        self.listeners = Mutex(listeners)
        self.logger = configuration.logger
        self.sslContexts = sslContexts
    }

    /// The endpoint of `environment`'s listener.
    public func endpoint(_ environment: APNsEnvironment) -> APNsEndpoint {
        environment == .sandbox ? sandboxEndpoint : productionEndpoint
    }

    /// The channel-management endpoint of `environment`.
    public func channelEndpoint(_ environment: APNsEnvironment) -> APNsEndpoint {
        environment == .sandbox ? sandboxChannelEndpoint : productionChannelEndpoint
    }

    /// The mock's current time (the configured clock, moved by ``advanceClock(by:)``).
    public var now: Date { state.clock.now() }

    // MARK: Start and stop

    /// Starts both listeners and the admin API; throws a ``KKPushError`` if a certificate, key or
    /// port is unusable.
    public static func start(configuration: MockServerConfiguration = MockServerConfiguration()) async throws
        -> MockAPNsServer
    {
        try configuration.validate()
        let logger = configuration.logger
        let dir = configuration.certificatesDirectory ?? MockServerConfiguration.findCertificatesDirectory()
        func file(_ given: String?, _ name: String) -> String? {
            given ?? dir.map { $0 + "/" + name }
        }
        guard let certFile = file(configuration.certificateFile, "server.crt"),
            let keyFile = file(configuration.privateKeyFile, "server.key")
        else {
            throw KKPushError(
                code: .mockCertificateMissing,
                message: "No server certificate: no Certificates folder was found and none was given.",
                fix:
                    "Run from a checkout of kkpush (it has Certificates/), set KKPUSH_CERTIFICATES, or set certificateFile and privateKeyFile."
            )
        }
        let caFile = file(configuration.caFile, "ca.crt").flatMap {
            FileManager.default.fileExists(atPath: $0) ? $0 : nil
        }
        var clientCA = configuration.clientCAFile
        if clientCA == nil, let dir, FileManager.default.fileExists(atPath: dir + "/wwdr.crt") {
            clientCA = dir + "/wwdr.crt"
        }

        let sslContext = try makeSSLContext(certFile: certFile, keyFile: keyFile, clientCA: clientCA)
        var sslContexts: [APNsEnvironment: TLSContext] = [.sandbox: sslContext, .production: sslContext]
        if configuration.productionCertificateFile != nil || configuration.productionPrivateKeyFile != nil {
            sslContexts[.production] = try makeSSLContext(
                certFile: configuration.productionCertificateFile ?? certFile,
                keyFile: configuration.productionPrivateKeyFile ?? keyFile, clientCA: clientCA)
        }

        let state = MockState(
            logCapacity: configuration.deliveryLogCapacity, rejectionCapacity: configuration.rejectionLogCapacity,
            strict: configuration.strictDeviceTokens,
            clock: configuration.clock, activityAttributes: configuration.activityAttributes,
            deviceRules: configuration.deviceRules)
        var keys = configuration.keys
        if configuration.registerDefaultKeys, let dir, FileManager.default.fileExists(atPath: dir + "/keys.json") {
            keys = try MockKey.loadRegistry(at: dir + "/keys.json") + keys
        }
        for key in keys { try state.register(key) }
        for device in configuration.devices { state.register(device) }
        for fault in configuration.faults { try state.add(fault) }

        let ownGroup = configuration.ownEventLoopGroup ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let group = Self.group(own: ownGroup)
        var channels: [any Channel] = []
        let connections = ConnectionTracker()
        let hooks = AdminHooks(savedPushes: try MockSavedPushes(file: configuration.savedPushesFile))
        do {
            var ports: [APNsEnvironment: Int] = [:]
            var apns: [APNsEnvironment: any Channel] = [:]
            for env in [APNsEnvironment.sandbox, .production] {
                let port = env == .sandbox ? configuration.sandboxPort : configuration.productionPort
                let channel = try await bindListener(
                    environment: env, host: configuration.host, port: port, group: group,
                    sslContext: sslContexts[env]!, state: state, configuration: configuration,
                    connections: connections)
                channels.append(channel)
                apns[env] = channel
                ports[env] = channel.localAddress?.port ?? port
            }
            var management: [APNsEnvironment: any Channel] = [:]
            var managementPorts: [APNsEnvironment: Int] = [:]
            for env in [APNsEnvironment.sandbox, .production] {
                let port = env == .sandbox ? configuration.sandboxChannelPort : configuration.productionChannelPort
                let channel = try await bindListener(
                    environment: env, host: configuration.host, port: port, group: group,
                    sslContext: sslContexts[env]!, state: state, configuration: configuration,
                    connections: connections, management: true)
                channels.append(channel)
                management[env] = channel
                managementPorts[env] = channel.localAddress?.port ?? port
            }
            var adminURL: String? = nil
            var adminServer: HTTP1Server? = nil
            if let adminPort = configuration.adminPort {
                let policy = AdminPolicy(token: configuration.adminToken, keysDirectory: dir)
                let admin = try await MockAdminServer.bind(
                    host: configuration.adminHost, port: adminPort, state: state, hooks: hooks,
                    policy: policy, logger: logger)
                channels.append(admin.channel)
                adminServer = admin
                let shown: String
                switch configuration.adminHost {
                case "0.0.0.0": shown = "127.0.0.1"
                case "::", "::1": shown = "[::1]"
                case let h where h.contains(":"): shown = "[\(h)]"
                case let h: shown = h
                }
                adminURL = "http://\(shown):\(admin.port)"
            }
            let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
            let server = MockAPNsServer(
                configuration: configuration,
                sandbox: APNsEndpoint(host: host, port: ports[.sandbox]!, caFile: caFile, environment: .sandbox),
                production: APNsEndpoint(
                    host: host, port: ports[.production]!, caFile: caFile, environment: .production),
                channels: [
                    .sandbox: APNsEndpoint(
                        host: host, port: managementPorts[.sandbox]!, caFile: caFile, environment: .sandbox),
                    .production: APNsEndpoint(
                        host: host, port: managementPorts[.production]!, caFile: caFile, environment: .production),
                ],
                adminURL: adminURL, caFile: caFile, state: state,
                listeners: Listeners(apns: apns, management: management, admin: adminServer), connections: connections,
                sslContexts: sslContexts, ownGroup: ownGroup)
            hooks.setRestart { [weak server] in
                guard let server else {
                    throw KKPushError(
                        code: .mockStopped, message: "The mock server has stopped.", fix: "Start it again.")
                }
                try await server.restart()
                return (server.sandboxEndpoint.port, server.productionEndpoint.port)
            }
            hooks.setTestPush(
                configuration.testPushSender,
                endpoints: [.sandbox: server.sandboxEndpoint, .production: server.productionEndpoint])
            logger.info(
                "mock APNs listening",
                metadata: [
                    "sandbox": "\(server.sandboxEndpoint.port)", "production": "\(server.productionEndpoint.port)",
                    "sandbox_channels": "\(server.sandboxChannelEndpoint.port)",
                    "production_channels": "\(server.productionChannelEndpoint.port)",
                    "admin": "\(adminURL ?? "-")",
                ])
            return server
        } catch {
            for c in channels { try? await c.close() }
            try? await ownGroup?.shutdownGracefully()
            throw error
        }
    }

    /// Stops listening, ends every connection gracefully (GOAWAY naming the last stream judged,
    /// delayed answers still sent, within ``MockServerConfiguration/goAwayGracePeriod``), and
    /// finishes device streams and long-polls.
    public func shutdown() async throws {
        let (channels, admin): ([any Channel], HTTP1Server?) = listeners.withLock { l in
            l.stopped = true
            return (Array(l.apns.values) + Array(l.management.values), l.admin)
        }
        for channel in channels {
            do {
                try await channel.close()
            } catch ChannelError.alreadyClosed {
            }
        }
        // The admin API stops too: its listener, its connections, its long polls.
        await admin?.stop()
        await closeConnections()
        state.finish()
        await admin?.wait()
        // Its own loops end last, after every connection on them (a second shutdown finds them ended).
        try? await ownGroup?.shutdownGracefully()
    }

    /// Restarts the server as a process restart would: stops both APNs listeners, ends every client
    /// connection gracefully (GOAWAY `{"reason":"Shutdown"}` naming the last stream judged, delayed
    /// answers still sent within ``MockServerConfiguration/goAwayGracePeriod``), then listens again on
    /// the same ports. Devices, keys, faults, the clock and the delivery log are kept; the admin API
    /// stays up. Connection attempts during the restart are refused. Throws a ``KKPushError`` if a port
    /// cannot be bound again (or if the server was shut down, or is already restarting).
    public func restart() async throws {
        let busy = restartLock.withLock { busy in
            if busy { return true }
            busy = true
            return false
        }
        if busy {
            throw KKPushError(
                code: .mockRestartBusy, message: "The mock server is already restarting.",
                fix: "Wait for the running restart to finish.")
        }
        defer { restartLock.withLock { $0 = false } }
        let old: [any Channel]? = listeners.withLock { l in l.stopped ? nil : Array(l.apns.values) }
        guard let old else {
            throw KKPushError(
                code: .mockStopped, message: "The mock server has been shut down.", fix: "Start a new one.")
        }
        logger.info("mock APNs restarting", metadata: ["connections": "\(connections.count)"])
        for channel in old {
            do {
                try await channel.close()
            } catch ChannelError.alreadyClosed {
            }
        }
        await closeConnections()
        var fresh: [APNsEnvironment: any Channel] = [:]
        do {
            for env in [APNsEnvironment.sandbox, .production] {
                let port = endpoint(env).port
                // The old listener's port can take a moment to be free again: a few bounded tries.
                var attempt = 0
                while true {
                    do {
                        fresh[env] = try await Self.bindListener(
                            environment: env, host: configuration.host, port: port,
                            group: group, sslContext: sslContexts[env]!, state: state,
                            configuration: configuration, connections: connections)
                        break
                    } catch {
                        attempt += 1
                        if attempt >= 20 { throw error }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
        } catch {
            for channel in fresh.values { try? await channel.close() }
            listeners.withLock { $0.apns = [:] }
            throw error
        }
        let stopped: Bool = listeners.withLock { l in
            if l.stopped { return true }
            l.apns = fresh
            return false
        }
        if stopped {
            for channel in fresh.values { try? await channel.close() }
            throw KKPushError(
                code: .mockStopped, message: "The mock server was shut down during the restart.",
                fix: "Start a new one.")
        }
        logger.info(
            "mock APNs restarted",
            metadata: ["sandbox": "\(sandboxEndpoint.port)", "production": "\(productionEndpoint.port)"])
    }

    /// Asks every connection to end gracefully and waits (bounded) until they have closed; closes
    /// whatever is still open after the grace period.
    private func closeConnections() async {
        let open = connections.all()
        guard !open.isEmpty else { return }
        for connection in open {
            connection.pipeline.fireUserInboundEventTriggered(APNsConnectionHandler.GracefulCloseEvent())
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64(configuration.goAwayGracePeriod * 1000) + 750)
        while connections.count > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for connection in connections.all() {
            try? await connection.close()
        }
    }

    private static func makeSSLContext(certFile: String, keyFile: String, clientCA: String?) throws -> TLSContext {
        do {
            // TLS 1.2 and 1.3, ALPN h2 only. On close the mock waits 250 ms at most for the peer's close_notify
            // (libcurl does not always answer it, and a longer wait made every shutdown with a connected client
            // that long). With a client CA, a client certificate is asked for, not required.
            return try TLSContext.server(
                certificateChainFile: certFile, privateKeyFile: keyFile, clientCAFile: clientCA,
                applicationProtocols: ["h2"], shutdownTimeoutNanoseconds: 250_000_000)
        } catch {
            throw KKPushError(
                code: .mockTls,
                message:
                    "Cannot set up TLS with certificate \(certFile) and key \(keyFile)\(clientCA.map { ", client CA \($0)" } ?? "").",
                fix: "Give a PEM certificate and its PEM private key (Certificates/server.crt and server.key).",
                underlying: error)
        }
    }

    private static func bindListener(
        environment: APNsEnvironment, host: String, port: Int, group: any EventLoopGroup, sslContext: TLSContext,
        state: MockState, configuration: MockServerConfiguration, connections: ConnectionTracker,
        management: Bool = false
    ) async throws -> any Channel {
        let processor = MockRequestProcessor(
            environment: environment, state: state, configuration: configuration, management: management)
        let logger = configuration.logger
        let maxStreams = configuration.maxConcurrentStreams
        let oneFirst = configuration.oneStreamUntilAuthenticated
        let handshake = TimeAmount.nanoseconds(Int64(configuration.handshakeTimeout * 1e9))
        let settings = APNsConnectionHandler.Settings(configuration: configuration)
        let maxConnections = configuration.effectiveMaxConnections
        let logResets = logger.logLevel <= .debug
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(connections.acceptOrder())
                }
            }
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            // One read (up to 64 KiB, some 150 requests) per connection per turn of the event loop, then the loop's
            // other connections and tasks: with 16, one busy connection held its loop for seconds in a debug build
            // (backtraces of a parallel test run: the loop deep in one connection's frames while another's TLS
            // handshake timed out after 10 s and a task waited 12 s).
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                // At the cap the oldest half-open (then unauthenticated) connection makes room; if every one
                // has authenticated, the new connection is closed at once, before anything is read from it.
                guard connections.add(channel, limit: maxConnections, evicting: true) else {
                    logger.debug(
                        "connection limit reached, every connection authenticated; closing a new connection",
                        metadata: ["max_connections": "\(maxConnections)"])
                    return channel.eventLoop.makeFailedFuture(ConnectionLimitReached())
                }
                state.metrics.connectionOpened(environment)
                channel.closeFuture.whenComplete { _ in state.metrics.connectionClosed(environment) }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let wire = ConnectionWire(advertisedMaxStreams: UInt32(oneFirst ? 1 : maxStreams))
                    try sync.addHandler(TLSHandler(context: sslContext))
                    try sync.addHandler(H2WireWatcher(wire: wire))
                    if logResets { try sync.addHandler(InboundResetLogger(logger: logger)) }
                    try sync.addHandler(HandshakeTimeoutHandler(timeout: handshake))
                    try sync.addHandler(NGHTTP2Framing(advertisedMaxStreams: maxStreams))
                    try sync.addHandler(
                        APNsConnectionHandler(
                            processor: processor, logger: logger, settings: settings, wire: wire,
                            standing: { [weak channel] standing in
                                if let channel { connections.raise(channel, to: standing) }
                            }))
                }
            }
        let bound =
            configuration.socketSendBuffer.map {
                bootstrap.childChannelOption(ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue($0))
            } ?? bootstrap
        do {
            return try await bound.bind(host: host, port: port).get()
        } catch {
            throw BindFailure.error(
                host: host, port: port,
                what: management ? "the \(environment) channel management" : "the \(environment) environment",
                hostParameter: "host",
                portAdvice: "Choose another port (0 picks a free one) or stop what is using it.", error: error)
        }
    }
}

extension MockAPNsServer {
    /// What the admin listener's connection tracker counted (nil without an admin listener): for a test whose
    /// admin request failed to say whether the listener refused, evicted or timed out a connection.
    package var adminConnectionCounts:
        (
            accepted: Int, open: Int, refused: Int, evicted: Int, firstRequestTimeouts: Int, requestsRead: Int,
            answersWritten: Int
        )?
    {
        guard let admin = listeners.withLock({ $0.admin }) else { return nil }
        let tracker = admin.connections
        let requests = tracker.requestCounts
        return (
            tracker.total, tracker.count, tracker.refusedCount, tracker.evictedCount, tracker.firstRequestTimeoutCount,
            requests.read, requests.answered
        )
    }
}

/// Runs `body` with a started mock server and shuts it down afterwards, also when `body` throws.
///
/// `body` runs on the caller's actor (`isolation`), so a program's `main` can pass a closure that captures its state.
public func withMockServer<R>(
    configuration: MockServerConfiguration = MockServerConfiguration(), isolation: isolated (any Actor)? = #isolation,
    _ body: (MockAPNsServer) async throws -> R
) async throws -> R {
    let server = try await MockAPNsServer.start(configuration: configuration)
    let result: R
    do {
        result = try await body(server)
    } catch {
        try? await server.shutdown()
        throw error
    }
    try await server.shutdown()
    return result
}

/// A connection past ``MockServerConfiguration/maxConnections``: closed at accept.
struct ConnectionLimitReached: Error {}
