import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import KKPushTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import KKPushMock

/// HPACK and frames beyond ``H2``'s: long literals, DATA, SETTINGS ACK, any header.
enum H2Plus {
    /// An HPACK integer with an `n`-bit prefix, the first byte's high bits from `flags`.
    static func integer(_ value: Int, prefix n: Int, flags: UInt8) -> [UInt8] {
        let max = (1 << n) - 1
        if value < max { return [flags | UInt8(value)] }
        var out: [UInt8] = [flags | UInt8(max)]
        var rest = value - max
        while rest >= 128 {
            out.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        out.append(UInt8(rest))
        return out
    }

    static func string(_ s: String) -> [UInt8] {
        let bytes = Array(s.utf8)
        return integer(bytes.count, prefix: 7, flags: 0) + bytes
    }

    /// A literal header field without indexing, new name.
    static func literal(_ name: String, _ value: String) -> [UInt8] { [0x00] + string(name) + string(value) }

    /// HEADERS of a push to `token` on `stream`: authorization if given, `extra` headers as literals.
    static func request(
        stream: UInt32, token: String, authorization: String? = nil, pushType: String? = "alert",
        extra: [(String, String)] = [], end: Bool
    ) -> [UInt8] {
        var block: [UInt8] = [0x83, 0x87]  // :method POST, :scheme https
        block += [0x04] + string("/3/device/\(token)")  // :path, literal without indexing (indexed name 4)
        block += [0x01] + string("127.0.0.1")  // :authority
        block += literal("apns-topic", Fixtures.topic)
        if let pushType { block += literal("apns-push-type", pushType) }
        if let authorization { block += literal("authorization", "bearer \(authorization)") }
        for (name, value) in extra { block += literal(name, value) }
        return H2.frame(type: 0x1, flags: end ? 0x05 : 0x04, stream: stream, block)
    }

    static func data(stream: UInt32, _ bytes: [UInt8], end: Bool) -> [UInt8] {
        H2.frame(type: 0x0, flags: end ? 0x01 : 0x00, stream: stream, bytes)
    }

    static let settingsAck = H2.frame(type: 0x4, flags: 0x1, stream: 0, [])

    /// The client preface, an empty SETTINGS and the ACK of the server's SETTINGS (it writes them first).
    static let preface = H2.preface + settingsAck

    /// The RST_STREAM error code of a frame, if it is one.
    static func resetCode(_ f: H2.Frame) -> UInt32? {
        guard f.type == 0x3, f.payload.count == 4 else { return nil }
        return H2.u32(f.payload, 0)
    }
}

/// A raw HTTP/2 client connection kept open (TLS, ALPN h2): writes bytes when asked, collects what
/// comes back, and waits (bounded) for what the test expects.
final class RawConnection: @unchecked Sendable {
    /// Parses frames as they arrive (so waiting on many frames costs no re-parsing).
    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        struct State {
            var frames: [H2.Frame] = []
            var partial: [UInt8] = []
            var headers = 0
        }
        let state = Mutex(State())
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = Array(unwrapInboundIn(data).readableBytesView)
            state.withLock { s in
                s.partial += bytes
                let parsed = H2.parse(s.partial)
                let used = parsed.reduce(0) { $0 + 9 + $1.payload.count }
                s.partial.removeFirst(used)
                s.headers += parsed.reduce(0) { $0 + ($1.type == 0x1 ? 1 : 0) }
                s.frames += parsed
            }
        }
    }

    let channel: any Channel
    private let collector: Collector

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    /// Connects over TLS (or plain TCP); `receiveBuffer` sets SO_RCVBUF; `autoRead` false reads nothing
    /// until ``resumeReading()``.
    static func connect(port: Int, tls: Bool = true, receiveBuffer: Int? = nil, autoRead: Bool = true) async throws
        -> RawConnection
    {
        let collector = Collector()
        let sslContext = try TLSContext.client(trustRootsFile: Fixtures.path("ca.crt"), applicationProtocols: ["h2"])
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.autoRead, value: autoRead)
            .connectTimeout(.seconds(5))
        if let receiveBuffer {
            bootstrap = bootstrap.channelOption(
                ChannelOptions.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if tls {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSHandler(context: sslContext))
                    }
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, collector: collector)
    }

    var isClosed: Bool { !channel.isActive }

    /// Writes `bytes`; the future completes once they are handed to the kernel.
    @discardableResult
    func send(_ bytes: [UInt8]) -> EventLoopFuture<Void> {
        channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    func pauseReading() async throws {
        try await channel.setOption(ChannelOptions.autoRead, value: false).get()
    }

    func resumeReading() async throws {
        try await channel.setOption(ChannelOptions.autoRead, value: true).get()
        channel.read()
    }

    /// The frames received so far (the TLS layer's bytes, parsed).
    var frames: [H2.Frame] { collector.state.withLock { $0.frames } }

    /// How many HEADERS frames were received so far.
    var headersReceived: Int { collector.state.withLock { $0.headers } }

    /// Polls (every 20 ms, at most `timeout`: 30 s by default, as the suite runs in parallel on small machines, where
    /// a loaded mock is slow, never wrong) until `condition` holds for the frames received; returns whether it did.
    func waitFor(_ timeout: Duration = .seconds(30), _ condition: ([H2.Frame]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(frames) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(frames)
    }

    /// Waits (at most `timeout`) for the server to close; returns whether it did.
    func waitForClose(_ timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !isClosed {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return isClosed
    }

    func close() async { try? await channel.close() }
}

/// The sum of the connection-level WINDOW_UPDATE increments in `frames`.
func connectionCredit(_ frames: [H2.Frame]) -> Int {
    frames.filter { $0.type == 0x8 && $0.stream == 0 && $0.payload.count == 4 }
        .reduce(0) { $0 + Int(H2.u32($1.payload, 0) & 0x7FFF_FFFF) }
}

// Serialized: several tests load the machine (thousands of requests); one at a time keeps the other suites,
// which run alongside, within their timings.
@Suite("Abuse: RFC 9113 answers, limits and timeouts on the APNs listeners", .serialized)
struct MockAbuseTests {
    static let payload = Array(Fixtures.payload.utf8)

    @Test(
        "A body over 5120 bytes: 413 HEADERS, DATA {\"reason\":\"PayloadTooLarge\"} with END_STREAM, then RST_STREAM(NO_ERROR)"
    )
    func earlyAnswerComplete() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            // 6000 bytes, no END_STREAM: over every payload limit, the rest of the body still to come.
            let body = Array(repeating: UInt8(ascii: "x"), count: 6000)
            connection.send(
                HPlusPreface()
                    + H2Plus.request(stream: 1, token: Fixtures.randomToken(), authorization: jwt, end: false)
                    + H2Plus.data(stream: 1, body, end: false))
            let done = await connection.waitFor { frames in
                frames.contains { H2Plus.resetCode($0) != nil && $0.stream == 1 }
            }
            #expect(done)
            let frames = connection.frames.filter { $0.stream == 1 }
            #expect(frames.map(\.type) == [0x1, 0x0, 0x3])  // HEADERS, DATA, RST_STREAM, in that order
            #expect(frames.first.map { $0.flags & 0x1 == 0 } == true)  // HEADERS without END_STREAM
            let data = try #require(frames.first { $0.type == 0x0 })
            #expect(data.flags & 0x1 == 0x1)  // END_STREAM
            #expect(String(decoding: data.payload, as: UTF8.self) == #"{"reason":"PayloadTooLarge"}"#)
            #expect(frames.last.flatMap(H2Plus.resetCode) == 0)  // NO_ERROR
            #expect(!connection.isClosed)
            #expect(server.deliveries().isEmpty)
        }
    }

    @Test(
        "DATA in flight to reset streams is credited: five 60 KiB bodies cut short, then a normal push, on one connection"
    )
    func windowCreditedForResetStreams() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            connection.send(HPlusPreface())
            // A client that respects the connection window (65,535 + the server's WINDOW_UPDATEs) and
            // sends each body whole, frame by frame as the window allows, as a client does whose DATA is
            // already in flight when the server answers early and resets the stream.
            var sent = 0
            let bodySize = 60 * 1024
            for i in 0..<5 {
                let stream = UInt32(1 + 2 * i)
                connection.send(
                    H2Plus.request(stream: stream, token: Fixtures.randomToken(), authorization: jwt, end: false))
                var left = bodySize
                while left > 0 {
                    let n = min(16384, left)
                    let fits = await connection.waitFor(.seconds(10)) { frames in
                        65535 + connectionCredit(frames) - sent >= n
                    }
                    #expect(
                        fits,
                        "request \(i): the connection window was not credited back (sent \(sent), credited \(connectionCredit(connection.frames)))"
                    )
                    guard fits else { return }
                    left -= n
                    sent += n
                    connection.send(
                        H2Plus.data(stream: stream, Array(repeating: UInt8(ascii: "x"), count: n), end: left == 0))
                }
            }
            let answered = await connection.waitFor { frames in
                (0..<5).allSatisfy { i in
                    frames.contains { $0.type == 0x0 && $0.stream == UInt32(1 + 2 * i) && $0.flags & 0x1 == 1 }
                }
            }
            #expect(answered)
            for i in 0..<5 {
                let data = connection.frames.first { $0.type == 0x0 && $0.stream == UInt32(1 + 2 * i) }
                #expect(data.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"reason":"PayloadTooLarge"}"#)
            }
            // Everything sent was credited but for less than half a window.
            let credited = await connection.waitFor(.seconds(5)) { frames in sent - connectionCredit(frames) < 65535 / 2
            }
            #expect(credited)
            // And a normal push still goes through on the same connection.
            let token = Fixtures.randomToken()
            connection.send(
                H2Plus.request(stream: 11, token: token, authorization: jwt, end: false)
                    + H2Plus.data(stream: 11, Self.payload, end: true))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 11 } })
            #expect(server.deliveries(token: token).count == 1)
            #expect(!connection.isClosed)
        }
    }

    @Test(
        "Bodies left unfinished hold at most ~1 MiB per connection: past it the window is not credited, until they end",
        .timeSensitive)
    func pendingBodyBudget() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            connection.send(HPlusPreface())
            // Streams of 4,000-byte bodies that never end, sent as far as the connection window allows.
            var sent = 0
            var opened: [UInt32] = []
            for i in 0..<1000 {
                let fits = await connection.waitFor(.seconds(2)) { frames in
                    65535 + connectionCredit(frames) - sent >= 4000
                }
                guard fits else { break }
                let stream = UInt32(1 + 2 * i)
                opened.append(stream)
                connection.send(
                    H2Plus.request(stream: stream, token: Fixtures.randomToken(), end: false)
                        + H2Plus.data(stream: stream, Array(repeating: UInt8(ascii: "{"), count: 4000), end: false))
                sent += 4000
            }
            // Held back after about 1 MiB (plus what one window lets through), not after 4 MB.
            #expect(sent >= 1 << 20)
            #expect(sent <= (1 << 20) + 65535 + 4000)
            #expect(opened.count < 1000)
            // Ending the streams frees the budget: answered, and credit flows again.
            let creditBefore = connectionCredit(connection.frames)
            connection.send(opened.flatMap { H2Plus.data(stream: $0, [], end: true) })
            #expect(
                await connection.waitFor(.seconds(20)) { frames in
                    Set(frames.filter { $0.type == 0x1 }.map(\.stream)).count == opened.count
                })
            #expect(await connection.waitFor { connectionCredit($0) > creditBefore })
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
        }
    }

    @Test("A stream error (an upper-case header name) resets that stream only: no GOAWAY, the other stream answered")
    func streamErrorStaysOnStream() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let good = Fixtures.randomToken()
            // Stream 1 in flight (its body still to come); stream 3 malformed.
            connection.send(
                HPlusPreface() + H2Plus.request(stream: 1, token: good, authorization: jwt, end: false)
                    + H2Plus.request(
                        stream: 3, token: Fixtures.randomToken(), authorization: jwt, extra: [("X-Bad", "1")], end: true
                    ))
            let reset = await connection.waitFor { $0.contains { $0.stream == 3 && H2Plus.resetCode($0) != nil } }
            #expect(reset)
            #expect(connection.frames.first { $0.stream == 3 }.flatMap(H2Plus.resetCode) == 0x1)  // PROTOCOL_ERROR
            connection.send(H2Plus.data(stream: 1, Self.payload, end: true))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 1 } })
            #expect(server.deliveries(token: good).count == 1)
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
            #expect(!connection.isClosed)
        }
    }

    @Test("Past MAX_CONCURRENT_STREAMS (1000): REFUSED_STREAM for the excess stream only, the 1000 others answered")
    func tooManyStreams() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            // 1001 streams opened, none ended (no authorization: each is judged 403 once ended).
            var bytes = HPlusPreface()
            for i in 0..<1001 {
                bytes += H2Plus.request(stream: UInt32(1 + 2 * i), token: Fixtures.randomToken(), end: false)
            }
            connection.send(bytes)
            let refused = await connection.waitFor { $0.contains { H2Plus.resetCode($0) != nil } }
            #expect(refused)
            let settings = try #require(connection.frames.first { $0.type == 0x4 && $0.flags == 0 })
            #expect(Self.setting(0x3, in: settings) == 1000)  // what the client is told
            let resets = connection.frames.filter { H2Plus.resetCode($0) != nil }
            #expect(resets.map(\.stream) == [2001])
            #expect(resets.first.flatMap(H2Plus.resetCode) == 0x7)  // REFUSED_STREAM
            // End the 1000 others: each answered (403 MissingProviderToken), no GOAWAY.
            var ends: [UInt8] = []
            for i in 0..<1000 { ends += H2Plus.data(stream: UInt32(1 + 2 * i), [], end: true) }
            connection.send(ends)
            // 1,000 requests judged on one connection: a debug build on a loaded machine once needed more than 20 s.
            let answered = await connection.waitFor(.seconds(90)) { frames in
                Set(frames.filter { $0.type == 0x1 }.map(\.stream)).count == 1000
            }
            #expect(answered)
            #expect(!connection.frames.contains { $0.type == 0x1 && $0.stream == 2001 })
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
            // The refused stream's number is used up; a new stream is served.
            connection.send(H2Plus.request(stream: 2003, token: Fixtures.randomToken(), end: true))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 2003 } })
        }
    }

    @Test(
        "A lower advertised limit (3) is what the client is told, and the 4th stream is refused (once the client acknowledged it)"
    )
    func lowerLimit() async throws {
        var configuration = Fixtures.configuration()
        configuration.maxConcurrentStreams = 3
        try await withMockServer(configuration: configuration) { server in
            let connection = try await RawConnection.connect(port: server.productionEndpoint.port)
            defer { Task { await connection.close() } }
            var bytes = HPlusPreface()
            for stream in [UInt32(1), 3, 5, 7] {
                bytes += H2Plus.request(stream: stream, token: Fixtures.randomToken(), end: false)
            }
            connection.send(bytes)
            #expect(await connection.waitFor { $0.contains { H2Plus.resetCode($0) != nil } })
            let settings = try #require(connection.frames.first { $0.type == 0x4 && $0.flags == 0 })
            #expect(Self.setting(0x3, in: settings) == 3)
            #expect(connection.frames.filter { H2Plus.resetCode($0) != nil }.map(\.stream) == [7])
            connection.send(
                H2Plus.data(stream: 1, [], end: true) + H2Plus.data(stream: 3, [], end: true)
                    + H2Plus.data(stream: 5, [], end: true))
            #expect(await connection.waitFor { Set($0.filter { $0.type == 0x1 }.map(\.stream)) == [1, 3, 5] })

            // Streams opened before the client acknowledged (so perhaps read) the limit are not refused
            // (nghttp opens its first streams that way); NIOHTTP2 allows 100 then.
            let early = try await RawConnection.connect(port: server.productionEndpoint.port)
            defer { Task { await early.close() } }
            var first = H2.preface
            for stream in [UInt32(1), 3, 5, 7, 9] {
                first += H2Plus.request(stream: stream, token: Fixtures.randomToken(), end: true)
            }
            early.send(first)
            #expect(await early.waitFor { Set($0.filter { $0.type == 0x1 }.map(\.stream)) == [1, 3, 5, 7, 9] })
            #expect(!early.frames.contains { H2Plus.resetCode($0) != nil })
        }
    }

    @Test(
        "A header list over MAX_HEADER_LIST_SIZE (8000): 431 on that stream only, never judged; the connection goes on")
    func oversizedHeaders() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let good = Fixtures.randomToken()
            let big = Fixtures.randomToken()
            // Stream 1 in flight; stream 3 with a 12,000-byte header (one HEADERS frame, under 16 KiB).
            connection.send(
                HPlusPreface() + H2Plus.request(stream: 1, token: good, authorization: jwt, end: false)
                    + H2Plus.request(
                        stream: 3, token: big, authorization: jwt,
                        extra: [("x-big", String(repeating: "a", count: 12_000))],
                        end: false))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 3 } })
            let settings = try #require(connection.frames.first { $0.type == 0x4 && $0.flags == 0 })
            #expect(Self.setting(0x6, in: settings) == 8000)  // what the client is told
            let three = connection.frames.filter { $0.stream == 3 }
            #expect(three.first.map { $0.type == 0x1 && $0.flags & 0x1 == 0x1 } == true)  // HEADERS, END_STREAM
            // then NO_ERROR
            #expect(await connection.waitFor { $0.contains { $0.stream == 3 && H2Plus.resetCode($0) == 0 } })
            connection.send(H2Plus.data(stream: 1, Self.payload, end: true))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 1 } })
            #expect(server.deliveries(token: good).count == 1)
            #expect(server.deliveries(token: big).isEmpty)
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
            #expect(!connection.isClosed)

            // A real client sees the status: 431.
            let r = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: big, authorization: jwt,
                    headers: ["x-big: " + String(repeating: "b", count: 9000)]))
            #expect(r.status == 431)
            #expect(server.deliveries(token: big).isEmpty)
        }
    }

    @Test("A header block past what the mock decodes (64 KiB): that connection ends with GOAWAY, the others go on")
    func hugeHeaderBlock() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let other = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await other.close() } }
            other.send(
                HPlusPreface()
                    + H2Plus.request(stream: 1, token: Fixtures.randomToken(), authorization: jwt, end: false))
            #expect(await other.waitFor { $0.contains { $0.type == 0x4 } })

            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            // HEADERS + CONTINUATION frames: 80,000 bytes of header block.
            var block = Array(
                H2Plus.request(
                    stream: 1, token: Fixtures.randomToken(), authorization: jwt,
                    extra: [("x-big", String(repeating: "a", count: 80_000))], end: true
                ).dropFirst(9))
            var bytes = HPlusPreface()
            var first = true
            while !block.isEmpty {
                let chunk = Array(block.prefix(16384))
                block.removeFirst(chunk.count)
                let flags: UInt8 = (first ? 0x1 : 0) | (block.isEmpty ? 0x4 : 0)
                bytes += H2.frame(type: first ? 0x1 : 0x9, flags: flags, stream: 1, chunk)
                first = false
            }
            connection.send(bytes)
            #expect(await connection.waitForClose(.seconds(10)))
            #expect(connection.frames.contains { $0.type == 0x7 })
            #expect(!connection.frames.contains { $0.type == 0x1 && $0.stream == 1 })

            other.send(H2Plus.data(stream: 1, Self.payload, end: true))
            #expect(await other.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 1 } })
            #expect(other.frames.compactMap(\.goAway).isEmpty)
        }
    }

    @Test(
        "Past max_connections, with every connection authenticated: a new one is closed at accept, nothing read; the open ones are unaffected"
    )
    func connectionCap() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.maxConnections = 3
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            var held: [RawConnection] = []
            for env in [APNsEnvironment.sandbox, .production, .sandbox] {
                let c = try await RawConnection.connect(port: server.endpoint(env).port)
                // Stream 3 whole (the connection authenticates: never evicted), then stream 5 left open.
                c.send(
                    HPlusPreface()
                        + H2Plus.request(stream: 3, token: Fixtures.randomToken(), authorization: jwt, end: false)
                        + H2Plus.data(stream: 3, Self.payload, end: true))
                #expect(await c.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 3 } })
                c.send(H2Plus.request(stream: 5, token: Fixtures.randomToken(), authorization: jwt, end: false))
                held.append(c)
            }
            #expect(server.openConnections == 3)
            // A flood of 20 more (plain TCP, sending a ClientHello-sized junk): each closed, nothing answered.
            for i in 0..<20 {
                let port = i % 2 == 0 ? server.sandboxEndpoint.port : server.productionEndpoint.port
                let (closed, received) = try await RawSocket.exchange(
                    port: port, tls: false, bytes: Array(repeating: 0x16, count: 64), timeout: .seconds(5))
                #expect(closed)
                #expect(received.isEmpty)
            }
            #expect(server.refusedConnections == 20)
            #expect(server.openConnections == 3)
            #expect(server.evictedConnections == 0)
            // The held connections still answer.
            for c in held {
                c.send(H2Plus.data(stream: 5, Self.payload, end: true))
                #expect(await c.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 5 } })
            }
            #expect(server.deliveries().count == 6)
            // Once one closes, a new connection is served again.
            await held[0].close()
            let deadline = ContinuousClock.now + .seconds(5)
            while server.openConnections > 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            try await MockRobustnessTests.stillServes(server, clock: clock)
            for c in held { await c.close() }
        }
    }

    @Test(
        "Slowloris: a preface sent one byte every 300 ms is cut off at the first-request timeout",
        .timeSensitive)
    func slowloris() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.firstRequestTimeout = 2
        try await withMockServer(configuration: configuration) { server in
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let started = ContinuousClock.now
            let bytes = H2.preface  // 33 bytes: ~10 s at one byte every 300 ms
            var sentAll = true
            for byte in bytes {
                if connection.isClosed {
                    sentAll = false
                    break
                }
                connection.send([byte])
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(await connection.waitForClose(.seconds(3)))
            #expect(!sentAll)
            // Closed at ~2 s, well before the ~10 s the preface would take (slack for a loaded machine).
            #expect(ContinuousClock.now - started < .seconds(8))
            try await MockRobustnessTests.stillServes(server, clock: clock)
        }
    }

    @Test(
        "A connection that completes its preface but sends no request is closed at the first-request timeout",
        .timeSensitive)
    func noFirstRequest() async throws {
        var configuration = Fixtures.configuration()
        configuration.firstRequestTimeout = 0.5
        try await withMockServer(configuration: configuration) { server in
            let connection = try await RawConnection.connect(port: server.productionEndpoint.port)
            defer { Task { await connection.close() } }
            connection.send(HPlusPreface())
            let started = ContinuousClock.now
            #expect(await connection.waitForClose(.seconds(5)))
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    @Test(
        "A never-ending body: RST_STREAM(REFUSED_STREAM) after the body timeout, never judged; the connection goes on")
    func neverEndingBody() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.streamBodyTimeout = 0.5
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let stuck = Fixtures.randomToken()
            let started = ContinuousClock.now
            connection.send(
                HPlusPreface() + H2Plus.request(stream: 1, token: stuck, authorization: jwt, end: false)
                    + H2Plus.data(stream: 1, Array(Self.payload.prefix(10)), end: false))
            #expect(await connection.waitFor { $0.contains { $0.stream == 1 && H2Plus.resetCode($0) != nil } })
            #expect(ContinuousClock.now - started >= .milliseconds(450))
            #expect(connection.frames.first { $0.stream == 1 }.flatMap(H2Plus.resetCode) == 0x7)
            #expect(server.deliveries(token: stuck).isEmpty)
            let token = Fixtures.randomToken()
            connection.send(
                H2Plus.request(stream: 3, token: token, authorization: jwt, end: false)
                    + H2Plus.data(stream: 3, Self.payload, end: true))
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 3 } })
            #expect(server.deliveries(token: token).count == 1)
            #expect(!connection.isClosed)
        }
    }

    @Test("Backpressure: a client that reads nothing stops being read; others are served; reading again, all answered")
    func backpressure() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.deliveryLogCapacity = 200_000
        // A fixed, small send buffer: the answers back up after a bounded number (with the kernel's
        // autotuning on loopback, several MB of answers could sit in the socket first).
        configuration.socketSendBuffer = 16384
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.productionEndpoint.port, receiveBuffer: 4096)
            defer { Task { await connection.close() } }
            // TLS handshake and the server's SETTINGS first; then the client stops reading.
            connection.send(HPlusPreface())
            #expect(await connection.waitFor { $0.contains { $0.type == 0x4 } })
            try await connection.pauseReading()
            // Small requests with big enough answers: authorization and topic indexed after the first.
            let count = Self.backpressureRequests
            var bytes: [UInt8] = []
            let token = Fixtures.randomToken()
            for i in 0..<count {
                let stream = UInt32(1 + 2 * i)
                var block: [UInt8] =
                    [0x83, 0x87, 0x04] + H2Plus.string("/3/device/\(token)") + [0x01] + H2Plus.string("127.0.0.1")
                if i == 0 {
                    block += [0x40] + H2Plus.string("authorization") + H2Plus.string("bearer \(jwt)")  // indexed: 63
                    block += [0x40] + H2Plus.string("apns-topic") + H2Plus.string(Fixtures.topic)  // indexed: 62
                } else {
                    block += [0xBF, 0xBE]
                }
                bytes +=
                    H2.frame(type: 0x1, flags: 0x4, stream: stream, block)
                    + H2Plus.data(stream: stream, Self.payload, end: true)
            }
            let written = connection.send(bytes)
            // The mock stops reading once its answers back up (polled for up to 30 s: on a loaded machine it takes
            // longer to get there): its side of that connection is not being read.
            var reading: [Bool] = []
            let backedUp = ContinuousClock.now + .seconds(30)
            repeat {
                try await Task.sleep(for: .milliseconds(100))
                reading = []
                for channel in server.connections.all() {
                    reading.append(try await channel.getOption(ChannelOptions.autoRead).get())
                }
            } while reading != [false] && ContinuousClock.now < backedUp
            #expect(reading == [false])
            // Not every request is judged while the client reads nothing (what one read cycle took in, up to 16
            // reads, ~6,000 requests, is), however long it waits.
            try await Task.sleep(for: .milliseconds(500))
            let judgedWhileBlocked = server.deliveries(token: token, limit: 200_000).count
            #expect(judgedWhileBlocked < count / 2)
            // Another connection is served meanwhile.
            try await MockRobustnessTests.stillServes(server, clock: clock)
            // The client reads: everything is answered, and its writes complete.
            try await connection.resumeReading()
            let deadline = ContinuousClock.now + .seconds(60)
            while connection.headersReceived < count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(connection.headersReceived == count)
            try await written.get()
            var after: [Bool] = []
            for channel in server.connections.all() {
                after.append(try await channel.getOption(ChannelOptions.autoRead).get())
            }
            #expect(!after.contains(false))
            #expect(server.deliveries(token: token, limit: 200_000).count == count)
            print("backpressure: \(judgedWhileBlocked) of \(count) requests judged while the client read nothing")
        }
    }

    static let backpressureRequests = 20_000

    /// The value of setting `id` in a SETTINGS frame.
    static func setting(_ id: UInt16, in frame: H2.Frame) -> UInt32? {
        var i = 0
        while i + 6 <= frame.payload.count {
            if UInt16(frame.payload[i]) << 8 | UInt16(frame.payload[i + 1]) == id {
                return H2.u32(frame.payload, i + 2)
            }
            i += 6
        }
        return nil
    }
}

/// The preface with the ACK of the server's SETTINGS.
func HPlusPreface() -> [UInt8] { H2Plus.preface }
