public import Foundation
public import KKPushCore
import KKPushHTTP
public import Logging

/// Everything the mock APNs server can be told, every field defaulted: both environments on
/// ephemeral ports of 127.0.0.1, the admin API on another, the test certificates from
/// `Certificates/`, the keys of `Certificates/keys.json`, no devices, no faults.
public struct MockServerConfiguration: Sendable {
    /// The address to listen on. Loopback by default; the admin API has its own, ``adminHost``.
    public var host: String = "127.0.0.1"
    /// The sandbox listener's port (0: any free port).
    public var sandboxPort: Int = 0
    /// The production listener's port (0: any free port).
    public var productionPort: Int = 0
    /// The sandbox channel-management listener's port (Apple: 2195; 0: any free port).
    public var sandboxChannelPort: Int = 0
    /// The production channel-management listener's port (Apple: 2196; 0: any free port).
    public var productionChannelPort: Int = 0
    /// The most broadcast channels an app may have per environment (Apple: 10,000); past it, create
    /// answers `400 CannotCreateChannelConfig`.
    public var maxChannelsPerApp: Int = 10_000
    /// The admin API's port (0: any free port; nil: no admin API).
    public var adminPort: Int? = 0
    /// The admin API's address: loopback by default. Any other address needs an ``adminToken``.
    public var adminHost: String = "127.0.0.1"
    /// If set, every admin request must carry `Authorization: Bearer <token>` (at least 16
    /// characters, no spaces). Required when ``adminHost`` is not loopback.
    public var adminToken: String?

    /// The folder with `server.crt`, `server.key`, `ca.crt`, `wwdr.crt` and `keys.json`; nil: found
    /// by ``MockServerConfiguration/findCertificatesDirectory()``.
    public var certificatesDirectory: String?
    /// The server certificate (PEM); nil: `server.crt` in the certificates folder.
    public var certificateFile: String?
    /// The server certificate's private key (PEM); nil: `server.key` in the certificates folder.
    public var privateKeyFile: String?
    /// The production listeners' certificate chain (PEM: the leaf, then its intermediates), so the two environments
    /// can serve different chains (a stand-in of Apple's beside the test CA's); nil: ``certificateFile``.
    public var productionCertificateFile: String?
    /// The private key of ``productionCertificateFile``; nil: ``privateKeyFile``.
    public var productionPrivateKeyFile: String?
    /// The CA clients must trust, as reported by the endpoints; nil: `ca.crt` in the certificates folder.
    public var caFile: String?
    /// The CA that client certificates (mTLS) must chain to; nil: `wwdr.crt` in the certificates
    /// folder if present. Without one, client certificates are not requested.
    public var clientCAFile: String?
    /// Registers the keys listed in the certificates folder's `keys.json`.
    public var registerDefaultKeys: Bool = true

    /// Provider keys accepted, besides the default ones.
    public var keys: [MockKey] = []
    /// Device tokens registered at start.
    public var devices: [MockDeviceRegistration] = []
    /// Faults active from the start.
    public var faults: [MockFault] = []
    /// Reject well-formed tokens the mock does not know with `BadDeviceToken` (default: accept them).
    public var strictDeviceTokens: Bool = false

    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (APNs sent 1000 in 2021).
    public var maxConcurrentStreams: Int = 1000
    /// Start token connections at 1 concurrent stream and raise to ``maxConcurrentStreams`` after the
    /// first valid provider token, as APNs does.
    public var oneStreamUntilAuthenticated: Bool = false
    /// The seconds ``idleTimeout`` and ``handshakeTimeout`` accept (finite: they become `TimeAmount`s).
    public static let timeoutRange: ClosedRange<TimeInterval> = 0.001...31_536_000
    /// Close a connection with no frames for this long (GOAWAY `IdleTimeout` first), counted from its TLS
    /// handshake: the handshake has ``handshakeTimeout``.
    public var idleTimeout: TimeInterval = 3600
    /// Close a connection whose TLS handshake has not finished within this long.
    public var handshakeTimeout: TimeInterval = 10
    /// Close a connection that has not sent its first request HEADERS (after the TLS handshake and
    /// the HTTP/2 preface) within this long of its TLS handshake: a preface trickled byte by byte
    /// (slowloris) is cut off here, not after the idle timeout.
    public var firstRequestTimeout: TimeInterval = 10
    /// A stream whose request body has not ended within this long of its HEADERS is reset
    /// (`RST_STREAM(REFUSED_STREAM)`: never judged, so the client may send it again).
    public var streamBodyTimeout: TimeInterval = 30
    /// Client connections open at once, both listeners together; nil (the default) sizes it from the process's
    /// open-file limit (half of what is left after a reserve of 256, at least 64, at most 100,000; the soft limit
    /// is first raised to the hard one). At the cap, a new connection evicts the oldest half-open one (no TLS
    /// handshake and HTTP/2 preface yet), else the oldest unauthenticated one; when every open connection has
    /// authenticated, the new one is closed at accept, before anything is read from it.
    public var maxConnections: Int? = nil

    /// The cap in force: ``maxConnections``, or the one sized from the open-file limit.
    public var effectiveMaxConnections: Int { maxConnections ?? MockServerConfiguration.automaticMaxConnections }

    /// The cap sized from the open-file limit (APNs listeners: half the descriptors beyond the reserve).
    public static var automaticMaxConnections: Int { FileDescriptorBudget.connections(share: 0.5) }
    /// Tests only: a fixed SO_SNDBUF for client connections (nil: the kernel's autotuning), so a test
    /// can fill the send path with a bounded number of answers.
    var socketSendBuffer: Int?
    /// Tests only: the longest a drained connection keeps reading after its GOAWAY (1 s; bounded by
    /// ``goAwayGracePeriod`` too), for a test whose late write must not depend on how busy the machine is.
    var goAwayLinger: TimeInterval = 1
    /// After a graceful GOAWAY (a `goaway` fault, the idle timeout, ``MockAPNsServer/shutdown()``,
    /// ``MockAPNsServer/restart()``), the longest a connection stays open to answer the streams up to
    /// its last-stream-id: those judged whose answers are delayed, and those whose requests are still
    /// arriving (refused with `RST_STREAM(REFUSED_STREAM)` if still incomplete when it ends). It closes
    /// as soon as they are answered.
    public var goAwayGracePeriod: TimeInterval = 5
    /// Resets (RST_STREAM) of streams still pending (request incomplete, or answer not yet sent) that
    /// a connection may send within ``streamResetWindow`` before the mock answers GOAWAY
    /// `ENHANCE_YOUR_CALM` (rapid-reset protection). Resets of streams already answered or closed are
    /// ignored (RFC 9113 §5.4.2 allows them; libcurl sends one after every completed stream).
    public var streamResetLimit: Int = 200
    /// The window of ``streamResetLimit``, in seconds.
    public var streamResetWindow: TimeInterval = 30
    /// When a certificate is for the other environment, answer with a GOAWAY
    /// `{"reason":"BadCertificateEnvironment"}` (as seen from APNs) instead of a 403 on the stream.
    public var goAwayOnBadCertificateEnvironment: Bool = false

    /// A provider token is expired this long after its `iat` (APNs: one hour).
    public var providerTokenMaxAge: TimeInterval = 3600
    /// A token `iat` may be this far in the future (clock skew) before it is invalid.
    public var providerTokenFutureSkew: TimeInterval = 300
    /// A connection may switch to a new provider token only this long after it first used the
    /// previous one (APNs: 20 minutes); sooner gets `TooManyProviderTokenUpdates`.
    public var providerTokenUpdateInterval: TimeInterval = 1200

    /// How many accepted notifications the delivery log keeps (the oldest are dropped, and `GET /log` says how
    /// many were).
    public var deliveryLogCapacity: Int = 100_000
    /// The device side's rules where Apple gives no number: how long a push for an offline device is stored, the
    /// background budget, the hold of priority 5 pushes (``MockDeviceRules``; `device_rules` in the config file,
    /// `GET|PUT /device-rules` on the admin API).
    public var deviceRules = MockDeviceRules()
    /// How many rejected requests `GET /rejections` keeps (the oldest are dropped, and it says how many were).
    public var rejectionLogCapacity: Int = 1000
    /// The clock for token ages and log times (inject a ``ManualWallClock`` in tests).
    public var clock: any WallClock = SystemWallClock()
    /// Where the server logs (default: nowhere).
    public var logger: Logger = Logger(label: "kkpush.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Sends the web console's test pushes (`POST /send`) through a real APNs client to the mock's own
    /// listener; nil (the default): `POST /send` answers 501. `kkpush mock serve` supplies one on KKPushClient.
    public var testPushSender: TestPushSender?
    /// Where the web console's saved pushes are kept across restarts of the process (JSON, written on every
    /// change); nil (the default): they live as long as the server.
    public var savedPushesFile: String?
    /// The app's `ActivityAttributes` (``ActivityAttributesDescription``): each Live Activity delivery that would not
    /// decode on the device carries `warnings` in the delivery log, naming the fields. Nil (the default): none.
    public var activityAttributes: ActivityAttributesDescription?
    /// Run the listeners and their connections on an event loop group of the server's own (one thread, shut
    /// down with it) instead of NIO's shared one. The tests set it (``forTests()``): one test's flood, a debug
    /// build answering 1,000 streams on one connection, held a shared loop for over 5 s (backtraces of a
    /// parallel run), and every other test's mock connections on that loop waited with it.
    package var ownEventLoopGroup = false

    /// Creates the default configuration.
    public init() {}

    /// Creates a configuration; every argument is optional.
    public init(
        sandboxPort: Int = 0, productionPort: Int = 0, adminPort: Int? = 0,
        certificatesDirectory: String? = nil, keys: [MockKey] = [], devices: [MockDeviceRegistration] = [],
        faults: [MockFault] = [], strictDeviceTokens: Bool = false, maxConcurrentStreams: Int = 1000,
        oneStreamUntilAuthenticated: Bool = false, clock: any WallClock = SystemWallClock(),
        logger: Logger = Logger(label: "kkpush.mock", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.sandboxPort = sandboxPort
        self.productionPort = productionPort
        self.adminPort = adminPort
        self.certificatesDirectory = certificatesDirectory
        self.keys = keys
        self.devices = devices
        self.faults = faults
        self.strictDeviceTokens = strictDeviceTokens
        self.maxConcurrentStreams = maxConcurrentStreams
        self.oneStreamUntilAuthenticated = oneStreamUntilAuthenticated
        self.clock = clock
        self.logger = logger
    }

    /// Whether `host` is a loopback address (127.0.0.0/8, ::1 or localhost).
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Looks for a `Certificates` folder holding `server.crt`: `$KKPUSH_CERTIFICATES`, then the
    /// working directory and its parents, then the executable's folder and its parents.
    public static func findCertificatesDirectory() -> String? {
        let fm = FileManager.default
        func has(_ dir: String) -> Bool { fm.fileExists(atPath: dir + "/server.crt") }
        if let env = ProcessInfo.processInfo.environment["KKPUSH_CERTIFICATES"], has(env) { return env }
        var starts = [fm.currentDirectoryPath]
        let exe = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        starts.append(exe.deletingLastPathComponent().path)
        for start in starts {
            var dir = URL(fileURLWithPath: start)
            for _ in 0..<8 {
                let candidate = dir.appendingPathComponent("Certificates").path
                if has(candidate) { return candidate }
                let parent = dir.deletingLastPathComponent()
                if parent.path == dir.path { break }
                dir = parent
            }
        }
        return nil
    }

    /// Whether `token` may be the admin token: at least 16 printable ASCII characters, no spaces.
    public static func isUsableAdminToken(_ token: String) -> Bool {
        token.count >= 16
            && token.allSatisfy { $0.isASCII && !$0.isWhitespace && $0.asciiValue! >= 0x21 && $0.asciiValue! < 0x7F }
    }

    /// Checks the values; throws a ``KKPushError`` naming the field and the fix.
    public func validate() throws {
        try validateValues()
        if let adminToken {
            guard Self.isUsableAdminToken(adminToken) else {
                throw KKPushError(
                    code: .mockAdminToken,
                    message: "The admin token is shorter than 16 characters or has spaces or non-ASCII characters.",
                    fix: "Use a random token, e.g. KKPUSH_ADMIN_TOKEN=$(openssl rand -hex 16).")
            }
        }
        if adminPort != nil, !Self.isLoopback(adminHost), adminToken == nil {
            throw KKPushError(
                code: .mockAdminTokenRequired,
                message: "The admin API would listen on \(adminHost), beyond this machine, without an admin token.",
                fix: "Set an admin token (adminToken), or keep the admin API on a loopback address (adminHost).")
        }
        // The APNs listeners beyond loopback: whoever reaches them may reach the admin API's state through
        // them (devices, the delivery log), so the admin API is locked too.
        if adminPort != nil, !Self.isLoopback(host), adminToken == nil {
            throw KKPushError(
                code: .mockAdminTokenRequired,
                message: "The APNs listeners would listen on \(host), beyond this machine, without an admin token.",
                fix:
                    "Set an admin token (adminToken) whenever a listener is bound beyond loopback, or run without the admin API (adminPort nil)."
            )
        }
    }

    /// Checks the ports, limits, timeouts and faults (everything but the admin token).
    func validateValues() throws {
        for (name, port) in [
            ("sandbox_port", sandboxPort), ("production_port", productionPort), ("admin_port", adminPort ?? 0),
            ("sandbox_channel_port", sandboxChannelPort), ("production_channel_port", productionChannelPort),
        ]
        where !(0...65535).contains(port) {
            throw KKPushError(
                code: .mockPort, message: "\(name) \(port) is not a TCP port.",
                fix: "Give a port between 1 and 65535, or 0 for any free port.")
        }
        guard (1...1_000_000).contains(maxChannelsPerApp) else {
            throw KKPushError(
                code: .mockMaxChannels, message: "max_channels_per_app \(maxChannelsPerApp) is out of range.",
                fix: "Give a number between 1 and 1000000 (APNs allows 10000).")
        }
        guard (1...100_000).contains(maxConcurrentStreams) else {
            throw KKPushError(
                code: .mockMaxStreams, message: "max_concurrent_streams \(maxConcurrentStreams) is out of range.",
                fix: "Give a number between 1 and 100000 (APNs uses 1000).")
        }
        guard deliveryLogCapacity >= 1 else {
            throw KKPushError(
                code: .mockLogCapacity, message: "delivery_log_capacity \(deliveryLogCapacity) is below 1.",
                fix: "Give a capacity of at least 1 (default 100000).")
        }
        guard rejectionLogCapacity >= 1 else {
            throw KKPushError(
                code: .mockLogCapacity, message: "rejection_log_capacity \(rejectionLogCapacity) is below 1.",
                fix: "Give a capacity of at least 1 (default 1000).")
        }
        for (name, seconds) in [("idle_timeout_s", idleTimeout), ("handshake_timeout", handshakeTimeout)]
        where !InputNumbers.isSeconds(seconds, in: Self.timeoutRange) {
            throw KKPushError(
                code: .mockTimeout, message: "\(name) \(InputNumbers.text(seconds)) is out of range.",
                fix: "Give a number of seconds from \(InputNumbers.describe(Self.timeoutRange)).")
        }
        for (name, value) in [("first_request_timeout_s", firstRequestTimeout), ("body_timeout_s", streamBodyTimeout)]
        where !(value.isFinite && value > 0 && value <= 3600) {
            throw KKPushError(
                code: .mockTimeout, message: "\(name) \(value) is out of range.",
                fix: "Give seconds above 0 and at most 3600 (defaults: first_request_timeout_s 10, body_timeout_s 30).")
        }
        if let maxConnections, !(1...100_000).contains(maxConnections) {
            throw KKPushError(
                code: .mockMaxConnections, message: "max_connections \(maxConnections) is out of range.",
                fix: "Give a number between 1 and 100000, or none to size it from the open-file limit.")
        }
        guard goAwayGracePeriod >= 0, goAwayGracePeriod <= 600 else {
            throw KKPushError(
                code: .mockGoawayGrace, message: "goaway_grace_s \(goAwayGracePeriod) is out of range.",
                fix: "Give seconds between 0 and 600 (default 5).")
        }
        guard streamResetLimit >= 1 else {
            throw KKPushError(
                code: .mockResetLimit, message: "reset_limit \(streamResetLimit) is below 1.",
                fix: "Give at least 1 (default 200 pending-stream resets per reset_window_s).")
        }
        guard streamResetWindow > 0, streamResetWindow <= 3600 else {
            throw KKPushError(
                code: .mockResetWindow, message: "reset_window_s \(streamResetWindow) is out of range.",
                fix: "Give seconds above 0 and at most 3600 (default 30).")
        }
        for fault in faults { try fault.validate() }
        try deviceRules.validate()
    }
}

extension MockServerConfiguration {
    /// The defaults, with an event loop group of its own (``ownEventLoopGroup``) and 120 s instead of 10 s for the TLS
    /// handshake and the first request: for a mock embedded in
    /// the package's test suite, which runs in parallel on 2 cores, where a debug build on a loaded machine can take
    /// longer than 10 s from accept to a finished handshake or a first request (a `diagnose --probe` once had its
    /// handshake reset; a run of 20 once lost an early 413 of the abuse tests). Tests about those timeouts set their
    /// own.
    package static func forTests() -> MockServerConfiguration {
        var configuration = MockServerConfiguration()
        configuration.ownEventLoopGroup = true
        configuration.handshakeTimeout = 120
        configuration.firstRequestTimeout = 120
        return configuration
    }
}
