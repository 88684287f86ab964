import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTLS
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// Raw HTTP/2 frames, for the tests that must see exactly what the mock sends (last-stream-id,
/// error codes, frame order): built by hand (HPACK literals only), sent over TLS by ``RawSocket``.
enum H2 {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(type: 0x4, flags: 0, stream: 0, [])

    struct Frame {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: [UInt8]

        /// GOAWAY: (last-stream-id, error code).
        var goAway: (lastStream: UInt32, errorCode: UInt32)? {
            guard type == 0x7, payload.count >= 8 else { return nil }
            return (u32(payload, 0) & 0x7FFF_FFFF, u32(payload, 4))
        }
    }

    static func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [
            UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags,
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ]
            + payload
    }

    private static func string(_ s: String) -> [UInt8] {
        let bytes = Array(s.utf8)
        precondition(bytes.count < 127)
        return [UInt8(bytes.count)] + bytes
    }

    /// HEADERS of a push to `token` (no `authorization`: the mock judges it 403 MissingProviderToken,
    /// which is enough to be "judged"); END_STREAM if `end`.
    static func headers(stream: UInt32, token: String, end: Bool) -> [UInt8] {
        var block: [UInt8] = [0x83, 0x87]  // :method POST, :scheme https (static table)
        block += [0x04] + string("/3/device/\(token)")  // :path, literal without indexing
        block += [0x01] + string("127.0.0.1")  // :authority
        block += [0x00] + string("apns-topic") + string(Fixtures.topic)
        return frame(type: 0x1, flags: end ? 0x05 : 0x04, stream: stream, block)
    }

    static func rstStream(_ stream: UInt32, code: UInt32 = 0x8) -> [UInt8] {
        frame(
            type: 0x3, flags: 0, stream: stream,
            [UInt8(code >> 24), UInt8(code >> 16 & 0xFF), UInt8(code >> 8 & 0xFF), UInt8(code & 0xFF)])
    }

    /// The frames in what the server sent (it sends no preface magic).
    static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var i = 0
        while i + 9 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 9 + n <= bytes.count else { break }
            frames.append(
                Frame(
                    type: bytes[i + 3], flags: bytes[i + 4], stream: u32(bytes, i + 5) & 0x7FFF_FFFF,
                    payload: Array(bytes[(i + 9)..<(i + 9 + n)])))
            i += 9 + n
        }
        return frames
    }
}

extension H2 {
    /// Sends `bytes` over TLS and collects the server's frames until `done` holds for them, the server
    /// closes, or `timeout` passes.
    static func exchange(
        port: Int, _ bytes: [UInt8], timeout: Duration = .seconds(30), until done: @escaping ([Frame]) -> Bool
    ) async throws -> (closed: Bool, frames: [Frame]) {
        let collector = RawSocket.Collector()
        let channel = try await RawSocket.connect(port: port, tls: true, collector: collector)
        try? await channel.writeAndFlush(ByteBuffer(bytes: bytes))
        let deadline = ContinuousClock.now + timeout
        var frames: [Frame] = []
        var closed = false
        while ContinuousClock.now < deadline {
            let received = try await channel.eventLoop.submit { collector.received }.get()
            frames = parse(received)
            closed = !channel.isActive
            if closed || done(frames) { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        if !closed { try? await channel.close() }
        // What arrived with the close.
        frames = parse(try await channel.eventLoop.submit { collector.received }.get())
        return (closed, frames)
    }
}

/// Client-library helpers on the mock's clock.
enum ClientSupport {
    struct MockClock: WallClock {
        let server: MockAPNsServer
        func now() -> Date { server.now }
    }

    static func configuration(
        _ server: MockAPNsServer, maxInFlight: Int = 100, maxConnections: Int = 1
    ) throws -> (APNsClientConfiguration, ProviderTokenCache) {
        let cache = ProviderTokenCache(
            key: try Fixtures.privateKey(Fixtures.bothKeyID), keyID: Fixtures.bothKeyID, teamID: Fixtures.teamID,
            clock: MockClock(server: server))
        let configuration = APNsClientConfiguration(
            credential: .token(cache), sandboxEndpoint: server.sandboxEndpoint,
            productionEndpoint: server.productionEndpoint, connectTimeout: .seconds(30), requestTimeout: .seconds(60),
            maxInFlightPerConnection: maxInFlight, maxConnections: maxConnections,
            retry: APNsRetryPolicy(
                maxAttempts: 4, initialDelay: .milliseconds(5), maxDelay: .milliseconds(40), maxTotalTime: .seconds(120)
            )
        )
        return (configuration, cache)
    }

    static func item(_ server: MockAPNsServer, _ token: String) -> PushBatchItem {
        PushBatchItem(
            request: NotificationRequest(
                deviceToken: token, topic: Fixtures.topic, pushType: .alert, priority: 10,
                payload: Array(Fixtures.payload.utf8)),
            endpoint: server.sandboxEndpoint)
    }

    /// Sends `tokens` as one batch; the results by index.
    static func send(_ client: APNsClient, _ server: MockAPNsServer, _ tokens: [String]) async -> [PushResult] {
        let results = Mutex<[PushResult]>([])
        await client.sendAll(tokens.map { item(server, $0) }) { r in results.withLock { $0.append(r) } }
        return results.withLock { $0 }.sorted { $0.index < $1.index }
    }
}

@Suite("Connections: resets, GOAWAY last-stream-id, reset and restart")
struct MockConnectionTests {
    @Test(
        "1,000 pushes one at a time over one connection: libcurl's RST_STREAM after each is ignored, no failure, one connection"
    )
    func manyRequestsOneConnection() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let (configuration, _) = try ClientSupport.configuration(server, maxInFlight: 1)
            let tokens = (0..<1000).map { _ in Fixtures.randomToken() }
            try await withAPNsClient(configuration: configuration) { client in
                let results = await ClientSupport.send(client, server, tokens)
                #expect(results.count == 1000)
                #expect(results.allSatisfy { $0.outcome.isAccepted && $0.outcome.attempts == 1 })
                #expect(results.filter(\.outcome.possiblyDuplicated).isEmpty)
                // The mock never closed the connection: still open, and the only one ever accepted.
                #expect(server.openConnections == 1)
                #expect(server.acceptedConnections == 1)
            }
            #expect(server.deliveries(limit: 5000).count == 1000)
        }
    }

    @Test("Resets of pending streams past the limit: GOAWAY ENHANCE_YOUR_CALM naming the last judged stream")
    func rapidReset() async throws {
        var configuration = Fixtures.configuration()
        configuration.streamResetLimit = 5
        try await withMockServer(configuration: configuration) { server in
            // Stream 1 complete (judged); streams 3...15 opened and reset before their request ends.
            var bytes = H2.preface + H2.headers(stream: 1, token: Fixtures.randomToken(), end: true)
            for stream in stride(from: UInt32(3), through: 15, by: 2) {
                bytes += H2.headers(stream: stream, token: Fixtures.randomToken(), end: false) + H2.rstStream(stream)
            }
            let (closed, received) = try await RawSocket.exchange(
                port: server.sandboxEndpoint.port, tls: true, bytes: bytes, timeout: .seconds(30))
            #expect(closed)
            let goAways = H2.parse(received).compactMap(\.goAway)
            #expect(goAways.count == 1)
            #expect(goAways.first?.lastStream == 1)
            #expect(goAways.first?.errorCode == 0xB)  // ENHANCE_YOUR_CALM
        }
    }

    @Test("Resets of finished streams (answered, or skipped and so closed) are ignored, whatever the limit")
    func finishedResetsIgnored() async throws {
        var configuration = Fixtures.configuration()
        configuration.streamResetLimit = 2
        try await withMockServer(configuration: configuration) { server in
            // Streams 1 and 9 complete (opening 9 closes the idle 3, 5 and 7, RFC 9113 §5.1.1); then
            // resets of 1 (five times, as STREAM_CLOSED) and of 3, 5, 7; then stream 11.
            var bytes = H2.preface + H2.headers(stream: 1, token: Fixtures.randomToken(), end: true)
            bytes += H2.headers(stream: 9, token: Fixtures.randomToken(), end: true)
            for _ in 0..<5 { bytes += H2.rstStream(1, code: 0x5) }
            for stream in [UInt32(3), 5, 7] { bytes += H2.rstStream(stream) }
            bytes += H2.headers(stream: 11, token: Fixtures.randomToken(), end: true)
            let (_, frames) = try await H2.exchange(port: server.sandboxEndpoint.port, bytes) { frames in
                frames.contains { $0.type == 0x1 && $0.stream == 11 }
            }
            #expect(frames.compactMap(\.goAway).isEmpty)
            #expect(frames.contains { $0.type == 0x1 && $0.stream == 11 })  // stream 11 answered
        }
    }

    @Test("A GOAWAY fault with a delayed stream in flight: last-stream-id covers it and its answer still comes")
    func goAwayCoversDelayed() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let slow = Fixtures.randomToken()
            let trigger = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(slow), kind: .delay(milliseconds: 300)))
            try server.addFault(
                MockFault(scope: .token(trigger), kind: .goAway(afterStreams: 1, reason: .shutdown), remaining: 1))
            let bytes =
                H2.preface + H2.headers(stream: 1, token: slow, end: true)
                + H2.headers(stream: 3, token: trigger, end: true)
            let started = ContinuousClock.now
            let (closed, received) = try await RawSocket.exchange(
                port: server.sandboxEndpoint.port, tls: true, bytes: bytes, timeout: .seconds(30))
            #expect(closed)
            #expect(ContinuousClock.now - started >= .milliseconds(300))
            let frames = H2.parse(received)
            let goAwayIndex = try #require(frames.firstIndex { $0.type == 0x7 })
            #expect(frames[goAwayIndex].goAway?.lastStream == 3)
            #expect(frames[goAwayIndex].goAway?.errorCode == 0)
            // The trigger's answer before the GOAWAY, the delayed stream's after it.
            #expect(frames[..<goAwayIndex].contains { $0.type == 0x1 && $0.stream == 3 })
            #expect(frames[goAwayIndex...].contains { $0.type == 0x1 && $0.stream == 1 })
        }
    }

    @Test(
        "Delayed answers come when due, in due order: a shorter delay after a longer one first, a reset stream never")
    func delayedAnswersInDueOrder() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let slow = Fixtures.randomToken()
            let fast = Fixtures.randomToken()
            let trigger = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(slow), kind: .delay(milliseconds: 600)))
            try server.addFault(MockFault(scope: .token(fast), kind: .delay(milliseconds: 150)))
            try server.addFault(
                MockFault(scope: .token(trigger), kind: .goAway(afterStreams: 1, reason: .shutdown), remaining: 1))
            // Streams 1, 5 and 7 wait 600 ms, in line; 3 waits 150 ms though judged after 1; 7 is reset while it
            // waits; 9 is answered at once, then GOAWAY, and the close waits for the held answers.
            let bytes =
                H2.preface + H2.headers(stream: 1, token: slow, end: true)
                + H2.headers(stream: 3, token: fast, end: true) + H2.headers(stream: 5, token: slow, end: true)
                + H2.headers(stream: 7, token: slow, end: true) + H2.rstStream(7)
                + H2.headers(stream: 9, token: trigger, end: true)
            let started = ContinuousClock.now
            let (closed, received) = try await RawSocket.exchange(
                port: server.sandboxEndpoint.port, tls: true, bytes: bytes, timeout: .seconds(30))
            #expect(closed)
            #expect(ContinuousClock.now - started >= .milliseconds(600))
            let answers = H2.parse(received).filter { $0.type == 0x1 }.map(\.stream)
            #expect(answers == [9, 3, 1, 5], "\(answers)")
        }
    }

    @Test("Through the client: a delayed push in flight at GOAWAY is delivered once, answered, not retried")
    func goAwayDelayedThroughClient() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let slow = Fixtures.randomToken()
            let trigger = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(slow), kind: .delay(milliseconds: 300)))
            try server.addFault(
                MockFault(scope: .token(trigger), kind: .goAway(afterStreams: 1, reason: .shutdown), remaining: 1))
            let (configuration, _) = try ClientSupport.configuration(server)
            try await withAPNsClient(configuration: configuration) { client in
                // Authenticate the connection first, so both pushes share it.
                let first = await ClientSupport.send(client, server, [Fixtures.randomToken()])
                #expect(first.first?.outcome.isAccepted == true)
                let results = await ClientSupport.send(client, server, [slow, trigger])
                #expect(results.map(\.outcome.isAccepted) == [true, true])
                #expect(results.map(\.outcome.possiblyDuplicated) == [false, false])
                #expect(server.deliveries(token: slow).count == 1)
                #expect(server.deliveries(token: trigger).count == 1)
                #expect(results[0].outcome.attempts == 1)
            }
        }
    }

    @Test("GOAWAY after_streams 0 refuses the stream: last-stream-id 0, no answer, not in the log")
    func refusedStream() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            // A raw client that never answers the server's close can lose the last frames to the TCP reset
            // that follows on a loaded machine; a few bounded tries, each with a new refusing fault.
            var frames: [H2.Frame] = []
            for _ in 0..<3 {
                try server.addFault(MockFault(kind: .goAway(afterStreams: 0, reason: .shutdown), remaining: 1))
                let bytes = H2.preface + H2.headers(stream: 1, token: Fixtures.randomToken(), end: true)
                let (closed, received) = try await RawSocket.exchange(
                    port: server.sandboxEndpoint.port, tls: true, bytes: bytes, timeout: .seconds(30))
                #expect(closed)
                frames = H2.parse(received)
                #expect(!frames.contains { $0.type == 0x1 && $0.stream == 1 })
                if frames.contains(where: { $0.goAway != nil }) { break }
            }
            #expect(frames.compactMap(\.goAway).map(\.lastStream) == [0])
            server.removeFaults()

            // Through the client, with a request the mock would accept: refused once, retried, logged once.
            try server.addFault(MockFault(kind: .goAway(afterStreams: 0, reason: .shutdown), remaining: 1))
            let (configuration, _) = try ClientSupport.configuration(server)
            let token = Fixtures.randomToken()
            try await withAPNsClient(configuration: configuration) { client in
                let results = await ClientSupport.send(client, server, [token])
                #expect(results.first?.outcome.isAccepted == true)
            }
            #expect(server.deliveries(token: token).count == 1)
        }
    }

    @Test("The reset fault: TCP RST, the client sees ECONNRESET; the next connection works")
    func tcpReset() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            try server.addFault(MockFault(kind: .resetConnection, remaining: 1))
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let push = Curl.push(server.sandboxEndpoint, token: token, authorization: jwt)
            let (responses, result) = try await Curl.send([push])
            #expect(responses.first?.status == 0)
            // curl: failure receiving (56) or, if the reset lands while it still writes, sending (55).
            #expect(result.status == 56 || result.status == 55, "\(result.stderr)")
            #expect(
                result.stderr.contains("reset by peer") || result.stderr.contains("Broken pipe"), "\(result.stderr)")
            #expect(server.deliveries(token: token).isEmpty)
            #expect(try await Curl.one(push).status == 200)
        }
    }

    @Test("restart(): same ports, devices, faults and the log kept, connections closed, new ones accepted")
    func restart() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let failing = Fixtures.randomToken()
            try server.addFault(MockFault(scope: .token(failing), kind: .respond(status: 503, reason: .shutdown)))
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: device.token, authorization: jwt)).status
                    == 200)

            let (configuration, _) = try ClientSupport.configuration(server)
            try await withAPNsClient(configuration: configuration) { client in
                #expect(
                    await ClientSupport.send(client, server, [Fixtures.randomToken()]).first?.outcome.isAccepted == true
                )
                // curl's connection ended with its process, but the mock learns of that close on its event loop, and
                // on a loaded machine later (a parallel run once still counted 2 here): wait for it, at most 30 s.
                try await MockFloodTests.waitUntil { server.openConnections == 1 }
                #expect(server.openConnections == 1)
                let ports = (server.sandboxEndpoint.port, server.productionEndpoint.port)
                try await server.restart()
                #expect(server.openConnections == 0)
                #expect((server.sandboxEndpoint.port, server.productionEndpoint.port) == ports)
                // The client's connection was closed by the restart: it opens a new one.
                let after = await ClientSupport.send(client, server, [device.token])
                #expect(after.first?.outcome.isAccepted == true)
            }
            #expect(server.deliveries(token: device.token).count == 2)
            #expect(server.deliveries().count == 3)
            #expect(server.devices.contains { $0.token == device.token })
            #expect(
                try await Curl.one(Curl.push(server.productionEndpoint, token: failing, authorization: jwt)).status
                    == 503)
        }
    }

    @Test("POST /restart answers with the same ports; POST /tokens/expire expires the tokens in use")
    func adminRestartAndExpire() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = try #require(server.adminURL)
            let restart = try await Curl.run(
                "/usr/bin/curl", ["-sS", "--max-time", "60", "-X", "POST", admin + "/restart"])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(restart.stdout.utf8)) as? [String: Any])
            #expect(object["status"] as? String == "restarted")
            #expect(object["sandbox_port"] as? Int == server.sandboxEndpoint.port)
            #expect(object["production_port"] as? Int == server.productionEndpoint.port)

            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: jwt)).status == 200)
            let expire = try await Curl.run(
                "/usr/bin/curl", ["-sS", "--max-time", "5", "-X", "POST", admin + "/tokens/expire"])
            #expect(expire.stdout.contains(#""expired":1"#))
            let again = try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: jwt))
            #expect(again.status == 403)
            #expect(again.reason == "ExpiredProviderToken")
            // A token signed now, with the same iat, is accepted.
            let fresh = try Fixtures.token(issuedAt: clock.now())
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: fresh)).status == 200)
        }
    }

    @Test("Expired provider tokens through the client: refreshed once, retried on a new connection, delivered once")
    func expiredTokenThroughClient() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let (configuration, cache) = try ClientSupport.configuration(server)
            try await withAPNsClient(configuration: configuration) { client in
                #expect(
                    await ClientSupport.send(client, server, [Fixtures.randomToken()]).first?.outcome.isAccepted == true
                )
                #expect(server.expireProviderTokens() == 1)
                let token = Fixtures.randomToken()
                let results = await ClientSupport.send(client, server, [token])
                #expect(results.first?.outcome.isAccepted == true)
                #expect(results.first?.outcome.attempts == 2)
                #expect(cache.forcedRefreshes == 1)
                #expect(server.deliveries(token: token).count == 1)
            }
        }
    }

    @Test("The reset fault and the new limits in JSON, and their validation")
    func parsing() async throws {
        let fault = try JSONDecoder().decode(MockFault.self, from: Data(#"{"kind":"reset","count":1}"#.utf8))
        #expect(fault.kind == .resetConnection)
        #expect(String(decoding: try JSONEncoder().encode(fault), as: UTF8.self).contains(#""kind":"reset""#))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("mock.json")
        try Data(#"{"reset_limit": 7, "reset_window_s": 2, "goaway_grace_s": 1.5, "faults": [{"kind": "reset"}]}"#.utf8)
            .write(to: file)
        var configuration = Fixtures.configuration()
        try configuration.apply(configFile: file.path)
        #expect(configuration.streamResetLimit == 7)
        #expect(configuration.streamResetWindow == 2)
        #expect(configuration.goAwayGracePeriod == 1.5)
        #expect(configuration.faults.map(\.kind) == [.resetConnection])
        configuration.streamResetLimit = 0
        let e = #expect(throws: KKPushError.self) { try configuration.validate() }
        #expect(e?.code.rawValue == "mock-reset-limit")
        #expect(e?.message.contains("reset_limit") == true)
    }
}
