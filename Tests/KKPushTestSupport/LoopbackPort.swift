import CKKPushSystem
import Foundation

/// A TCP port of 127.0.0.1 free right now (bound to port 0, then closed).
public func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LoopbackPortError(description: "socket() failed") }
    defer { close(fd) }
    guard kk_bind_loopback(fd, 0) == 0 else { throw LoopbackPortError(description: "bind() failed") }
    let port = kk_bound_port(fd)
    guard port > 0 else { throw LoopbackPortError(description: "getsockname() failed") }
    return Int(port)
}

/// Why no free port could be found (socket or bind failed).
public struct LoopbackPortError: Error, CustomStringConvertible {
    public var description: String
}

/// A TCP port of 127.0.0.1 that refuses connections for as long as this value lives: a socket bound to it that
/// never listens (a connection gets RST, "Connection refused"), so no other test's server can take the port
/// meanwhile, as one can take a port that was merely found free and closed.
public final class RefusingLoopbackPort: @unchecked Sendable {
    /// The port.
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackPortError(description: "socket() failed") }
        guard kk_bind_loopback(fd, 0) == 0 else {
            close(fd)
            throw LoopbackPortError(description: "bind() failed")
        }
        let port = kk_bound_port(fd)
        guard port > 0 else {
            close(fd)
            throw LoopbackPortError(description: "getsockname() failed")
        }
        self.fd = fd
        self.port = Int(port)
    }

    deinit { close(fd) }
}
