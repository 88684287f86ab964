import Foundation
public import KKPushCore
public import Logging

/// How the client authenticates to APNs.
///
/// Provider tokens (`.token(cache)`, from ``ProviderTokenCache``) put a shared JWT in every request;
/// certificates (`.certificate(credential)`) authenticate the TLS connection itself.
public struct APNsCredential: Sendable {
    enum Storage: Sendable {
        case none
        case token(any BearerTokenSource)
        case certificate(certificatePEM: [UInt8], privateKeyPEM: [UInt8], label: String)
    }

    /// The topics a client certificate covers, if known (for pre-flight).
    var certificateTopics: Set<String>?

    let storage: Storage

    init(storage: Storage) { self.storage = storage }

    /// No credential: requests go out without `authorization` and without a client certificate.
    /// APNs answers `403 MissingProviderToken`; useful only against stand-ins and in tests.
    public static let none = APNsCredential(storage: .none)

    /// A client certificate and its private key, both PEM, handed to libcurl in memory.
    public static func certificate(
        certificatePEM: [UInt8], privateKeyPEM: [UInt8], topics: Set<String>? = nil, label: String = "certificate"
    ) -> APNsCredential {
        var credential = APNsCredential(
            storage: .certificate(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, label: label))
        credential.certificateTopics = topics
        return credential
    }

    /// True for provider-token credentials.
    public var isToken: Bool {
        if case .token = storage { return true }
        return false
    }

    /// True for client-certificate credentials.
    public var isCertificate: Bool {
        if case .certificate = storage { return true }
        return false
    }
}

/// A source of provider tokens for the client: the current token and a refresh after
/// `ExpiredProviderToken`. ``ProviderTokenCache`` is the one kkpush ships.
public protocol BearerTokenSource: Sendable {
    /// The token to send now, and its generation (it changes whenever the token does).
    func currentBearer() throws -> (value: String, generation: Int)
    /// APNs answered `ExpiredProviderToken` to `token`: make a new one (unless already replaced).
    func refreshBearer(afterExpired token: String) throws
}

/// When and how often the client retries.
///
/// Only `429 TooManyRequests`, `500`, `503` and connection failures are retried, with exponential
/// back-off and jitter; `ExpiredProviderToken` is retried once with a new token on a new connection.
public struct APNsRetryPolicy: Sendable, Hashable {
    /// The most times one notification is sent, first attempt included (1 = no retries).
    public var maxAttempts: Int
    /// The delay before the first retry.
    public var initialDelay: Duration
    /// The largest delay between two attempts.
    public var maxDelay: Duration
    /// No retry starts later than this after the first attempt.
    public var maxTotalTime: Duration
    /// Each delay is multiplied by a random factor in `1 - jitter ... 1` (0 = no jitter).
    public var jitter: Double

    /// Creates a retry policy.
    public init(
        maxAttempts: Int = 4, initialDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10),
        maxTotalTime: Duration = .seconds(60), jitter: Double = 0.5
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.maxTotalTime = maxTotalTime
        self.jitter = min(max(jitter, 0), 1)
    }

    /// No retries at all.
    public static let none = APNsRetryPolicy(maxAttempts: 1)

    /// The delay before retry number `retry` (1 for the first retry), before jitter.
    public func baseDelay(retry: Int) -> Duration {
        var d = initialDelay
        for _ in 1..<max(1, retry) {
            d = d * 2
            if d >= maxDelay { return maxDelay }
        }
        return min(d, maxDelay)
    }
}

/// Everything the client can be told; every field has a default.
public struct APNsClientConfiguration: Sendable {
    /// The credential: a provider token cache or a client certificate.
    public var credential: APNsCredential
    /// The endpoint used when a request names only an environment.
    public var sandboxEndpoint: APNsEndpoint
    /// The endpoint used when a request names only an environment.
    public var productionEndpoint: APNsEndpoint
    /// Time allowed to open a connection (TCP + TLS).
    public var connectTimeout: Duration
    /// Time allowed for one attempt, from start to the full answer.
    public var requestTimeout: Duration
    /// Streams in flight on one HTTP/2 connection. Nil (the default): as many as the server allows, its
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (APNs and the mock advertise 1000), followed when the server changes it
    /// mid-connection, within ``inFlightMemoryBudget``. A number: exactly that cap, whatever the budget (sent as
    /// `CURLMOPT_MAX_CONCURRENT_STREAMS`; a server that allows fewer still gets no more than it allows).
    ///
    /// Why the server's number by default: a push's round trip, not the client's CPU, limits a connection at a
    /// distance (at most streams ÷ round trip a second: 100 streams at 50 ms are 2,000 pushes a second, 1,000
    /// streams 20,000), and APNs says how many it takes. libcurl 7.88 applies the smaller of the server's
    /// value and the cap kkpush sets (`CURLMOPT_MAX_CONCURRENT_STREAMS`), and re-reads it from every SETTINGS
    /// frame, so kkpush sets the budget's number as the cap and lets libcurl follow the server below it.
    public var maxInFlightPerConnection: Int?
    /// When following the server's streams (``maxInFlightPerConnection`` nil): keep in flight only what the round
    /// trip needs at the rate the client actually sends, with headroom, at least 100 (true, the default), instead
    /// of every stream the server and the budget allow. Next to the server 1,000 streams only cost CPU (libcurl
    /// walks every transfer it holds on every turn); at a distance the window grows to what the round trip needs.
    /// See the client's `InFlightWindow` for the rule and its numbers.
    public var sizesInFlightToRoundTrip: Bool
    /// The memory the pushes in flight may hold, in bytes, when ``maxInFlightPerConnection`` is nil: the client
    /// keeps at most `inFlightMemoryBudget / bytesPerStream` (``bytesPerStream``) pushes in flight in all, over
    /// every connection and loop thread. The default, 64 MiB, is 2,048 streams: two connections of APNs' 1,000.
    public var inFlightMemoryBudget: Int
    /// Connections per endpoint. One opens first; another only when every open one carries all the streams it
    /// may and pushes wait for a stream, one at a time (never while another is still connecting:
    /// `CURLOPT_PIPEWAIT`), and they are kept open (Apple's advice: a few long-lived connections, no rapid
    /// connecting).
    public var maxConnections: Int
    /// Threads that drive the connections, each with a libcurl multi handle of its own and its share of
    /// ``maxConnections`` (1 to ``maxConnections``, at most 16). libcurl drives a connection from one thread,
    /// so with 1 (the default) a client's sending never uses more than one core. With more, a batch is
    /// spread over the threads as their buffers have room, a single ``APNsClient/send(_:to:)`` goes to the
    /// next thread in turn, and each thread keeps at least one connection per endpoint of its own: a
    /// large batch can use that many cores, at the price of that many connections.
    public var loopThreads: Int
    /// A connection idle this long is not reused: the next push opens a new one (`CURLOPT_MAXAGE_CONN`,
    /// whole seconds, at least 1). A network path that silently drops idle connections (a NAT or load
    /// balancer forgetting the mapping, APNs itself after a long idle) then never swallows the first push
    /// after a pause: it goes on a fresh connection at once instead of waiting out ``requestTimeout``.
    /// libcurl's default, 118 s, is the default here too.
    public var idleReuseLimit: Duration
    /// A proxy: `http://host:port` (HTTP CONNECT) or `socks5://host:port` / `socks5h://host:port`.
    /// Nil takes the proxy from the environment as libcurl would (`https_proxy`, `HTTPS_PROXY`, `all_proxy`,
    /// `ALL_PROXY`, the first one set), read once when the client starts; `no_proxy`/`NO_PROXY` applies
    /// either way.
    public var proxyURL: String?

    /// Retries of 429, 500, 503 and connection failures.
    public var retry: APNsRetryPolicy
    /// Run the shared pre-flight rules and keep requests APNs would reject on the machine.
    public var preflight: Bool
    /// Coalesce the HTTP/2 frames one turn of the loop writes into as few TCP segments as possible
    /// (`TCP_CORK` for the length of the turn, flushed at its end and after every 16 requests it starts,
    /// so the server can begin on the first ones; see the README's "Sending"). On by
    /// default: it cut the client's CPU per push by about a third on loopback. Off sends every frame as
    /// libcurl writes it.
    public var coalesceWrites: Bool
    /// Where the client logs (category `push`/`network`); silent by default.
    public var logger: Logger

    /// Creates a configuration.
    public init(
        credential: APNsCredential = .none,
        sandboxEndpoint: APNsEndpoint = .sandbox,
        productionEndpoint: APNsEndpoint = .production,
        connectTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30),
        maxInFlightPerConnection: Int? = nil,
        sizesInFlightToRoundTrip: Bool = true,
        inFlightMemoryBudget: Int = 64 << 20,
        maxConnections: Int = 2,
        loopThreads: Int = 1,
        idleReuseLimit: Duration = .seconds(118),
        proxyURL: String? = nil,
        retry: APNsRetryPolicy = APNsRetryPolicy(),
        preflight: Bool = true,
        coalesceWrites: Bool = true,
        logger: Logger = Logger(label: "kkpush.client", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.credential = credential
        self.sandboxEndpoint = sandboxEndpoint
        self.productionEndpoint = productionEndpoint
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.maxInFlightPerConnection = maxInFlightPerConnection
        self.sizesInFlightToRoundTrip = sizesInFlightToRoundTrip
        self.inFlightMemoryBudget = inFlightMemoryBudget
        self.maxConnections = maxConnections
        self.loopThreads = loopThreads
        self.idleReuseLimit = idleReuseLimit
        self.proxyURL = proxyURL
        self.retry = retry
        self.preflight = preflight
        self.coalesceWrites = coalesceWrites
        self.logger = logger
    }

    /// The endpoint for `environment`.
    public func endpoint(for environment: APNsEnvironment) -> APNsEndpoint {
        environment == .sandbox ? sandboxEndpoint : productionEndpoint
    }

    /// Throws a clear error for values the client cannot use.
    public func validate() throws {
        if let maxInFlightPerConnection, !(1...10_000).contains(maxInFlightPerConnection) {
            throw KKPushError(
                code: .clientMaxInFlight,
                message: "maxInFlightPerConnection is \(maxInFlightPerConnection); it must be 1...10000.",
                fix: "Leave it nil to use as many streams as the server allows (APNs: 1000), or give 1 to 10000.")
        }
        guard (Self.bytesPerStream...(Self.bytesPerStream * 100_000)).contains(inFlightMemoryBudget) else {
            throw KKPushError(
                code: .clientMaxInFlight,
                message:
                    "inFlightMemoryBudget is \(inFlightMemoryBudget) bytes; it must be \(Self.bytesPerStream) (one stream) to \(Self.bytesPerStream * 100_000) (100000 streams of \(Self.bytesPerStream) bytes).",
                fix: "Use the default, 64 MiB (2048 streams), or bytesPerStream times the pushes to keep in flight.")
        }
        guard (1...64).contains(maxConnections) else {
            throw KKPushError(
                code: .clientMaxConnections, message: "maxConnections is \(maxConnections); it must be 1...64.",
                fix: "Use 1 to 4 connections per endpoint.")
        }
        guard (1...min(16, maxConnections)).contains(loopThreads) else {
            throw KKPushError(
                code: .clientLoopThreads,
                message:
                    "loopThreads is \(loopThreads); it must be 1...\(min(16, maxConnections)) (at most maxConnections, \(maxConnections), and 16): each thread needs a connection of its own.",
                fix:
                    "Use 1, or as many threads as the machine has cores to spare, with maxConnections at least that many."
            )
        }
        guard connectTimeout > .zero, requestTimeout > .zero else {
            throw KKPushError(
                code: .clientTimeout,
                message: "Timeouts must be positive (connect \(connectTimeout), request \(requestTimeout)).",
                fix: "Use for example 10 s to connect and 30 s per request.")
        }
        guard idleReuseLimit >= .seconds(1), idleReuseLimit <= .seconds(86_400) else {
            throw KKPushError(
                code: .clientTimeout, message: "idleReuseLimit is \(idleReuseLimit); it must be 1 s to 1 day.",
                fix:
                    "Use for example 118 s (libcurl's default), or less than the idle time after which the path drops connections."
            )
        }
        if let proxyURL { try Self.checkProxy(proxyURL) }
    }

    /// What one push in flight costs the client in memory, in bytes, as ``inFlightMemoryBudget`` counts it: its
    /// libcurl easy handle with its buffers, its HTTP/2 stream state and kkpush's transfer. Measured: the peak RSS
    /// of `kkpush bench -n 20000` against the mock grew by 24 MB from 100 to 1,000 in flight on one connection,
    /// about 27 KB a stream; rounded up to 32 KiB.
    public static let bytesPerStream = 32 << 10

    /// The pushes in flight the memory budget allows in all (at least 1).
    var budgetStreams: Int { max(1, inFlightMemoryBudget / Self.bytesPerStream) }

    /// ``maxConnections`` shared out over ``loopThreads``: the first threads take one more when it does not divide.
    var connectionShares: [Int] {
        let threads = max(1, loopThreads)
        return (0..<threads).map { maxConnections / threads + ($0 < maxConnections % threads ? 1 : 0) }
    }

    /// Checks a proxy URL's scheme (one libcurl can use); throws `client-proxy-url` otherwise.
    public static func checkProxy(_ proxyURL: String) throws {
        let lower = proxyURL.lowercased()
        let ok = ["http://", "https://", "socks5://", "socks5h://", "socks4://", "socks4a://"].contains {
            lower.hasPrefix($0)
        }
        guard ok else {
            throw KKPushError(
                code: .clientProxyUrl,
                message: "The proxy URL '\(proxyURL)' has no scheme libcurl can use.",
                fix: "Use http://host:port (HTTP CONNECT) or socks5h://host:port.")
        }
    }
}

extension Duration {
    var milliseconds: Int64 {
        let c = components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }
    var nanoseconds: UInt64 {
        let c = components
        return UInt64(max(0, c.seconds)) * 1_000_000_000 + UInt64(max(0, c.attoseconds / 1_000_000_000))
    }
}
