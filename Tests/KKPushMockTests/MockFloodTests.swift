import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import NIOCore
import NIOPosix
import Testing

/// The mock under connection floods: strangers that connect and never speak, or stop in the middle of a TLS
/// handshake, must not lock a real client out. Bounded: 1,300 connections per flood, every wait bounded.
@Suite("Mock under connection floods")
struct MockFloodTests {
    /// Holds `count` TCP connections to `port`; each writes `bytes` (if any) and then stays silent.
    final class Flood: Sendable {
        let channels: [any Channel]

        /// `batch`: connections opened at once (1: one after another, in order).
        init(port: Int, count: Int, bytes: [UInt8]?, batch: Int = 100) async throws {
            var channels: [any Channel] = []
            channels.reserveCapacity(count)
            // In batches, so the listen backlog is not overrun by a single burst.
            for start in stride(from: 0, to: count, by: batch) {
                try await withThrowingTaskGroup(of: (any Channel).self) { group in
                    for _ in start..<min(count, start + batch) {
                        group.addTask {
                            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                                .connect(host: "127.0.0.1", port: port).get()
                            if let bytes { try? await channel.writeAndFlush(ByteBuffer(bytes: bytes)) }
                            return channel
                        }
                    }
                    for try await channel in group { channels.append(channel) }
                }
            }
            self.channels = channels
        }

        /// How many of the flood's connections the server has not closed.
        var open: Int { channels.filter(\.isActive).count }

        func close() async {
            for channel in channels { try? await channel.close() }
        }
    }

    /// Three bytes of a TLS ClientHello (record type handshake, version 3.1): a handshake that never goes on.
    static let stalledHello: [UInt8] = [0x16, 0x03, 0x01]

    /// A push with curl (a real client) and its wall time.
    /// A push with curl (a real client, whose process start is not counted), and one with kkpush's client on a
    /// new connection (TCP, TLS, HTTP/2, the push), timed.
    static func timedPush(_ server: MockAPNsServer, clock: ManualWallClock) async throws -> (Int, Bool, Duration) {
        let jwt = try Fixtures.token(issuedAt: clock.now())
        let r = try await Curl.one(
            Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt), maxTime: 10)
        let (configuration, _) = try ClientSupport.configuration(server)
        let started = ContinuousClock.now
        let accepted = try await withAPNsClient(configuration: configuration) { client in
            await client.send(
                NotificationRequest(
                    deviceToken: Fixtures.randomToken(), topic: Fixtures.topic, pushType: .alert,
                    payload: Array(Fixtures.payload.utf8)), to: server.sandboxEndpoint
            ).isAccepted
        }
        return (r.status, accepted, ContinuousClock.now - started)
    }

    @Test(
        "1,000 idle TCP connections and 300 stalled TLS handshakes: a real client still gets 200 within a second",
        .timeSensitive, arguments: [nil, 256])
    func apnsFlood(cap: Int?) async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.maxConnections = cap
        try await withMockServer(configuration: configuration) { server in
            let idle = try await Flood(port: server.sandboxEndpoint.port, count: 1000, bytes: nil)
            let stalled = try await Flood(port: server.sandboxEndpoint.port, count: 300, bytes: Self.stalledHello)
            defer {
                Task {
                    await idle.close()
                    await stalled.close()
                }
            }
            let (status, accepted, took) = try await Self.timedPush(server, clock: clock)
            try await Self.waitUntil {
                server.acceptedConnections + server.refusedConnections >= 1302
            }
            #expect(status == 200, "curl behind the flood")
            #expect(accepted)
            #expect(took < .seconds(1), "kkpush's push on a new connection took \(took) behind the flood")
            if let cap {
                // At the cap, the oldest strangers made room: none of the real client's was refused.
                #expect(server.evictedConnections >= 1300 - cap, "evicted \(server.evictedConnections)")
                #expect(server.refusedConnections == 0)
                #expect(server.openConnections <= cap)
            } else {
                #expect(server.evictedConnections == 0, "the cap sized from the open-file limit holds them all")
            }
            await idle.close()
            await stalled.close()
        }
    }

    @Test("At the cap, an authenticated connection outlives a flood; strangers are evicted oldest first")
    func authenticatedSurvives() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.maxConnections = 8
        // Only eviction closes the strangers here, however slow the machine: the fixture's handshake and first-request
        // timeouts are 120 s.
        try await withMockServer(configuration: configuration) { server in
            let (clientConfiguration, _) = try ClientSupport.configuration(server)
            try await withAPNsClient(configuration: clientConfiguration) { client in
                let request = NotificationRequest(
                    deviceToken: Fixtures.randomToken(), topic: Fixtures.topic, pushType: .alert,
                    payload: Array(Fixtures.payload.utf8))
                #expect(await client.send(request, to: server.sandboxEndpoint).isAccepted)
                let base = server.acceptedConnections
                // One after another, each accepted before the next: the order of arrival is known.
                let flood = try await Flood(
                    port: server.sandboxEndpoint.port, count: 100, bytes: Self.stalledHello, batch: 1)
                defer { Task { await flood.close() } }
                // The flood's connections are in the kernel's queue once connected: wait until the mock took them.
                try await Self.waitUntil { server.acceptedConnections + server.refusedConnections >= base + 100 }
                #expect(server.refusedConnections == 0)
                #expect(server.openConnections <= 8)
                // The authenticated connection is still the one in use: no new connection for the next push.
                let before = server.acceptedConnections
                let again = NotificationRequest(
                    deviceToken: Fixtures.randomToken(), topic: Fixtures.topic, pushType: .alert,
                    payload: Array(Fixtures.payload.utf8))
                #expect(await client.send(again, to: server.sandboxEndpoint).isAccepted)
                #expect(server.acceptedConnections == before, "the client had to reconnect")
                // The newest strangers are the ones left open, every older one evicted (the client side sees the
                // closes a moment later).
                try await Self.waitUntil { flood.open + server.evictedConnections <= 100 }
                let survivors = flood.channels.enumerated().filter { $0.element.isActive }.map(\.offset)
                #expect(!survivors.isEmpty && survivors.count < 8)
                #expect(survivors == Array((100 - survivors.count)..<100), "open: \(survivors)")
                #expect(server.evictedConnections >= 100 - 8, "evicted \(server.evictedConnections)")
            }
        }
    }

    /// Polls `condition` every 10 ms for at most 30 s.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test(
        "The admin port: 1,000 idle TCP connections and 300 half-sent requests; GET /health still answers within a second",
        .timeSensitive)
    func adminFlood() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let adminURL = try #require(server.adminURL)
            let port = try #require(URL(string: adminURL)?.port)
            let idle = try await Flood(port: port, count: 1000, bytes: nil)
            let halfSent = try await Flood(port: port, count: 300, bytes: Array("GET /health HTTP/1.1\r\nHo".utf8))
            defer {
                Task {
                    await idle.close()
                    await halfSent.close()
                }
            }
            let started = ContinuousClock.now
            let r = try await Curl.run("/usr/bin/curl", ["-sS", "--max-time", "10", adminURL + "/health"], timeout: 30)
            let took = ContinuousClock.now - started
            #expect(r.status == 0 && r.stdout.contains(#""status":"ok""#), "\(r.stdout) \(r.stderr)")
            #expect(took < .seconds(1), "GET /health took \(took) behind the flood")
            await idle.close()
            await halfSent.close()
        }
    }
}
