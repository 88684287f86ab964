public import Testing

/// The suite runs in parallel on small machines (2 cores). Almost every test only needs its answer, whenever it
/// comes, and its time limits are generous for that reason. A few assert on time itself: a stalled connection found
/// dead within a bound, a body budget read from window updates that must arrive within a wait, an idle timeout of
/// one second. Those run *time-sensitive* (``Testing/Trait/timeSensitive``): one at a time, and while one runs no
/// other test starts a process (``runProcess(_:_:stdin:environment:currentDirectory:timeout:)`` waits here first).
/// A time-sensitive test waits for processes already running to end; processes that ask while one waits are held
/// back, so it is not starved. A test's own processes, and those of a test already holding the gate, pass.
public actor LoadGate {
    public static let shared = LoadGate()

    private init() {
        // Every suite that starts a process comes here first: the place to start the opt-in loop-stall watch.
        _ = EventLoopStallWatch.started
    }

    @TaskLocal static var holding = false

    private var timeSensitiveRunning = false
    private var timeSensitiveWaiting = 0
    private var processes = 0
    private var waiters: [(timeSensitive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    private func admits(timeSensitive: Bool) -> Bool {
        if timeSensitive { return !timeSensitiveRunning && processes == 0 }
        return !timeSensitiveRunning && timeSensitiveWaiting == 0
    }

    private func enter(timeSensitive: Bool) async {
        if timeSensitive { timeSensitiveWaiting += 1 }
        while !admits(timeSensitive: timeSensitive) {
            await withCheckedContinuation { waiters.append((timeSensitive, $0)) }
        }
        if timeSensitive {
            timeSensitiveWaiting -= 1
            timeSensitiveRunning = true
        } else {
            processes += 1
        }
    }

    private func leave(timeSensitive: Bool) {
        if timeSensitive { timeSensitiveRunning = false } else { processes -= 1 }
        // Everyone looks again; those still not admitted wait again (few waiters, short sections).
        let woken = waiters
        waiters.removeAll()
        for waiter in woken { waiter.continuation.resume() }
    }

    /// Runs a process-starting `body`: at once inside a test holding the gate, else once no time-sensitive test
    /// runs or waits.
    public nonisolated func withProcess<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if Self.holding { return try await body() }
        await enter(timeSensitive: false)
        do {
            let result = try await Self.$holding.withValue(true) { try await body() }
            await leave(timeSensitive: false)
            return result
        } catch {
            await leave(timeSensitive: false)
            throw error
        }
    }

    /// Runs a time-sensitive test's `body` alone among time-sensitive tests, with no other test's process running.
    public nonisolated func withTimeSensitive(_ body: @Sendable () async throws -> Void) async throws {
        if Self.holding { return try await body() }
        await enter(timeSensitive: true)
        do {
            try await Self.$holding.withValue(true) { try await body() }
            await leave(timeSensitive: true)
        } catch {
            await leave(timeSensitive: true)
            throw error
        }
    }
}

/// The trait behind ``Testing/Trait/timeSensitive``.
public struct TimeSensitiveTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's trait is also offered the suite itself; only test cases take the gate.
        guard testCase != nil else { return try await function() }
        try await LoadGate.shared.withTimeSensitive(function)
    }
}

extension Trait where Self == TimeSensitiveTrait {
    /// A test whose assertions depend on elapsed time: run by ``LoadGate`` with no other test's process beside it.
    public static var timeSensitive: Self { TimeSensitiveTrait() }
}
