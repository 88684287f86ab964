import CKKPushSystem
package import Foundation

/// Threads of their own for a server's tasks (a `TaskExecutor`), so they never wait for Swift's cooperative pool.
///
/// The pool has about one thread per core, and a process that embeds a server shares it with everything else it
/// runs: a test suite's synchronous tests, a library's CPU-bound work. While those hold every pool thread, a server
/// whose connections are tasks on the pool accepts (the event loop does that) but answers nothing
/// (`MockAdminOwnThreadsTests`: with every pool thread held, the mock's admin port answered only once they were let
/// go). ``HTTP1Server`` runs its accept loop here instead (its connections on their event loops,
/// ``EventLoopTaskExecutor``), and the test harness runs an in-process command on threads of its own the same way.
///
/// At most `maximum` threads, started when jobs come and none is free; each ends after `idle` without a job, and a
/// job that comes later (a task left behind) starts one again, so no job is ever stranded.
package final class OwnThreads: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var threads = 0
    private var waiting = 0
    private let maximum: Int
    private let idle: TimeInterval
    private let name: String

    /// Threads named `name` (as `top -H` shows them: Linux keeps the first 15 bytes), at most `maximum` at once, each
    /// ending after `idle` seconds without a job.
    package init(name: String, maximum: Int = 2, idle: TimeInterval = 10) {
        self.name = name
        self.maximum = max(1, maximum)
        self.idle = idle
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let start = waiting == 0 && threads < maximum
        if start { threads += 1 } else { condition.signal() }
        condition.unlock()
        if start {
            let thread = Thread { [self] in work() }
            thread.start()
        }
    }

    private func work() {
        // Named by the thread itself: `Thread.name` set before `start()` names only the Thread object, and the thread
        // kept the name of the one that started it (in `top -H`, `perf` and /proc, a cooperative pool thread's
        // `com.apple.root.default-qos`, the same as the pool's own threads).
        _ = kk_name_current_thread(name)
        condition.lock()
        while true {
            if jobs.isEmpty {
                waiting += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idle))
                waiting -= 1
                if !woken && jobs.isEmpty {
                    threads -= 1
                    condition.unlock()
                    return
                }
                continue
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
    }
}
