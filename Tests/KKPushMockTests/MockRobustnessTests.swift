import Foundation
import KKPushCore
import KKPushMock
import KKPushTLS
import KKPushTestSupport
import NIOCore
import NIOPosix
import Testing

/// A raw client (TCP, or TLS with ALPN h2): writes bytes, collects what comes back, and waits
/// (bounded) for the server to close.
enum RawSocket {
    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var received: [UInt8] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += Array(unwrapInboundIn(data).readableBytesView)
        }
    }

    /// A connection to 127.0.0.1:`port` (TLS trusting the test CA, ALPN h2, if `tls`) whose received bytes
    /// `collector` keeps.
    static func connect(port: Int, tls: Bool, collector: Collector) async throws -> any Channel {
        let sslContext =
            tls ? try TLSContext.client(trustRootsFile: Fixtures.path("ca.crt"), applicationProtocols: ["h2"]) : nil
        return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let sslContext {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSHandler(context: sslContext))
                    }
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// Connects, writes `bytes` (if any), and returns whether the server closed within `timeout` and
    /// the bytes it sent.
    static func exchange(port: Int, tls: Bool, bytes: [UInt8]?, timeout: TimeAmount) async throws
        -> (closed: Bool, received: [UInt8])
    {
        let collector = Collector()
        let channel = try await connect(port: port, tls: tls, collector: collector)
        if let bytes {
            // The server may already have closed (that is what some tests wait for).
            try? await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        }
        let closed = channel.eventLoop.makePromise(of: Bool.self)
        channel.closeFuture.whenComplete { _ in closed.succeed(true) }
        let timer = channel.eventLoop.scheduleTask(in: timeout) { closed.succeed(false) }
        let result = try await closed.futureResult.get()
        timer.cancel()
        if !result { try? await channel.close() }
        let received = try await channel.eventLoop.submit { collector.received }.get()
        return (result, received)
    }
}

@Suite("Robustness: garbage, silence, HTTP/1.1, malformed HTTP/2")
struct MockRobustnessTests {
    /// After abuse, a normal push still works.
    static func stillServes(_ server: MockAPNsServer, clock: ManualWallClock) async throws {
        let jwt = try Fixtures.token(issuedAt: clock.now())
        let r = try await Curl.one(Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
        #expect(r.status == 200, "curl: \(r.body)")
    }

    @Test("Garbage bytes instead of TLS: closed, server fine")
    func garbageTCP() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            var bytes = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            bytes += (0..<4096).map { _ in UInt8.random(in: 0...255) }
            #expect(
                try await RawSocket.exchange(
                    port: server.sandboxEndpoint.port, tls: false, bytes: bytes, timeout: .seconds(30)
                ).closed)
            try await Self.stillServes(server, clock: clock)
        }
    }

    // 2 s, not less: the push after it (`stillServes`) must finish its own TLS handshake within the same timeout,
    // on a loaded machine too.
    @Test("A client that connects and never speaks is closed after the handshake timeout", .timeSensitive)
    func silentClient() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.handshakeTimeout = 2
        try await withMockServer(configuration: configuration) { server in
            #expect(
                try await RawSocket.exchange(
                    port: server.productionEndpoint.port, tls: false, bytes: nil, timeout: .seconds(30)
                ).closed)
            try await Self.stillServes(server, clock: clock)
        }
    }

    @Test("Garbage after the TLS handshake (not an HTTP/2 preface): closed, server fine")
    func garbageAfterTLS() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            var junk = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)  // a valid preface ...
            junk += Data([0, 0, 8, 0x07, 0, 0, 0, 0, 1]) + Data(repeating: 0xFF, count: 64)  // ... then a broken frame
            let result = try await Curl.run(
                "/usr/bin/openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.sandboxEndpoint.port)", "-alpn", "h2", "-quiet",
                    "-CAfile", Fixtures.path("ca.crt"),
                ],
                stdin: junk, timeout: 15)
            #expect(!result.timedOut)
            let random = Data((0..<2048).map { _ in UInt8.random(in: 0...255) })
            let second = try await Curl.run(
                "/usr/bin/openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.sandboxEndpoint.port)", "-quiet", "-CAfile",
                    Fixtures.path("ca.crt"),
                ],
                stdin: random, timeout: 15)
            #expect(!second.timedOut)
            try await Self.stillServes(server, clock: clock)
        }
    }

    @Test("HTTP/1.1 over TLS is refused: ALPN offers h2 only")
    func http1() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let result = try await Curl.run(
                "/usr/bin/curl",
                [
                    "--http1.1", "--cacert", Fixtures.path("ca.crt"), "-sS", "--max-time", "5", "-o", "/dev/null", "-w",
                    "%{http_code}",
                    "-X", "POST", "--data", "{}", server.sandboxEndpoint.deviceURL(token: Fixtures.randomToken()),
                ])
            #expect(result.stdout == "000")
            #expect(result.status != 0)
            try await Self.stillServes(server, clock: clock)
        }
    }

    @Test("Idle connections get GOAWAY IdleTimeout and are closed", .timeSensitive)
    func idle() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.idleTimeout = 1
        try await withMockServer(configuration: configuration) { server in
            // TLS with ALPN h2, the client preface and an empty SETTINGS frame; then silence.
            let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
            // A connection whose TLS handshake alone took over the 1 s (a loaded CI run once) is closed before HTTP/2
            // starts, with nothing sent: no evidence either way. Up to three connections, until one reached HTTP/2 (the
            // mock sent its SETTINGS); that one must end with GOAWAY IdleTimeout.
            var received: [UInt8] = []
            var attempts = 0
            while received.isEmpty, attempts < 3 {
                attempts += 1
                let (closed, bytes) = try await RawSocket.exchange(
                    port: server.sandboxEndpoint.port, tls: true, bytes: preface, timeout: .seconds(30))
                #expect(closed)
                received = bytes
            }
            let text = String(decoding: received, as: UTF8.self)
            #expect(
                text.contains(#"{"reason":"IdleTimeout"}"#), "after \(attempts) connections: \(received.count) bytes")
            // The 1 s idle timeout applies to the checking client too: on a loaded machine curl's request can
            // come more than 1 s after its handshake, and the mock then rightly closes it as idle. So the server
            // is "fine" if one of three fresh connections gets its 200.
            var statuses: [Int] = []
            for _ in 0..<3 where !statuses.contains(200) {
                let jwt = try Fixtures.token(issuedAt: clock.now())
                let r = try await Curl.one(
                    Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
                statuses.append(r.status)
            }
            #expect(statuses.contains(200), "statuses: \(statuses)")
        }
    }

    @Test("The idle timeout counts from the TLS handshake, not from accept", .timeSensitive)
    func idleCountsFromHandshake() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.idleTimeout = 1
        try await withMockServer(configuration: configuration) { server in
            // TCP first, then 1.5 s of nothing (a handshake slowed by a loaded machine), then TLS, the preface and
            // silence. Counted from accept, the idle check fired before TLS began: the GOAWAY was decided before the
            // client spoke, and the connection closed 0.5 s after the preface (measured before the change). Counted
            // from the handshake, GOAWAY IdleTimeout comes 1 s after the last frame.
            let collector = RawSocket.Collector()
            let channel = try await RawSocket.connect(
                port: server.sandboxEndpoint.port, tls: false, collector: collector)
            let closed = channel.eventLoop.makePromise(of: Void.self)
            channel.closeFuture.whenComplete { _ in closed.succeed() }
            try await Task.sleep(for: .milliseconds(1500))
            let sslContext = try TLSContext.client(
                trustRootsFile: Fixtures.path("ca.crt"), applicationProtocols: ["h2"])
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(TLSHandler(context: sslContext), position: .first)
            }.get()
            let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
            try await channel.writeAndFlush(ByteBuffer(bytes: preface))
            let written = ContinuousClock.now
            let timer = channel.eventLoop.scheduleTask(in: .seconds(30)) { channel.close(promise: nil) }
            try await closed.futureResult.get()
            timer.cancel()
            let open = ContinuousClock.now - written
            let received = try await channel.eventLoop.submit { collector.received }.get()
            let text = String(decoding: received, as: UTF8.self)
            #expect(text.contains(#"{"reason":"IdleTimeout"}"#), "\(received.count) bytes received")
            // Open at least (nearly) the idle timeout after the preface: the timer did not run before the handshake.
            #expect(open >= .milliseconds(800), "closed \(open) after the preface")
            #expect(open < .seconds(29), "not closed by the server: \(open)")
        }
    }

    @Test("Malformed HTTP/2 frames after a valid preface: GOAWAY and close, server fine")
    func malformedFrames() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
            // A HEADERS frame on stream 1 with a garbage HPACK block, then random bytes.
            let bad: [UInt8] = [0, 0, 8, 0x01, 0x05, 0, 0, 0, 1] + Array(repeating: 0xFF, count: 8)
            let random = (0..<512).map { _ in UInt8.random(in: 0...255) }
            let (closed, _) = try await RawSocket.exchange(
                port: server.sandboxEndpoint.port, tls: true, bytes: preface + bad + random, timeout: .seconds(30))
            #expect(closed)
            try await Self.stillServes(server, clock: clock)
        }
    }

    @Test("Startup errors are KKPushErrors naming the problem")
    func startupErrors() async throws {
        var configuration = Fixtures.configuration()
        configuration.certificateFile = "/nonexistent/server.crt"
        let e = await #expect(throws: KKPushError.self) { try await MockAPNsServer.start(configuration: configuration) }
        #expect(e?.code.rawValue == "mock-tls")
        var c2 = Fixtures.configuration()
        c2.maxConcurrentStreams = 0
        let e2 = await #expect(throws: KKPushError.self) { try await MockAPNsServer.start(configuration: c2) }
        #expect(e2?.code.rawValue == "mock-max-streams")
    }
}
