import Foundation

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): the loop's clock.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
}
