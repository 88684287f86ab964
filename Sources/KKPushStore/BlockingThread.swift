import Foundation

/// A thread of its own that runs jobs one after another, in order: for a C library whose calls block (libpq's
/// network round trips, SQLite's busy timeout), so that neither Swift's cooperative threads nor Dispatch's shared
/// pool ever wait on them. One per connection.
final class BlockingThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var stopping = false

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `job` on the thread after the jobs before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs `work` on the thread after the jobs before it, and awaits its result.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Ends the thread after the jobs already given.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }
}
