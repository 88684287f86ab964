import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The calling thread's CPU time.
enum ThreadCPUTime {
    /// User + system seconds of the calling thread (`CLOCK_THREAD_CPUTIME_ID`), 0 if it cannot be read.
    static func seconds() -> Double {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
