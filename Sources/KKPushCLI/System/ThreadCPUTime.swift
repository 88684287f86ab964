import CKKPushSystem

/// The calling thread's CPU time.
enum ThreadCPUTime {
    /// User + system seconds of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), 0 if it cannot be read.
    static func seconds() -> Double {
        kk_thread_cpu_seconds()
    }
}
