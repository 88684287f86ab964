import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Streams and connections from the server's settings (issue #64): by default a connection carries as many streams
/// as the server's `SETTINGS_MAX_CONCURRENT_STREAMS` allows, follows a change to it, stays within the memory budget,
/// and a second connection opens only when the first is full and pushes wait. Every answer is delayed by the mock, so
/// that the pushes a client keeps in flight are all in flight at once, whatever the machine's load.
@Suite("APNsClient streams and connections from the server's settings")
struct ServerStreamsTests {
    /// Sends `count` pushes to new tokens through `client`; expects exactly one outcome each, all accepted.
    static func sendAccepted(_ count: Int, server: MockAPNsServer, client: APNsClient) async {
        let items = (0..<count).map { _ in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            return PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
        }
        let collector = ResultCollector()
        await client.sendAll(items) { collector.add($0) }
        let results = collector.all
        #expect(results.count == count)
        #expect(Set(results.map(\.index)) == Set(0..<count))
        let notAccepted = results.filter { !$0.outcome.isAccepted }
        #expect(
            notAccepted.isEmpty, "\(notAccepted.count) not accepted, first: \(String(describing: notAccepted.first))")
    }

    static let delay = MockFault(kind: .delay(milliseconds: 300))
    /// For the tests that count the streams exactly: long enough for a loaded machine to start them all before the
    /// first answer.
    static let longDelay = MockFault(kind: .delay(milliseconds: 1000))

    @Test(
        "by default a connection carries the server's 1000 streams, not 100, and a batch that fits opens one connection"
    )
    func defaultFollowsServer() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.faults = [Self.delay] },
            client: { _, c in #expect(c.maxInFlightPerConnection == nil && c.maxConnections == 2) }
        ) { server, client in
            await Self.sendAccepted(600, server: server, client: client)
            let usage = client.usage
            // The first push goes alone (libcurl knows the server's number only after its SETTINGS); after its
            // answer the other 599 join the same connection.
            #expect(usage.peakStreamsPerConnection > 100, "\(usage)")
            #expect(usage.peakStreamsPerConnection <= 600, "\(usage)")
            #expect(usage.connectionsOpened == 1, "\(usage)")
            #expect(server.acceptedConnections == 1)
            #expect(usage.streamCapPerConnection == APNsClientConfiguration().inFlightMemoryBudget / 32_768)
        }
    }

    @Test("a server that raises MAX_CONCURRENT_STREAMS mid-connection (1, then 1000 after the first token) is followed")
    func followsRaiseMidConnection() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: {
                $0.faults = [Self.delay]
                $0.oneStreamUntilAuthenticated = true
            },
            client: { _, c in c.maxConnections = 1 }
        ) { server, client in
            await Self.sendAccepted(600, server: server, client: client)
            let usage = client.usage
            #expect(usage.peakStreamsPerConnection > 100, "\(usage)")
            #expect(usage.connectionsOpened == 1 && server.acceptedConnections == 1, "\(usage)")
        }
    }

    @Test("a server that allows 10 streams gets 10 on the connection, the first push alone, none refused")
    func followsSmallServerLimit() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: {
                $0.faults = [Self.delay]
                $0.maxConcurrentStreams = 10
            },
            client: { _, c in c.maxConnections = 1 }
        ) { server, client in
            await Self.sendAccepted(100, server: server, client: client)
            let usage = client.usage
            // libcurl 7.88 takes a new connection to allow 100 until the server's SETTINGS arrive: had the client
            // started 100 at once, 90 would have been refused and libcurl would have closed the connection.
            #expect(usage.peakStreamsPerConnection == 10, "\(usage)")
            #expect(usage.connectionsOpened == 1 && server.acceptedConnections == 1, "\(usage)")
        }
    }

    @Test("a second connection opens when the first carries the server's 1000 and pushes wait, and no sooner")
    func secondConnectionWhenFull() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.faults = [Self.longDelay] },
            client: { _, c in c.inFlightMemoryBudget = 1500 * APNsClientConfiguration.bytesPerStream }
        ) { server, client in
            await Self.sendAccepted(1500, server: server, client: client)
            let usage = client.usage
            #expect(usage.peakStreamsPerConnection == 1000, "\(usage)")
            #expect(usage.connectionsOpened == 2 && usage.peakOpenConnections == 2, "\(usage)")
            #expect(server.acceptedConnections == 2)
        }
    }

    @Test("an explicit maxInFlightPerConnection is exactly that cap, below the server's 1000")
    func explicitCapIsExact() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.faults = [Self.longDelay] },
            client: { _, c in
                c.maxInFlightPerConnection = 250
                c.maxConnections = 1
            }
        ) { server, client in
            await Self.sendAccepted(750, server: server, client: client)
            let usage = client.usage
            #expect(usage.peakStreamsPerConnection == 250, "\(usage)")
            #expect(usage.streamCapPerConnection == 250)
            #expect(usage.connectionsOpened == 1, "\(usage)")
        }
    }

    @Test("the memory budget caps the pushes in flight, over every connection")
    func memoryBudgetCaps() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.faults = [Self.delay] },
            client: { _, c in c.inFlightMemoryBudget = 300 * APNsClientConfiguration.bytesPerStream }
        ) { server, client in
            await Self.sendAccepted(900, server: server, client: client)
            let usage = client.usage
            #expect(usage.peakStreamsPerConnection > 100 && usage.peakStreamsPerConnection <= 300, "\(usage)")
            #expect(usage.streamCapPerConnection == 300)
            // 300 streams never fill the server's 1000: no second connection.
            #expect(usage.connectionsOpened == 1, "\(usage)")
        }
    }

    @Test(
        "a cap or budget the client cannot use is refused with client-max-in-flight, naming the field",
        arguments: [
            (Int?.some(0), 64 << 20, "maxInFlightPerConnection"),
            (Int?.some(10_001), 64 << 20, "maxInFlightPerConnection"),
            (nil, 1000, "inFlightMemoryBudget"),
            (nil, 100_001 * APNsClientConfiguration.bytesPerStream, "inFlightMemoryBudget"),
        ])
    func refusedCapacity(perConnection: Int?, budget: Int, field: String) throws {
        let configuration = APNsClientConfiguration(
            maxInFlightPerConnection: perConnection, inFlightMemoryBudget: budget)
        let error = try #require(throws: KKPushError.self) { try configuration.validate() }
        #expect(error.code.rawValue == "client-max-in-flight")
        #expect(error.message.contains(field) && error.fix != nil)
    }
}
