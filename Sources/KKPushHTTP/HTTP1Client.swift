package import Foundation
import KKPushCore
import KKPushSystem
package import NIOCore
package import NIOHTTP1
package import NIOPosix
import Synchronization

/// A small HTTP/1.1 client for a server on loopback (the simulated backend), on SwiftNIO: requests wait
/// in one queue, served by at most ``maximumConnections`` keep-alive connections. A connection that has
/// read an answer takes the next queued request at once, on its event loop (no hop through the
/// concurrency pool between two requests: under load that hop left connections idle).
///
/// A request on a kept connection that the server had closed meanwhile (nothing at all came back) is sent
/// once more on a new connection; one that got any answer is never repeated. It fails with an
/// ``HTTP1ClientError``, which the caller words for its users. Answers are framed by `Content-Length`
/// (or end at the close); that is what the servers of this package send.
package final class HTTP1Client: Sendable {
    /// One answer.
    package struct Response: Sendable {
        /// The status code.
        package var status: Int
        /// The headers.
        package var headers: HTTPHeaders
        /// The body.
        package var body: [UInt8]
    }

    /// The event loops of the clients (their own, so a server in the same process does not share them).
    package static let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    /// The largest answer read (16 MB).
    package static let maximumAnswer = 16 << 20

    /// The host (an IPv4 or IPv6 address; `localhost` is 127.0.0.1).
    package let host: String
    /// The port.
    package let port: Int
    /// How long to wait for a connection, and then for the whole answer.
    package let timeout: TimeInterval
    /// How many connections at most are open at once.
    package let maximumConnections: Int
    private let group: any EventLoopGroup
    private let state = Mutex(State())

    private struct State {
        var queue: [Job] = []
        var queueStart = 0
        var idle: [Connection] = []
        var open = 0
        var stopped = false

        mutating func popJob() -> Job? {
            guard queueStart < queue.count else { return nil }
            let job = queue[queueStart]
            queueStart += 1
            if queueStart > 64, queueStart * 2 > queue.count {
                queue.removeFirst(queueStart)
                queueStart = 0
            }
            return job
        }
    }

    struct Job: Sendable {
        var bytes: [UInt8]
        /// Called once, with the answer or why there is none, on the thread that has it (the connection's event
        /// loop): it resumes the waiting task directly. (An `EventLoopPromise` made on `group.next()` added a hop to
        /// that loop for every answer, and took every other turn of `next()`: with two loops, every connection was
        /// opened on the same one.)
        var reply: @Sendable (Result<Response, HTTP1ClientError>) -> Void
        /// Sent once more already (after a kept connection turned out closed).
        var retried = false
    }

    /// Creates a client (no connection is opened before the first request).
    package init(
        host: String, port: Int, maximumConnections: Int = 32, timeout: TimeInterval = 30,
        group: any EventLoopGroup = HTTP1Client.clientGroup
    ) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.timeout = timeout
        self.maximumConnections = max(1, maximumConnections)
        self.group = group
    }

    deinit {
        let idle = state.withLock { $0.idle }
        for connection in idle { connection.channel.close(promise: nil) }
    }

    /// Closes the idle connections and fails the queued requests; requests after this fail with
    /// ``HTTP1ClientError/stopped``.
    package func shutdown() {
        let (idle, queued) = state.withLock { s -> ([Connection], [Job]) in
            s.stopped = true
            var queued: [Job] = []
            while let job = s.popJob() { queued.append(job) }
            defer { s.idle = [] }
            return (s.idle, queued)
        }
        for connection in idle { connection.channel.close(promise: nil) }
        for job in queued { job.reply(.failure(.stopped)) }
    }

    /// Sends one request (with `Host` and `Content-Length`) and returns the whole answer.
    package func send(
        method: String, target: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws(HTTP1ClientError) -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        let bytes = Array(head.utf8) + (body ?? [])
        let result = await withCheckedContinuation {
            (answer: CheckedContinuation<Result<Response, HTTP1ClientError>, Never>) in
            enqueue(Job(bytes: bytes, reply: { answer.resume(returning: $0) }))
        }
        return try result.get()
    }

    private enum Action {
        case none
        case fail(Job, HTTP1ClientError)
        case run(Job, Connection)
        case connect(Job)
    }

    private func enqueue(_ job: Job) {
        let action = state.withLock { s -> Action in
            if s.stopped { return .fail(job, .stopped) }
            while let connection = s.idle.popLast() {
                if connection.channel.isActive { return .run(job, connection) }
                s.open -= 1
            }
            if s.open < maximumConnections {
                s.open += 1
                return .connect(job)
            }
            s.queue.append(job)
            return .none
        }
        perform(action)
    }

    private func perform(_ action: Action) {
        switch action {
        case .none: break
        case .fail(let job, let error): job.reply(.failure(error))
        case .run(let job, let connection): connection.run(job)
        case .connect(let job): connect(then: job)
        }
    }

    /// A connection's slot is free (it closed): a queued request gets a new connection.
    private func slotFreed() {
        let action = state.withLock { s -> Action in
            s.open -= 1
            guard !s.stopped, s.open < maximumConnections, let job = s.popJob() else { return .none }
            s.open += 1
            return .connect(job)
        }
        perform(action)
    }

    /// A connection read its answer: it takes the next queued request (on its own event loop), or waits idle.
    /// `connection` nil: it closed before the request began; its slot is freed.
    fileprivate func finished(_ connection: Connection?, keepOpen: Bool) {
        guard keepOpen, let connection, connection.channel.isActive else {
            connection?.channel.close(promise: nil)
            slotFreed()
            return
        }
        let next = state.withLock { s -> Job? in
            if let job = s.popJob() { return job }
            s.idle.append(connection)
            return nil
        }
        if let next { connection.run(next) }
    }

    /// Takes an idle connection as the next request would (tests use it to hand a request to a connection
    /// that closed while idle, the race a busy machine hits).
    func takeIdleConnection() -> Connection? {
        state.withLock { $0.idle.popLast() }
    }

    /// A kept connection the server had closed: the request once more, on a new connection (same slot).
    fileprivate func retry(_ job: Job) {
        var job = job
        job.retried = true
        connect(then: job)
    }

    private func connect(then job: Job) {
        let address: SocketAddress
        do {
            address = try SocketAddress(ipAddress: host, port: port)
        } catch {
            job.reply(.failure(.notAnAddress))
            slotFreed()
            return
        }
        ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(timeout * 1000)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ResponseReader())
                }
            }
            .connect(to: address)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    guard let reader = try? channel.pipeline.syncOperations.handler(type: ResponseReader.self) else {
                        job.reply(.failure(.failed("no reader")))
                        channel.close(promise: nil)
                        self.slotFreed()
                        return
                    }
                    let connection = Connection(
                        channel: channel, reader: NIOLoopBound(reader, eventLoop: channel.eventLoop))
                    reader.connection = connection
                    reader.client = self
                    connection.run(job)
                case .failure(let error):
                    job.reply(.failure(.connect(Self.describe(error))))
                    self.slotFreed()
                }
            }
    }

    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return ErrorWords.systemText(errno: io.errnoCode) }
        if let channelError = error as? ChannelError, case .connectTimeout = channelError { return "timed out" }
        return "\(error)"
    }

    /// One connection; serves one request at a time.
    final class Connection: Sendable {
        let channel: any Channel
        let reader: NIOLoopBound<ResponseReader>

        init(channel: any Channel, reader: NIOLoopBound<ResponseReader>) {
            self.channel = channel
            self.reader = reader
        }

        /// Writes `job`'s request and reads its answer (on the connection's event loop).
        func run(_ job: Job) {
            if channel.eventLoop.inEventLoop {
                reader.value.start(job)
            } else {
                let reader = self.reader
                channel.eventLoop.execute { reader.value.start(job) }
            }
        }
    }

    /// Reads one answer per request, completes the request, and hands the connection on.
    final class ResponseReader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        weak var client: HTTP1Client?
        var connection: Connection?
        private var context: ChannelHandlerContext?
        private var job: Job?
        /// Answers read on this connection so far (more than 0: a kept connection).
        private var served = 0
        private var timer: Scheduled<Void>?
        private var received: [UInt8] = []
        /// The offset of the body, once the header is complete.
        private var bodyStart: Int?
        /// The offset where the answer ends (nil: no Content-Length, it ends at the close).
        private var end: Int?

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }
        func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

        func start(_ job: Job) {
            self.job = job
            received.removeAll(keepingCapacity: true)
            bodyStart = nil
            end = nil
            guard let context, context.channel.isActive else {
                complete(.failure(.nothingBack), keepOpen: false)
                return
            }
            let timeout = client?.timeout ?? 30
            let reader = NIOLoopBound(self, eventLoop: context.eventLoop)
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
                reader.value.complete(.failure(.timeout), keepOpen: false)
                channel.close(promise: nil)
            }
            context.writeAndFlush(NIOAny(ByteBuffer(bytes: job.bytes)), promise: nil)
        }

        /// Completes the request in hand, if any, and hands the connection's slot on. Every path replies to
        /// the job once or passes the job on (a request is never dropped): the connection may already
        /// be gone (`connection` nil) when a job reaches a kept connection that closed while idle.
        fileprivate func complete(_ result: Result<Response, Failure>, keepOpen: Bool) {
            timer?.cancel()
            timer = nil
            guard let job else { return }
            self.job = nil
            let reused = served > 0
            served += 1
            let connection = self.connection
            guard let client else {
                job.reply(.failure(.stopped))
                connection?.channel.close(promise: nil)
                return
            }
            switch result {
            case .success(let response):
                // The connection is idle (or gone) before the caller resumes: its next request reuses it.
                client.finished(connection, keepOpen: keepOpen)
                job.reply(.success(response))
            case .failure(.nothingBack) where reused && !job.retried:
                connection?.channel.close(promise: nil)
                client.retry(job)
            case .failure(let failure):
                client.finished(connection, keepOpen: false)
                job.reply(.failure(failure.clientError))
            }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard job != nil else { return }
            let buffer = unwrapInboundIn(data)
            let searchFrom = max(0, received.count - 3)
            received += buffer.readableBytesView
            if bodyStart == nil, let info = HTTP1Client.header(received, from: searchFrom) {
                bodyStart = info.bodyStart
                end = info.length.map { info.bodyStart + $0 }
            }
            if let end, received.count >= end {
                answer(closed: false)
            } else if received.count > HTTP1Client.maximumAnswer + 64 * 1024 {
                complete(.failure(.tooLarge), keepOpen: false)
                context.close(promise: nil)
            }
        }

        /// Completes the request with what was received (up to its end).
        private func answer(closed: Bool) {
            guard let bodyStart, let (status, headers) = HTTP1Client.statusAndHeaders(received[..<bodyStart]) else {
                complete(
                    .failure(closed && received.isEmpty ? .nothingBack : .failed(ChannelError.eof)), keepOpen: false)
                return
            }
            let bodyEnd = min(end ?? received.count, received.count)
            let response = Response(status: status, headers: headers, body: Array(received[bodyStart..<bodyEnd]))
            // Kept open only if the answer had a length, the server did not close, and did not say it would.
            let keepOpen =
                end != nil && !closed && !(headers.first(name: "connection")?.lowercased().contains("close") ?? false)
            complete(.success(response), keepOpen: keepOpen)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if job != nil {
                if received.isEmpty {
                    complete(.failure(.nothingBack), keepOpen: false)
                } else if bodyStart != nil, end == nil {
                    answer(closed: true)
                } else {
                    complete(.failure(.failed(ChannelError.eof)), keepOpen: false)
                }
            }
            connection = nil
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            complete(.failure(.failed(error)), keepOpen: false)
            context.close(promise: nil)
        }
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

    /// The offset of the body and the Content-Length, once the header (ending in an empty line, searched
    /// from `from`) is complete. A Content-Length that is not a number from 0 to 16 MB (negative, or near
    /// `Int.max`, where `end + length` would overflow) counts as none: the answer is read to the close,
    /// within the 16 MB bound.
    static func header(_ bytes: [UInt8], from: Int = 0) -> (bodyStart: Int, length: Int?)? {
        guard bytes.count >= 4 else { return nil }
        var i = max(0, from)
        while i <= bytes.count - 4 {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                let head = String(decoding: bytes[0..<i], as: UTF8.self)
                var length: Int? = nil
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length",
                        let n = Int(parts[1].filter { $0 != " " && $0 != "\t" }), (0...maximumAnswer).contains(n)
                    {
                        length = n
                    }
                }
                return (i + 4, length)
            }
            i += 1
        }
        return nil
    }

    /// The offset of the body and the Content-Length, if the header is complete and has a valid one.
    static func headerInfo(_ bytes: [UInt8]) -> (Int, Int)? {
        guard let info = header(bytes), let length = info.length else { return nil }
        return (info.bodyStart, length)
    }

    /// The status code and headers of a response header (through its empty line); nil if it is not HTTP/1.
    static func statusAndHeaders(_ head: ArraySlice<UInt8>) -> (Int, HTTPHeaders)? {
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
            let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 {
                headers.add(name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
            }
        }
        return (status, headers)
    }
}

/// Why an ``HTTP1Client`` request got no answer.
package enum HTTP1ClientError: Error, Sendable, Equatable {
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
