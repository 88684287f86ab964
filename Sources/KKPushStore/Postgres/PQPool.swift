import Foundation
import KKPushCore

/// A bounded pool of ``PQConnection``s: at most `size` open at once, opened on demand, kept idle for the next
/// request. A connection that went bad (the server restarted, a statement lost it) or was left inside a
/// transaction is closed instead of kept, and when one is found lost every idle one is dropped too (after a
/// restart they are all gone), so the next request connects anew: the pool reconnects by itself.
///
/// A request waits for a connection at most `connect_timeout`; then it opens one of its own outside the pool
/// (closed after use), whose error, if the server is down, is the request's.
package final class PQPool: @unchecked Sendable {
    package let url: PostgresURL
    package let readOnly: Bool
    package let size: Int
    private let lock = NSLock()
    private var idle: [PQConnection] = []
    private var open = 0
    private var closed = false
    private var inFlight = 0
    private var waiters: [(id: Int, continuation: CheckedContinuation<PQConnection?, Never>)] = []
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    private var nextID = 0

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
            let (now, toClose, toWake) = lock.withLock {
                () -> (Bool, [PQConnection], [CheckedContinuation<PQConnection?, Never>]) in
                closed = true
                let toClose = idle
                idle.removeAll()
                open -= toClose.count
                let toWake = waiters.map(\.continuation)
                waiters.removeAll()
                if inFlight == 0 { return (true, toClose, toWake) }
                closeWaiters.append(c)
                return (false, toClose, toWake)
            }
            for connection in toClose { connection.close() }
            for w in toWake { w.resume(returning: nil) }
            if now { c.resume() }
        }
    }

    // MARK: -

    private func enter() throws {
        let ok = lock.withLock { () -> Bool in
            if closed { return false }
            inFlight += 1
            return true
        }
        if !ok {
            throw KKPushError(
                code: .storeClosed, message: "The enrollment database \(url.named) is already closed.",
                fix: "Open the store again (PostgresEnrollmentStore.open) for more queries.")
        }
    }

    private func leave() {
        let resume = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            inFlight -= 1
            guard inFlight == 0, closed else { return [] }
            defer { closeWaiters.removeAll() }
            return closeWaiters
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
            let next = lock.withLock { () -> Next in
                if let c = idle.popLast() { return .reuse(c) }
                if open < size {
                    open += 1
                    return .openNew
                }
                nextID += 1
                return .wait(nextID)
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
                if lock.withLock({ closed }) {
                    throw KKPushError(
                        code: .storeClosed, message: "The enrollment database \(url.named) is already closed.",
                        fix: "Open the store again.")
                }
                if lock.withLock({ timedOut.remove(id) != nil }) {
                    // Waited connect_timeout: a connection of its own.
                    return try await PQConnection.connect(url: url, readOnly: readOnly, pooled: false)
                }
            // A slot was freed: try again.
            }
        }
    }

    private var timedOut: Set<Int> = []

    /// Waits until a connection is handed over (it), a slot is freed or the pool closes (nil), or
    /// connect_timeout passes (nil, the id in `timedOut`).
    private func waitForConnection(id: Int) async -> PQConnection? {
        let timeout = url.connectTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard let self else { return }
            let waiter = self.lock.withLock { () -> CheckedContinuation<PQConnection?, Never>? in
                guard let i = self.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                self.timedOut.insert(id)
                return self.waiters.remove(at: i).continuation
            }
            waiter?.resume(returning: nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { c in
            let closedNow = lock.withLock { () -> Bool in
                if closed { return true }
                waiters.append((id, c))
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
        let (waiter, close) = lock.withLock { () -> (CheckedContinuation<PQConnection?, Never>?, Bool) in
            if closed {
                open -= 1
                return (nil, true)
            }
            if !waiters.isEmpty { return (waiters.removeFirst().continuation, false) }
            idle.append(connection)
            return (nil, false)
        }
        if close { connection.close() }
        waiter?.resume(returning: connection)
    }

    /// A pooled connection is gone: one waiter may open a new one.
    private func slotFreed() {
        let waiter = lock.withLock { () -> CheckedContinuation<PQConnection?, Never>? in
            open -= 1
            return waiters.isEmpty ? nil : waiters.removeFirst().continuation
        }
        waiter?.resume(returning: nil)
    }

    /// Closes every idle connection (after one was found lost: a restarted server lost them all).
    private func dropIdle() {
        let dropped = lock.withLock { () -> [PQConnection] in
            let d = idle
            idle.removeAll()
            open -= d.count
            return d
        }
        for c in dropped { c.close() }
    }
}
