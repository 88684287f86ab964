import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Synchronization
import Testing

/// `APNsClientConfiguration.loopThreads`: a client whose connections are driven by several threads, each with
/// a libcurl multi handle and connections of its own.
@Suite("APNsClient on several loop threads")
struct LoopThreadsTests {
    @Test("a batch over two loop threads: one outcome per item, sent from both threads over two connections")
    func batchOverTwoThreads() async throws {
        try await Self.withMockAndClient(loopThreads: 2) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let count = 600
            let results = ResultCollector()
            let threads = Mutex<Set<String>>([])
            await client.sendAll(repeatElement(item, count: count)) { result in
                let name = (try? kernelThreadName()) ?? "unreadable"
                threads.withLock { _ = $0.insert(name) }
                results.add(result)
            }
            let all = results.all
            #expect(all.count == count)
            #expect(Set(all.map(\.index)) == Set(0..<count))
            #expect(all.allSatisfy { $0.outcome.isAccepted && $0.outcome.attempts == 1 })
            #expect(threads.withLock { $0 } == ["kkpush-curl", "kkpush-curl-2"])
            #expect(server.acceptedConnections == 2)
            #expect(server.deliveries(limit: 10_000).count == count)
        }
    }

    @Test("a streamed batch through a buffer smaller than the threads' share: every item once")
    func streamedBatchSmallBuffer() async throws {
        try await Self.withMockAndClient(loopThreads: 3) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let count = 300
            let (stream, continuation) = AsyncStream.makeStream(of: PushBatchItem.self)
            let producer = Task {
                for _ in 0..<count { continuation.yield(item) }
                continuation.finish()
            }
            let results = ResultCollector()
            // 4 ÷ 3 threads: each thread's buffer holds its minimum, 2.
            try await client.sendAll(streaming: stream, bufferSize: 4) { results.add($0) }
            await producer.value
            let all = results.all
            #expect(all.count == count)
            #expect(Set(all.map(\.index)) == Set(0..<count))
            #expect(all.allSatisfy { $0.outcome.isAccepted })
        }
    }

    @Test("an empty batch on two loop threads returns at once")
    func emptyBatch() async throws {
        try await Self.withMockAndClient(loopThreads: 2) { server, client in
            let results = ResultCollector()
            await client.sendAll([PushBatchItem]()) { results.add($0) }
            #expect(results.all.isEmpty)
            #expect(server.acceptedConnections == 0)
        }
    }

    @Test("single sends go to the loop threads in turn, each over its own connection")
    func singleSendsTakeTurns() async throws {
        try await Self.withMockAndClient(loopThreads: 2) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            for _ in 0..<4 {
                let outcome = await client.send(ClientFixtures.request(device.token), to: server.sandboxEndpoint)
                #expect(outcome.isAccepted, "\(outcome)")
            }
            #expect(server.acceptedConnections == 2)
        }
    }

    @Test("GOAWAY on the connections of two loop threads: every push accepted exactly once")
    func goAwayOnBothThreads() async throws {
        try await Self.withMockAndClient(loopThreads: 2) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(MockFault(kind: .goAway(afterStreams: 40, reason: .shutdown), remaining: 3))
            let count = 400
            let item = PushBatchItem(request: ClientFixtures.request(device.token), endpoint: server.sandboxEndpoint)
            let results = ResultCollector()
            await client.sendAll(repeatElement(item, count: count)) { results.add($0) }
            let all = results.all
            #expect(all.count == count)
            #expect(Set(all.map(\.index)) == Set(0..<count))
            #expect(all.allSatisfy { $0.outcome.isAccepted }, "\(all.filter { !$0.outcome.isAccepted }.prefix(3))")
            #expect(server.deliveries(limit: 10_000).count == count)
            #expect(server.acceptedConnections >= 3)
        }
    }

    @Test(
        "loopThreads outside 1 ... min(16, maxConnections) is refused with client-loop-threads",
        arguments: [(0, 2), (3, 2), (17, 64)])
    func loopThreadsValidated(threads: Int, connections: Int) throws {
        let configuration = APNsClientConfiguration(maxConnections: connections, loopThreads: threads)
        let error = #expect(throws: KKPushError.self) { try configuration.validate() }
        #expect(error?.code == .clientLoopThreads)
        #expect(error?.message.contains("loopThreads is \(threads)") == true, "\(error?.message ?? "")")
        #expect(throws: KKPushError.self) { _ = try APNsClient(configuration: configuration) }
    }

    /// A mock and a client with `loopThreads` threads and as many connections.
    static func withMockAndClient(
        loopThreads: Int, _ body: (MockAPNsServer, APNsClient) async throws -> Void
    ) async throws {
        try await ClientFixtures.withMockAndClient(
            client: { _, c in
                c.maxConnections = loopThreads
                c.loopThreads = loopThreads
            }, body)
    }
}
