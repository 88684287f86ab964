import Dispatch
import Foundation
import KKPushCLISupport

/// SIGINT and SIGTERM as calls of `onSignal` (on a queue of its own). Their default action (ending
/// the process) is off from here on: `signal(_, SIG_IGN)`, then libdispatch's signal sources.
final class SignalWatch: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []

    init(_ signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "kkpush.signals")
        // A command run in process (``CommandIO``) leaves the process's signals alone.
        for number in CommandIO.current.isProcess ? signals : [] {
            Signals.ignore(number)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                // Two signals before the handler ran count as two (the second one means "now").
                for _ in 0..<min(2, max(1, Int(source.data))) { onSignal(number) }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Keeps the sources alive until here (signals stay handled, not fatal, to the end of the run).
    func keep() { withExtendedLifetime(sources) {} }

    /// Stops catching (the signals stay ignored until the process exits).
    func cancel() {
        for source in sources { source.cancel() }
    }
}
