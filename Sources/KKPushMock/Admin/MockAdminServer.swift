import Foundation
import KKPushCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The mock's admin API: plain HTTP/1.1 on 127.0.0.1 (another address only with an admin token), its
/// own port, JSON in and out (snake_case).
///
/// Guards: a request with an `Origin` header (sent by browsers) is refused with 403, so a web page
/// cannot drive the mock through its fixed loopback port; with an admin token configured, every
/// request needs `Authorization: Bearer <token>` (else 401); bodies are capped at 1 MiB (413);
/// `POST /keys` reads a `file` only from inside the certificates folder.
///
/// Endpoints:
/// - `GET /health` → `{"status":"ok","deliveries":N,"now_ms":T}`
/// - `GET /keys`, `POST /keys` `{"key_id","team_id","pem" | "file","environments":["sandbox"]}` →
///   register a provider key (environments empty or absent: both; `file` relative to, and inside,
///   the certificates folder)
/// - `GET /devices`, `POST /devices` `{"environment","topic"}` → mint a simulated device
///   (`{"token","environment","topic"}`); with `"token"` → register that token
/// - `DELETE /devices/<token>[?timestamp_ms=T&reason=Unregistered|ExpiredToken]` → unregister: pushes
///   get `410` with that timestamp (default: now)
/// - `GET /devices/<token>/notifications?after=N&wait_ms=W&limit=L` → the token's notifications
///   with sequence > N; if none, waits up to W ms (at most 60000) for one (long-poll). Answers
///   `{"notifications":[...],"last_sequence":S}`.
/// - `GET /log?apns_id=&apns_unique_id=&token=&limit=` → `{"notifications":[...]}` (newest `limit`,
///   default 100, oldest first)
/// - `GET /faults`, `POST /faults` (one fault or a list: `{"kind":"respond|delay|goaway|close|reset|stall",
///   "status","reason","delay_ms","after_streams","token" | "topic","count","skip"}`), `DELETE /faults`,
///   `DELETE /faults/<id>`
/// - `POST /reset` → forget devices, faults, the log, expired tokens and the clock offset (keys stay)
/// - `GET /clock`, `POST /clock` `{"advance_seconds":N}` → move the mock's clock (`{"now_ms":T}`)
/// - `POST /restart` → ``MockAPNsServer/restart()``: every APNs connection ends (graceful GOAWAY),
///   both APNs listeners listen again on the same ports; state kept. Answers when done:
///   `{"status":"restarted","sandbox_port":P,"production_port":Q}`
/// - `POST /tokens/expire` → ``MockAPNsServer/expireProviderTokens()``: every provider token seen so
///   far gets `ExpiredProviderToken` from now on (`{"expired":N}`)
///
/// A notification is `{"sequence","time" (ms),"environment","token","topic","push_type","priority",
/// "expiration","collapse_id","apns_id","apns_unique_id","payload" (the JSON text)}`. Errors answer
/// 400/401/403/404/405/413 with `{"error":{"code","message","fix"}}`.
enum MockAdminServer {
    static func bind(
        host: String, port: Int, group: any EventLoopGroup, state: MockState, hooks: AdminHooks, policy: AdminPolicy,
        logger: Logger
    ) async throws -> any Channel {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 64)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(state: state, hooks: hooks, policy: policy, logger: logger))
                }
            }
        do {
            return try await bootstrap.bind(host: host, port: port).get()
        } catch {
            throw KKPushError(
                code: "mock-bind", message: "Cannot listen on \(host):\(port) for the admin API.",
                fix: "\(error)".contains("UnknownHost")
                    ? "Give an address this machine has (admin_host / --admin-host), e.g. 127.0.0.1."
                    : "Choose another admin port (0 picks a free one) or stop what is using it.",
                underlying: "\(error)")
        }
    }
}

/// Who may use the admin API, and where `POST /keys` may read key files.
struct AdminPolicy: Sendable {
    /// The bearer token every request must carry, if any.
    var token: String?
    /// The certificates folder: the only place `POST /keys` reads a `file` from (nil: none).
    var keysDirectory: String?

    /// The 403, 401 or nil for a request's headers.
    func refusal(_ headers: HTTPHeaders) -> (HTTPResponseStatus, KKPushError)? {
        if headers.contains(name: "origin") {
            return (.forbidden, KKPushError(
                code: "admin-origin",
                message: "Requests with an Origin header (from a web page) are refused: a page in a browser could otherwise change the mock through its fixed loopback port.",
                fix: "Call the admin API from curl, a script or a test, without an Origin header."))
        }
        guard let token else { return nil }
        let given = headers.first(name: "authorization").flatMap { value -> String? in
            let v = value.trimmingCharacters(in: .whitespaces)
            guard v.count > 7, v.prefix(7).lowercased() == "bearer " else { return nil }
            return v.dropFirst(7).trimmingCharacters(in: .whitespaces)
        }
        guard let given, Self.constantTimeEqual(Array(given.utf8), Array(token.utf8)) else {
            return (.unauthorized, KKPushError(
                code: "admin-unauthorized",
                message: given == nil ? "The admin API needs the admin token." : "The admin token given is not the mock's.",
                fix: "Send Authorization: Bearer <token>, the --admin-token (or KKPUSH_ADMIN_TOKEN) the mock was started with."))
        }
        return nil
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var diff = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            diff |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return diff == 0
    }

    /// The key file `name` resolved inside the certificates folder, or a KKPushError naming the rule.
    func keyFile(_ name: String) throws -> String {
        guard let dir = keysDirectory else {
            throw KKPushError(
                code: "admin-key-file", message: "Key files are read only from the certificates folder, and the mock has none.",
                fix: "Send the key as \"pem\" instead of \"file\".")
        }
        let base = URL(fileURLWithPath: dir).standardizedFileURL.resolvingSymlinksInPath().path
        let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : URL(fileURLWithPath: base).appendingPathComponent(name)
        let path = url.standardizedFileURL.resolvingSymlinksInPath().path
        guard path.hasPrefix(base.hasSuffix("/") ? base : base + "/") else {
            throw KKPushError(
                code: "admin-key-file-outside",
                message: "The key file '\(name)' is outside the certificates folder; POST /keys reads key files only from inside it.",
                fix: "Put the .p8 in the certificates folder and give its name, or send the key as \"pem\".")
        }
        return path
    }
}

/// What the admin API asks of the server itself (set once the server exists).
final class AdminHooks: Sendable {
    typealias Restart = @Sendable () async throws -> (sandboxPort: Int, productionPort: Int)
    private let restartHook = Mutex<Restart?>(nil)

    func setRestart(_ hook: @escaping Restart) { restartHook.withLock { $0 = hook } }

    var restart: Restart? { restartHook.withLock { $0 } }
}

/// Answers one admin connection's requests.
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maximumBody = 1 << 20
    static let maximumWaitMs = 60_000

    private let state: MockState
    private let hooks: AdminHooks
    private let policy: AdminPolicy
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false
    /// The request was refused on its headers: its body is not kept.
    private var refused: (HTTPResponseStatus, KKPushError)?

    /// Without `hooks` (no server behind it), `POST /restart` answers 503.
    init(state: MockState, hooks: AdminHooks = AdminHooks(), policy: AdminPolicy = AdminPolicy(), logger: Logger) {
        self.state = state
        self.hooks = hooks
        self.policy = policy
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = nil
            tooLarge = false
            refused = policy.refusal(h.headers)
        case .body(var b):
            if refused != nil { return }
            if (body?.readableBytes ?? 0) + b.readableBytes > Self.maximumBody {
                tooLarge = true
                body = nil
            } else if !tooLarge {
                if body == nil { body = b } else { body!.writeBuffer(&b) }
            }
        case .end:
            guard let head else { return }
            self.head = nil
            if let (status, error) = refused {
                refused = nil
                logger.debug("admin request refused", metadata: ["code": "\(error.code)"])
                respond(context, head: head, status: status, error: error)
                return
            }
            if tooLarge {
                respond(context, head: head, status: .payloadTooLarge, error: KKPushError(
                    code: "admin-body-too-large", message: "The request body is over 1 MiB.", fix: "Send less."))
                return
            }
            let bytes = body.map { Array($0.readableBytesView) } ?? []
            handle(context, head: head, body: bytes)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("admin connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // MARK: Routing

    private func handle(_ context: ChannelHandlerContext, head: HTTPRequestHead, body: [UInt8]) {
        let (path, query) = Self.split(head.uri)
        let parts = path.split(separator: "/").map(String.init)
        do {
            switch (head.method, parts.first ?? "", parts.count) {
            case (.GET, "health", 1):
                struct Health: Encodable { var status: String; var deliveries: Int; var now_ms: Int64 }
                respond(context, head: head, json: Health(status: "ok", deliveries: state.logCount, now_ms: state.clock.now().millisecondsSince1970))
            case (.GET, "keys", 1):
                struct KeyOut: Encodable { var key_id: String; var team_id: String; var environments: [String] }
                respond(context, head: head, json: ["keys": state.keys.map {
                    KeyOut(key_id: $0.keyID, team_id: $0.teamID, environments: $0.environments.map(\.rawValue).sorted())
                }])
            case (.POST, "keys", 1):
                var entry = try decode(KeyFileEntry.self, body, shape: KeyFileEntry.shape)
                if entry.pem == nil, let file = entry.file { entry.file = try policy.keyFile(file) }
                let key = try entry.resolve(relativeTo: URL(fileURLWithPath: policy.keysDirectory ?? "/"))
                try state.register(key)
                respond(context, head: head, status: .created, json: ["key_id": key.keyID])
            case (.GET, "devices", 1):
                respond(context, head: head, json: ["devices": state.devices])
            case (.POST, "devices", 1):
                struct DeviceIn: Decodable { var token: String?; var environment: String; var topic: String? }
                let d = try decode(DeviceIn.self, body, shape: .fields(["token", "environment", "topic"]))
                guard let env = APNsEnvironment(lenient: d.environment) else {
                    throw KKPushError(code: "admin-environment", message: "environment '\(d.environment)' is unknown.", fix: "Use sandbox or production.")
                }
                if let token = d.token {
                    guard DeviceToken.isWellFormed(token) else {
                        throw KKPushError(code: "admin-token", message: "token is not a device token.", fix: "Give 64 to 400 hex digits (an even number).")
                    }
                    let reg = MockDeviceRegistration(token: token, environment: env, topic: d.topic)
                    state.register(reg)
                    respond(context, head: head, status: .created, json: reg)
                } else {
                    guard let topic = d.topic, !topic.isEmpty else {
                        throw KKPushError(code: "admin-topic", message: "topic is missing; a minted device belongs to an app.", fix: "Give the app's bundle id as topic.")
                    }
                    let device = state.mintDevice(environment: env, topic: topic)
                    respond(context, head: head, status: .created, json: MockDeviceRegistration(token: device.token, environment: env, topic: topic))
                }
            case (.DELETE, "devices", 2):
                try Self.checkQuery(query, allowed: ["timestamp_ms", "reason"])
                let token = parts[1].lowercased()
                var date = state.clock.now()
                if let t = query["timestamp_ms"] {
                    guard let ms = Int64(t), (0...253_402_300_799_999).contains(ms) else {
                        throw KKPushError(
                            code: "admin-timestamp", message: "timestamp_ms '\(t)' is not milliseconds between 1970 and 9999.",
                            fix: "Give milliseconds since 1970, e.g. 1700000000000.")
                    }
                    date = Date(timeIntervalSince1970: Double(ms) / 1000)
                }
                let reason = APNsReason(rawValue: query["reason"] ?? "Unregistered")
                guard reason == .unregistered || reason == .expiredToken else {
                    throw KKPushError(code: "admin-reason", message: "reason '\(reason)' is not a 410 reason.", fix: "Use Unregistered or ExpiredToken.")
                }
                guard state.unregister(token: token, at: date, reason: reason) else {
                    respond(context, head: head, status: .notFound, error: KKPushError(
                        code: "admin-device-unknown", message: "The mock does not know that token.", fix: "Mint or register it first (POST /devices)."))
                    return
                }
                respond(context, head: head, json: state.device(token))
            case (.GET, "devices", 3) where parts[2] == "notifications":
                try longPoll(context, head: head, token: parts[1].lowercased(), query: query)
            case (.GET, "log", 1):
                try Self.checkQuery(query, allowed: ["limit", "apns_id", "apns_unique_id", "token"])
                let limit = try Self.int(query, "limit", default: 100, range: 1...100_000)
                let apnsID = query["apns_id"]?.lowercased()
                let uniqueID = query["apns_unique_id"]?.lowercased()
                let token = query["token"]?.lowercased()
                let found = state.log(limit: limit) { n in
                    (apnsID == nil || n.apnsID == apnsID) && (uniqueID == nil || n.apnsUniqueID == uniqueID)
                        && (token == nil || n.token == token)
                }
                respond(context, head: head, json: ["notifications": found])
            case (.GET, "faults", 1):
                respond(context, head: head, json: ["faults": state.faults])
            case (.POST, "faults", 1):
                let faults: [MockFault]
                if body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "[") {
                    faults = try decode([MockFault].self, body, shape: .array(MockFault.shape))
                } else {
                    faults = [try decode(MockFault.self, body, shape: MockFault.shape)]
                }
                for f in faults { try f.validate() }
                let stored = try faults.map { try state.add($0) }
                respond(context, head: head, status: .created, json: ["faults": stored])
            case (.DELETE, "faults", 1):
                state.removeFaults()
                respond(context, head: head, json: ["faults": [MockFault]()])
            case (.DELETE, "faults", 2):
                state.removeFaults(id: parts[1])
                respond(context, head: head, json: ["faults": state.faults])
            case (.POST, "reset", 1):
                state.reset()
                respond(context, head: head, json: ["status": "reset"])
            case (.POST, "restart", 1):
                restart(context, head: head)
            case (.POST, "tokens", 2) where parts[1] == "expire":
                respond(context, head: head, json: ["expired": state.expireProviderTokens()])
            case (.GET, "clock", 1):
                respond(context, head: head, json: ["now_ms": state.clock.now().millisecondsSince1970])
            case (.POST, "clock", 1):
                struct ClockIn: Decodable { var advance_seconds: Double }
                let c = try decode(ClockIn.self, body, shape: .fields(["advance_seconds"]))
                guard c.advance_seconds.isFinite, abs(c.advance_seconds) <= 10 * 365 * 86400 else {
                    throw KKPushError(code: "admin-clock", message: "advance_seconds is out of range.", fix: "Give seconds within ten years.")
                }
                state.clock.advance(by: c.advance_seconds)
                respond(context, head: head, json: ["now_ms": state.clock.now().millisecondsSince1970])
            case (_, "health", 1), (_, "keys", 1), (_, "devices", _), (_, "log", 1), (_, "faults", _), (_, "reset", 1),
                (_, "clock", 1), (_, "restart", 1), (_, "tokens", 2):
                respond(context, head: head, status: .methodNotAllowed, error: KKPushError(
                    code: "admin-method", message: "\(head.method) is not allowed on \(path).", fix: "See the admin API's endpoint list."))
            default:
                respond(context, head: head, status: .notFound, error: KKPushError(
                    code: "admin-not-found", message: "No admin endpoint \(head.method) \(path).",
                    fix: "Use /health, /keys, /devices, /log, /faults, /reset, /clock, /restart or /tokens/expire."))
            }
        } catch let error as KKPushError {
            respond(context, head: head, status: error.code == "admin-key-file-outside" ? .forbidden : .badRequest, error: error)
        } catch {
            respond(context, head: head, status: .badRequest, error: KKPushError(
                code: "admin-bad-request", message: "\(error)", fix: "Check the JSON body against the admin API's description."))
        }
    }

    /// Restarts the APNs listeners off the event loop and answers when done.
    private func restart(_ context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard let hook = hooks.restart else {
            respond(context, head: head, status: .serviceUnavailable, error: KKPushError(
                code: "admin-restart-unavailable", message: "The server cannot be restarted from here.",
                fix: "Restart it through MockAPNsServer.restart()."))
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        Task {
            let result: Result<(sandboxPort: Int, productionPort: Int), any Error>
            do { result = .success(try await hook()) } catch { result = .failure(error) }
            eventLoop.execute {
                let (handler, context) = loopBound.value
                guard context.channel.isActive else { return }
                switch result {
                case .success(let ports):
                    struct Out: Encodable { var status: String; var sandbox_port: Int; var production_port: Int }
                    handler.respond(
                        context, head: head,
                        json: Out(status: "restarted", sandbox_port: ports.sandboxPort, production_port: ports.productionPort))
                case .failure(let error as KKPushError):
                    handler.respond(context, head: head, status: .internalServerError, error: error)
                case .failure(let error):
                    handler.respond(context, head: head, status: .internalServerError, error: KKPushError(
                        code: "admin-restart", message: "The restart failed: \(error).", fix: "Check the ports are free."))
                }
            }
        }
    }

    private func longPoll(_ context: ChannelHandlerContext, head: HTTPRequestHead, token: String, query: [String: String]) throws {
        try Self.checkQuery(query, allowed: ["after", "wait_ms", "limit"])
        let after = UInt64(try Self.int(query, "after", default: 0, range: 0...Int.max))
        let waitMs = try Self.int(query, "wait_ms", default: 0, range: 0...Self.maximumWaitMs)
        let limit = try Self.int(query, "limit", default: 1000, range: 1...100_000)
        struct Out: Encodable { var notifications: [DeliveredNotification]; var last_sequence: UInt64 }
        @Sendable func out(_ list: [DeliveredNotification]) -> Out {
            Out(notifications: list, last_sequence: list.last?.sequence ?? after)
        }
        if waitMs == 0 {
            respond(context, head: head, json: out(state.notifications(token: token, after: after, limit: limit)))
            return
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        let found = state.notificationsOrWait(token: token, after: after, limit: limit, promise: promise)
        if !found.isEmpty {
            promise.succeed()
            respond(context, head: head, json: out(found))
            return
        }
        let timeout = context.eventLoop.scheduleTask(in: .milliseconds(Int64(waitMs))) { promise.succeed() }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let state = self.state
        promise.futureResult.whenComplete { _ in
            timeout.cancel()
            state.cancelWait(promise)
            let (handler, context) = loopBound.value
            guard context.channel.isActive else { return }
            handler.respond(context, head: head, json: out(state.notifications(token: token, after: after, limit: limit)))
        }
    }

    // MARK: Helpers

    /// Decodes a request body strictly: invalid JSON (with its position), a key `shape` does not know (with
    /// the nearest known one) and a wrong type or value (with the field's path) are 400 `admin-json`.
    private func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], shape: JSONInput.Shape) throws -> T {
        guard !body.isEmpty else {
            throw KKPushError(code: "admin-body-missing", message: "The request has no JSON body.", fix: "Send a JSON body.")
        }
        do {
            return try JSONInput.decodeStrict(
                T.self, from: body, shape: shape, what: "The JSON body", codePrefix: "admin-json",
                format: "a JSON object as the admin API describes")
        } catch let error as KKPushError {
            throw KKPushError(code: "admin-json", message: error.message, fix: error.fix)
        }
    }

    /// Refuses a query parameter the endpoint does not read (a typo would otherwise be ignored), naming the
    /// nearest known one.
    static func checkQuery(_ query: [String: String], allowed: [String]) throws {
        for key in query.keys.sorted() where !key.isEmpty && !allowed.contains(key) {
            let near = JSONInput.nearest(key, among: allowed).map { "; did you mean `\($0)`?" } ?? ""
            throw KKPushError(
                code: "admin-query", message: "unknown query parameter `\(key)`\(near)",
                fix: "Use only \(allowed.joined(separator: ", ")) here.")
        }
    }

    static func int(_ query: [String: String], _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = query[name] else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw KKPushError(
                code: "admin-query", message: "\(name)=\(text) is not a number in \(range.lowerBound)...\(range.upperBound).",
                fix: "Give \(name) as a whole number in range.")
        }
        return n
    }

    static func split(_ uri: String) -> (String, [String: String]) {
        guard let q = uri.firstIndex(of: "?") else { return (uri, [:]) }
        var query: [String: String] = [:]
        for pair in uri[uri.index(after: q)...].split(separator: "&") {
            // Empty pieces kept: `?=` has an empty key, not no key (kv[0] always exists).
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
            let value = kv.count > 1 ? (String(kv[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(kv[1])) : ""
            query[key] = value
        }
        return (String(uri[..<q]), query)
    }

    private func respond<T: Encodable>(_ context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus = .ok, json: T) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(json)) ?? Data("{}".utf8)
        write(context, head: head, status: status, body: data)
    }

    private func respond(_ context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, error: KKPushError) {
        struct Body: Encodable { var code: String; var message: String; var fix: String? }
        respond(context, head: head, status: status, json: ["error": Body(code: error.code, message: error.message, fix: error.fix)])
    }

    private func write(_ context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, body: Data) {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.count + 1))
        let keepAlive = head.isKeepAlive
        headers.add(name: "connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: body.count + 1)
        buffer.writeBytes(body)
        buffer.writeString("\n")
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { loopBound.value.close(promise: nil) }
        }
    }
}
