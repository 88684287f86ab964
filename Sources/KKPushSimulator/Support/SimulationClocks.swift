import Foundation
import KKPushCore
import KKPushMock
import Synchronization

/// The mock APNs server's clock as a ``WallClock``: the time the mock stamps on accepted
/// notifications, so latencies measured against it stay right when a scenario moves the mock's
/// clock forward.
public struct MockServerClock: WallClock {
    /// The mock whose clock this reads.
    public let server: MockAPNsServer

    /// Reads `server`'s clock.
    public init(server: MockAPNsServer) { self.server = server }

    /// The mock's current time.
    public func now() -> Date { server.now }
}

/// The system clock shifted by an offset that can be moved forward: the provider's own clock in
/// the `expired-provider-token` scenario, which runs behind the mock's.
public final class OffsetWallClock: WallClock {
    private let offset = Mutex<TimeInterval>(0)

    /// Creates a clock equal to the system clock.
    public init() {}

    /// The system time plus the offset.
    public func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Moves the clock forward by `seconds` (back, if negative).
    public func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
}
