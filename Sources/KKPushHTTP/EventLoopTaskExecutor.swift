package import NIOCore

/// An event loop as a `TaskExecutor`: a task that prefers it runs on the loop's thread.
///
/// ``HTTP1Server`` serves each connection in a task that prefers the connection's own loop. The request the loop reads
/// resumes that task on the same thread, and the answer it writes goes out from there: no other thread is woken
/// between a request and its answer. Served on ``OwnThreads`` instead, every request woke a server thread and then
/// the loop again, and those threads were more threads asking for the same cores. The loop is still not Swift's
/// cooperative pool, so a process whose pool is busy still gets its answers.
package final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the jobs run on.
    package let eventLoop: any EventLoop

    /// An executor for `eventLoop`.
    package init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
