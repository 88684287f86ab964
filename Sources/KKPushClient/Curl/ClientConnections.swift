internal import CCurl
import Foundation
import Synchronization

/// The client's TCP connections as the loop sees them: their sockets, what each is carrying, when each
/// last answered, and which are to be retired. libcurl pools and multiplexes connections itself but
/// tells nothing about them; kkpush learns the sockets through `CURLOPT_SOCKOPTFUNCTION` (opened) and
/// `CURLOPT_CLOSESOCKETFUNCTION` (closed; the callback closes the descriptor), and which connection
/// each attempt went on through `CURLOPT_PREREQFUNCTION`'s local port.
///
/// What it is for:
/// - **Dead connections.** A request that times out on a connection that answered nothing since that
///   request was sent means the connection is dead (a silent NAT drop, a stalled peer): it is shut down
///   (`shutdown(2)`, so libcurl fails its other streams at once and never reuses it), and the requests
///   are retried on a fresh one. A connection that answered others meanwhile is only *retired*: shut
///   down once its last stream ends. An `ExpiredProviderToken` answer retires its connection too.
/// - **Idle probes.** libcurl 7.88's multi interface cannot send HTTP/2 PING (`curl_easy_upkeep` serves
///   only `curl_easy_perform` handles), so every connection gets TCP keepalive (probes after
///   ``keepaliveIdle`` s idle, every ``keepaliveInterval`` s, dead after ``keepaliveCount`` unanswered)
///   and `TCP_USER_TIMEOUT` (dead when sent data stays unacknowledged): the kernel then fails the
///   socket, and libcurl's check before reuse drops it.
/// - **Coalesced writes.** While a turn of the loop runs libcurl, the sockets are corked (`TCP_CORK`)
///   and flushed after it, and after every ``flushEveryStarts`` requests started in it: libcurl 7.x writes
///   every HTTP/2 frame with its own `send()`, and on a busy connection the segments, not the bytes, are
///   what cost; the server must still get the first requests of a long turn before its end.
///
/// Loop thread only: libcurl calls the callbacks from inside the multi calls the loop makes.
final class ClientConnections {
    struct Connection {
        var fd: Int32
        /// Its number: connections are numbered from 1 in the order this process opened them
        /// (``PushOutcome/connection``).
        var number: Int
        /// The local port, once known (0 until first matched).
        var port: Int = 0
        /// Attempts on it that have not ended.
        var inFlight = 0
        /// When it last delivered answer bytes (monotonic ns), 0 if never.
        var lastAnswerNanos: UInt64 = 0
        /// Shut down once `inFlight` drops to 0.
        var retiring = false
        /// Shut down already.
        var dead = false
        /// Requests started on it since its cork was last let go.
        var startedSinceFlush = 0
    }

    /// The last connection number given out, over every client of the process.
    private static let numbers = Atomic<Int>(0)

    /// Probes an idle connection after this many seconds (apns2's PING comes after 15 s idle).
    static let keepaliveIdle: Int32 = 15
    static let keepaliveInterval: Int32 = 5
    static let keepaliveCount: Int32 = 3
    /// A corked connection is flushed (and corked again) each time this many requests were started on it
    /// in one turn of the loop: the server starts on the first requests while libcurl writes the rest.
    /// Without it a turn's writes leave only when the turn ends (on loopback a turn of 100 pushes fits in
    /// one segment), and a server that answers on one thread waits idle for the whole turn. 16 keeps the
    /// segments of a turn few (`.ci/bench-senders --compare` measures a change to it against the old binary).
    static let flushEveryStarts = 16

    private(set) var connections: [Connection] = []
    private let corkEnabled: Bool
    /// False once a socket refused `TCP_CORK` (a system without it): corking is then off for good.
    private var corkWorks = true
    private var corked = false
    /// Sent data unacknowledged this long ends a connection (milliseconds).
    private let userTimeoutMS: UInt32
    /// Connections shut down because they were found dead, and retired ones closed (for logs and tests).
    private(set) var killedCount = 0
    private(set) var retiredCount = 0
    /// An attempt of this loop ended (answered or failed) since a connection was last open: by then the server's
    /// SETTINGS frame, which comes first on a connection, has been read (or the connection is gone). Cleared when the
    /// last connection closes: a new one starts from libcurl's assumption again.
    private(set) var firstRoundTripDone = false
    /// What the connections carried, for ``APNsClient/usage`` (written on the loop thread, read from any): the most
    /// streams in flight on one connection at once, the connections opened, and the most open at once.
    let peakStreams = Atomic<Int>(0)
    let openedCount = Atomic<Int>(0)
    let peakOpen = Atomic<Int>(0)
    private var peakStreamsSeen = 0
    private var peakOpenSeen = 0

    init(coalesceWrites: Bool, userTimeoutMS: UInt32) {
        corkEnabled = coalesceWrites
        self.userTimeoutMS = userTimeoutMS
    }

    /// The pointer libcurl hands back to the callbacks (unretained: the loop keeps this object alive
    /// for as long as the multi handle exists).
    var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    // MARK: Corking

    /// Corks every connection before a turn that may write.
    func cork() {
        guard corkEnabled, corkWorks, !connections.isEmpty else { return }
        // Marked first, so that `flush()` uncorks the sockets corked before one refused.
        corked = true
        for c in connections where !c.dead && kk_tcp_cork(c.fd, 1) != 0 {
            corkWorks = false
            return
        }
    }

    /// Flushes what the turn wrote.
    func flush() {
        guard corked else { return }
        corked = false
        for i in connections.indices where !connections[i].dead {
            _ = kk_tcp_cork(connections[i].fd, 0)
            connections[i].startedSinceFlush = 0
        }
    }

    // MARK: Attempts

    /// The index of the connection bound to local `port`, matching sockets to ports lazily.
    private func index(port: Int) -> Int? {
        guard port > 0 else { return nil }
        if let i = connections.firstIndex(where: { $0.port == port }) { return i }
        for i in connections.indices where connections[i].port == 0 {
            let p = Int(kk_local_port(connections[i].fd))
            if p > 0 { connections[i].port = p }
        }
        return connections.firstIndex(where: { $0.port == port })
    }

    /// An attempt started on the connection with local `port`: whether that connection was already shut down by
    /// kkpush (libcurl multiplexed a new stream onto it before it read the end: nothing sent on it can reach the
    /// server), and its number (nil for a socket kkpush did not see open).
    func attemptStarted(port: Int) -> (dead: Bool, number: Int?) {
        guard let i = index(port: port) else { return (false, nil) }
        connections[i].inFlight += 1
        if corked, !connections[i].dead {
            connections[i].startedSinceFlush += 1
            if connections[i].startedSinceFlush > Self.flushEveryStarts {
                _ = kk_tcp_cork(connections[i].fd, 0)
                _ = kk_tcp_cork(connections[i].fd, 1)
                connections[i].startedSinceFlush = 1
            }
        }
        return (connections[i].dead, connections[i].number)
    }

    /// Notes the streams each connection carries now, for ``peakStreams``. Called once a turn, after the turn's
    /// finished attempts were counted: inside a turn libcurl ends streams and starts the next pushes on them before
    /// the loop learns of the ends, so a count taken when a push starts would exceed what the connection carried.
    func notePeakStreams() {
        for c in connections where !c.dead && c.inFlight > peakStreamsSeen {
            peakStreamsSeen = c.inFlight
            peakStreams.store(peakStreamsSeen, ordering: .relaxed)
        }
    }

    /// An attempt on `port` received answer bytes.
    func answered(port: Int, at nanos: UInt64) {
        firstRoundTripDone = true
        if let i = index(port: port) { connections[i].lastAnswerNanos = nanos }
    }

    /// An attempt ended before it was sent on any connection (it failed to connect).
    func noteEnded() { firstRoundTripDone = true }

    /// An attempt on `port` ended; a retiring connection with nothing left on it is shut down.
    func attemptEnded(port: Int) {
        firstRoundTripDone = true
        guard let i = index(port: port) else { return }
        connections[i].inFlight = max(0, connections[i].inFlight - 1)
        if connections[i].retiring, connections[i].inFlight == 0 { shutDown(i, retired: true) }
    }

    /// An attempt sent at `sentNanos` on `port` timed out. If the connection answered nothing since, it
    /// is dead: shut down now (true). Otherwise it is retired (false).
    @discardableResult
    func timedOut(port: Int, sentNanos: UInt64) -> Bool {
        guard let i = index(port: port), !connections[i].dead else { return false }
        if connections[i].lastAnswerNanos < sentNanos {
            shutDown(i, retired: false)
            return true
        }
        retire(port: port)
        return false
    }

    /// Shuts `port`'s connection down once its last stream ends (now if it carries none). True if this
    /// call marked it (false if it was already retiring, dead or unknown).
    @discardableResult
    func retire(port: Int) -> Bool {
        guard let i = index(port: port), !connections[i].dead, !connections[i].retiring else { return false }
        connections[i].retiring = true
        if connections[i].inFlight == 0 { shutDown(i, retired: true) }
        return true
    }

    private func shutDown(_ i: Int, retired: Bool) {
        connections[i].dead = true
        _ = kk_tcp_cork(connections[i].fd, 0)
        _ = kk_shutdown_both(connections[i].fd)
        if retired { retiredCount += 1 } else { killedCount += 1 }
    }

    // MARK: libcurl's socket callbacks

    fileprivate func opened(_ fd: Int32) {
        _ = kk_tcp_keepalive(fd, Self.keepaliveIdle, Self.keepaliveInterval, Self.keepaliveCount)
        if userTimeoutMS > 0 { _ = kk_tcp_user_timeout(fd, userTimeoutMS) }
        connections.removeAll { $0.fd == fd }
        connections.append(Connection(fd: fd, number: Self.numbers.add(1, ordering: .relaxed).newValue))
        openedCount.add(1, ordering: .relaxed)
        let open = connections.count { !$0.dead }
        if open > peakOpenSeen {
            peakOpenSeen = open
            peakOpen.store(open, ordering: .relaxed)
        }
    }

    fileprivate func closed(_ fd: Int32) {
        connections.removeAll { $0.fd == fd }
        if connections.isEmpty { firstRoundTripDone = false }
    }
}

let clientConnectionOpened: kk_curl_sockopt_callback = { userdata, fd, purpose in
    if let userdata, purpose.rawValue == UInt32(kk_curl_socktype_ipcxn()) {
        Unmanaged<ClientConnections>.fromOpaque(userdata).takeUnretainedValue().opened(fd)
    }
    return kk_curl_sockopt_ok()
}

let clientConnectionClosed: kk_curl_closesocket_callback = { userdata, fd in
    if let userdata { Unmanaged<ClientConnections>.fromOpaque(userdata).takeUnretainedValue().closed(fd) }
    return kk_close(fd)
}
