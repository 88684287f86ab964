import Foundation
import KKPushCore
import Synchronization

/// Delivers outcomes to a callback (on a loop thread; with several, on any of them).
final class CallbackSink: ResultSink {
    let callback: @Sendable (PushResult) -> Void
    init(_ callback: @escaping @Sendable (PushResult) -> Void) { self.callback = callback }
    func deliver(_ result: PushResult) { callback(result) }
}

/// Resumes one waiting `send` with its outcome.
final class ContinuationSink: ResultSink {
    private let continuation: Mutex<CheckedContinuation<PushOutcome, Never>?>
    init(_ continuation: CheckedContinuation<PushOutcome, Never>) { self.continuation = Mutex(continuation) }
    func deliver(_ result: PushResult) {
        let c = continuation.withLock { c -> CheckedContinuation<PushOutcome, Never>? in
            defer { c = nil }
            return c
        }
        c?.resume(returning: result.outcome)
    }
}

/// A batch from an asynchronous producer: a bounded buffer the producer fills (waiting when it is
/// full) and the loop drains.
final class BufferedJobFeed: JobFeed, @unchecked Sendable {
    private struct State {
        var buffer = JobQueue()
        var finished = false
        var starved = false
        var closed = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    private let limit: Int
    private let wake: @Sendable () -> Void
    private let onFinished: @Sendable () -> Void
    var outstanding = 0

    init(limit: Int, wake: @escaping @Sendable () -> Void, onFinished: @escaping @Sendable () -> Void) {
        self.limit = max(2, limit)
        self.wake = wake
        self.onFinished = onFinished
    }

    /// Adds a job, waiting while the buffer is full.
    func push(_ job: Job) async {
        while true {
            if offer(job) { return }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.buffer.count < limit || s.closed { return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    /// Adds a job if the buffer has room and returns true, or returns false at once when it is full. A
    /// job offered after the batch stopped is taken too: it gets its one outcome here, never sent.
    func offer(_ incoming: Job) -> Bool {
        var job = incoming
        job.feed = self
        let (added, mustWake, closed) = state.withLock { s -> (Bool, Bool, Bool) in
            if s.closed { return (false, false, true) }
            guard s.buffer.count < limit else { return (false, false, false) }
            s.buffer.append(job)
            let w = s.starved
            s.starved = false
            return (true, w, false)
        }
        if closed {
            Self.deliverUnsent(job)
            return true
        }
        if added, mustWake { wake() }
        return added
    }

    /// Stops the batch: no job still in the buffer starts. Each ends `.interrupted` (never sent,
    /// so not possibly duplicated), and so does each job pushed from now on; jobs already started
    /// go on to their outcome. Any thread.
    func stop() {
        let (jobs, waiter) = state.withLock { s -> ([Job], CheckedContinuation<Void, Never>?) in
            s.closed = true
            s.finished = true
            var taken: [Job] = []
            while let job = s.buffer.popFirst() { taken.append(job) }
            defer { s.waiter = nil }
            return (taken, s.waiter)
        }
        for job in jobs { Self.deliverUnsent(job) }
        waiter?.resume()
        wake()
    }

    private static func deliverUnsent(_ job: Job) {
        let outcome = PushOutcome(
            result: .failed(PushFailure(kind: .interrupted, message: "Stopped before this push was sent.")),
            duration: .zero, attempts: 0, endpoint: job.request.endpoint, problems: job.problems)
        job.sink.deliver(PushResult(index: job.index, deviceToken: job.request.deviceToken, outcome: outcome))
    }

    /// No more jobs will come.
    func finish() {
        let mustWake = state.withLock { s -> Bool in
            s.finished = true
            return s.starved
        }
        if mustWake { wake() }
        wake()
    }

    func next() -> FeedStep {
        let (step, waiter) = state.withLock { s -> (FeedStep, CheckedContinuation<Void, Never>?) in
            if let job = s.buffer.popFirst() {
                var w: CheckedContinuation<Void, Never>? = nil
                if s.buffer.count <= limit / 2, let waiting = s.waiter {
                    w = waiting
                    s.waiter = nil
                }
                return (.job(job), w)
            }
            if s.finished { return (.done, nil) }
            s.starved = true
            let w = s.waiter
            s.waiter = nil
            return (.wait, w)
        }
        waiter?.resume()
        return step
    }

    func finished() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.closed = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
        onFinished()
    }
}

/// A batch's feeds, one per loop thread: the producer offers each job to them in turn, so a thread
/// whose buffer is full is passed over, and waits only when every buffer is full. Used on the
/// producing task only.
struct BatchFeeds {
    let feeds: [BufferedJobFeed]
    private var turn = 0

    init(_ feeds: [BufferedJobFeed]) { self.feeds = feeds }

    /// Hands `job` to one feed (exactly one), waiting while all are full.
    mutating func push(_ job: Job) async {
        let count = feeds.count
        if count == 1 { return await feeds[0].push(job) }
        for offset in 0..<count {
            let i = (turn + offset) % count
            if feeds[i].offer(job) {
                turn = (i + 1) % count
                return
            }
        }
        let i = turn
        turn = (i + 1) % count
        await feeds[i].push(job)
    }

    func finish() { for feed in feeds { feed.finish() } }
    func stop() { for feed in feeds { feed.stop() } }
}
