import Foundation
import KKPushCore
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small HTTP/1.1 client for a server on loopback (the simulated backend), on SwiftNIO: at most
/// ``maximumConnections`` keep-alive connections, shared by every caller (a request waits for a free one).
///
/// A request on a kept connection that the server had closed meanwhile (nothing at all came back) is sent
/// once more on a new connection; one that got any answer is never repeated. It fails with an
/// ``HTTP1ClientError``, which the caller words for its users.
public final class HTTP1Client: Sendable {
    /// One answer.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// The headers.
        public var headers: HTTPHeaders
        /// The body.
        public var body: [UInt8]
    }

    /// The largest answer read (16 MB).
    public static let maximumAnswer = 16 << 20

    /// The host (an IPv4 or IPv6 address; `localhost` is 127.0.0.1).
    public let host: String
    /// The port.
    public let port: Int
    /// How long to wait for a connection, and then for the whole answer.
    public let timeout: TimeInterval
    /// How many connections at most are open at once.
    public let maximumConnections: Int
    private let group: any EventLoopGroup
    private let pool = Mutex(Pool())

    private struct Pool: ~Copyable {
        var idle: [Connection] = []
        var open = 0
        var waiters: [CheckedContinuation<Lease, Never>] = []
        var stopped = false
    }

    private enum Lease {
        case reuse(Connection)
        case create
        case stopped
    }

    /// Creates a client (no connection is opened before the first request).
    public init(
        host: String, port: Int, maximumConnections: Int = 32, timeout: TimeInterval = 30,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.timeout = timeout
        self.maximumConnections = max(1, maximumConnections)
        self.group = group
    }

    deinit {
        let idle = pool.withLock { $0.idle }
        for connection in idle { connection.channel.close(promise: nil) }
    }

    /// Closes the idle connections; requests after this fail with ``HTTP1ClientError/stopped``.
    public func shutdown() {
        let (idle, waiters) = pool.withLock { p -> ([Connection], [CheckedContinuation<Lease, Never>]) in
            p.stopped = true
            defer { p.idle = []; p.waiters = [] }
            return (p.idle, p.waiters)
        }
        for connection in idle { connection.channel.close(promise: nil) }
        for waiter in waiters { waiter.resume(returning: .stopped) }
    }

    /// Sends one request (with a `Content-Length`, and `Host`) and returns the whole answer.
    public func send(
        method: String, target: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws(HTTP1ClientError) -> Response {
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: target)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "Content-Length", value: String(body?.count ?? 0))
        let request = Request(head: head, body: body ?? [])

        var connection: Connection
        var reused: Bool
        switch await acquire() {
        case .stopped:
            throw .stopped
        case .reuse(let kept):
            (connection, reused) = (kept, true)
        case .create:
            do {
                connection = try await connect()
            } catch {
                release(nil)
                throw error
            }
            reused = false
        }
        while true {
            do {
                let answer = try await connection.exchange(request, timeout: timeout)
                if answer.keepOpen {
                    release(connection)
                } else {
                    connection.channel.close(promise: nil)
                    release(nil)
                }
                return answer.response
            } catch let failure {
                connection.channel.close(promise: nil)
                // A kept connection the server had closed: once more, on a new one (which cannot be `reused`).
                if case .nothingBack = failure, reused {
                    do {
                        connection = try await connect()
                    } catch {
                        release(nil)
                        throw error
                    }
                    reused = false
                    continue
                }
                release(nil)
                throw failure.clientError
            }
        }
    }

    private func acquire() async -> Lease {
        await withCheckedContinuation { (c: CheckedContinuation<Lease, Never>) in
            let now: Lease? = pool.withLock { p in
                if p.stopped { return .stopped }
                while let kept = p.idle.popLast() {
                    if kept.channel.isActive { return .reuse(kept) }
                    p.open -= 1
                }
                if p.open < maximumConnections {
                    p.open += 1
                    return .create
                }
                p.waiters.append(c)
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    /// Gives a connection back (nil: its slot, the connection is gone) to a waiting request or the pool.
    private func release(_ connection: Connection?) {
        let handOver: (CheckedContinuation<Lease, Never>, Lease)? = pool.withLock { p in
            if !p.waiters.isEmpty {
                let waiter = p.waiters.removeFirst()
                if let connection, connection.channel.isActive { return (waiter, .reuse(connection)) }
                connection?.channel.close(promise: nil)
                return (waiter, .create)
            }
            if let connection, connection.channel.isActive, !p.stopped {
                p.idle.append(connection)
            } else {
                connection?.channel.close(promise: nil)
                p.open -= 1
            }
            return nil
        }
        if let (waiter, lease) = handOver { waiter.resume(returning: lease) }
    }

    private func connect() async throws(HTTP1ClientError) -> Connection {
        let address: SocketAddress
        do {
            address = try SocketAddress(ipAddress: host, port: port)
        } catch {
            throw .notAnAddress
        }
        do {
            let channel = try await ClientBootstrap(group: group)
                .connectTimeout(.milliseconds(Int64(timeout * 1000)))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ResponseReader())
                    }
                }
                .connect(to: address).get()
            return Connection(channel: channel)
        } catch {
            throw .connect(Self.describe(error))
        }
    }

    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        if error is ChannelError, case .connectTimeout = error as! ChannelError { return "timed out" }
        return "\(error)"
    }

    struct Request: Sendable {
        var head: HTTPRequestHead
        var body: [UInt8]
    }

    enum Failure: Error {
        /// Nothing came back: the server closed the connection (safe to send again on a kept one).
        case nothingBack
        case tooLarge
        case timeout
        case failed(any Error)

        var clientError: HTTP1ClientError {
            switch self {
            case .nothingBack: .nothingBack
            case .tooLarge: .tooLarge
            case .timeout: .timeout
            case .failed(let error): .failed(HTTP1Client.describe(error))
            }
        }
    }

    struct Answer: Sendable {
        var response: Response
        var keepOpen: Bool
    }

    /// One kept connection; used by one request at a time.
    final class Connection: Sendable {
        let channel: any Channel

        init(channel: any Channel) { self.channel = channel }

        func exchange(_ request: Request, timeout: TimeInterval) async throws(Failure) -> Answer {
            let promise = channel.eventLoop.makePromise(of: Answer.self)
            let channel = self.channel
            channel.eventLoop.execute {
                guard let reader = try? channel.pipeline.syncOperations.handler(type: ResponseReader.self) else {
                    promise.fail(Failure.nothingBack)
                    return
                }
                reader.start(promise, timeout: timeout, channel: channel)
                channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
                if !request.body.isEmpty {
                    channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: request.body))), promise: nil)
                }
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            }
            do {
                return try await promise.futureResult.get()
            } catch let failure as Failure {
                throw failure
            } catch {
                throw .failed(error)
            }
        }
    }

    /// Reads one answer per request into the request's promise.
    final class ResponseReader: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart

        private var promise: EventLoopPromise<Answer>?
        private var timer: Scheduled<Void>?
        private var head: HTTPResponseHead?
        private var body: [UInt8] = []

        func start(_ promise: EventLoopPromise<Answer>, timeout: TimeInterval, channel: any Channel) {
            self.promise = promise
            head = nil
            body = []
            guard channel.isActive else {
                finish(.failure(Failure.nothingBack))
                return
            }
            let reader = NIOLoopBound(self, eventLoop: channel.eventLoop)
            timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
                reader.value.finish(.failure(Failure.timeout))
                channel.close(promise: nil)
            }
        }

        private func finish(_ result: Result<Answer, any Error>) {
            timer?.cancel()
            timer = nil
            let promise = self.promise
            self.promise = nil
            promise?.completeWith(result)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h):
                head = h
            case .body(let chunk):
                guard body.count + chunk.readableBytes <= HTTP1Client.maximumAnswer else {
                    finish(.failure(Failure.tooLarge))
                    context.close(promise: nil)
                    return
                }
                body += chunk.readableBytesView
            case .end:
                guard let head else { return }
                self.head = nil
                let response = Response(status: Int(head.status.code), headers: head.headers, body: body)
                body = []
                finish(.success(Answer(response: response, keepOpen: head.isKeepAlive)))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failure(head == nil ? Failure.nothingBack : Failure.failed(ChannelError.eof)))
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(.failure(head == nil && body.isEmpty ? Failure.failed(error) : Failure.failed(error)))
            context.close(promise: nil)
        }
    }
}

/// Why an ``HTTP1Client`` request got no answer.
public enum HTTP1ClientError: Error, Sendable, Equatable {
    /// The client was shut down.
    case stopped
    /// The host is not an IP address.
    case notAnAddress
    /// The connection could not be made (the system's reason: "Connection refused").
    case connect(String)
    /// The server closed the connection without an answer.
    case nothingBack
    /// The answer is larger than ``HTTP1Client/maximumAnswer``.
    case tooLarge
    /// No whole answer within the timeout.
    case timeout
    /// The connection failed midway (the reason).
    case failed(String)
}
