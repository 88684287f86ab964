import Foundation
import KKPushCore
import KKPushHTTP
public import Logging

/// The mock's admin API without a socket: raw HTTP/1.1 request bytes in, raw response bytes out,
/// through the same NIO HTTP/1.1 server codec (with its error handling) and the same guards and routes
/// as ``MockAdminServer``'s connections, on an in-memory channel (``HTTP1Exchange``).
///
/// For the fuzz target `mock-admin` and for tests that want the admin API's answers without a server.
/// The state (keys, devices, faults, the delivery log, the clock) is the exchange's own and lives as
/// long as it does; nothing is bound and nothing is read from the network.
public struct MockAdminExchange: Sendable {
    let state: MockState
    private let logger: Logger

    /// A fresh state from `configuration`: its keys, devices and faults, its clock, log capacity and
    /// strictness. Unlike the server, it does not read `keys.json` (``MockServerConfiguration/registerDefaultKeys``
    /// is ignored): give keys in ``MockServerConfiguration/keys``.
    public init(
        configuration: MockServerConfiguration = MockServerConfiguration(),
        logger: Logger = Logger(label: "kkpush.mock.admin", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        state = try MockState(exchange: configuration)
        self.logger = logger
    }

    /// Feeds `request` (one or more HTTP/1.1 requests, as a client would write them) to a new admin
    /// connection and returns everything the mock wrote back. A long poll (`wait_ms`) is answered at
    /// once with what is there (as if its wait had run out).
    public func respond(to request: [UInt8]) async -> [UInt8] {
        let api = MockAdminAPI(state: state, logger: logger, longPollWaits: false)
        return await HTTP1Exchange.respond(to: request, maximumBody: MockAdminAPI.maximumBody) {
            await api.respond(to: $0)
        }
    }

    /// One request: `method`, `uri` (path and query) and `body`, sent with a `content-length`. Returns
    /// the response's status and body (status 0 and an empty body if the mock wrote nothing).
    public func respond(method: String, uri: String, body: [UInt8] = []) async -> (status: Int, body: [UInt8]) {
        var request = Array(
            "\(method) \(uri) HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: \(body.count)\r\n\r\n".utf8)
        request += body
        return Self.parseResponse(await respond(to: request))
    }

    /// The status and body of the first response in `bytes` (status 0 if there is none).
    static func parseResponse(_ bytes: [UInt8]) -> (status: Int, body: [UInt8]) {
        let separator: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]
        guard bytes.count >= 12, bytes.starts(with: Array("HTTP/1.".utf8)),
            let status = Int(String(decoding: bytes[9..<12], as: UTF8.self))
        else { return (0, []) }
        var index = 0
        while index + separator.count <= bytes.count {
            if Array(bytes[index..<(index + separator.count)]) == separator {
                return (status, Array(bytes[(index + separator.count)...]))
            }
            index += 1
        }
        return (status, [])
    }
}
