import Foundation
import KKPushAuth
package import KKPushClient
import KKPushCore
import Synchronization

/// What sends a batch's lines: one ``APNsClient`` (the batch's one credential), or a ``RoutedBatchSender`` (a
/// credentials file: a client per credential).
package protocol BatchSender: Sendable {
    /// Sends every item of `lines`, calling `onResult` once per item (its `index` the item's position).
    func sendAll(streaming lines: BatchLines, onResult: @escaping @Sendable (PushResult) -> Void) async throws
    /// Stops the clients; pushes not finished end as failed.
    func shutdown() async
}

extension APNsClient: BatchSender {
    package func sendAll(streaming lines: BatchLines, onResult: @escaping @Sendable (PushResult) -> Void)
        async throws
    {
        try await sendAll(streaming: lines, bufferSize: 1024, onResult: onResult)
    }
}

/// `send-batch --credentials`: each item goes to the client of its credential (``PushBatchItem/credential``, set
/// by ``BatchLines`` from the line or the file's scopes), so each (credential, environment) has connections of its
/// own and no connection carries two teams. Results come back with their position in the whole batch.
package final class RoutedBatchSender: BatchSender {
    package let router: ProviderClientRouter
    /// How many items may be handed to the clients and not yet answered (the reading waits above it).
    package let maxOutstanding: Int

    package init(router: ProviderClientRouter, maxOutstanding: Int = 4096) {
        self.router = router
        self.maxOutstanding = max(1, maxOutstanding)
    }

    /// How many items were handed to the clients and not yet answered.
    private final class Outstanding: Sendable {
        let count = Atomic<Int>(0)
    }

    /// The batch positions of the items one credential's client was given, in the order given.
    private final class Positions: Sendable {
        private let list = Mutex<[Int]>([])
        func append(_ position: Int) { list.withLock { $0.append(position) } }
        subscript(index: Int) -> Int { list.withLock { $0[index] } }
    }

    package func sendAll(streaming lines: BatchLines, onResult: @escaping @Sendable (PushResult) -> Void)
        async throws
    {
        let outstanding = Outstanding()
        let router = self.router
        let limit = maxOutstanding
        var failure: (any Error)? = nil
        await withTaskGroup(of: Void.self) { group in
            var routes: [String: (AsyncStream<PushBatchItem>.Continuation, Positions)] = [:]
            do {
                var position = 0
                for try await item in lines {
                    defer { position += 1 }
                    let name = item.credential ?? ""
                    if routes[name] == nil {
                        let client: APNsClient
                        do {
                            guard let credential = router.credentials.credential(named: name) else {
                                throw KKPushError(
                                    code: .unknownCredential, message: "The push has no credential of the file.",
                                    fix: "Give the batch lines to the router through BatchLines with the credentials.")
                            }
                            client = try router.client(for: credential)
                        } catch {
                            onResult(Self.failed(item, position: position, error))
                            continue
                        }
                        let (stream, continuation) = AsyncStream.makeStream(of: PushBatchItem.self)
                        let positions = Positions()
                        routes[name] = (continuation, positions)
                        group.addTask {
                            try? await client.sendAll(streaming: stream, bufferSize: 1024) { result in
                                var mapped = result
                                mapped.index = positions[result.index]
                                outstanding.count.subtract(1, ordering: .relaxed)
                                onResult(mapped)
                            }
                        }
                    }
                    let (continuation, positions) = routes[name]!
                    positions.append(position)
                    outstanding.count.add(1, ordering: .relaxed)
                    continuation.yield(item)
                    // Bounded reading: wait for answers while too many are out (each wait short, ends on cancel).
                    while outstanding.count.load(ordering: .relaxed) >= limit, !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(2))
                    }
                    if Task.isCancelled { break }
                }
            } catch {
                failure = error
            }
            for (continuation, _) in routes.values { continuation.finish() }
        }
        if let failure { throw failure }
    }

    package func shutdown() async { await router.shutdown() }

    private static func failed(_ item: PushBatchItem, position: Int, _ error: any Error) -> PushResult {
        let message = (error as? KKPushError)?.message ?? ErrorWords.describe(error)
        return PushResult(
            index: position, deviceToken: item.request.deviceToken,
            outcome: PushOutcome(
                result: .failed(PushFailure(kind: .client, message: message)), duration: .zero, attempts: 0,
                endpoint: item.endpoint))
    }
}
