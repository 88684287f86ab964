/// Where the loop's nanoseconds count from: one second before the first reading in the process (so no reading is
/// 0, which the loop's fields use for "not yet").
private let loopClockOrigin = ContinuousClock.now - .seconds(1)

/// Monotonic nanoseconds on Swift's `ContinuousClock` (the one clock kkpush measures time with), as the scheduler's
/// plain integers: the loop's clock.
@inline(__always)
func monotonicNanos() -> UInt64 {
    let elapsed = (ContinuousClock.now - loopClockOrigin).components
    return UInt64(max(0, elapsed.seconds)) &* 1_000_000_000 &+ UInt64(max(0, elapsed.attoseconds / 1_000_000_000))
}

/// The loop's clock: ``monotonicNanos()``.
struct SystemLoopClock: LoopClock {
    @inline(__always)
    func nanos() -> UInt64 { monotonicNanos() }
}
