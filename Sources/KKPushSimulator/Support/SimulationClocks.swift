package import Foundation
import KKPushCore
package import KKPushMock
import Synchronization

/// The mock APNs server's clock as a ``WallClock``: the time the mock stamps on accepted
/// notifications, so latencies measured against it stay right when a scenario moves the mock's
/// clock forward.
package struct MockServerClock: WallClock {
    /// The mock whose clock this reads.
    package let server: MockAPNsServer

    /// Reads `server`'s clock.
    package init(server: MockAPNsServer) { self.server = server }

    /// The mock's current time.
    package func now() -> Date { server.now }
}
