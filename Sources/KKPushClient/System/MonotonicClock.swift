import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): the loop's clock.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
}

/// The loop's clock: `CLOCK_MONOTONIC`.
struct SystemLoopClock: LoopClock {
    @inline(__always)
    func nanos() -> UInt64 { monotonicNanos() }
}
