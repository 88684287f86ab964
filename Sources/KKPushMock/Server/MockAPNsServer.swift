import Foundation
import KKPushCore
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// A mock APNs server: HTTP/2 over TLS (ALPN `h2`), a listener per environment, answering as Apple
/// does, with simulated devices, a delivery log, fault injection and an admin HTTP API.
///
/// Scoped use (tests): ``withMockServer(configuration:_:)``. Long-running use (the CLI):
/// ``start(configuration:)`` and ``shutdown()``. See ``MockRequestProcessor`` for the validation
/// order and ``MockAdminServer`` for the admin endpoints.
public final class MockAPNsServer: Sendable {
    /// The configuration it was started with (keys and devices as given, not as changed since).
    public let configuration: MockServerConfiguration
    /// The sandbox listener: 127.0.0.1, its bound port, the CA to trust.
    public let sandboxEndpoint: APNsEndpoint
    /// The production listener: 127.0.0.1, its bound port, the CA to trust.
    public let productionEndpoint: APNsEndpoint
    /// The admin API's base URL, `http://127.0.0.1:<port>`, if it runs.
    public let adminURL: String?
    /// The CA certificate (PEM file) clients must trust.
    public let caFile: String?

    let state: MockState
    private let channels: [any Channel]
    let connections: ConnectionTracker
    private let logger: Logger

    private init(
        configuration: MockServerConfiguration, sandbox: APNsEndpoint, production: APNsEndpoint, adminURL: String?,
        caFile: String?, state: MockState, channels: [any Channel], connections: ConnectionTracker
    ) {
        self.connections = connections
        self.configuration = configuration
        self.sandboxEndpoint = sandbox
        self.productionEndpoint = production
        self.adminURL = adminURL
        self.caFile = caFile
        self.state = state
        self.channels = channels
        self.logger = configuration.logger
    }

    /// The endpoint of `environment`'s listener.
    public func endpoint(_ environment: APNsEnvironment) -> APNsEndpoint {
        environment == .sandbox ? sandboxEndpoint : productionEndpoint
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
                code: "mock-certificate-missing",
                message: "No server certificate: no Certificates folder was found and none was given.",
                fix: "Run from the kkpush checkout (it has Certificates/), set KKPUSH_CERTIFICATES, or pass --cert and --key.")
        }
        let caFile = file(configuration.caFile, "ca.crt").flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
        var clientCA = configuration.clientCAFile
        if clientCA == nil, let dir, FileManager.default.fileExists(atPath: dir + "/wwdr.crt") { clientCA = dir + "/wwdr.crt" }

        let sslContext = try makeSSLContext(certFile: certFile, keyFile: keyFile, clientCA: clientCA)

        let state = MockState(
            logCapacity: configuration.deliveryLogCapacity, strict: configuration.strictDeviceTokens,
            clock: configuration.clock)
        var keys = configuration.keys
        if configuration.registerDefaultKeys, let dir, FileManager.default.fileExists(atPath: dir + "/keys.json") {
            keys = try MockKey.loadRegistry(at: dir + "/keys.json") + keys
        }
        for key in keys { try state.register(key) }
        for device in configuration.devices { state.register(device) }
        for fault in configuration.faults { try state.add(fault) }

        let group = MultiThreadedEventLoopGroup.singleton
        var channels: [any Channel] = []
        let connections = ConnectionTracker()
        do {
            var ports: [APNsEnvironment: Int] = [:]
            for env in [APNsEnvironment.sandbox, .production] {
                let port = env == .sandbox ? configuration.sandboxPort : configuration.productionPort
                let channel = try await bindListener(
                    environment: env, host: configuration.host, port: port, group: group, sslContext: sslContext,
                    state: state, configuration: configuration, connections: connections)
                channels.append(channel)
                ports[env] = channel.localAddress?.port ?? port
            }
            var adminURL: String? = nil
            if let adminPort = configuration.adminPort {
                let admin = try await MockAdminServer.bind(port: adminPort, group: group, state: state, logger: logger)
                channels.append(admin)
                adminURL = "http://127.0.0.1:\(admin.localAddress?.port ?? adminPort)"
            }
            let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
            let server = MockAPNsServer(
                configuration: configuration,
                sandbox: APNsEndpoint(host: host, port: ports[.sandbox]!, caFile: caFile, environment: .sandbox),
                production: APNsEndpoint(host: host, port: ports[.production]!, caFile: caFile, environment: .production),
                adminURL: adminURL, caFile: caFile, state: state, channels: channels, connections: connections)
            logger.info(
                "mock APNs listening",
                metadata: [
                    "sandbox": "\(server.sandboxEndpoint.port)", "production": "\(server.productionEndpoint.port)",
                    "admin": "\(adminURL ?? "-")",
                ])
            return server
        } catch {
            for c in channels { try? await c.close() }
            throw error
        }
    }

    /// Stops listening, closes every connection, and finishes device streams and long-polls.
    public func shutdown() async throws {
        for channel in channels {
            do {
                try await channel.close()
            } catch ChannelError.alreadyClosed {
            }
        }
        for connection in connections.all() {
            try? await connection.close()
        }
        state.finish()
    }

    private static func makeSSLContext(certFile: String, keyFile: String, clientCA: String?) throws -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certFile)
            let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            tls.minimumTLSVersion = .tlsv12
            tls.applicationProtocols = ["h2"]
            // On close, wait briefly for the peer's close_notify (NIOSSL's default is 5 s, which made
            // every shutdown with a connected client take 5 s; libcurl does not always answer it).
            tls.shutdownTimeout = .milliseconds(250)
            if let clientCA {
                tls.certificateVerification = .optionalVerification
                tls.trustRoots = .file(clientCA)
            }
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw KKPushError(
                code: "mock-tls",
                message: "Cannot set up TLS with certificate \(certFile) and key \(keyFile)\(clientCA.map { ", client CA \($0)" } ?? "").",
                fix: "Give a PEM certificate and its PEM private key (Certificates/server.crt and server.key).",
                underlying: "\(error)")
        }
    }

    private static func bindListener(
        environment: APNsEnvironment, host: String, port: Int, group: any EventLoopGroup, sslContext: NIOSSLContext,
        state: MockState, configuration: MockServerConfiguration, connections: ConnectionTracker
    ) async throws -> any Channel {
        let processor = MockRequestProcessor(
            environment: environment, state: state, maxAge: configuration.providerTokenMaxAge,
            futureSkew: configuration.providerTokenFutureSkew, updateInterval: configuration.providerTokenUpdateInterval)
        let logger = configuration.logger
        let maxStreams = configuration.maxConcurrentStreams
        let oneFirst = configuration.oneStreamUntilAuthenticated
        let idle = TimeAmount.nanoseconds(Int64(configuration.idleTimeout * 1e9))
        let handshake = TimeAmount.nanoseconds(Int64(configuration.handshakeTimeout * 1e9))
        let goAwayOnEnv = configuration.goAwayOnBadCertificateEnvironment
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(HandshakeTimeoutHandler(timeout: handshake))
                    try sync.addHandler(IdleStateHandler(allTimeout: idle))
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [
                        HTTP2Setting(parameter: .headerTableSize, value: 4096),
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: oneFirst ? 1 : maxStreams),
                        HTTP2Setting(parameter: .initialWindowSize, value: 65535),
                        HTTP2Setting(parameter: .maxFrameSize, value: 16384),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 8000),
                    ]
                    try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection))
                    try sync.addHandler(
                        APNsConnectionHandler(
                            processor: processor, logger: logger, maxConcurrentStreams: maxStreams,
                            raiseStreamsAfterAuth: oneFirst, goAwayOnBadCertificateEnvironment: goAwayOnEnv))
                }
            }
        do {
            return try await bootstrap.bind(host: host, port: port).get()
        } catch {
            throw KKPushError(
                code: "mock-bind", message: "Cannot listen on \(host):\(port) for the \(environment) environment.",
                fix: "Choose another port (0 picks a free one) or stop what is using it.", underlying: "\(error)")
        }
    }
}

/// Runs `body` with a started mock server and shuts it down afterwards, also when `body` throws.
public func withMockServer<R>(
    configuration: MockServerConfiguration = MockServerConfiguration(),
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

/// The open connections, so shutdown can close them.
final class ConnectionTracker: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { _ in
            _ = self.channels.withLock { $0.removeValue(forKey: id) }
        }
    }

    func all() -> [any Channel] { channels.withLock { Array($0.values) } }

    var count: Int { channels.withLock { $0.count } }
}
