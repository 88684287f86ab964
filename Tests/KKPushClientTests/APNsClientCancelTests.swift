import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Synchronization
import Testing

@Suite("APNsClient: stopping a batch")
struct APNsClientCancelTests {
    @Test(
        "cancelling sendAll(streaming:): no new push starts, buffered ones end interrupted unsent, in-flight ones finish"
    )
    func cancelStreamedBatch() async throws {
        try await cancelBatch(bufferSmallerThanBatch: true) { client, items, results in
            let (stream, continuation) = AsyncStream.makeStream(of: PushBatchItem.self)
            for item in items { continuation.yield(item) }
            continuation.finish()
            return Task { try await client.sendAll(streaming: stream, bufferSize: 64) { results.add($0) } }
        }
    }

    @Test("cancelling sendAll of a synchronous sequence: the same, also while the caller waits for the outcomes")
    func cancelSynchronousBatch() async throws {
        // The calling task reads the 400 items into the client's buffer (1024) as fast as it can, so the cancel may
        // come while it reads or while it waits for the outcomes: either way it must stop the ones not started.
        try await cancelBatch(bufferSmallerThanBatch: false) { client, items, results in
            Task { await client.sendAll(items) { results.add($0) } }
        }
    }

    @Test("cancelling a batch spread over two loop threads: the same on both, every item taken once")
    func cancelBatchOnTwoLoopThreads() async throws {
        try await cancelBatch(bufferSmallerThanBatch: true, loopThreads: 2) { client, items, results in
            let (stream, continuation) = AsyncStream.makeStream(of: PushBatchItem.self)
            for item in items { continuation.yield(item) }
            continuation.finish()
            return Task { try await client.sendAll(streaming: stream, bufferSize: 64) { results.add($0) } }
        }
    }

    /// Starts a batch of 400 against a mock that answers after 300 ms, cancels it once the first push arrived, and
    /// checks the outcomes: one per item the client took, accepted (in flight at the cancel) or interrupted unsent.
    /// With `loopThreads` > 1 each thread has one connection of its own.
    private func cancelBatch(
        bufferSmallerThanBatch: Bool, loopThreads: Int = 1,
        start: (APNsClient, [PushBatchItem], ResultCollector) -> Task<Void, any Error>
    ) async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.faults = [MockFault(kind: .delay(milliseconds: 300))] },
            client: { _, c in
                c.maxInFlightPerConnection = 8
                c.maxConnections = loopThreads
                c.loopThreads = loopThreads
            }
        ) { server, client in
            let count = 400
            let tokens = (0..<count).map { _ in
                server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic).token
            }
            let items = tokens.map {
                PushBatchItem(request: ClientFixtures.request($0), endpoint: server.sandboxEndpoint)
            }
            let results = ResultCollector()
            let batch = start(client, items, results)
            // Let the first pushes reach the mock (answers come after 300 ms), then cancel.
            var polls = 0
            while server.deliveries(limit: 1).isEmpty, polls < 500 {
                polls += 1
                try await Task.sleep(for: .milliseconds(10))
            }
            batch.cancel()
            try await batch.value
            let all = results.all
            // One outcome per item handed to the client, none for the items never read from the stream.
            // The items are read in order, so those that got one are the first ones, each once.
            #expect(Set(all.map(\.index)) == Set(0..<all.count))
            #expect(all.count <= count)
            if bufferSmallerThanBatch { #expect(all.count < count) }
            let accepted = all.filter { $0.outcome.isAccepted }
            let interrupted = all.filter { $0.outcome.failure?.kind == .interrupted }
            #expect(accepted.count + interrupted.count == all.count)
            #expect(!accepted.isEmpty, "the pushes in flight should have finished")
            // At most 8 a connection can be in flight (8 streams): any more the client took were waiting.
            if all.count > 8 * loopThreads {
                #expect(!interrupted.isEmpty, "the buffered pushes should have ended interrupted")
            }
            for r in interrupted {
                #expect(r.outcome.attempts == 0)
                #expect(!r.outcome.possiblyDuplicated)
            }
            // Nothing started after the cancel: once the client is shut down and the mock has seen its connection
            // close, nothing more can arrive, and the mock has exactly the accepted ones.
            await client.shutdown()
            var closePolls = 0
            while server.openConnections > 0, closePolls < 1000 {
                closePolls += 1
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(server.openConnections == 0, "the client's connection is still open after its shutdown")
            let delivered = Set(server.deliveries(limit: 10_000).map(\.token))
            #expect(delivered == Set(accepted.map(\.deviceToken)))
        }
    }
}
