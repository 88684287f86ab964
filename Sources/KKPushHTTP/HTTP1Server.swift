import KKPushCore
package import Logging
package import NIOCore
import NIOHTTP1
package import NIOPosix

/// A plain HTTP/1.1 server on SwiftNIO's `NIOAsyncChannel`: each connection is a child task of the
/// accept loop (structured concurrency), serving its requests one after another (keep-alive until the
/// client closes or asks `Connection: close`; HTTP/1.0 closes unless it asks `keep-alive`). Bodies are
/// read whole, up to ``Configuration/maximumBody``; a larger one reaches the handler as
/// ``HTTPRequest/bodyTooLarge`` (its bytes dropped) so the handler answers 413 in its own words.
///
/// The mock's admin API and the simulated backend both run on it, each with an ``HTTPRouter``. Its accept loop runs
/// on ``OwnThreads`` and each connection on its own event loop (``EventLoopTaskExecutor``), not on Swift's
/// cooperative pool.
package final class HTTP1Server: Sendable {
    /// How to listen.
    package struct Configuration: Sendable {
        /// The address to bind.
        package var host: String
        /// The port; 0 picks a free one.
        package var port: Int
        /// The largest body kept, in bytes.
        package var maximumBody: Int
        /// The listen backlog.
        package var backlog: Int32
        /// Connections open at once. At the cap a new one evicts the oldest connection that has not sent a whole
        /// request yet; when every open connection has, the new one is closed at accept.
        package var maxConnections: Int
        /// A connection whose first whole request has not arrived this long after it was accepted is closed (a
        /// client that connects and never speaks, or sends its request a byte at a time).
        package var firstRequestTimeout: TimeAmount
        /// The name of the server's threads (``OwnThreads``), as `top -H` and `perf` show them.
        package var threadName: String

        /// Creates a configuration; the cap defaults to a quarter of the open-file budget.
        package init(
            host: String, port: Int, maximumBody: Int = 1 << 20, backlog: Int32 = 256,
            maxConnections: Int = FileDescriptorBudget.connections(share: 0.25),
            firstRequestTimeout: TimeAmount = .seconds(10), threadName: String = "kkpush.http"
        ) {
            self.host = host
            self.port = port
            self.maximumBody = maximumBody
            self.backlog = backlog
            self.maxConnections = maxConnections
            self.firstRequestTimeout = firstRequestTimeout
            self.threadName = threadName
        }
    }

    /// Answers one request.
    package typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// The event loops of these servers: their own, not NIO's shared group, where the mock's APNs listeners run. A loop
    /// kept busy by APNs connections (a flood of pushes, or a debug build's slow requests) does not hold up the admin
    /// API or the backend. Measured: in a parallel run of the suite one of NIO's shared loops ran a task 12 s late,
    /// and a `/metrics` scrape accepted on that loop went unanswered for 20 s while a second scrape, on a new
    /// connection, was answered at once.
    package static let serverGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    /// The port it listens on.
    package let port: Int
    /// The listening channel.
    package let channel: any Channel
    /// The open client connections.
    package let connections: ConnectionTracker
    private let task: Task<Void, Never>

    private init(port: Int, channel: any Channel, connections: ConnectionTracker, task: Task<Void, Never>) {
        self.port = port
        self.channel = channel
        self.connections = connections
        self.task = task
    }

    /// Binds and starts serving; returns once the port is known. Throws NIO's error if it cannot bind
    /// (callers say it in their own words).
    package static func start(
        _ configuration: Configuration, group: any EventLoopGroup = HTTP1Server.serverGroup,
        logger: Logger, handler: @escaping Handler
    ) async throws -> HTTP1Server {
        let connections = ConnectionTracker()
        let firstRequestTimeout = configuration.firstRequestTimeout
        let server = try await ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(connections.acceptOrder())
                }
            }
            .serverChannelOption(ChannelOptions.backlog, value: configuration.backlog)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .bind(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    // On the event loop, not in the connection's task: a busy cooperative pool does not make a
                    // prompt client look like a silent one.
                    try channel.pipeline.syncOperations.addHandler(
                        FirstRequestWatch(
                            timeout: firstRequestTimeout, onFirst: { connections.raise(channel, to: .trusted) },
                            onTimeout: { connections.countFirstRequestTimeout() }))
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        let maximumBody = configuration.maximumBody
        let limit = configuration.maxConnections
        // The accept loop on threads of their own, each connection on its event loop: a process whose cooperative pool
        // is busy (a test suite embedding the mock) still gets its answers.
        let task = Task(executorPreference: OwnThreads(name: configuration.threadName)) {
            do {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { inbound in
                        for try await connection in inbound {
                            let channel = connection.channel
                            guard connections.add(channel, limit: limit, evicting: true) else {
                                logger.debug("connection limit reached; closing a new connection")
                                channel.close(promise: nil)
                                continue
                            }
                            // On the connection's own event loop: no thread woken between a request and its answer.
                            group.addTask(executorPreference: EventLoopTaskExecutor(channel.eventLoop)) {
                                await serve(
                                    connection, maximumBody: maximumBody, connections: connections, logger: logger,
                                    handler: handler)
                            }
                        }
                    }
                }
            } catch {
                logger.debug("accept loop ended", metadata: ["error": "\(error)"])
            }
        }
        return HTTP1Server(
            port: server.channel.localAddress?.port ?? configuration.port, channel: server.channel,
            connections: connections, task: task)
    }

    /// Stops accepting, closes the open connections (idle keep-alive ones too) and cancels the requests
    /// in progress (a long poll ends early); returns at once. ``wait()`` waits for the end.
    package func stop() async {
        try? await channel.close()
        await connections.closeAll()
        task.cancel()
    }

    /// Returns once the accept loop and every connection have ended (after ``stop()``).
    package func wait() async { await task.value }

    /// Serves one connection's requests until it closes.
    static func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, maximumBody: Int,
        connections: ConnectionTracker, logger: Logger, handler: Handler
    ) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var assembler = HTTPRequestAssembler(maximumBody: maximumBody)
                for try await part in inbound {
                    switch assembler.add(part) {
                    case .more: continue
                    case .endWithoutHead: return
                    case .request(let complete, let request):
                        connections.countRequestRead()
                        let response = await handler(complete)
                        let keepAlive = request.isKeepAlive
                        try await outbound.write(
                            contentsOf: responseParts(response, version: request.version, keepAlive: keepAlive))
                        connections.countAnswerWritten()
                        logger.debug(
                            "request",
                            metadata: [
                                "method": "\(request.method.rawValue)",
                                "path": "\(request.uri.split(separator: "?").first ?? "")",
                                "status": "\(response.status.code)",
                            ])
                        if !keepAlive {
                            // Returning closes the channel at once, which fails the writes the socket has not
                            // taken yet: an answer larger than its send buffer (a page of the mock's log) would
                            // reach a `Connection: close` client cut short. Half-closing waits for them to be
                            // written; a client that stops reading gets 30 s before the full close.
                            let channel = connection.channel
                            let deadline = channel.eventLoop.scheduleTask(in: .seconds(30)) {
                                channel.close(promise: nil)
                            }
                            try? await channel.close(mode: .output)
                            deadline.cancel()
                            return
                        }
                    }
                }
            }
        } catch {
            logger.debug("connection ended with an error", metadata: ["error": "\(error)"])
        }
    }

    /// Head, body and end of `response` (one write, one flush).
    static func responseParts(_ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool)
        -> [HTTPServerResponsePart]
    {
        var headers = response.headers
        if !headers.contains(name: "content-type") { headers.add(name: "content-type", value: "application/json") }
        headers.replaceOrAdd(name: "content-length", value: String(response.body.count))
        headers.replaceOrAdd(name: "connection", value: keepAlive ? "keep-alive" : "close")
        return [
            .head(HTTPResponseHead(version: version, status: response.status, headers: headers)),
            .body(.byteBuffer(ByteBuffer(bytes: response.body))),
            .end(nil),
        ]
    }
}

/// Closes a connection whose first whole request (head to end) has not arrived `timeout` after it was set up,
/// and reports the first one that does (the server then trusts the connection: never evicted at the cap).
final class FirstRequestWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let timeout: TimeAmount
    private let onFirst: @Sendable () -> Void
    private let onTimeout: @Sendable () -> Void
    private var timer: Scheduled<Void>?
    private var seen = false

    init(
        timeout: TimeAmount, onFirst: @escaping @Sendable () -> Void, onTimeout: @escaping @Sendable () -> Void
    ) {
        self.timeout = timeout
        self.onFirst = onFirst
        self.onTimeout = onTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let onTimeout = onTimeout
        timer = context.eventLoop.scheduleTask(in: timeout) {
            onTimeout()
            loopBound.value.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !seen, case .end = unwrapInboundIn(data) {
            seen = true
            timer?.cancel()
            timer = nil
            onFirst()
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }
}
