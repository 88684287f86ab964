import Foundation
import KKPushCore
import KKPushTestSupport
import NIOHPACK
import Testing

@testable import KKPushMock

/// The mock's frame layer on libnghttp2 (`NGHTTP2Framing`): where it cuts the bytes it reads into frames, so that after
/// its GOAWAY a reset of a stream the client never opened is left out (RFC 9113 §6.8) instead of ending the
/// connection (§6.4), and the `content-length` rule the mock applies itself (libnghttp2's HTTP checks are off).
@Suite("Mock frame layer: frame boundaries across reads, content-length")
struct MockFrameLayerTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, stream: UInt32, payload: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        H2.frame(type: type, flags: flags, stream: stream, payload)
    }

    static func rst(_ stream: UInt32) -> [UInt8] { frame(type: 0x3, stream: stream, payload: [0, 0, 0, 8]) }

    /// What the splitter passes on when `bytes` arrive in reads cut at `cuts`.
    static func passed(_ bytes: [UInt8], cuts: [Int], ignoringIdleResets: Bool) -> [UInt8] {
        var boundaries = InboundFrameBoundaries()
        var out: [UInt8] = []
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            bytes[start..<end].withUnsafeBytes { raw in
                boundaries.split(raw, ignoringIdleResets: ignoringIdleResets) { out.append(contentsOf: $0) }
            }
            start = end
        }
        return out
    }

    /// A connection's bytes: preface, SETTINGS, HEADERS on 1 and 3 (stand-in payloads), DATA on 1, RST_STREAM on 3
    /// (opened), on 9 (never opened), PING, RST_STREAM on 21 (never opened), DATA on 3 with a 300-byte payload.
    static let stream: [UInt8] =
        preface + frame(type: 0x4, stream: 0, payload: [0, 3, 0, 0, 0, 100])
        + frame(type: 0x1, stream: 1, payload: Array(repeating: 0x82, count: 20), flags: 0x4)
        + frame(type: 0x1, stream: 3, payload: Array(repeating: 0x83, count: 17), flags: 0x4)
        + frame(type: 0x0, stream: 1, payload: Array(repeating: 0x7B, count: 40))
        + rst(3) + rst(9) + frame(type: 0x6, stream: 0, payload: Array(repeating: 1, count: 8)) + rst(21)
        + frame(type: 0x0, stream: 3, payload: Array(repeating: 0x7D, count: 300))

    static var withoutIdleResets: [UInt8] {
        var expected = stream
        for idle in [rst(21), rst(9)] {
            let at = expected.indices.first { expected[$0...].starts(with: idle) }!
            expected.removeSubrange(at..<(at + idle.count))
        }
        return expected
    }

    @Test("Every byte passes on, in order, wherever the reads are cut (one cut, then two)")
    func everyBytePasses() {
        for cut in 0...Self.stream.count {
            #expect(Self.passed(Self.stream, cuts: [cut], ignoringIdleResets: false) == Self.stream, "cut at \(cut)")
        }
        for a in stride(from: 20, to: 120, by: 3) {
            for b in a..<(a + 14) {
                #expect(Self.passed(Self.stream, cuts: [a, b], ignoringIdleResets: false) == Self.stream)
            }
        }
    }

    @Test("After GOAWAY: resets of streams never opened are left out, whole, wherever the reads are cut; nothing else")
    func idleResetsLeftOut() {
        let expected = Self.withoutIdleResets
        #expect(expected.count == Self.stream.count - 26)
        for cut in 0...Self.stream.count {
            #expect(Self.passed(Self.stream, cuts: [cut], ignoringIdleResets: true) == expected, "cut at \(cut)")
        }
        // Byte by byte.
        #expect(Self.passed(Self.stream, cuts: Array(0..<Self.stream.count), ignoringIdleResets: true) == expected)
    }

    @Test("content-length: digits, every value the same; anything else is malformed")
    func contentLength() {
        func check(_ values: [String]) -> Int?? {
            var headers: HPACKHeaders = [":method": "POST", ":path": "/3/device/ab"]
            for v in values { headers.add(name: "content-length", value: v) }
            return RequestHeaderCheck.contentLength(headers).map(\.length)
        }
        #expect(check([]) == .some(nil))
        #expect(check(["216"]) == .some(216))
        #expect(check(["0"]) == .some(0))
        #expect(check(["216", "216"]) == .some(216))
        #expect(check(["216", "217"]) == nil)
        #expect(check([""]) == nil)
        #expect(check(["-1"]) == nil)
        #expect(check(["2 16"]) == nil)
        #expect(check(["0x10"]) == nil)
        #expect(check([String(repeating: "9", count: 19)]) == nil)
    }

    @Test(
        "On the wire: a body against its content-length, or a header name not ASCII, gets RST_STREAM PROTOCOL_ERROR; a matching one is answered"
    )
    func contentLengthOnTheWire() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let connection = try await RawConnection.connect(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            let payload = MockAbuseTests.payload
            let (short, long, bad, good) = (Fixtures.randomToken(), Fixtures.randomToken(), "x", Fixtures.randomToken())
            var bytes = HPlusPreface()
            // Declares 10, sends the whole payload: malformed once the body passes 10 bytes.
            bytes += H2Plus.request(
                stream: 1, token: short, authorization: jwt, extra: [("content-length", "10")], end: false)
            bytes += H2Plus.data(stream: 1, payload, end: true)
            // Declares more than it sends: malformed when the stream ends.
            bytes += H2Plus.request(
                stream: 3, token: long, authorization: jwt, extra: [("content-length", "\(payload.count + 1)")],
                end: false)
            bytes += H2Plus.data(stream: 3, payload, end: true)
            // Not a length.
            bytes += H2Plus.request(
                stream: 5, token: Fixtures.randomToken(), authorization: jwt, extra: [("content-length", bad)],
                end: true)
            bytes += H2Plus.request(
                stream: 7, token: good, authorization: jwt, extra: [("content-length", "\(payload.count)")], end: false)
            bytes += H2Plus.data(stream: 7, payload, end: true)
            // A header name that is not ASCII: malformed on its stream (and no crash).
            bytes += H2Plus.request(
                stream: 9, token: Fixtures.randomToken(), authorization: jwt, extra: [("x-caf\u{E9}", "1")], end: true)
            connection.send(bytes)
            #expect(await connection.waitFor { $0.contains { $0.type == 0x1 && $0.stream == 7 } })
            #expect(await connection.waitFor { $0.contains { H2Plus.resetCode($0) != nil && $0.stream == 9 } })
            for stream: UInt32 in [1, 3, 5, 9] {
                #expect(
                    connection.frames.first { $0.stream == stream }.flatMap(H2Plus.resetCode) == 0x1, "stream \(stream)"
                )
            }
            #expect(server.deliveries(token: short).isEmpty)
            #expect(server.deliveries(token: long).isEmpty)
            #expect(server.deliveries(token: good).count == 1)
            #expect(connection.frames.compactMap(\.goAway).isEmpty)
        }
    }

    @Test("Without a socket (MockConnectionExchange, the fuzz target's way in): a request is judged and answered")
    func exchangeAnswers() throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        let pem = try String(contentsOfFile: Fixtures.certificates + "/AuthKey_KKTEST0001.p8", encoding: .utf8)
        configuration.keys = [MockKey(teamID: "KKTEAM0001", keyID: "KKTEST0001", pem: pem)]
        let exchange = try MockConnectionExchange(configuration: configuration)
        let jwt = try Fixtures.token(issuedAt: clock.now())
        let token = Fixtures.randomToken()
        let request =
            HPlusPreface() + H2Plus.request(stream: 1, token: token, authorization: jwt, end: false)
            + H2Plus.data(stream: 1, MockAbuseTests.payload, end: true)
        for readSize in [16384, 7, 1] {
            let out = exchange.respond(to: request, readSize: readSize)
            var frames: [(type: UInt8, stream: UInt32)] = []
            var offset = 0
            while offset + 9 <= out.count {
                let length = Int(out[offset]) << 16 | Int(out[offset + 1]) << 8 | Int(out[offset + 2])
                let stream =
                    UInt32(out[offset + 5] & 0x7F) << 24 | UInt32(out[offset + 6]) << 16
                    | UInt32(out[offset + 7]) << 8 | UInt32(out[offset + 8])
                frames.append((out[offset + 3], stream))
                offset += 9 + length
            }
            #expect(offset == out.count, "whole frames (read size \(readSize))")
            #expect(frames.first?.type == 0x4, "SETTINGS first (read size \(readSize))")
            #expect(frames.contains { $0.type == 0x1 && $0.stream == 1 }, "answered (read size \(readSize))")
        }
        #expect(exchange.state.log(limit: 10) { $0.token == token }.count == 3)
    }
}
