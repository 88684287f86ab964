public import Foundation
public import KKPushCore
public import KKPushMock
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
