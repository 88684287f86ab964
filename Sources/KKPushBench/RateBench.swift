package import KKPushClient
import KKPushCore
import Synchronization

/// `bench`'s rate benchmark: `count` copies of one push through one client, timed.
package enum RateBench {
    /// What came of the pushes.
    package struct Result: Sendable {
        /// From the first push to the last outcome (the client's start and shutdown included).
        package var elapsed: Duration
        package var accepted: Int
        /// The first outcome that was not an acceptance, in words.
        package var firstProblem: String?
        /// What the client's connections carried: the streams one connection had in flight at most, the connections.
        package var usage = APNsClientUsage()

        package init(
            elapsed: Duration, accepted: Int, firstProblem: String?, usage: APNsClientUsage = APNsClientUsage()
        ) {
            self.elapsed = elapsed
            self.accepted = accepted
            self.firstProblem = firstProblem
            self.usage = usage
        }
    }

    /// Sends `item` `count` times through a client made with `configuration`.
    package static func run(_ item: PushBatchItem, count: Int, configuration: APNsClientConfiguration) async throws
        -> Result
    {
        let accepted = Atomic<Int>(0)
        let firstProblem = Mutex<String?>(nil)
        let start = ContinuousClock.now
        let usage = try await withAPNsClient(configuration: configuration) { client in
            await client.sendAll(repeatElement(item, count: count)) { result in
                if result.outcome.isAccepted {
                    accepted.add(1, ordering: .relaxed)
                } else {
                    firstProblem.withLock { if $0 == nil { $0 = result.outcome.description } }
                }
            }
            return client.usage
        }
        return Result(
            elapsed: ContinuousClock.now - start, accepted: accepted.load(ordering: .relaxed),
            firstProblem: firstProblem.withLock { $0 }, usage: usage)
    }
}
