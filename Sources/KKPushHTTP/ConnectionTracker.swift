package import NIOCore
import Synchronization

/// The open connections of a server, so stopping it can close them (idle keep-alive ones included), and
/// an optional cap on them. One type for every server of the package: the mock's APNs listeners, its
/// admin API and the simulated backend.
///
/// Under the cap a flood of strangers must not lock real clients out, so each connection has a standing
/// (``Standing``) that its server raises as it proves itself. At the cap, a new connection evicts the oldest
/// connection of the lowest standing below ``Standing/trusted`` (a half-open one first, then one that never
/// authenticated); only when every open connection is trusted is the newcomer refused.
package final class ConnectionTracker: Sendable {
    /// How far a connection has proven itself.
    package enum Standing: Int, Comparable, Sendable {
        /// Accepted: no TLS handshake or protocol preface seen yet.
        case halfOpen = 0
        /// Speaking the protocol, but not authenticated (or, for HTTP/1, no whole request yet).
        case speaking = 1
        /// Authenticated (or, for HTTP/1, a whole request received): never evicted.
        case trusted = 2

        package static func < (a: Standing, b: Standing) -> Bool { a.rawValue < b.rawValue }
    }

    private struct Entry {
        var channel: any Channel
        var order: UInt64
        var standing: Standing
    }

    private struct State {
        var open: [ObjectIdentifier: Entry] = [:]
        var nextOrder: UInt64 = 0
        /// Accept positions stamped by ``AcceptOrder`` on the listening channel, until the connection is added.
        var stamped: [ObjectIdentifier: UInt64] = [:]
    }

    private let state = Mutex(State())
    private let accepted = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let evicted = Atomic<Int>(0)
    private let firstRequestTimeouts = Atomic<Int>(0)
    private let requestsRead = Atomic<Int>(0)
    private let answersWritten = Atomic<Int>(0)

    /// An empty tracker.
    package init() {}

    /// Tracks `channel` until it closes. At `limit` open connections: with `evicting`, the oldest connection
    /// of the lowest standing below trusted is closed to make room; otherwise (or if all are trusted) false,
    /// and the caller closes `channel`.
    @discardableResult
    package func add(_ channel: any Channel, limit: Int = .max, evicting: Bool = false) -> Bool {
        let id = ObjectIdentifier(channel)
        let (added, victim): (Bool, (any Channel)?) = state.withLock { state in
            var victim: (any Channel)? = nil
            if state.open.count >= limit {
                guard evicting, let (victimID, entry) = Self.evictionCandidate(state.open) else { return (false, nil) }
                state.open[victimID] = nil
                victim = entry.channel
            }
            // Its place in the order of accepts (stamped on the listening channel): child channels are set up on
            // several event loops, so the order they are added in is not the order they arrived in.
            let order: UInt64
            if let stamped = state.stamped.removeValue(forKey: id) {
                order = stamped
            } else {
                state.nextOrder += 1
                order = state.nextOrder
            }
            state.open[id] = Entry(channel: channel, order: order, standing: .halfOpen)
            return (true, victim)
        }
        if let victim {
            evicted.add(1, ordering: .relaxed)
            victim.close(promise: nil)
        }
        guard added else {
            refused.add(1, ordering: .relaxed)
            return false
        }
        accepted.add(1, ordering: .relaxed)
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLock { $0.open.removeValue(forKey: id) }
        }
        return true
    }

    /// Stamps `channel` with the next accept position (the listening channel's ``AcceptOrder`` calls this, in the
    /// order the connections were accepted).
    func stampAccepted(_ channel: any Channel) {
        state.withLock { state in
            state.nextOrder += 1
            state.stamped[ObjectIdentifier(channel)] = state.nextOrder
        }
        // A connection that closes before it is added (its set-up failed) leaves no stamp behind.
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLock { $0.stamped.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }

    /// The handler for a listening channel's pipeline (`ServerBootstrap.serverChannelInitializer`): it sees each
    /// accepted connection before the bootstrap sets it up on its event loop, and stamps the accept order, so
    /// "oldest" in eviction means accepted first.
    package func acceptOrder() -> AcceptOrder { AcceptOrder(tracker: self) }

    /// Stamps accepted connections in order (see ``acceptOrder()``).
    package final class AcceptOrder: ChannelInboundHandler, Sendable {
        package typealias InboundIn = any Channel
        let tracker: ConnectionTracker

        init(tracker: ConnectionTracker) { self.tracker = tracker }

        package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            tracker.stampAccepted(unwrapInboundIn(data))
            context.fireChannelRead(data)
        }
    }

    /// The oldest connection of the lowest standing below trusted, if any (a linear scan: it runs only at the cap).
    private static func evictionCandidate(_ open: [ObjectIdentifier: Entry]) -> (ObjectIdentifier, Entry)? {
        var best: (ObjectIdentifier, Entry)? = nil
        for (id, entry) in open where entry.standing < .trusted {
            if let (_, current) = best,
                (current.standing, current.order) <= (entry.standing, entry.order)
            {
                continue
            }
            best = (id, entry)
        }
        return best
    }

    /// Raises `channel`'s standing (never lowers it).
    package func raise(_ channel: any Channel, to standing: Standing) {
        let id = ObjectIdentifier(channel)
        state.withLock { state in
            if let current = state.open[id]?.standing, current < standing { state.open[id]?.standing = standing }
        }
    }

    /// Connections closed at accept because the cap was reached and none could be evicted.
    package var refusedCount: Int { refused.load(ordering: .relaxed) }

    /// Connections closed to make room for a new one (half-open or unauthenticated ones, oldest first).
    package var evictedCount: Int { evicted.load(ordering: .relaxed) }

    /// Connections closed because their first whole request did not arrive in time (HTTP/1's
    /// `FirstRequestWatch`).
    package var firstRequestTimeoutCount: Int { firstRequestTimeouts.load(ordering: .relaxed) }

    /// Counts a connection closed by its first-request timeout.
    package func countFirstRequestTimeout() { firstRequestTimeouts.add(1, ordering: .relaxed) }

    /// Whole requests read and answers written, over every connection (HTTP/1's server counts them): a request
    /// read and not answered is with its handler.
    package var requestCounts: (read: Int, answered: Int) {
        (requestsRead.load(ordering: .relaxed), answersWritten.load(ordering: .relaxed))
    }

    /// Counts a whole request read.
    package func countRequestRead() { requestsRead.add(1, ordering: .relaxed) }

    /// Counts an answer written.
    package func countAnswerWritten() { answersWritten.add(1, ordering: .relaxed) }

    /// The connections open now.
    package func all() -> [any Channel] { state.withLock { $0.open.values.map(\.channel) } }

    /// How many connections are open now.
    package var count: Int { state.withLock { $0.open.count } }

    /// Connections accepted since the start.
    package var total: Int { accepted.load(ordering: .relaxed) }

    /// Closes every open connection.
    package func closeAll() async {
        for channel in all() { try? await channel.close() }
    }
}
