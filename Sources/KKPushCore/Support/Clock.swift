public import Foundation
import Synchronization

/// A source of wall-clock time, injected wherever time matters (token age, refresh, expiry),
/// so tests move time forward instead of sleeping.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    /// The current time.
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to: for tests and simulations.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    /// Creates a clock standing at `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    /// The clock's current time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}

/// Another clock moved by an offset that can be changed: the mock's clock after `POST /clock`, the provider's
/// clock in the `expired-provider-token` scenario (which runs behind the mock's). The one offset clock of
/// kkpush, for the mock and the simulator.
public final class OffsetWallClock: WallClock {
    /// The clock the offset is added to.
    public let base: any WallClock
    private let offset = Mutex<TimeInterval>(0)

    /// Creates a clock equal to `base` (the system clock by default).
    public init(base: any WallClock = SystemWallClock()) { self.base = base }

    /// The base clock's time plus the offset.
    public func now() -> Date { base.now().addingTimeInterval(offset.withLock { $0 }) }

    /// Moves the clock forward by `seconds` (back, if negative).
    public func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }

    /// Sets the offset back to zero.
    public func reset() { offset.withLock { $0 = 0 } }
}
