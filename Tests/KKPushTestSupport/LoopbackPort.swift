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
