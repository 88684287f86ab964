public import KKPushCore

/// A fault the mock injects into the requests it matches: a fixed answer, a delay, a GOAWAY,
/// an abrupt close, a TCP reset or a stall. Set by configuration, ``MockAPNsServer/addFault(_:)`` or
/// `POST /faults`.
///
/// Faults are checked right after the route (step 1 of the validation order), so they win over
/// every later check: a `503` fault answers 503 whatever the request's headers.
///
/// What the delivery log holds when a connection ends badly: every request the mock received whole
/// and judged before the end is logged (if accepted), whether or not its answer went out: a delayed
/// answer still pending when a `close`, `reset` or `stall` fires is never sent, but the notification
/// stays in the log (as with APNs, a request can be delivered although its answer is lost). The
/// request that triggers `close`, `reset`, `stall` or a refusing `goaway` (`after_streams` 0) is not
/// judged, so never logged; neither is any request the connection receives after it.
public struct MockFault: Sendable, Hashable, Codable {
    /// Which requests a fault applies to.
    public enum Scope: Sendable, Hashable {
        /// Every request.
        case global
        /// Requests to this device token (lowercase hex).
        case token(String)
        /// Requests with this `apns-topic`.
        case topic(String)

        /// True if the request's token and topic fall under the scope.
        func matches(token: String, topic: String?) -> Bool {
            switch self {
            case .global: true
            case .token(let t): t == token
            case .topic(let t): t == topic
            }
        }
    }

    /// What the fault does.
    public enum Kind: Sendable, Hashable {
        /// Answer with this status and reason instead of processing the request.
        case respond(status: Int, reason: APNsReason)
        /// Process the request normally but answer after this many milliseconds.
        case delay(milliseconds: Int)
        /// After this many matching streams on a connection have been answered, send GOAWAY
        /// (`NO_ERROR`, debug data `{"reason":"<reason>"}`) and close the connection. With 0, the
        /// matching stream itself is refused: GOAWAY before it is judged, so it is not logged and the
        /// client may retry it. Its last-stream-id is the highest stream the mock judged; streams up
        /// to it whose answers are still delayed are answered before the connection closes.
        case goAway(afterStreams: Int, reason: APNsReason)
        /// Close the connection without answering (TLS close_notify, then FIN); the matching request
        /// is not judged, answers still delayed are never sent.
        case closeConnection
        /// Reset the TCP connection (abortive close: `SO_LINGER` 0, so the peer gets RST and sees
        /// ECONNRESET), with whatever streams are in flight; the matching request is not judged.
        case resetConnection
        /// Stop reading from the connection (the client's writes back up; nothing is answered).
        case stall
        /// A black hole, as a NAT or load balancer that dropped an idle connection's mapping: the first
        /// matching request on a connection that sat idle (no request) at least this many milliseconds is
        /// never judged nor answered, and from then on the connection is silent (nothing read, nothing
        /// written, no RST, no FIN). A connection's first request never triggers it. The mock's kernel still
        /// acknowledges TCP segments, so only a request timeout (not TCP keepalive) finds it.
        case blackHole(afterIdleMilliseconds: Int)
    }

    /// An id, for listing and removal.
    public var id: String
    /// Which requests it applies to.
    public var scope: Scope
    /// What it does.
    public var kind: Kind
    /// How many requests it still applies to; `nil` for every matching request until removed.
    /// (For ``Kind/goAway(afterStreams:reason:)`` it counts connections that received the GOAWAY.)
    public var remaining: Int?
    /// How many matching requests (server-wide) still pass untouched before it applies: a fault that
    /// fires at a given point of a batch, e.g. the 1001st push. Counts down to 0.
    public var skip: Int

    /// Creates a fault.
    public init(id: String = "", scope: Scope = .global, kind: Kind, remaining: Int? = nil, skip: Int = 0) {
        self.id = id
        self.scope = scope
        self.kind = kind
        self.remaining = remaining
        self.skip = skip
    }

    /// `status` (429, 500 or 503) with its usual reason for the next `count` matching requests.
    public static func failNext(
        _ count: Int, status: Int, reason: APNsReason? = nil, scope: Scope = .global
    ) -> MockFault {
        let r =
            reason
            ?? (status == 429 ? .tooManyRequests : status == 500 ? .internalServerError : .serviceUnavailable)
        return MockFault(scope: scope, kind: .respond(status: status, reason: r), remaining: count)
    }

    /// Checks the fault makes sense; throws a ``KKPushError`` naming the field otherwise.
    public func validate() throws {
        if skip < 0 {
            throw KKPushError(
                code: .mockFaultSkip, message: "The fault's skip \(skip) is negative.",
                fix: "Give skip >= 0: how many matching requests pass before the fault applies (default 0).")
        }
        if let remaining, remaining < 1 {
            throw KKPushError(
                code: .mockFaultCount, message: "The fault's count is \(remaining); it must be at least 1.",
                fix: "Give count >= 1, or leave it out for a fault that lasts until removed.")
        }
        switch kind {
        case .respond(let status, let reason):
            guard (400...599).contains(status) else {
                throw KKPushError(
                    code: .mockFaultStatus, message: "The fault's status \(status) is not an HTTP status.",
                    fix: "Use a status between 400 and 599, for example 503.")
            }
            try Self.checkReason(reason)
        case .delay(let ms):
            guard (0...600_000).contains(ms) else {
                throw KKPushError(
                    code: .mockFaultDelay, message: "The fault's delay_ms \(ms) is out of range.",
                    fix: "Give delay_ms between 0 and 600000.")
            }
        case .goAway(let n, let reason):
            guard n >= 0 else {
                throw KKPushError(
                    code: .mockFaultStreams, message: "The fault's after_streams \(n) is negative.",
                    fix: "Give after_streams >= 0.")
            }
            try Self.checkReason(reason)
        case .blackHole(let ms):
            guard (1...86_400_000).contains(ms) else {
                throw KKPushError(
                    code: .mockFaultDelay, message: "The fault's idle_ms \(ms) is out of range.",
                    fix:
                        "Give idle_ms between 1 and 86400000: how long a connection must sit idle before it turns black."
                )
            }
        case .closeConnection, .resetConnection, .stall:
            break
        }
    }

    static func checkReason(_ reason: APNsReason) throws {
        let ok =
            !reason.rawValue.isEmpty && reason.rawValue.count <= 64
            && reason.rawValue.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            }
        guard ok else {
            throw KKPushError(
                code: .mockFaultReason, message: "The fault's reason '\(reason.rawValue)' is not a reason string.",
                fix: "Use letters and digits only, as APNs' reasons (for example ServiceUnavailable).")
        }
    }
}

// MARK: JSON form (admin API and config file)

extension MockFault {
    /// The keys of the JSON form.
    static let shape = JSONInput.Shape.fields(CodingKeys.allCases.map(\.rawValue))

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, kind, status, reason, token, topic, count, skip
        case delayMilliseconds = "delay_ms"
        case afterStreams = "after_streams"
        case idleMilliseconds = "idle_ms"
    }

    /// Decodes `{"kind": "respond|delay|goaway|close|reset|stall|blackhole", "status", "reason", "delay_ms",
    /// "after_streams", "idle_ms", "token" | "topic" (scope; neither = global), "count", "skip"}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(String.self, forKey: .id) ?? ""
        if let token = try c.decodeIfPresent(String.self, forKey: .token) {
            scope = .token(token.lowercased())
        } else if let topic = try c.decodeIfPresent(String.self, forKey: .topic) {
            scope = .topic(topic)
        } else {
            scope = .global
        }
        remaining = try c.decodeIfPresent(Int.self, forKey: .count)
        skip = try c.decodeIfPresent(Int.self, forKey: .skip) ?? 0
        let name = try c.decode(String.self, forKey: .kind)
        switch name {
        case "respond":
            let status = try c.decode(Int.self, forKey: .status)
            let reason =
                try c.decodeIfPresent(String.self, forKey: .reason).map(APNsReason.init(rawValue:))
                ?? MockFault.failNext(1, status: status).defaultReason
            kind = .respond(status: status, reason: reason)
        case "delay":
            kind = .delay(milliseconds: try c.decode(Int.self, forKey: .delayMilliseconds))
        case "goaway":
            kind = .goAway(
                afterStreams: try c.decodeIfPresent(Int.self, forKey: .afterStreams) ?? 0,
                reason: APNsReason(rawValue: try c.decodeIfPresent(String.self, forKey: .reason) ?? "Shutdown"))
        case "close":
            kind = .closeConnection
        case "reset":
            kind = .resetConnection
        case "stall":
            kind = .stall
        case "blackhole":
            kind = .blackHole(afterIdleMilliseconds: try c.decode(Int.self, forKey: .idleMilliseconds))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c,
                debugDescription: "kind '\(name)' is not one of respond, delay, goaway, close, reset, stall, blackhole")
        }
    }

    private var defaultReason: APNsReason {
        if case .respond(_, let r) = kind { return r }
        return .serviceUnavailable
    }

    /// Encodes in the same form as ``init(from:)`` reads.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        switch scope {
        case .global: break
        case .token(let t): try c.encode(t, forKey: .token)
        case .topic(let t): try c.encode(t, forKey: .topic)
        }
        try c.encodeIfPresent(remaining, forKey: .count)
        if skip > 0 { try c.encode(skip, forKey: .skip) }
        switch kind {
        case .respond(let status, let reason):
            try c.encode("respond", forKey: .kind)
            try c.encode(status, forKey: .status)
            try c.encode(reason.rawValue, forKey: .reason)
        case .delay(let ms):
            try c.encode("delay", forKey: .kind)
            try c.encode(ms, forKey: .delayMilliseconds)
        case .goAway(let n, let reason):
            try c.encode("goaway", forKey: .kind)
            try c.encode(n, forKey: .afterStreams)
            try c.encode(reason.rawValue, forKey: .reason)
        case .closeConnection:
            try c.encode("close", forKey: .kind)
        case .resetConnection:
            try c.encode("reset", forKey: .kind)
        case .stall:
            try c.encode("stall", forKey: .kind)
        case .blackHole(let ms):
            try c.encode("blackhole", forKey: .kind)
            try c.encode(ms, forKey: .idleMilliseconds)
        }
    }
}
