public import Foundation
public import KKPushActivities
public import KKPushCore
import KKPushHTTP
public import KKPushStore
public import KantineKoning
public import Logging
import NIOCore

/// The configuration of a ``SimulatedBackend``.
public struct SimulatedBackendConfiguration: Sendable {
    /// The address to listen on: loopback only (`127.0.0.1` by default).
    public var host: String
    /// The port; 0 picks a free one (tests).
    public var port: Int
    /// The device-JWT secret (at least 16 bytes).
    public var secret: String
    /// The server's `APNS_FORCE_ENV` / `APNS_ENV`.
    public var settings: ServerAPNsSettings
    /// The app's bundle id.
    public var bundleID: String
    /// The admin token, or nil for an open admin API (it listens on loopback only).
    public var adminToken: String?
    /// How long issued JWTs are valid.
    public var jwtLifetime: TimeInterval
    /// The largest request body accepted, in bytes.
    public var maxBodySize: Int
    /// The clock.
    public var clock: any WallClock
    /// Where to log (no output by default).
    public var logger: Logger

    /// Creates a configuration; every field but the secret has a default.
    public init(
        host: String = "127.0.0.1", port: Int = 0, secret: String, settings: ServerAPNsSettings = ServerAPNsSettings(),
        bundleID: String = TokenUpdate.defaultBundleID, adminToken: String? = nil,
        jwtLifetime: TimeInterval = DeviceJWT.defaultLifetime, maxBodySize: Int = 1 << 20,
        clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "kkpush.backend", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.host = host
        self.port = port
        self.secret = secret
        self.settings = settings
        self.bundleID = bundleID
        self.adminToken = adminToken
        self.jwtLifetime = jwtLifetime
        self.maxBodySize = maxBodySize
        self.clock = clock
        self.logger = logger
    }
}

/// The simulated Kantine Koning backend: plain HTTP/1.1 on loopback (``HTTP1Server``, SwiftNIO), serving
/// ``BackendRouter``'s routes.
///
/// Use ``withSimulatedBackend(configuration:store:diensten:sender:activities:_:)`` so it always shuts down.
/// Connections are HTTP/1.1 keep-alive: a connection serves requests one after another until the
/// client closes it or asks `Connection: close` (HTTP/1.0 closes unless it asks `keep-alive`).
public final class SimulatedBackend: Sendable {
    /// The router (store, diensten, signer).
    public let router: BackendRouter
    /// The port it listens on.
    public let port: Int
    /// The host it listens on.
    public let host: String
    private let server: HTTP1Server

    /// `http://host:port`.
    public var baseURL: String { "http://\(host):\(port)" }

    /// Client connections open now (kept alive between requests).
    public var openConnections: Int { server.connections.count }

    /// The backend's Prometheus metrics (what its `GET /metrics` serves).
    public var metrics: BackendMetrics { router.metrics }

    /// The JWT signer (to issue tokens in tests without the admin API).
    public var jwt: DeviceJWT { router.jwt }

    init(router: BackendRouter, host: String, server: HTTP1Server) {
        self.router = router
        self.host = host
        self.port = server.port
        self.server = server
    }

    /// Binds and starts serving; returns once the port is known, with the task that serves.
    static func start(
        configuration: SimulatedBackendConfiguration, store: any EnrollmentStore, diensten: DienstStore,
        sender: (any PushSender)?, activities: (any ActivityRegistry)? = nil
    ) async throws -> (SimulatedBackend, Task<Void, Never>) {
        guard ["127.0.0.1", "::1", "localhost"].contains(configuration.host) else {
            throw KKPushError(
                code: .backendNotLoopback,
                message: "The simulated backend listens on loopback only, not '\(configuration.host)'.",
                fix: "Listen on 127.0.0.1 (host), the default.")
        }
        guard (0...65535).contains(configuration.port) else {
            throw KKPushError(
                code: .backendPort, message: "Port \(configuration.port) is not between 0 and 65535.",
                fix: "Give a port (port) from 0 to 65535: 0 picks a free one, or a port such as 4000.")
        }
        let jwt = try DeviceJWT(
            secret: configuration.secret, clock: configuration.clock, lifetime: configuration.jwtLifetime)
        let router = BackendRouter(
            store: store, diensten: diensten, jwt: jwt, sender: sender, settings: configuration.settings,
            bundleID: configuration.bundleID, adminToken: configuration.adminToken, clock: configuration.clock,
            logger: configuration.logger, activities: activities)
        let maxBody = configuration.maxBodySize
        let routes = router.routes()
        let server: HTTP1Server
        do {
            server = try await HTTP1Server.start(
                HTTP1Server.Configuration(
                    host: configuration.host, port: configuration.port, maximumBody: maxBody,
                    threadName: "kkpush.backend"),
                logger: configuration.logger
            ) { request in
                if request.bodyTooLarge, request.path == BackendRouter.syncPath {
                    // Every refused sync body is a 400 naming the field.
                    return BackendRouter.syncRefused(
                        SyncBodyError(
                            code: "body-too-large", field: "enrollments",
                            message:
                                "The sync body is larger than \(maxBody) bytes; enrollments lists a phone's enrollments, at most \(SyncBodyParser.maximumEntries) enrollments.",
                            fix: "List each of the app's enrollments once.")
                    ).http
                }
                if request.bodyTooLarge {
                    return BackendResponse.error(
                        413, code: "body-too-large", message: "The body is larger than \(maxBody) bytes.",
                        fix: "Send a smaller body."
                    ).http
                }
                return await routes.respond(to: request)
            }
        } catch {
            throw KKPushError(
                code: .backendBindFailed,
                message: "Cannot listen on \(configuration.host):\(configuration.port).",
                fix: "Pick another port (port); 0 picks a free one.", underlying: error)
        }
        let backend = SimulatedBackend(router: router, host: configuration.host, server: server)
        configuration.logger.info("backend listening", metadata: ["address": "\(configuration.host):\(server.port)"])
        let task = Task { await server.wait() }
        return (backend, task)
    }

    /// Stops accepting connections and closes the open ones (idle keep-alive connections included).
    func stop() async {
        await server.stop()
    }
}

/// Starts a simulated backend on loopback, runs `body`, and shuts the backend down afterwards (also when
/// `body` throws).
///
/// - Parameters:
///   - store: the enrollments (an ``InMemoryEnrollmentStore`` by default).
///   - diensten: the diensten (the seed around the configuration's clock by default).
///   - sender: who sends the dienst-update pushes (nil: none are sent).
///   - activities: the activity registry the token updates' `live_activity` tokens go to (nil: they are checked,
///     not recorded, and the answer says so).
public func withSimulatedBackend<T: Sendable>(
    configuration: SimulatedBackendConfiguration, store: (any EnrollmentStore)? = nil, diensten: DienstStore? = nil,
    sender: (any PushSender)? = nil, activities: (any ActivityRegistry)? = nil,
    _ body: (SimulatedBackend) async throws -> T
) async throws -> T {
    let (backend, task) = try await SimulatedBackend.start(
        configuration: configuration, store: store ?? InMemoryEnrollmentStore(),
        diensten: diensten ?? DienstStore(DienstStore.seed(now: configuration.clock.now())), sender: sender,
        activities: activities)
    do {
        let value = try await body(backend)
        await backend.stop()
        task.cancel()
        await task.value
        return value
    } catch {
        await backend.stop()
        task.cancel()
        await task.value
        throw error
    }
}

/// Runs a simulated backend until the task is cancelled (for `kkpush backend serve`); `onStart` gets it
/// once it listens.
public func runSimulatedBackend(
    configuration: SimulatedBackendConfiguration, store: any EnrollmentStore, diensten: DienstStore,
    sender: (any PushSender)?, activities: (any ActivityRegistry)? = nil,
    onStart: @Sendable (SimulatedBackend) -> Void
) async throws {
    let (backend, task) = try await SimulatedBackend.start(
        configuration: configuration, store: store, diensten: diensten, sender: sender, activities: activities)
    onStart(backend)
    await withTaskCancellationHandler {
        await task.value
    } onCancel: {
        task.cancel()
    }
    await backend.stop()
}
