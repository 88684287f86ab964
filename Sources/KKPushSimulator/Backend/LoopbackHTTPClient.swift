import Foundation
import KKPushCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small HTTP/1.1 client for the simulated backend on loopback: blocking socket calls on a few
/// threads of its own (never on the cooperative pool), each with one keep-alive connection, and an
/// async API on top.
///
/// URLSession on Linux managed about 300 requests a second here, which made the 1,000-device run
/// measure URLSession instead of the push path; this client does thousands. Connections are kept
/// open between requests (HTTP/1.1 keep-alive): a connection per request cost a TCP handshake and a
/// new server channel each, about a third of the backend's work in a 1,000-device refresh burst.
/// A request on a kept connection that the server had closed meanwhile (nothing at all came back) is
/// sent once more on a new connection; one that got any answer is never repeated.
final class LoopbackHTTPClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var body: Data
    }

    private final class Queue: @unchecked Sendable {
        // Guarded by `condition`.
        let condition = NSCondition()
        var jobs: [Job] = []
        var stopped = false
    }

    private struct Job {
        var request: [UInt8]
        var continuation: CheckedContinuation<Result<Response, KKPushError>, Never>
    }

    let host: String
    let port: Int
    let timeout: TimeInterval
    private let queue = Queue()

    /// Starts `threads` worker threads for `host:port` (an IPv4 loopback address or `localhost`).
    init(host: String, port: Int, threads: Int = 32, timeout: TimeInterval = 30) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.timeout = timeout
        for i in 0..<max(1, threads) {
            let queue = self.queue
            let (h, p, t) = (self.host, port, timeout)
            let thread = Thread { Self.work(queue: queue, host: h, port: p, timeout: t) }
            thread.name = "kkpush-sim-http-\(i)"
            thread.stackSize = 256 << 10
            thread.start()
        }
    }

    deinit { stop() }

    /// Stops the worker threads (closing their connections) once the queued requests are done.
    func stop() {
        queue.condition.lock()
        queue.stopped = true
        queue.condition.broadcast()
        queue.condition.unlock()
    }

    /// Sends one request and returns the answer, or a `simulate-backend-unreachable` error.
    func send(method: String, target: String, headers: [(String, String)], body: Data?) async throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        var bytes = Array(head.utf8)
        if let body { bytes += body }
        let request = bytes
        let result = await withCheckedContinuation { (c: CheckedContinuation<Result<Response, KKPushError>, Never>) in
            queue.condition.lock()
            if queue.stopped {
                queue.condition.unlock()
                c.resume(returning: .failure(KKPushError(
                    code: "simulate-backend-unreachable", message: "The backend client was stopped.",
                    fix: "Send requests while the simulation runs.")))
                return
            }
            queue.jobs.append(Job(request: request, continuation: c))
            queue.condition.signal()
            queue.condition.unlock()
        }
        return try result.get()
    }

    private static func work(queue: Queue, host: String, port: Int, timeout: TimeInterval) {
        var connection: Int32? = nil
        defer { if let connection { close(connection) } }
        while true {
            queue.condition.lock()
            while queue.jobs.isEmpty && !queue.stopped { queue.condition.wait() }
            if queue.jobs.isEmpty {
                queue.condition.unlock()
                return
            }
            let job = queue.jobs.removeFirst()
            queue.condition.unlock()
            job.continuation.resume(
                returning: exchange(job.request, connection: &connection, host: host, port: port, timeout: timeout))
        }
    }

    /// What one attempt on a connection ended with.
    private enum Attempt {
        case answer(Response, keepOpen: Bool)
        /// Nothing came back: the server had closed a kept connection (safe to send again).
        case nothingBack
        case failed(KKPushError)
    }

    /// Sends `request` on the worker's kept connection (opening one if there is none) and reads the
    /// answer; a kept connection that turns out closed is replaced once.
    static func exchange(
        _ request: [UInt8], connection: inout Int32?, host: String, port: Int, timeout: TimeInterval
    ) -> Result<Response, KKPushError> {
        let reused = connection != nil
        let fd: Int32
        if let connection {
            fd = connection
        } else {
            switch open(host: host, port: port, timeout: timeout) {
            case .success(let opened): fd = opened
            case .failure(let error): return .failure(error)
            }
            connection = fd
        }
        let outcome = attempt(request, fd: fd, host: host, port: port, timeout: timeout)
        if case .answer(_, keepOpen: true) = outcome { return outcomeResult(outcome, host: host, port: port) }
        close(fd)
        connection = nil
        // A kept connection the server had closed: once more, on a new one (which cannot be `reused`).
        if case .nothingBack = outcome, reused {
            return exchange(request, connection: &connection, host: host, port: port, timeout: timeout)
        }
        return outcomeResult(outcome, host: host, port: port)
    }

    private static func outcomeResult(_ outcome: Attempt, host: String, port: Int) -> Result<Response, KKPushError> {
        switch outcome {
        case .answer(let response, _): .success(response)
        case .nothingBack:
            .failure(KKPushError(
                code: "simulate-backend-answer", message: "The backend closed the connection without an answer.",
                fix: "Check that http://\(host):\(port) is the simulated backend."))
        case .failed(let error): .failure(error)
        }
    }

    private static func failure(_ what: String, host: String, port: Int, timeout: TimeInterval? = nil) -> KKPushError {
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK, let timeout {
            return KKPushError(
                code: "simulate-backend-timeout",
                message: "The simulated backend on \(host):\(port) did not answer within \(Int(timeout)) s (\(what == "recv" ? "waiting for its answer" : "sending the request")).",
                fix: "The machine is too slow or too busy for this many simulated phones: give fewer --devices, or build with -c release.")
        }
        let reason = String(cString: strerror(code))
        return KKPushError(
            code: "simulate-backend-unreachable", message: "HTTP to \(host):\(port) failed: \(what) (\(reason)).",
            fix: "Check that the simulated backend is running on http://\(host):\(port).")
    }

    /// A connected TCP socket with send and receive timeouts and TCP_NODELAY.
    private static func open(host: String, port: Int, timeout: TimeInterval) -> Result<Int32, KKPushError> {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return .failure(failure("socket", host: host, port: port)) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        var one: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0,
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0,
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
        else {
            let error = failure("setsockopt", host: host, port: port)
            close(fd)
            return .failure(error)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            return .failure(KKPushError(
                code: "simulate-backend-host", message: "'\(host)' is not an IPv4 address.",
                fix: "The simulated backend listens on 127.0.0.1."))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = failure("connect", host: host, port: port)
            close(fd)
            return .failure(error)
        }
        return .success(fd)
    }

    /// Writes the request and reads one answer: up to its Content-Length, or to the close if it has none.
    private static func attempt(_ request: [UInt8], fd: Int32, host: String, port: Int, timeout: TimeInterval) -> Attempt {
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { socketSend(fd, $0.baseAddress! + sent, request.count - sent) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EPIPE || errno == ECONNRESET) && sent == 0 { return .nothingBack }
            guard n > 0 else { return .failed(failure("send", host: host, port: port, timeout: timeout)) }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var expectedTotal: Int? = nil
        var closedByServer = false
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == ECONNRESET && received.isEmpty { return .nothingBack }
            guard n >= 0 else { return .failed(failure("recv", host: host, port: port, timeout: timeout)) }
            if n == 0 {
                if received.isEmpty { return .nothingBack }
                closedByServer = true
                break
            }
            received += buffer[0..<n]
            if expectedTotal == nil, let (headerEnd, length) = headerInfo(received) { expectedTotal = headerEnd + length }
            if let expectedTotal, received.count >= expectedTotal { break }
            guard received.count <= 16 << 20 else {
                return .failed(KKPushError(code: "simulate-backend-answer", message: "The backend's answer is larger than 16 MB.",
                    fix: "Ask for a smaller window (past_days/future_days)."))
            }
        }
        guard let (headerEnd, head) = header(received),
            let statusLine = head.split(separator: "\r\n").first,
            let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else {
            return .failed(KKPushError(code: "simulate-backend-answer", message: "The backend's answer is not HTTP/1.1.",
                fix: "Check that http://\(host):\(port) is the simulated backend."))
        }
        let bodyEnd = expectedTotal.map { min($0, received.count) } ?? received.count
        // Kept open only if the answer had a length, the server did not close, and did not say it would.
        let keepOpen = expectedTotal != nil && !closedByServer && !saysClose(head)
        return .answer(Response(status: status, body: Data(received[headerEnd..<bodyEnd])), keepOpen: keepOpen)
    }

    /// True if the header has `Connection: close`.
    static func saysClose(_ head: String) -> Bool {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "connection",
                parts[1].lowercased().contains("close")
            {
                return true
            }
        }
        return false
    }

    /// The offset of the body and the Content-Length, once the header is complete. A Content-Length
    /// that is not a number from 0 to 16 MB (negative, or near `Int.max`, where `end + length` would
    /// overflow) counts as none: the answer is read to the close, within the 16 MB bound.
    static func headerInfo(_ bytes: [UInt8]) -> (Int, Int)? {
        guard let (end, head) = header(bytes) else { return nil }
        for line in head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length",
                let n = Int(parts[1].filter { $0 != " " && $0 != "\t" }), (0...(16 << 20)).contains(n)
            {
                return (end, n)
            }
        }
        return nil
    }

    static func header(_ bytes: [UInt8]) -> (Int, String)? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return (i + 4, String(decoding: bytes[0..<i], as: UTF8.self))
        }
        return nil
    }
}

/// `send(2)` without SIGPIPE (the name `send` is taken by the client's method).
private func socketSend(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        return Glibc.send(fd, buffer, count, Int32(MSG_NOSIGNAL))
    #else
        return Darwin.send(fd, buffer, count, 0)
    #endif
}
