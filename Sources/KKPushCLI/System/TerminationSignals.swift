import Dispatch
import Foundation

/// SIGINT and SIGTERM, caught from the moment this is created (so that a signal while starting is not
/// lost and does not kill the process), for a server that stops cleanly: ``wait()`` returns the first one.
final class TerminationSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var received: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    /// A command run in process (``CommandIO``) leaves the process's signals alone: it is stopped otherwise.
    init() {
        for sig in CommandIO.current.isProcess ? [SIGINT, SIGTERM] : [] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.deliver(sig) }
            source.resume()
            sources.append(source)
        }
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
        for source in sources { source.cancel() }
    }
}
