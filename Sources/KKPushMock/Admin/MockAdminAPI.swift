import Foundation
import KKPushCore
import KKPushHTTP
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// What the admin API asks of the server itself (set once the server exists).
final class AdminHooks: Sendable {
    typealias Restart = @Sendable () async throws -> (sandboxPort: Int, productionPort: Int)
    private let restartHook = Mutex<Restart?>(nil)
    private let endpointsHook = Mutex<[APNsEnvironment: APNsEndpoint]>([:])
    private let senderHook = Mutex<TestPushSender?>(nil)
    /// The web console's saved pushes.
    let savedPushes: MockSavedPushes

    init(savedPushes: MockSavedPushes? = nil) {
        // Without a file nothing can fail.
        self.savedPushes = savedPushes ?? (try! MockSavedPushes(file: nil))
    }

    func setRestart(_ hook: @escaping Restart) { restartHook.withLock { $0 = hook } }

    var restart: Restart? { restartHook.withLock { $0 } }

    /// The web console's test-push sender and the mock's own listeners it sends to.
    func setTestPush(_ sender: TestPushSender?, endpoints: [APNsEnvironment: APNsEndpoint]) {
        senderHook.withLock { $0 = sender }
        endpointsHook.withLock { $0 = endpoints }
    }

    var testPushSender: TestPushSender? { senderHook.withLock { $0 } }

    func endpoint(_ environment: APNsEnvironment) -> APNsEndpoint? { endpointsHook.withLock { $0[environment] } }
}

/// The admin API's answers: the guards (Origin, admin token, body size), then the routes.
struct MockAdminAPI: Sendable {
    static let maximumBody = 1 << 20
    static let maximumWaitMs = 60_000

    let state: MockState
    let hooks: AdminHooks
    let policy: AdminPolicy
    let logger: Logger
    /// False: a long poll (`wait_ms`) is answered at once with what is there (the socket-free exchange).
    var longPollWaits = true

    /// Without `hooks` (no server behind it), `POST /restart` answers 503.
    init(
        state: MockState, hooks: AdminHooks = AdminHooks(), policy: AdminPolicy = AdminPolicy(), logger: Logger,
        longPollWaits: Bool = true
    ) {
        self.state = state
        self.hooks = hooks
        self.policy = policy
        self.logger = logger
        self.longPollWaits = longPollWaits
    }

    /// The answer to one request.
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        let isConsoleFile = request.method == .GET && MockConsole.files[request.path] != nil
        if let (status, error) = policy.refusal(request.headers, needsToken: !isConsoleFile) {
            logger.debug("admin request refused", metadata: ["code": "\(error.code)"])
            return Self.error(status, error)
        }
        if request.bodyTooLarge {
            return Self.error(
                .payloadTooLarge,
                KKPushError(
                    code: .adminBodyTooLarge, message: "The request body is over 1 MiB.", fix: "Send less."))
        }
        return await routes().respond(to: request)
    }

    /// An answer: `value` as JSON (``JSONWriter``) and a newline.
    static func json(_ value: some Encodable, status: HTTPResponseStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, body: JSONWriter.encode(value) + [0x0A])
    }

    /// `{"error": {"code", "message", "fix"}}`.
    static func error(_ status: HTTPResponseStatus, _ error: KKPushError) -> HTTPResponse {
        struct Body: Encodable {
            var code: String
            var message: String
            var fix: String?
        }
        return json(["error": Body(code: error.code.rawValue, message: error.message, fix: error.fix)], status: status)
    }

    /// A refusal a handler throws: its status and error.
    struct Refusal: Error {
        var status: HTTPResponseStatus
        var error: KKPushError
    }

    // MARK: Routes

    func routes() -> HTTPRouter {
        var router = HTTPRouter(
            notFound: { request in
                Self.error(
                    .notFound,
                    KKPushError(
                        code: .adminNotFound, message: "No admin endpoint \(request.method) \(request.path).",
                        fix:
                            "Use /health, /keys, /devices, /devices/{token}/state, /device-rules, /channels, /log, /deliveries/{sequence}/apns, /rejections, /faults, /reset, /clock, /restart, /tokens/expire or /metrics."
                    )
                )
            },
            methodNotAllowed: { request, _ in
                Self.error(
                    .methodNotAllowed,
                    KKPushError(
                        code: .adminMethod, message: "\(request.method) is not allowed on \(request.path).",
                        fix: "See the admin API's endpoint list."))
            },
            errorResponse: { _, error in
                switch error {
                case let refusal as Refusal:
                    return Self.error(refusal.status, refusal.error)
                case let error as KKPushError:
                    return Self.error(error.code == .adminKeyFileOutside ? .forbidden : .badRequest, error)
                default:
                    return Self.error(
                        .badRequest,
                        KKPushError(
                            code: .adminBadRequest, message: ErrorWords.describe(error),
                            fix: "Check the JSON body against the admin API's description."))
                }
            })
        let (state, policy) = (self.state, self.policy)
        router.get("/health") { _ in
            struct Health: Encodable {
                var status: String
                var deliveries: Int
                var now_ms: Int64
            }
            return Self.json(
                Health(status: "ok", deliveries: state.logCount, now_ms: state.clock.now().millisecondsSince1970))
        }
        router.get("/keys") { _ in
            struct KeyOut: Encodable {
                var key_id: String
                var team_id: String
                /// Empty: both environments.
                var environments: [String]
                /// The bundle ids a topic-specific key may serve; empty: any topic.
                var topics: [String]
            }
            return Self.json([
                "keys": state.keys.map {
                    KeyOut(
                        key_id: $0.keyID, team_id: $0.teamID, environments: $0.environments.map(\.rawValue).sorted(),
                        topics: $0.topics.sorted())
                }
            ])
        }
        router.post("/keys") { request in
            var entry = try Self.decode(KeyFileEntry.self, request.body, shape: KeyFileEntry.shape)
            if entry.pem == nil, let file = entry.file { entry.file = try policy.keyFile(file) }
            let key = try entry.resolve(relativeTo: URL(fileURLWithPath: policy.keysDirectory ?? "/"))
            try state.register(key)
            return Self.json(["key_id": key.keyID], status: .created)
        }
        router.get("/devices") { _ in Self.json(["devices": state.devices]) }
        router.post("/devices") { request in
            struct DeviceIn: Decodable {
                var token: String?
                var environment: String
                var topic: String?
                var connectivity: String?
                var app: String?
            }
            let d = try Self.decode(
                DeviceIn.self, request.body, shape: .fields(["token", "environment", "topic", "connectivity", "app"]))
            let (connectivity, app) = try Self.deviceState(connectivity: d.connectivity, app: d.app)
            guard let env = APNsEnvironment(lenient: d.environment) else {
                throw KKPushError(
                    code: .adminEnvironment, message: "environment '\(d.environment)' is unknown.",
                    fix: "Use sandbox or production.")
            }
            if let token = d.token {
                guard DeviceToken.isWellFormed(token) else {
                    throw KKPushError(
                        code: .adminToken, message: "token is not a device token.",
                        fix: "Give 64 to 400 hex digits (an even number).")
                }
                let reg = MockDeviceRegistration(
                    token: token, environment: env, topic: d.topic, connectivity: connectivity ?? .online,
                    app: app ?? .foreground)
                state.register(reg)
                return Self.json(reg, status: .created)
            }
            guard let topic = d.topic, !topic.isEmpty else {
                throw KKPushError(
                    code: .adminTopic, message: "topic is missing; a minted device belongs to an app.",
                    fix: "Give the app's bundle id as topic.")
            }
            let device = state.mintDevice(
                environment: env, topic: topic, connectivity: connectivity ?? .online, app: app ?? .foreground)
            return Self.json(state.device(device.token), status: .created)
        }
        addDeviceSideRoutes(to: &router)
        router.delete("/devices/:token") { request in
            let query = request.query
            try Self.checkQuery(query, allowed: ["timestamp_ms", "reason"])
            let token = request[parameter: "token"].lowercased()
            var date = state.clock.now()
            if let t = query["timestamp_ms"] {
                guard let ms = Int64(t), (0...253_402_300_799_999).contains(ms) else {
                    throw KKPushError(
                        code: .adminTimestamp,
                        message: "timestamp_ms '\(t)' is not milliseconds between 1970 and 9999.",
                        fix: "Give milliseconds since 1970, e.g. 1700000000000.")
                }
                date = Date(timeIntervalSince1970: Double(ms) / 1000)
            }
            let reason = APNsReason(rawValue: query["reason"] ?? "Unregistered")
            guard reason == .unregistered || reason == .expiredToken else {
                throw KKPushError(
                    code: .adminReason, message: "reason '\(reason)' is not a 410 reason.",
                    fix: "Use Unregistered or ExpiredToken.")
            }
            guard state.unregister(token: token, at: date, reason: reason) else {
                throw Refusal(
                    status: .notFound,
                    error: KKPushError(
                        code: .adminDeviceUnknown, message: "The mock does not know that token.",
                        fix: "Mint or register it first (POST /devices)."))
            }
            return Self.json(state.device(token))
        }
        router.get("/devices/:token/notifications") { request in
            try await longPoll(token: request[parameter: "token"].lowercased(), query: request.query)
        }
        router.get("/channels") { _ in Self.json(["channels": state.channels.all]) }
        router.post("/channels/:id/subscribers") { request in
            struct SubscriberIn: Decodable { var token: String }
            let s = try Self.decode(SubscriberIn.self, request.body, shape: .fields(["token"]))
            guard DeviceToken.isWellFormed(s.token) else {
                throw KKPushError(
                    code: .adminToken, message: "token is not a device token.",
                    fix: "Give 64 to 400 hex digits (an even number).")
            }
            let channel: MockChannel
            do {
                channel = try state.subscribe(token: s.token, toChannel: request[parameter: "id"])
            } catch let error as KKPushError {
                throw Refusal(status: error.code == .adminChannelEnvironment ? .conflict : .notFound, error: error)
            }
            return Self.json(channel, status: .created)
        }
        router.delete("/channels/:id/subscribers/:token") { request in
            guard
                state.channels.unsubscribe(
                    id: request[parameter: "id"], token: request[parameter: "token"].lowercased())
            else {
                throw Refusal(
                    status: .notFound,
                    error: KKPushError(
                        code: .adminChannelUnknown, message: "The mock has no channel with that id.",
                        fix: "GET /channels lists them."))
            }
            return Self.json(state.channels.all.first { $0.id == request[parameter: "id"] })
        }
        router.get("/log") { request in
            let query = request.query
            try Self.checkQuery(
                query,
                allowed: [
                    "limit", "after", "before", "apns_id", "apns_unique_id", "token", "topic", "channel_id", "state",
                ])
            let (after, before, limit) = try Self.pageQuery(query)
            let apnsID = query["apns_id"]?.lowercased()
            let uniqueID = query["apns_unique_id"]?.lowercased()
            let token = query["token"]?.lowercased()
            let topic = query["topic"]
            let channelID = query["channel_id"]
            let deliveryState = try query["state"].map { try Self.deliveryStateQuery($0) }
            let filtered = [apnsID, uniqueID, token, topic, channelID, deliveryState].contains { $0 != nil }
            let page = state.logPage(
                after: after, before: before, limit: limit,
                where: filtered
                    ? { n in
                        (apnsID == nil || n.apnsID == apnsID) && (uniqueID == nil || n.apnsUniqueID == uniqueID)
                            && (token == nil || n.token == token) && (topic == nil || n.topic == topic)
                            && (channelID == nil || n.channelID == channelID)
                            && (deliveryState == nil || n.state.matches(deliveryState!))
                    } : nil)
            return Self.json(PageOut(page, key: "notifications", limit: limit, after: after))
        }
        router.get("/deliveries/:sequence/apns") { request in
            try Self.simulatorFile(state: state, sequence: request[parameter: "sequence"])
        }
        router.get("/rejections") { request in
            let query = request.query
            try Self.checkQuery(query, allowed: ["limit", "after", "before", "token", "reason", "status"])
            let (after, before, limit) = try Self.pageQuery(query)
            let token = query["token"]?.lowercased()
            let reason = query["reason"]
            let status = try query["status"].map { _ in try Self.int(query, "status", default: 0, range: 100...599) }
            let filtered = token != nil || reason != nil || status != nil
            let page = state.rejectionPage(
                after: after, before: before, limit: limit,
                where: filtered
                    ? { r in
                        (token == nil || r.token == token) && (reason == nil || r.reason == reason)
                            && (status == nil || r.status == status)
                    } : nil)
            return Self.json(PageOut(page, key: "rejections", limit: limit, after: after))
        }
        addConsoleRoutes(to: &router)
        router.get("/faults") { _ in Self.json(["faults": state.faults]) }
        router.post("/faults") { request in
            let body = request.body
            let faults: [MockFault]
            if body.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "[") {
                faults = try Self.decode([MockFault].self, body, shape: .array(MockFault.shape))
            } else {
                faults = [try Self.decode(MockFault.self, body, shape: MockFault.shape)]
            }
            for f in faults { try f.validate() }
            let stored = try faults.map { try state.add($0) }
            return Self.json(["faults": stored], status: .created)
        }
        router.delete("/faults") { _ in
            state.removeFaults()
            return Self.json(["faults": [MockFault]()])
        }
        router.delete("/faults/:id") { request in
            state.removeFaults(id: request[parameter: "id"])
            return Self.json(["faults": state.faults])
        }
        router.post("/reset") { _ in
            state.reset()
            return Self.json(["status": "reset"])
        }
        router.post("/restart") { _ in try await restart() }
        router.post("/tokens/expire") { _ in Self.json(["expired": state.expireProviderTokens()]) }
        router.get("/metrics") { _ in
            state.settleDevices()
            return HTTPResponse.metrics(state.metrics.exposition())
        }
        router.get("/clock") { _ in Self.json(["now_ms": state.clock.now().millisecondsSince1970]) }
        router.post("/clock") { request in
            struct ClockIn: Decodable { var advance_seconds: Double }
            let c = try Self.decode(ClockIn.self, request.body, shape: .fields(["advance_seconds"]))
            guard c.advance_seconds.isFinite, abs(c.advance_seconds) <= 10 * 365 * 86400 else {
                throw KKPushError(
                    code: .adminClock, message: "advance_seconds is out of range.",
                    fix: "Give seconds within ten years.")
            }
            state.clock.advance(by: c.advance_seconds)
            state.settleDevices()
            return Self.json(["now_ms": state.clock.now().millisecondsSince1970])
        }
        return router
    }

    /// Restarts the APNs listeners and answers when done.
    /// `GET /deliveries/{sequence}/apns`: the delivery's payload as an Xcode Simulator `.apns` file
    /// (``SimulatorPushFile``), as an attachment named after its apns-id.
    static func simulatorFile(state: MockState, sequence text: String) throws -> HTTPResponse {
        guard let sequence = UInt64(text), sequence > 0 else {
            throw KKPushError(
                code: .adminBadRequest, message: "'\(text)' is not a delivery's sequence number.",
                fix: "Use the sequence of an entry of GET /log (1, 2, ...).")
        }
        guard let delivery = state.delivery(sequence: sequence) else {
            throw Refusal(
                status: .notFound,
                error: KKPushError(
                    code: .adminDeliveryUnknown,
                    message: "The delivery log holds no delivery \(sequence) (never made, or dropped from the ring).",
                    fix: "GET /log lists the deliveries held."))
        }
        let written: SimulatorPushFile.Written
        do {
            written = try SimulatorPushFile.make(
                payload: Array(delivery.payload.utf8), topic: delivery.topic,
                pushType: delivery.pushType.map { PushType($0) })
        } catch {
            throw Refusal(status: .unprocessableEntity, error: error)
        }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(
            name: "content-disposition", value: "attachment; filename=\"delivery-\(delivery.sequence).apns\"")
        for problem in written.problems { headers.add(name: "x-kkpush-warning", value: problem.message) }
        return HTTPResponse(status: .ok, headers: headers, body: written.bytes + [0x0A])
    }

    private func restart() async throws -> HTTPResponse {
        guard let hook = hooks.restart else {
            throw Refusal(
                status: .serviceUnavailable,
                error: KKPushError(
                    code: .adminRestartUnavailable, message: "The server cannot be restarted from here.",
                    fix: "Restart it through MockAPNsServer.restart()."))
        }
        do {
            let ports = try await hook()
            struct Out: Encodable {
                var status: String
                var sandbox_port: Int
                var production_port: Int
            }
            return Self.json(
                Out(status: "restarted", sandbox_port: ports.sandboxPort, production_port: ports.productionPort))
        } catch let error as KKPushError {
            throw Refusal(status: .internalServerError, error: error)
        } catch {
            throw Refusal(
                status: .internalServerError,
                error: KKPushError(
                    code: .adminRestart, message: "The restart failed: \(ErrorWords.describe(error)).",
                    fix: "Check the ports are free."))
        }
    }

    /// The token's notifications after `after`; if none, waits up to `wait_ms` for one (ended early when
    /// the server stops).
    private func longPoll(token: String, query: [String: String]) async throws -> HTTPResponse {
        try Self.checkQuery(query, allowed: ["after", "wait_ms", "limit"])
        let after = UInt64(try Self.int(query, "after", default: 0, range: 0...Int.max))
        let waitMs = try Self.int(query, "wait_ms", default: 0, range: 0...Self.maximumWaitMs)
        let limit = try Self.int(query, "limit", default: 1000, range: 1...100_000)
        struct Out: Encodable {
            var notifications: [DeliveredNotification]
            var last_sequence: UInt64
        }
        func out(_ list: [DeliveredNotification]) -> HTTPResponse {
            Self.json(Out(notifications: list, last_sequence: list.last?.sequence ?? after))
        }
        guard waitMs > 0, longPollWaits else {
            return out(state.notifications(token: token, after: after, limit: limit))
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let promise = loop.makePromise(of: Void.self)
        let found = state.notificationsOrWait(token: token, after: after, limit: limit, promise: promise)
        if !found.isEmpty {
            promise.succeed()
            return out(found)
        }
        let timeout = loop.scheduleTask(in: .milliseconds(Int64(waitMs))) { promise.succeed() }
        await withTaskCancellationHandler {
            try? await promise.futureResult.get()
        } onCancel: {
            promise.succeed()
        }
        timeout.cancel()
        state.cancelWait(promise)
        return out(state.notifications(token: token, after: after, limit: limit))
    }

    // MARK: Helpers

    /// Decodes a request body strictly: invalid JSON (with its position), a key `shape` does not know (with
    /// the nearest known one) and a wrong type or value (with the field's path) are 400 `admin-json`.
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], shape: JSONInput.Shape) throws -> T {
        guard !body.isEmpty else {
            throw KKPushError(
                code: .adminBodyMissing, message: "The request has no JSON body.", fix: "Send a JSON body.")
        }
        do {
            return try JSONInput.decodeStrict(
                T.self, from: body, shape: shape, what: "The JSON body", codePrefix: "admin-json",
                format: "a JSON object as the admin API describes")
        } catch let error as KKPushError {
            throw KKPushError(code: .adminJson, message: error.message, fix: error.fix)
        }
    }

    /// Refuses a query parameter the endpoint does not read (a typo would otherwise be ignored), naming the
    /// nearest known one.
    static func checkQuery(_ query: [String: String], allowed: [String]) throws {
        for key in query.keys.sorted() where !key.isEmpty && !allowed.contains(key) {
            let near = JSONInput.nearest(key, among: allowed).map { "; did you mean `\($0)`?" } ?? ""
            throw KKPushError(
                code: .adminQuery, message: "unknown query parameter `\(key)`\(near)",
                fix: "Use only \(allowed.joined(separator: ", ")) here.")
        }
    }

    /// The query parameter `name` as a whole number in `range` (`value` when absent). A value that is not a whole
    /// number and one out of range are told apart: `limit=5000` on a page of at most 1000 is out of range, not
    /// "not a number".
    static func int(_ query: [String: String], _ name: String, default value: Int, range: ClosedRange<Int>) throws
        -> Int
    {
        guard let text = query[name] else { return value }
        let bounds =
            range.upperBound == Int.max
            ? "\(range.lowerBound) or more" : "from \(range.lowerBound) to \(range.upperBound)"
        guard let n = Int(text) else {
            throw KKPushError(
                code: .adminQuery, message: "\(name)=\(text) is not a whole number.",
                fix: "Give \(name) as a whole number \(bounds).")
        }
        guard range.contains(n) else {
            throw KKPushError(
                code: .adminQuery, message: "\(name)=\(n) is out of range: \(name) is \(bounds).",
                fix: "Give \(name) \(bounds)" + (name == "limit" ? "; page through more with after= or before=." : "."))
        }
        return n
    }

    /// How many entries a page of `GET /log` or `GET /rejections` holds when no `limit` is given. 1,000, as the
    /// long poll's: a page of deliveries stays near 400 KB, and an answer with more says so (`total`, `truncated`).
    static let defaultPageLimit = 1000
    /// The most a page holds (a larger log is paged through with `after` or `before`).
    static let maximumPageLimit = 100_000

    /// A page's `after`, `before` (sequences: the log's cursors) and `limit`.
    static func pageQuery(_ query: [String: String]) throws -> (after: UInt64?, before: UInt64?, limit: Int) {
        let after = try query["after"].map { _ in UInt64(try int(query, "after", default: 0, range: 0...Int.max)) }
        let before = try query["before"].map { _ in UInt64(try int(query, "before", default: 1, range: 1...Int.max)) }
        let limit = try int(query, "limit", default: defaultPageLimit, range: 1...maximumPageLimit)
        return (after, before, limit)
    }
}

/// A page of `GET /log` or `GET /rejections`: its entries under `key`, and what the log holds beyond them, so a
/// caller can tell a whole answer from a part and page through everything.
struct PageOut<Entry: Encodable & Sendable & Sequenced>: Encodable {
    var page: LogPage<Entry>
    var key: String
    var limit: Int
    var after: UInt64?

    init(_ page: LogPage<Entry>, key: String, limit: Int, after: UInt64?) {
        self.page = page
        self.key = key
        self.limit = limit
        self.after = after
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(page.entries, forKey: Key(key))
        try c.encode(limit, forKey: Key("limit"))
        try c.encode(page.total, forKey: Key("total"))
        try c.encode(page.truncated, forKey: Key("truncated"))
        // The cursor to read on from: the newest entry of the page (else the cursor given, else the newest held).
        let nextAfter = page.entries.last.map(\.sequence) ?? after ?? page.newestSequence ?? 0
        try c.encode(nextAfter, forKey: Key("next_after"))
        // The cursor to read further back from, when older entries match (a page read backwards).
        if after == nil, page.truncated, let first = page.entries.first {
            try c.encode(first.sequence, forKey: Key("next_before"))
        } else {
            try c.encodeNil(forKey: Key("next_before"))
        }
        try c.encode(page.oldestSequence ?? 0, forKey: Key("oldest_sequence"))
        try c.encode(page.newestSequence ?? 0, forKey: Key("newest_sequence"))
        try c.encode(page.capacity, forKey: Key("capacity"))
        try c.encode(page.dropped, forKey: Key("dropped"))
        if after != nil { try c.encode(page.missed, forKey: Key("missed")) }
    }
}
