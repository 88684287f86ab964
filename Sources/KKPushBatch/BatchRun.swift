import Dispatch
import Foundation
package import KKPushClient
import KKPushCore
import Synchronization

/// One batch run: sends the lines through the client, flushes the result lines every 100 ms, and on
/// SIGINT/SIGTERM (as the caller feeds them in) stops taking lines, gives the pushes in flight `grace` seconds
/// and ends the rest as interrupted. The ledger's events and the signals come in through ``send(_:)``.
package final class BatchRun: Sendable {
    /// How a run ended, for the summary and the exit status.
    package struct Ending: Sendable {
        /// The first signal, when one stopped the run.
        package var signal: Int32?
        /// The result lines could not be written.
        package var outputFailed: Bool
        /// Every line was read (`inputError` set if reading stopped at an error).
        package var finished: Bool
        package var inputError: (any Error)?
        /// False when the client's loop did not stop in time (it may still be inside libcurl).
        package var clientStopped: Bool
        /// From the first push to the closed books.
        package var elapsed: Duration
    }

    private let events: AsyncStream<BatchEvent>
    private let sink: AsyncStream<BatchEvent>.Continuation

    package init() {
        (events, sink) = AsyncStream.makeStream(of: BatchEvent.self)
    }

    /// Feeds the run an event: the ledger's (its `onEvent`), or a signal the caller caught.
    package var send: @Sendable (BatchEvent) -> Void {
        let sink = self.sink
        return { sink.yield($0) }
    }

    /// Runs the batch to its end. `emit` writes to stderr (the notices when a signal comes; `progress`: a
    /// progress line is on the terminal). `hardStop` is called 3 s after a second signal with the first one: the
    /// process must end then, whatever is still blocked.
    package func run(
        client: any BatchSender, lines: BatchLines, ledger: BatchLedger, grace: Double, progress: Bool,
        emit: @escaping @Sendable (String) -> Void, hardStop: @escaping @Sendable (Int32) -> Void
    ) async -> Ending {
        let send = self.send
        func say(_ line: String) { emit(line + "\n") }
        let flusher = DispatchSource.makeTimerSource(queue: .global())
        flusher.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        flusher.setEventHandler { ledger.flushIfDue() }
        flusher.resume()
        defer { flusher.cancel() }

        let start = ContinuousClock.now
        let batch = Task {
            do {
                // A Live Activity line's answer also goes to the activity registry (BatchActivity.swift).
                try await client.sendAll(streaming: lines) { result in
                    ledger.record(result)
                    lines.activities?.answer(result)
                }
                send(.finished(nil))
            } catch {
                send(.finished(error))
            }
        }

        var signalNumber: Int32? = nil
        var hardStopped = false
        var outputFailed = false
        var finished = false
        var inputError: (any Error)? = nil
        events: for await event in events {
            switch event {
            case .finished(let error):
                finished = true
                inputError = error
                break events
            case .signal(let number):
                if let first = signalNumber {
                    hardStopped = true
                    say("\(Self.name(number)) again: stopping now.")
                    // Whatever happens, the process ends: even a write blocked on a stalled pipe.
                    DispatchQueue.global().asyncAfter(deadline: .now() + 3) { hardStop(first) }
                    break events
                }
                signalNumber = number
                ledger.beginStopping()
                batch.cancel()
                let inFlight = ledger.pendingCount
                if progress { emit("\n") }
                if grace == 0 || inFlight == 0 {
                    say("\(Self.name(number)): stopping; no new pushes.")
                    break events
                }
                say(
                    "\(Self.name(number)): no new pushes; waiting up to \(Self.seconds(grace)) for \(inFlight) in flight (send the signal again to stop now)."
                )
                DispatchQueue.global().asyncAfter(deadline: .now() + grace) { send(.graceOver) }
            case .drained:
                if signalNumber != nil { break events }
            case .graceOver:
                break events
            case .outputFailed:
                outputFailed = true
                ledger.beginStopping()
                batch.cancel()
                break events
            }
        }

        var clientStopped = true
        if finished {
            await client.shutdown()
            ledger.close(unknownMayHaveBeenSent: false)
        } else {
            // The client ends what is still in flight as interrupted (possibly duplicated if sent).
            clientStopped = await Self.shutdown(client, within: hardStopped ? 1 : 10)
            ledger.close(unknownMayHaveBeenSent: !clientStopped)
        }
        return Ending(
            signal: signalNumber, outputFailed: outputFailed, finished: finished, inputError: inputError,
            clientStopped: clientStopped, elapsed: ContinuousClock.now - start)
    }

    /// "SIGINT", "SIGTERM", or "signal N".
    package static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(signal)"
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// Shuts the client down, waiting at most `seconds`; false if it did not finish in time.
    private static func shutdown(_ client: any BatchSender, within seconds: Double) async -> Bool {
        let once = Once<Bool>()
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            once.set(c)
            Task {
                await client.shutdown()
                once.resume(true)
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(false) }
        }
    }
}

/// A continuation resumed once, by whichever comes first.
final class Once<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, Never>?>(nil)

    func set(_ c: CheckedContinuation<T, Never>) {
        continuation.withLock { $0 = c }
    }

    func resume(_ value: T) {
        let c = continuation.withLock { c -> CheckedContinuation<T, Never>? in
            defer { c = nil }
            return c
        }
        c?.resume(returning: value)
    }
}
