import Foundation
import NIOCore
public import NIOPosix
import Synchronization

/// Watches how late the event loops of a group run a task: every `interval`, a task is handed to each loop and
/// the time until it runs is kept (the longest per loop, and when it was seen). For a test whose server went
/// silent, to tell a blocked event loop from a lost request. With `stallAfter`, `onStall` is called (on the watching
/// thread) once per stall, when a loop's probe has waited that long (``EventLoopStallWatch``).
public final class EventLoopLag: Sendable {
    private struct Loop {
        var longest: Duration = .zero
        var pending: ContinuousClock.Instant?
        var longestAt: Duration = .zero
    }
    private let loops: [any EventLoop]
    private let state: Mutex<[Loop]>
    private let stopped = Atomic(false)
    private let started = ContinuousClock.now

    /// Starts watching `group`'s loops (NIO's shared group when not given).
    public init(
        group: MultiThreadedEventLoopGroup = .singleton, interval: Duration = .milliseconds(50),
        stallAfter: Duration? = nil,
        onStall: @escaping @Sendable (_ loop: Int, _ waited: Duration) -> Void = { _, _ in }
    ) {
        self.loops = Array(group.makeIterator())
        self.state = Mutex(Array(repeating: Loop(), count: loops.count))
        let thread = Thread { [self] in
            var reported = Array(repeating: false, count: loops.count)
            while !stopped.load(ordering: .acquiring) {
                for (index, loop) in self.loops.enumerated() {
                    let handed = ContinuousClock.now
                    // One probe at a time per loop: a loop still blocked keeps its probe's start.
                    let waited = state.withLock { loops -> Duration? in
                        if let pending = loops[index].pending { return handed - pending }
                        loops[index].pending = handed
                        return nil
                    }
                    if let waited {
                        if let stallAfter, waited > stallAfter, !reported[index] {
                            reported[index] = true
                            onStall(index, waited)
                        }
                        continue
                    }
                    reported[index] = false
                    loop.execute { [self] in
                        let now = ContinuousClock.now
                        let since = self.started
                        state.withLock { loops in
                            guard let start = loops[index].pending else { return }
                            loops[index].pending = nil
                            if now - start > loops[index].longest {
                                loops[index].longest = now - start
                                loops[index].longestAt = start - since
                            }
                        }
                    }
                }
                Thread.sleep(
                    forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds)
                        / 1e18)
            }
        }
        thread.name = "kkpush.test.loop-lag"
        thread.start()
    }

    /// Stops the watching thread.
    public func stop() { stopped.store(true, ordering: .releasing) }

    /// For each loop: the longest a task waited to run (a probe still waiting counts with its wait so far), and how
    /// long after the start of watching that wait began.
    public var summary: String {
        let now = ContinuousClock.now
        let since = started
        return state.withLock { loops in
            loops.enumerated().map { index, loop in
                var longest = loop.longest
                var at = loop.longestAt
                if let pending = loop.pending, now - pending > longest {
                    longest = now - pending
                    at = pending - since
                }
                return "loop \(index): longest wait \(longest) (began \(at) in)"
            }.joined(separator: "; ")
        }
    }

}
