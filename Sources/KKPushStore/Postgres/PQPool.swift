import Foundation
import KKPushCore
import Synchronization

/// A bounded pool of ``PQConnection``s: at most `size` open at once, opened on demand, kept idle for the next
/// request. A connection that went bad (the server restarted, a statement lost it) or was left inside a
/// transaction is closed instead of kept, and when one is found lost every idle one is dropped too (after a
/// restart they are all gone), so the next request connects anew: the pool reconnects by itself.
///
/// A request waits for a connection at most `connect_timeout`; then it opens one of its own outside the pool
/// (closed after use), whose error, if the server is down, is the request's.
package final class PQPool: Sendable {
    package let url: PostgresURL
    package let readOnly: Bool
    package let size: Int
    /// What the pool's callers share, behind one lock.
    private struct State {
        var idle: [PQConnection] = []
        var open = 0
        var closed = false
        var inFlight = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<PQConnection?, Never>)] = []
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var nextID = 0
        /// The waiters whose connect_timeout passed: each opens a connection of its own.
        var timedOut: Set<Int> = []
    }
    private let state = Mutex(State())

    package init(url: PostgresURL, readOnly: Bool, size: Int) {
        self.url = url
        self.readOnly = readOnly
        self.size = max(1, size)
    }

    /// Leases a connection, runs `body` with it, gives it back (or closes it if it is no longer usable).
    package func withConnection<T: Sendable>(_ body: (PQConnection) async throws -> T) async throws -> T {
        try enter()
        defer { leave() }
        let connection = try await acquire()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch {
            if case PQFailure.lost = error { dropIdle() }
            release(connection)
            throw error
        }
    }

    /// Closes every idle connection now, the leased ones when they come back; waits for the operations in
    /// flight. Later requests throw `store-closed`. Idempotent.
    package func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let (now, toClose, toWake) = state.withLock {
                s -> (Bool, [PQConnection], [CheckedContinuation<PQConnection?, Never>]) in
                s.closed = true
                let toClose = s.idle
                s.idle.removeAll()
                s.open -= toClose.count
                let toWake = s.waiters.map(\.continuation)
                s.waiters.removeAll()
                if s.inFlight == 0 { return (true, toClose, toWake) }
                s.closeWaiters.append(c)
                return (false, toClose, toWake)
            }
            for connection in toClose { connection.close() }
            for w in toWake { w.resume(returning: nil) }
            if now { c.resume() }
        }
    }

    // MARK: -

    private func enter() throws {
        let ok = state.withLock { s -> Bool in
            if s.closed { return false }
            s.inFlight += 1
            return true
        }
        if !ok {
            throw KKPushError(
                code: .storeClosed, message: "The enrollment database \(url.named) is already closed.",
                fix: "Open the store again (PostgresEnrollmentStore.open) for more queries.")
        }
    }

    private func leave() {
        let resume = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inFlight -= 1
            guard s.inFlight == 0, s.closed else { return [] }
            defer { s.closeWaiters.removeAll() }
            return s.closeWaiters
        }
        for c in resume { c.resume() }
    }

    private enum Next {
        case reuse(PQConnection)
        case openNew
        case wait(Int)
    }

    private func acquire() async throws -> PQConnection {
        while true {
            let next = state.withLock { s -> Next in
                if let c = s.idle.popLast() { return .reuse(c) }
                if s.open < size {
                    s.open += 1
                    return .openNew
                }
                s.nextID += 1
                return .wait(s.nextID)
            }
            switch next {
            case .reuse(let c):
                return c
            case .openNew:
                do {
                    return try await PQConnection.connect(url: url, readOnly: readOnly)
                } catch {
                    slotFreed()
                    throw error
                }
            case .wait(let id):
                if let c = await waitForConnection(id: id) { return c }
                if state.withLock({ $0.closed }) {
                    throw KKPushError(
                        code: .storeClosed, message: "The enrollment database \(url.named) is already closed.",
                        fix: "Open the store again.")
                }
                if state.withLock({ $0.timedOut.remove(id) != nil }) {
                    // Waited connect_timeout: a connection of its own.
                    return try await PQConnection.connect(url: url, readOnly: readOnly, pooled: false)
                }
            // A slot was freed: try again.
            }
        }
    }

    /// Waits until a connection is handed over (it), a slot is freed or the pool closes (nil), or
    /// connect_timeout passes (nil, the id in `timedOut`).
    private func waitForConnection(id: Int) async -> PQConnection? {
        let timeout = url.connectTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard let self else { return }
            let waiter = self.state.withLock { s -> CheckedContinuation<PQConnection?, Never>? in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                s.timedOut.insert(id)
                return s.waiters.remove(at: i).continuation
            }
            waiter?.resume(returning: nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { c in
            let closedNow = state.withLock { s -> Bool in
                if s.closed { return true }
                s.waiters.append((id, c))
                return false
            }
            if closedNow { c.resume(returning: nil) }
        }
    }

    /// Gives a leased connection back: to a waiter, to the idle list, or closed.
    private func release(_ connection: PQConnection) {
        guard connection.pooled else {
            connection.close()
            return
        }
        if !connection.isReusable {
            connection.close()
            slotFreed()
            return
        }
        let (waiter, close) = state.withLock { s -> (CheckedContinuation<PQConnection?, Never>?, Bool) in
            if s.closed {
                s.open -= 1
                return (nil, true)
            }
            if !s.waiters.isEmpty { return (s.waiters.removeFirst().continuation, false) }
            s.idle.append(connection)
            return (nil, false)
        }
        if close { connection.close() }
        waiter?.resume(returning: connection)
    }

    /// A pooled connection is gone: one waiter may open a new one.
    private func slotFreed() {
        let waiter = state.withLock { s -> CheckedContinuation<PQConnection?, Never>? in
            s.open -= 1
            return s.waiters.isEmpty ? nil : s.waiters.removeFirst().continuation
        }
        waiter?.resume(returning: nil)
    }

    /// Closes every idle connection (after one was found lost: a restarted server lost them all).
    private func dropIdle() {
        let dropped = state.withLock { s -> [PQConnection] in
            let d = s.idle
            s.idle.removeAll()
            s.open -= d.count
            return d
        }
        for c in dropped { c.close() }
    }
}
