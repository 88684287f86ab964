import Foundation
import KKPushCLISupport
import Synchronization

/// SIGINT and SIGTERM, caught (by a ``SignalWatch``) from the moment this is created (so that a signal while
/// starting is not lost and does not kill the process), for a server that stops cleanly: ``wait()`` returns the
/// first one.
final class TerminationSignals: Sendable {
    private struct State {
        var received: Int32?
        var waiter: CheckedContinuation<Int32, Never>?
        var watch: SignalWatch?
    }
    private let state = Mutex(State())

    /// A command run in process (``CommandIO``) leaves the process's signals alone: it is stopped otherwise.
    init() {
        let watch = SignalWatch([SIGINT, SIGTERM]) { [weak self] in self?.deliver($0) }
        state.withLock { $0.watch = watch }
    }

    private func deliver(_ sig: Int32) {
        let waiter = state.withLock { s -> CheckedContinuation<Int32, Never>? in
            if s.received == nil { s.received = sig }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: sig)
    }

    /// Waits for the first SIGINT or SIGTERM (returns at once if one came already).
    func wait() async -> Int32 {
        await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            let received = state.withLock { s -> Int32? in
                if s.received == nil { s.waiter = c }
                return s.received
            }
            if let received { c.resume(returning: received) }
        }
    }

    /// Stops catching (the signals stay ignored until the process exits).
    func cancel() {
        state.withLock { $0.watch }?.cancel()
    }
}
