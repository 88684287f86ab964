import Foundation
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
