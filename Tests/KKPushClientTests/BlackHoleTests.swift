import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// A connection the path silently drops after it sat idle (no RST, no FIN, no answer): the mock's `blackhole`
/// fault. The first push after the pause must still arrive, once.
@Suite("Black-holed idle connections")
struct BlackHoleTests {
    static func push(_ client: APNsClient, _ server: MockAPNsServer) async -> (String, PushOutcome) {
        let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
        return (device.token, await client.send(ClientFixtures.request(device.token), environment: .sandbox))
    }

    @Test(
        "Reused after the black hole: found dead at the request timeout, sent again on a new connection, delivered once, flagged",
        .timeSensitive)
    func foundAtRequestTimeout() async throws {
        try await ClientFixtures.withMockAndClient(
            client: { _, c in
                // 5 s, not less: a fresh-clone CI run once needed more than 2 s for a retry's new connection
                // (TLS handshake and answer), which then timed out too and was sent a third and fourth time.
                c.requestTimeout = .seconds(5)
                c.maxConnections = 1
            }
        ) { server, client in
            let (_, first) = await Self.push(client, server)
            #expect(first.isAccepted, "\(first)")
            try server.addFault(MockFault(kind: .blackHole(afterIdleMilliseconds: 1000), remaining: 1))
            try await Task.sleep(for: .milliseconds(1500))
            let connectionsBefore = server.acceptedConnections
            let (token, second) = await Self.push(client, server)
            #expect(second.isAccepted, "\(second)")
            #expect(second.attempts == 2)
            // Sent on the silent connection: the client cannot know it was not delivered, so it says so.
            #expect(second.possiblyDuplicated)
            #expect(second.duration >= .seconds(5) && second.duration < .seconds(20), "\(second.duration)")
            #expect(server.acceptedConnections == connectionsBefore + 1, "a new connection for the retry")
            #expect(server.deliveries(token: token).count == 1, "delivered exactly once")
        }
    }

    @Test(
        "Idle past the reuse limit: the first push after the pause goes on a new connection at once, never meeting the black hole",
        .timeSensitive)
    func idleReuseLimitAvoidsIt() async throws {
        try await ClientFixtures.withMockAndClient(
            client: { _, c in
                // Meeting the black hole would take the whole request timeout: a new connection on a loaded
                // machine once took 4.4 s, so the bound that tells the two apart is 10 s, not 2.
                c.requestTimeout = .seconds(10)
                c.maxConnections = 1
                c.idleReuseLimit = .seconds(1)
            }
        ) { server, client in
            let (_, first) = await Self.push(client, server)
            #expect(first.isAccepted, "\(first)")
            try server.addFault(MockFault(kind: .blackHole(afterIdleMilliseconds: 1500), remaining: 1))
            try await Task.sleep(for: .milliseconds(2500))
            let connectionsBefore = server.acceptedConnections
            let (token, second) = await Self.push(client, server)
            #expect(second.isAccepted, "\(second)")
            #expect(second.attempts == 1)
            #expect(!second.possiblyDuplicated)
            #expect(second.duration < .seconds(10), "\(second.duration)")
            #expect(server.acceptedConnections == connectionsBefore + 1)
            #expect(server.deliveries(token: token).count == 1)
        }
    }

    @Test("The fault's JSON form: kind blackhole with idle_ms; out of range refused")
    func json() throws {
        let fault = try JSONDecoder().decode(MockFault.self, from: Data(#"{"kind":"blackhole","idle_ms":30000}"#.utf8))
        #expect(fault.kind == .blackHole(afterIdleMilliseconds: 30000))
        let encoded = String(decoding: try JSONEncoder().encode(fault), as: UTF8.self)
        #expect(encoded.contains(#""kind":"blackhole""#) && encoded.contains(#""idle_ms":30000"#))
        #expect(throws: KKPushError.self) { try MockFault(kind: .blackHole(afterIdleMilliseconds: 0)).validate() }
    }
}
