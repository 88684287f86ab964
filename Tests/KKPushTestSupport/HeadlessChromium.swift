public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A real headless Chromium (Debian's `chromium`) driven over the Chrome DevTools Protocol: started as a child
/// process with its own temporary profile, one page attached (a flattened CDP session), spoken to over a
/// WebSocket written with SwiftNIO's NIOWebSocket. Every wait is bounded; ``stop()`` ends the browser and
/// removes its profile.
public final class HeadlessChromium: @unchecked Sendable {
    /// A JSON value Chromium returned (`Runtime.evaluate` with `returnByValue`).
    public struct Value: @unchecked Sendable, CustomStringConvertible {
        /// What `JSONSerialization` made of it (`NSNull` for null, nil for undefined).
        public let raw: Any?
        public var string: String? { raw as? String }
        public var bool: Bool? { raw as? Bool }
        public var int: Int? { (raw as? NSNumber)?.intValue }
        public var array: [Any]? { raw as? [Any] }
        public var isUndefined: Bool { raw == nil }
        public var description: String { raw.map { "\($0)" } ?? "undefined" }
    }

    /// A CDP command answered with an error, an exception in evaluated script, or a wait that ran out.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    /// The browser executable: `$KKPUSH_CHROMIUM`, else `chromium` or `chromium-browser` in /usr/bin (nil: none).
    public static let executable: String? = {
        if let given = ProcessInfo.processInfo.environment["KKPUSH_CHROMIUM"], !given.isEmpty { return given }
        return ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }()

    /// The browser's temporary profile (and its stderr log, `chromium.log`).
    public let profile: URL
    private let process: ChildProcess
    private let connection: CDPConnection
    private let sessionID: String

    private init(profile: URL, process: ChildProcess, connection: CDPConnection, sessionID: String) {
        self.profile = profile
        self.process = process
        self.connection = connection
        self.sessionID = sessionID
    }

    /// Starts Chromium (`--headless=new`, a fresh profile, DevTools on a free port), opens a page of
    /// `width`×`height` CSS pixels and attaches to it. Throws if it does not come up within `timeout` seconds.
    public static func start(width: Int = 1280, height: Int = 1500, timeout: TimeInterval = 30) async throws
        -> HeadlessChromium
    {
        guard let executable else {
            throw Failure(
                description:
                    "no chromium: run bash .ci/setup --tests (it installs Debian's chromium), or set KKPUSH_CHROMIUM")
        }
        let profile = try makeTemporaryDirectory(prefix: "kkpush-chromium")
        let arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
            "--remote-debugging-port=0", "--user-data-dir=\(profile.path)", "--window-size=\(width),\(height)",
            "about:blank",
        ]
        let logPath = profile.appendingPathComponent("chromium.log").path
        let process = try ChildProcess(executable, arguments, input: .null, output: .file(logPath))
        func fail(_ text: String) async -> Failure {
            await Self.end(process)
            let tail = (try? String(contentsOfFile: logPath, encoding: .utf8)).map { String($0.suffix(2000)) } ?? ""
            try? FileManager.default.removeItem(at: profile)
            return Failure(description: "\(text)\nchromium's log:\n\(tail)")
        }
        // DevToolsActivePort: the port on its first line, the browser's WebSocket path on the second.
        let portFile = profile.appendingPathComponent("DevToolsActivePort").path
        let deadline = Date().addingTimeInterval(timeout)
        var lines: [String] = []
        while Date() < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8) {
                lines = text.split(separator: "\n").map(String.init)
                if lines.count >= 2 { break }
            }
            if let end = process.poll() { throw await fail("chromium exited (status \(end.status))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard lines.count >= 2, let port = Int(lines[0]) else {
            throw await fail("chromium wrote no DevToolsActivePort within \(Int(timeout)) s")
        }
        do {
            let connection = try await CDPConnection.connect(port: port, path: lines[1])
            let target = try await connection.command("Target.createTarget", ["url": "about:blank"], timeout: timeout)
            guard let targetID = (target["result"] as? [String: Any])?["targetId"] as? String else {
                throw Failure(description: "Target.createTarget gave no targetId: \(target)")
            }
            let attached = try await connection.command(
                "Target.attachToTarget", ["targetId": targetID, "flatten": true], timeout: timeout)
            guard let session = (attached["result"] as? [String: Any])?["sessionId"] as? String else {
                throw Failure(description: "Target.attachToTarget gave no sessionId: \(attached)")
            }
            let browser = HeadlessChromium(
                profile: profile, process: process, connection: connection, sessionID: session)
            _ = try await browser.send(
                "Emulation.setDeviceMetricsOverride",
                ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false])
            return browser
        } catch {
            throw await fail("cannot attach to chromium over CDP: \(error)")
        }
    }

    /// Sends a CDP command to the page; its `result` object.
    @discardableResult
    public func send(_ method: String, _ params: [String: Any] = [:], timeout: TimeInterval = 15) async throws
        -> [String: Any]
    {
        let answer = try await connection.command(method, params, sessionID: sessionID, timeout: timeout)
        if let error = answer["error"] as? [String: Any] {
            throw Failure(description: "\(method): \(error["message"] ?? error)")
        }
        return answer["result"] as? [String: Any] ?? [:]
    }

    /// Evaluates `expression` in the page (a promise is awaited) and returns its JSON value; an exception
    /// thrown by the script is a ``Failure``.
    public func evaluate(_ expression: String, timeout: TimeInterval = 15) async throws -> Value {
        let result = try await send(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true],
            timeout: timeout)
        if let details = result["exceptionDetails"] as? [String: Any] {
            let text = (details["exception"] as? [String: Any])?["description"] ?? details["text"] ?? details
            throw Failure(description: "script failed: \(text)\n\(expression)")
        }
        return Value(raw: (result["result"] as? [String: Any])?["value"])
    }

    /// Evaluates `expression` every 100 ms until it gives a truthy value (returned); a ``Failure`` naming
    /// `what` after `timeout` seconds.
    @discardableResult
    public func waitFor(_ what: String, _ expression: String, timeout: TimeInterval = 15) async throws -> Value {
        let deadline = Date().addingTimeInterval(timeout)
        var last = Value(raw: nil)
        while Date() < deadline {
            last = try await evaluate(expression)
            switch last.raw {
            case nil, is NSNull: break
            case let b as Bool where !b: break
            case let s as String where s.isEmpty: break
            default: return last
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "timed out after \(Int(timeout)) s waiting for \(what) (last: \(last))")
    }

    /// Opens `url` and waits until the document has loaded.
    public func navigate(_ url: String, timeout: TimeInterval = 20) async throws {
        let result = try await send("Page.navigate", ["url": url], timeout: timeout)
        if let error = result["errorText"] as? String { throw Failure(description: "navigate \(url): \(error)") }
        try await waitFor(
            "\(url) to load", "location.href !== 'about:blank' && document.readyState === 'complete'",
            timeout: timeout)
    }

    /// A PNG of the page as shown.
    public func screenshot() async throws -> Data {
        let result = try await send("Page.captureScreenshot", ["format": "png"], timeout: 30)
        guard let text = result["data"] as? String, let data = Data(base64Encoded: text) else {
            throw Failure(description: "Page.captureScreenshot gave no PNG")
        }
        return data
    }

    /// Closes the browser (CDP `Browser.close`, then SIGTERM, then SIGKILL, each bounded) and removes its profile.
    public func stop() async {
        _ = try? await connection.command("Browser.close", [:], timeout: 3)
        await connection.close()
        await Self.end(process)
        try? FileManager.default.removeItem(at: profile)
    }

    private static func end(_ process: ChildProcess) async {
        if await process.end(within: 3) != nil { return }
        process.signal(SIGTERM)
        if await process.end(within: 5) != nil { return }
        process.signal(SIGKILL)
        _ = await process.end(within: 5)
    }

    // The browser (ChildProcess) is killed and reaped when it is dropped, if it still runs.
}

/// One WebSocket connection to Chromium's DevTools endpoint: commands numbered, answers matched by id,
/// events ignored.
final class CDPConnection: @unchecked Sendable {
    fileprivate let lock = NSLock()
    private var nextID = 0
    private var pending: [Int: CheckedContinuation<Data, any Error>] = [:]
    fileprivate var closed: (any Error)?
    private var writer: NIOAsyncChannelOutboundWriter<WebSocketFrame>?
    private let channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>
    private var reader: Task<Void, Never>?

    private init(channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>) { self.channel = channel }

    enum Upgrade {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused
    }

    /// Connects to `ws://127.0.0.1:port/path` and starts reading.
    static func connect(port: Int, path: String) async throws -> CDPConnection {
        let upgrade: EventLoopFuture<Upgrade> = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
                        maxFrameSize: 1 << 26,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                Upgrade.websocket(
                                    try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                                        wrappingChannelSynchronously: channel))
                            }
                        })
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: "127.0.0.1:\(port)")
                    headers.add(name: "Content-Length", value: "0")
                    let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration(
                        upgradeRequestHead: head, upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in
                            channel.eventLoop.makeCompletedFuture { Upgrade.refused }
                        })
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: .init(upgradeConfiguration: configuration))
                }
            }
        // The upgrade's answer, waited for at most 10 s.
        let result = try await withDeadline(seconds: 10, what: "WebSocket upgrade") { try await upgrade.get() }
        guard case .websocket(let channel) = result else {
            throw HeadlessChromium.Failure(description: "the DevTools endpoint refused the WebSocket upgrade")
        }
        let connection = CDPConnection(channel: channel)
        let ready = AsyncStream<Void>.makeStream()
        connection.reader = Task { await connection.run(ready: ready.continuation) }
        for await _ in ready.stream { break }
        if let closed = connection.lock.withLock({ connection.closed }) { throw closed }
        return connection
    }

    /// `body`'s result, or a ``HeadlessChromium/Failure`` after `seconds` (the body is then left to end on its own).
    static func withDeadline<T: Sendable>(
        seconds: TimeInterval, what: String, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let once = NSLock()
        nonisolated(unsafe) var done = false
        return try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
            @Sendable func finish(_ result: Result<T, any Error>) {
                let first = once.withLock { () -> Bool in
                    if done { return false }
                    done = true
                    return true
                }
                if first { c.resume(with: result) }
            }
            Task {
                do {
                    finish(.success(try await body()))
                } catch {
                    finish(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                finish(.failure(HeadlessChromium.Failure(description: "no \(what) within \(Int(seconds)) s")))
            }
        }
    }

    private func run(ready: AsyncStream<Void>.Continuation) async {
        // However it ends, `connect` stops waiting.
        defer { ready.finish() }
        do {
            try await channel.executeThenClose { inbound, outbound in
                lock.withLock { writer = outbound }
                ready.yield()
                ready.finish()
                var message = ByteBuffer()
                for try await frame in inbound {
                    switch frame.opcode {
                    case .text, .continuation:
                        var data = frame.unmaskedData
                        message.writeBuffer(&data)
                        if frame.fin {
                            deliver(Data(message.readableBytesView))
                            message.clear()
                        }
                    case .ping:
                        try await outbound.write(
                            WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
                    case .connectionClose:
                        return
                    default:
                        break
                    }
                }
            }
        } catch {
            finish(error)
            return
        }
        finish(HeadlessChromium.Failure(description: "the DevTools connection closed"))
    }

    private func deliver(_ data: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let id = object["id"] as? Int
        else { return }
        let waiter = lock.withLock { pending.removeValue(forKey: id) }
        waiter?.resume(returning: data)
    }

    private func finish(_ error: any Error) {
        let waiters = lock.withLock { () -> [CheckedContinuation<Data, any Error>] in
            closed = closed ?? error
            writer = nil
            defer { pending.removeAll() }
            return Array(pending.values)
        }
        for w in waiters { w.resume(throwing: error) }
    }

    /// Sends one command (to the page's session if given) and waits up to `timeout` seconds for its answer.
    func command(_ method: String, _ params: [String: Any], sessionID: String? = nil, timeout: TimeInterval)
        async throws -> [String: Any]
    {
        let (id, writer, closed) = lock.withLock {
            () -> (Int, NIOAsyncChannelOutboundWriter<WebSocketFrame>?, (any Error)?) in
            nextID += 1
            return (nextID, self.writer, self.closed)
        }
        if let closed { throw closed }
        guard let writer else { throw HeadlessChromium.Failure(description: "the DevTools connection is not open") }
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let sessionID { message["sessionId"] = sessionID }
        let body = try JSONSerialization.data(withJSONObject: message)
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            lock.withLock { pending[id] = continuation }
            Task {
                do {
                    try await writer.write(
                        WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: body)))
                } catch {
                    self.fail(id, error)
                }
            }
            Task {
                try? await Task.sleep(for: .seconds(timeout))
                self.fail(id, HeadlessChromium.Failure(description: "\(method): no answer within \(Int(timeout)) s"))
            }
        }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    private func fail(_ id: Int, _ error: any Error) {
        let waiter = lock.withLock { pending.removeValue(forKey: id) }
        waiter?.resume(throwing: error)
    }

    /// Closes the connection (bounded) and ends the reader.
    func close() async {
        try? await channel.channel.close()
        reader?.cancel()
        _ = await reader?.value
    }
}
