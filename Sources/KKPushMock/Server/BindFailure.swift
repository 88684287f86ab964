import Foundation
import KKPushCore
import NIOCore

/// The error for a listener that could not bind, with the system's reason in words ("the port is in use")
/// rather than NIO's description of the failed call.
enum BindFailure {
    /// `what`: "the sandbox environment", "the admin API"; `hostParameter`: the configuration's name for the
    /// address (`host`, `adminHost`), for the fix of an address this machine does not have.
    static func error(
        host: String, port: Int, what: String, hostParameter: String, portAdvice: String, error: any Error
    ) -> KKPushError {
        let reason: String
        let fix: String
        if let io = error as? IOError {
            switch io.errnoCode {
            case EADDRINUSE:
                reason = "the port is in use"
                fix = portAdvice
            case EADDRNOTAVAIL:
                reason = "this machine has no address \(host)"
                fix = "Give an address this machine has (\(hostParameter)), e.g. 127.0.0.1 or 0.0.0.0."
            case EACCES:
                reason = "ports below 1024 need root"
                fix = "Choose a port from 1024 up (0 picks a free one), or run as root."
            default:
                reason = String(cString: strerror(io.errnoCode)).lowercased()
                fix = portAdvice
            }
        } else if error is SocketAddressError.UnknownHost || error is SocketAddressError {
            return KKPushError(
                code: .mockHostUnknown,
                message:
                    "Cannot listen on \(host):\(port) for \(what): \(host) is not an address or a name this machine can resolve.",
                fix: "Give an address this machine has (\(hostParameter)), e.g. 127.0.0.1 or 0.0.0.0.")
        } else {
            reason = "\(error)"
            fix = portAdvice
        }
        return KKPushError(
            code: .mockBind, message: "Cannot listen on \(host):\(port) for \(what): \(reason).", fix: fix)
    }
}
