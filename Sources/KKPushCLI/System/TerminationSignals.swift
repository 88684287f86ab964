import Foundation
import KKPushCLISupport

/// SIGINT and SIGTERM, caught (by a ``SignalWatch``) from the moment this is created (so that a signal while
/// starting is not lost and does not kill the process), for a server that stops cleanly: ``wait()`` returns the
/// first one.
final class TerminationSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var received: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?
    private var watch: SignalWatch?

    /// A command run in process (``CommandIO``) leaves the process's signals alone: it is stopped otherwise.
    init() {
        let watch = SignalWatch([SIGINT, SIGTERM]) { [weak self] in self?.deliver($0) }
        lock.lock()
        self.watch = watch
        lock.unlock()
    }

    private func deliver(_ sig: Int32) {
        lock.lock()
        if received == nil { received = sig }
        let w = waiter
        waiter = nil
        lock.unlock()
        w?.resume(returning: sig)
    }

    /// Waits for the first SIGINT or SIGTERM (returns at once if one came already).
    func wait() async -> Int32 {
        await withCheckedContinuation { (c: CheckedContinuation<Int32, Never>) in
            lock.lock()
            if let received {
                lock.unlock()
                c.resume(returning: received)
            } else {
                waiter = c
                lock.unlock()
            }
        }
    }

    /// Stops catching (the signals stay ignored until the process exits).
    func cancel() {
        lock.lock()
        let watch = self.watch
        lock.unlock()
        watch?.cancel()
    }
}
