import Foundation
import KKPushCore
import KKPushTestSupport
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import KKPushMock

/// RFC 9113's header-block rules as the mock checks them itself (NIOHTTP2's own check is off): which blocks are
/// malformed, and what a client sees on the wire for one (RST_STREAM PROTOCOL_ERROR on that stream, the
/// connection going on; GOAWAY ENHANCE_YOUR_CALM past the limit).
@Suite("Mock: RFC 9113 header-block rules")
struct MockHeaderBlockTests {
    static func block(_ fields: [(String, String)]) -> HPACKHeaders {
        HPACKHeaders(fields)
    }

    static let good: [(String, String)] = [
        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/ab"), (":authority", "api.push.apple.com"),
        ("apns-topic", "nl.kantinekoning.app"), ("te", "trailers"), ("user-agent", "x/1 (a; b)"),
    ]

    @Test("A well-formed request passes; so do a CONNECT with :method and :authority and empty trailers")
    func wellFormed() {
        #expect(RequestHeaderCheck.request(Self.block(Self.good)) == nil)
        #expect(RequestHeaderCheck.request(Self.block([(":method", "CONNECT"), (":authority", "a:443")])) == nil)
        #expect(RequestHeaderCheck.trailers(Self.block([])) == nil)
        #expect(RequestHeaderCheck.trailers(Self.block([("x-checksum", "abc")])) == nil)
        // obs-text and inner spaces are allowed in a regular field value (RFC 9110 §5.5)
        #expect(RequestHeaderCheck.request(Self.block(Self.good + [("x-name", "Zoë de Vries")])) == nil)
    }

    static let malformedRequests: [(String, [(String, String)])] = [
        ("pseudo after regular", [(":method", "POST"), ("apns-topic", "t"), (":scheme", "https"), (":path", "/")]),
        ("missing :path", [(":method", "POST"), (":scheme", "https")]),
        ("missing :method", [(":scheme", "https"), (":path", "/")]),
        ("empty :path", [(":method", "POST"), (":scheme", "https"), (":path", "")]),
        ("duplicate :path", [(":method", "POST"), (":scheme", "https"), (":path", "/"), (":path", "/")]),
        (":status in a request", [(":method", "POST"), (":scheme", "https"), (":path", "/"), (":status", "200")]),
        ("unknown pseudo", [(":method", "POST"), (":scheme", "https"), (":path", "/"), (":foo", "1")]),
        ("extended CONNECT", [(":method", "CONNECT"), (":protocol", "websocket"), (":authority", "a")]),
        ("CONNECT with :path", [(":method", "CONNECT"), (":authority", "a"), (":path", "/")]),
        ("space in :path", [(":method", "POST"), (":scheme", "https"), (":path", "/a b")]),
        ("upper-case name", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("X-Bad", "1")]),
        ("empty name", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("", "1")]),
        ("space in name", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("x bad", "1")]),
        ("connection", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("connection", "close")]),
        ("keep-alive", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("keep-alive", "5")]),
        ("upgrade", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("upgrade", "h2c")]),
        (
            "transfer-encoding",
            [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("transfer-encoding", "chunked")]
        ),
        ("te: gzip", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("te", "gzip")]),
        ("CR LF in a value", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("x-a", "1\r\nx-b: 2")]),
        ("NUL in a value", [(":method", "POST"), (":scheme", "https"), (":path", "/"), ("x-a", "1\u{0}")]),
    ]

    @Test("Each broken rule makes a request malformed", arguments: Self.malformedRequests)
    func malformedRequest(rule: String, fields: [(String, String)]) {
        #expect(RequestHeaderCheck.request(Self.block(fields)) != nil, "\(rule)")
    }

    @Test("Trailers may not carry pseudo-header fields, upper-case names or connection-specific fields")
    func malformedTrailers() {
        #expect(RequestHeaderCheck.trailers(Self.block([(":path", "/")])) != nil)
        #expect(RequestHeaderCheck.trailers(Self.block([("X-Sum", "1")])) != nil)
        #expect(RequestHeaderCheck.trailers(Self.block([("connection", "close")])) != nil)
        #expect(RequestHeaderCheck.trailers(Self.block([("x-sum", "a\nb")])) != nil)
    }

    /// HEADERS on `stream` from literal fields in the order given (END_STREAM).
    static func rawRequest(stream: UInt32, _ fields: [(String, String)]) -> [UInt8] {
        H2.frame(type: 0x1, flags: 0x05, stream: stream, fields.flatMap { H2Plus.literal($0.0, $0.1) })
    }

    static func malformedOnTheWire(token: String) -> [[(String, String)]] {
        let path = "/3/device/\(token)"
        return [
            [(":method", "POST"), ("apns-topic", Fixtures.topic), (":scheme", "https"), (":path", path)],
            [(":method", "POST"), (":scheme", "https"), (":authority", "127.0.0.1")],
            [(":method", "POST"), (":scheme", "https"), (":path", path), ("connection", "keep-alive")],
            [(":method", "POST"), (":scheme", "https"), (":path", path), ("te", "gzip")],
            [(":method", "POST"), (":scheme", "https"), (":path", path), ("x-a", "1\r\nx-b: 2")],
            [(":method", "POST"), (":scheme", "https"), (":path", path), (":status", "200")],
        ]
    }

    @Test("On the wire: each malformed request gets RST_STREAM PROTOCOL_ERROR; the next request is answered")
    func resetOnTheWire() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let cases = Self.malformedOnTheWire(token: Fixtures.randomToken())
            var bytes = HPlusPreface()
            for (i, fields) in cases.enumerated() { bytes += Self.rawRequest(stream: UInt32(2 * i + 1), fields) }
            let good = Fixtures.randomToken()
            let goodStream = UInt32(2 * cases.count + 1)
            bytes += H2Plus.request(stream: goodStream, token: good, authorization: jwt, end: false)
            bytes += H2Plus.data(stream: goodStream, MockAbuseTests.payload, end: true)
            connection.send(bytes)
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == goodStream } })
            for i in cases.indices {
                let stream = UInt32(2 * i + 1)
                #expect(
                    connection.frames.first { $0.stream == stream }.flatMap(H2Plus.resetCode) == 0x1,
                    "stream \(stream): \(cases[i])")
            }
            #expect(server.deliveries(token: good).count == 1)
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
            #expect(!connection.isClosed)
        }
    }

    @Test("Past 200 malformed requests on one connection: GOAWAY ENHANCE_YOUR_CALM")
    func tooManyMalformed() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let fields: [(String, String)] = [
                (":method", "POST"), (":scheme", "https"), (":path", "/3/device/ab"), ("te", "x"),
            ]
            var bytes = HPlusPreface()
            let count = APNsConnectionHandler.malformedBlockLimit + 1
            for i in 0..<count { bytes += Self.rawRequest(stream: UInt32(2 * i + 1), fields) }
            connection.send(bytes)
            #expect(await connection.waitFor { $0.contains { $0.goAway?.errorCode == 0xB } })
            let resets = connection.frames.filter { H2Plus.resetCode($0) == 0x1 }.count
            #expect(resets == count)
        }
    }
}

/// The mock's header-block check beside NIOHTTP2's own (which it replaces): generated request blocks, each sent to a
/// server-mode `NIOHTTP2Handler` with its checks on, on an `EmbeddedChannel`; the two must agree on every block.
@Suite("Mock: RFC 9113 header-block rules agree with NIOHTTP2's")
struct MockHeaderBlockAgreementTests {
    /// Receives what NIOHTTP2 passes on; swallows the stream errors it reports (it has reset the stream by then).
    final class Collector: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        var headersSeen = false
        var errors: [any Error] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .headers = unwrapInboundIn(data).payload { headersSeen = true }
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { errors.append(error) }
    }

    /// Whether NIOHTTP2, its header checks on, hands a request with `headers` (END_STREAM) on to the next handler.
    static func nioAccepts(_ headers: HPACKHeaders) throws -> Bool {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        let collector = Collector()
        try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server))
        try channel.pipeline.syncOperations.addHandler(collector)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var encoder = HPACKEncoder(allocator: channel.allocator)
        var block = channel.allocator.buffer(capacity: 256)
        try encoder.encode(headers: headers, to: &block)
        let bytes = H2.preface + H2.frame(type: 0x1, flags: 0x05, stream: 1, Array(buffer: block))
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        return collector.headersSeen
    }

    static let names = [
        ":method", ":method", ":scheme", ":scheme", ":path", ":path", ":authority", ":status", ":protocol", ":x",
        "apns-topic", "te", "connection", "upgrade", "X-Up", "x y", "content-type", "a\u{7F}", "apns-id",
    ]
    static let values = [
        "POST", "CONNECT", "https", "/3/device/ab", "", "trailers", "gzip", "a b", "a\r\nb", "x\u{0}", "Zoë", "\u{7F}",
        "a\tb", "127.0.0.1:443",
    ]

    @Test("2,000 generated request blocks: the mock's check and NIOHTTP2's agree on each")
    func agreesWithNIOHTTP2() throws {
        // Fixed seed: a disagreement names a block that can be made again.
        var random = SeededRandom(seed: 0x9E37_79B9_7F4A_7C15)
        func pick(_ n: Int) -> Int { Int.random(in: 0..<n, using: &random) }
        var disagreements: [String] = []
        var rejected = 0
        for _ in 0..<2_000 {
            var fields: [(String, String)] = []
            // Most blocks start as a valid request, so the rules past the first are reached too.
            if pick(3) > 0 {
                fields = [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/ab")]
            }
            for _ in 0..<(1 + pick(3)) {
                // Half of the added fields are ordinary ones, at the end: blocks that pass are common too.
                if pick(2) == 0 {
                    fields.append(("apns-priority", "10"))
                    continue
                }
                let name = Self.names[pick(Self.names.count)]
                let value = Self.values[pick(Self.values.count)]
                fields.insert((name, value), at: pick(fields.count + 1))
            }
            let headers = HPACKHeaders(fields)
            let mock = RequestHeaderCheck.request(headers) == nil
            let nio = try Self.nioAccepts(headers)
            if !mock { rejected += 1 }
            if mock != nio {
                disagreements.append("\(fields) mock \(mock ? "accepts" : "rejects"), NIOHTTP2 the other")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        // Both kinds were tried, each in earnest.
        #expect(rejected >= 200, "\(rejected) of 2,000 rejected")
        #expect(rejected <= 1_800, "\(rejected) of 2,000 rejected")
    }
}
