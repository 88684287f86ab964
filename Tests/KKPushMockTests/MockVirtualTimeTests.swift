import Foundation
import KKPushCore
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import KKPushMock

/// The mock's connection decisions about time (the first-request timeout, the body timeout, the idle timeout,
/// the linger after GOAWAY), driven in virtual time: the real `APNsConnectionHandler` behind the mock's frame layer
/// (`NGHTTP2Framing`) on an `EmbeddedChannel`, a client `NIOHTTP2Handler` on another, the bytes carried between
/// them by the test, and the clock moved with `advanceTime` (the handler reads `eventLoop.now`). No test here
/// sleeps, and each runs the same on a loaded machine as on an idle one.
@Suite("Mock connection timing in virtual time (EmbeddedChannel)")
struct MockVirtualTimeTests {
    /// Collects the frames the client side receives.
    final class FrameCollector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        var frames: [HTTP2Frame] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            frames.append(unwrapInboundIn(data))
        }
    }

    static let settings = APNsConnectionHandler.Settings(
        maxConcurrentStreams: 1000, raiseStreamsAfterAuth: false, goAwayOnBadCertificateEnvironment: false,
        gracePeriod: .seconds(5), resetLimit: 200, resetWindow: .seconds(30), firstRequestTimeout: .seconds(10),
        bodyTimeout: .seconds(3))

    /// A server and a client channel on one embedded loop, connected by ``pump()``.
    final class Pair {
        let loop = EmbeddedEventLoop()
        let server: EmbeddedChannel
        let client: EmbeddedChannel
        let collector = FrameCollector()

        init(idle: TimeAmount = .seconds(3600)) throws {
            var settings = MockVirtualTimeTests.settings
            settings.idleTimeout = idle
            // An embedded loop's clock starts at 0; a real one at the machine's uptime. Start an hour in, so
            // "now minus a window" stays a time and does not saturate at 0.
            loop.advanceTime(by: .hours(1))
            server = EmbeddedChannel(loop: loop)
            client = EmbeddedChannel(loop: loop)
            let state = MockState(logCapacity: 100, strict: false, clock: SystemWallClock())
            let processor = MockRequestProcessor(
                environment: .sandbox, state: state, maxAge: 3600, futureSkew: 60, updateInterval: 1200)
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            // The mock's own frame layer (libnghttp2), as the server builds it.
            try server.pipeline.syncOperations.addHandler(
                NGHTTP2Framing(settings: .init(maxConcurrentStreams: 1000, maxHeaderListSize: 65536)))
            try server.pipeline.syncOperations.addHandler(
                APNsConnectionHandler(
                    processor: processor, logger: logger, settings: settings,
                    wire: ConnectionWire(advertisedMaxStreams: 1000)))
            try client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            try client.pipeline.syncOperations.addHandler(collector)
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
            try server.connect(to: address).wait()
            try client.connect(to: address).wait()
            try pump()
        }

        /// Carries bytes both ways until neither side has anything to write.
        func pump() throws {
            var moved = true
            while moved {
                moved = false
                while server.isActive, let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    try server.writeInbound(bytes)
                    moved = true
                }
                while client.isActive, let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    try client.writeInbound(bytes)
                    moved = true
                }
            }
        }

        /// Moves the clock on and delivers what the server wrote.
        func advance(_ amount: TimeAmount) throws {
            loop.advanceTime(by: amount)
            try pump()
        }

        func send(_ frame: HTTP2Frame) throws {
            try client.writeOutbound(frame)
            try pump()
        }

        func requestHeaders(stream: HTTP2StreamID, endStream: Bool) -> HTTP2Frame {
            let headers: HPACKHeaders = [
                ":method": "POST", ":scheme": "https", ":authority": "api.sandbox.push.apple.com",
                ":path": "/3/device/" + String(repeating: "ab", count: 32), "apns-topic": "nl.kantinekoning.app",
                "apns-push-type": "alert",
            ]
            return HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers, endStream: endStream)))
        }

        var goAway: (lastStreamID: HTTP2StreamID, debug: String)? {
            for f in collector.frames {
                if case .goAway(let last, _, let data) = f.payload {
                    return (last, data.map { String(buffer: $0) } ?? "")
                }
            }
            return nil
        }

        func finish() {
            _ = try? server.finish(acceptAlreadyClosed: true)
            _ = try? client.finish(acceptAlreadyClosed: true)
        }
    }

    @Test("a connection that sends no request is closed at the first-request timeout, not a moment before")
    func firstRequestTimeout() throws {
        let pair = try Pair()
        defer { pair.finish() }
        try pair.advance(.seconds(10) - .milliseconds(1))
        #expect(pair.server.isActive)
        try pair.advance(.milliseconds(2))
        #expect(!pair.server.isActive)
    }

    @Test("a request whose body never ends gets RST_STREAM REFUSED_STREAM at the body timeout; the connection stays")
    func bodyTimeout() throws {
        let pair = try Pair()
        defer { pair.finish() }
        try pair.send(pair.requestHeaders(stream: 1, endStream: false))
        try pair.advance(.seconds(3) - .milliseconds(1))
        #expect(!pair.collector.frames.contains { if case .rstStream = $0.payload { true } else { false } })
        try pair.advance(.milliseconds(2))
        let reset = pair.collector.frames.first { if case .rstStream = $0.payload { true } else { false } }
        #expect(reset?.streamID == 1)
        if case .rstStream(let code) = reset?.payload { #expect(code == .refusedStream) }
        #expect(pair.server.isActive)
        // The first-request timeout no longer applies: a request arrived.
        try pair.advance(.seconds(30))
        #expect(pair.server.isActive)
    }

    @Test("an idle connection gets GOAWAY IdleTimeout with the last stream it judged, then closes")
    func idleTimeout() throws {
        let pair = try Pair(idle: .seconds(60))
        defer { pair.finish() }
        try pair.send(pair.requestHeaders(stream: 1, endStream: true))
        let answered = pair.collector.frames.contains {
            if case .headers(let h) = $0.payload { h.headers.first(name: ":status") != nil } else { false }
        }
        #expect(answered)
        try pair.advance(.seconds(59))
        #expect(pair.goAway == nil && pair.server.isActive)
        try pair.advance(.seconds(2))
        let goAway = try #require(pair.goAway)
        #expect(goAway.lastStreamID == 1)
        #expect(goAway.debug.contains("IdleTimeout"))
        // It lingers a moment for frames already in flight (RFC 9113 §6.8), then closes: bounded, in virtual time.
        try pair.advance(.seconds(10))
        #expect(!pair.server.isActive)
    }

    /// Opens `count` streams from `first` (HEADERS without END_STREAM) and resets each (RST_STREAM CANCEL).
    static func resetStreams(_ pair: Pair, from first: Int, count: Int) throws {
        for i in 0..<count {
            let id = HTTP2StreamID(first + 2 * i)
            try pair.client.writeOutbound(pair.requestHeaders(stream: id, endStream: false))
            try pair.client.writeOutbound(HTTP2Frame(streamID: id, payload: .rstStream(.cancel)))
        }
        try pair.pump()
    }

    static func enhanceYourCalm(_ pair: Pair) -> Bool {
        pair.collector.frames.contains {
            if case .goAway(_, let code, _) = $0.payload { code == .enhanceYourCalm } else { false }
        }
    }

    @Test("rapid reset: over 200 resets of pending streams within 30 s is GOAWAY ENHANCE_YOUR_CALM; spread out, none")
    func rapidResetWindow() throws {
        let spread = try Pair()
        defer { spread.finish() }
        try Self.resetStreams(spread, from: 1, count: 150)
        try spread.advance(.seconds(31))
        try Self.resetStreams(spread, from: 301, count: 150)
        #expect(!Self.enhanceYourCalm(spread) && spread.server.isActive)

        let burst = try Pair()
        defer { burst.finish() }
        try Self.resetStreams(burst, from: 1, count: 150)
        try burst.advance(.seconds(29))
        try Self.resetStreams(burst, from: 301, count: 51)
        #expect(Self.enhanceYourCalm(burst))
    }

    @Test("a graceful close (shutdown) with nothing pending: GOAWAY Shutdown naming the last stream, then closed")
    func gracefulClose() throws {
        let pair = try Pair()
        defer { pair.finish() }
        try pair.send(pair.requestHeaders(stream: 1, endStream: true))
        pair.server.pipeline.fireUserInboundEventTriggered(APNsConnectionHandler.GracefulCloseEvent())
        try pair.pump()
        let goAway = try #require(pair.goAway)
        #expect(goAway.lastStreamID == 1 && goAway.debug.contains("Shutdown"))
        try pair.advance(.seconds(1))
        #expect(!pair.server.isActive)
    }
}
