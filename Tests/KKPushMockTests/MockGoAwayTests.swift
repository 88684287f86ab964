import Foundation
import KKPushCore
import KKPushTLS
import KKPushTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import KKPushMock

/// GOAWAY as RFC 9113 §6.8 has it, against a client that behaves as Go's net/http2 does: on GOAWAY it resets
/// every stream above the last-stream-id (RST_STREAM CANCEL) to retry it elsewhere, and may still be writing
/// requests it sent before the GOAWAY reached it. The mock answers every stream up to the last-stream-id,
/// ignores the rest, and keeps reading a moment before it closes.
@Suite("GOAWAY with a Go-like client")
struct MockGoAwayTests {
    /// A raw TLS h2 connection: write frames, read the server's frames, see whether it closed.
    final class Connection: Sendable {
        let channel: any Channel
        let collector: RawSocket.Collector

        init(port: Int) async throws {
            let collector = RawSocket.Collector()
            channel = try await RawSocket.connect(port: port, tls: true, collector: collector)
            self.collector = collector
        }

        /// Writes `bytes`; false if the connection was already closed.
        func write(_ bytes: [UInt8]) async -> Bool {
            (try? await channel.writeAndFlush(ByteBuffer(bytes: bytes))) != nil
        }

        var frames: [H2.Frame] {
            get async throws { H2.parse(try await channel.eventLoop.submit { self.collector.received }.get()) }
        }

        var isOpen: Bool { channel.isActive }

        /// Waits (bounded) until `done` holds for the frames received, or the connection closes.
        func wait(_ timeout: Duration = .seconds(30), until done: ([H2.Frame]) -> Bool) async throws -> [H2.Frame] {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                let frames = try await self.frames
                if done(frames) || !isOpen { return frames }
                try await Task.sleep(for: .milliseconds(10))
            }
            return try await frames
        }

        func close() async { try? await channel.close() }
    }

    static func answered(_ frames: [H2.Frame]) -> Set<UInt32> {
        Set(frames.filter { $0.type == 0x1 }.map(\.stream))
    }

    @Test(
        "Resets and new requests above last-stream-id after GOAWAY: ignored; every stream up to it answered",
        .timeSensitive)
    func goLikeClient() async throws {
        // The write after the last answer must come within the mock's linger: 1 s by default, 10 s here (bounded by the
        // 15 s grace period), as a loaded machine once took more than 1 s to send it. (Earlier failures in series of
        // runs were the mock's: a stale drain timer cut the linger short, fixed in the state machine.)
        var configuration = Fixtures.configuration()
        configuration.goAwayGracePeriod = 15
        configuration.goAwayLinger = 10
        try await withMockServer(configuration: configuration) { server in
            let slow = Fixtures.randomToken()
            let trigger = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(slow), kind: .delay(milliseconds: 2000)))
            try server.addFault(
                MockFault(scope: .token(trigger), kind: .goAway(afterStreams: 1, reason: .idleTimeout), remaining: 1))
            let connection = try await Connection(port: server.sandboxEndpoint.port)
            defer { Task { await connection.close() } }
            // Stream 1 is delayed, 3 triggers the GOAWAY, 5 and 7 were in flight when it came.
            var first = H2.preface + H2.headers(stream: 1, token: slow, end: true)
            first += H2.headers(stream: 3, token: trigger, end: true)
            first += H2.headers(stream: 5, token: Fixtures.randomToken(), end: true)
            first += H2.headers(stream: 7, token: Fixtures.randomToken(), end: true)
            #expect(await connection.write(first))
            let untilGoAway = try await connection.wait { frames in frames.contains { $0.type == 0x7 } }
            let goAway = try #require(untilGoAway.compactMap(\.goAway).first, "no GOAWAY")
            #expect(goAway.lastStream == 3)

            // As Go does: reset every stream above last-stream-id, and a request written before the GOAWAY
            // arrived, then reset too; and a reset of a stream never opened.
            var after = H2.rstStream(5) + H2.rstStream(7)
            after += H2.headers(stream: 9, token: Fixtures.randomToken(), end: true) + H2.rstStream(9)
            after += H2.rstStream(21)
            #expect(await connection.write(after))

            // The delayed stream 1 is answered after all that: the connection was not closed by those frames.
            let frames = try await connection.wait { Self.answered($0).contains(1) }
            #expect(Self.answered(frames) == [1, 3], "answers: \(Self.answered(frames))")
            // Still reading after the last answer: a late write does not meet a closed connection at once.
            #expect(await connection.write(H2.rstStream(11)), "closed right after the last answer")
            // And then it closes by itself (the linger, 10 s here), without another GOAWAY.
            let end = try await connection.wait(.seconds(20)) { _ in false }
            #expect(!connection.isOpen, "still open 20 s after the last answer")
            #expect(end.compactMap(\.goAway).count == 1)
        }
    }
}
