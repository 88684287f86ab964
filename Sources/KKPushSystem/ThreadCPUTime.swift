import CKKPushSystem

/// The calling thread's CPU time: what a benchmark that runs on one thread divides by, as `openssl speed` does.
package enum ThreadCPUTime {
    /// User + system seconds of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), 0 if it cannot be read.
    package static func seconds() -> Double {
        kk_thread_cpu_seconds()
    }
}
