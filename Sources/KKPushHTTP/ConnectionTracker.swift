import NIOCore
import Synchronization

/// The open connections of a server, so stopping it can close them (idle keep-alive ones included), and
/// an optional cap on them. One type for every server of the package: the mock's APNs listeners, its
/// admin API and the simulated backend.
package final class ConnectionTracker: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let accepted = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    /// An empty tracker.
    package init() {}

    /// Tracks `channel` until it closes, unless `limit` connections are open already (then false: the
    /// caller closes it).
    @discardableResult
    package func add(_ channel: any Channel, limit: Int = .max) -> Bool {
        let id = ObjectIdentifier(channel)
        let added = channels.withLock { open in
            guard open.count < limit else { return false }
            open[id] = channel
            return true
        }
        guard added else {
            refused.add(1, ordering: .relaxed)
            return false
        }
        accepted.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { _ in
            _ = self.channels.withLock { $0.removeValue(forKey: id) }
        }
        return true
    }

    /// Connections closed at accept because the cap was reached.
    package var refusedCount: Int { refused.load(ordering: .relaxed) }

    /// The connections open now.
    package func all() -> [any Channel] { channels.withLock { Array($0.values) } }

    /// How many connections are open now.
    package var count: Int { channels.withLock { $0.count } }

    /// Connections accepted since the start.
    package var total: Int { accepted.load(ordering: .relaxed) }

    /// Closes every open connection.
    package func closeAll() async {
        for channel in all() { try? await channel.close() }
    }
}
