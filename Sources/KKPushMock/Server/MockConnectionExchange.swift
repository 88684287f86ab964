import Foundation
import KKPushCore
import Logging
import NIOCore
import NIOEmbedded

extension MockState {
    /// The state of a socket-free exchange (``MockAdminExchange``, ``MockConnectionExchange``): `configuration`'s keys,
    /// devices and faults, its clock, log capacity and strictness; `keys.json` is not read.
    convenience init(exchange configuration: MockServerConfiguration) throws {
        self.init(
            logCapacity: configuration.deliveryLogCapacity, rejectionCapacity: configuration.rejectionLogCapacity,
            strict: configuration.strictDeviceTokens,
            clock: configuration.clock, deviceRules: configuration.deviceRules)
        for key in configuration.keys { try register(key) }
        for device in configuration.devices { register(device) }
        for fault in configuration.faults { _ = try add(fault) }
    }
}

extension MockRequestProcessor {
    /// The processor of one `environment`'s listener, with `configuration`'s provider-token limits.
    init(environment: APNsEnvironment, state: MockState, configuration: MockServerConfiguration, management: Bool) {
        self.init(
            environment: environment, state: state, maxAge: configuration.providerTokenMaxAge,
            futureSkew: configuration.providerTokenFutureSkew,
            updateInterval: configuration.providerTokenUpdateInterval, management: management,
            maxChannels: configuration.maxChannelsPerApp)
    }
}

extension APNsConnectionHandler.Settings {
    /// The limits and timings of `configuration`, as every listener of the mock gives its connections.
    init(configuration: MockServerConfiguration) {
        func amount(_ seconds: Double) -> TimeAmount { .nanoseconds(Int64(seconds * 1e9)) }
        self.init(
            maxConcurrentStreams: configuration.maxConcurrentStreams,
            raiseStreamsAfterAuth: configuration.oneStreamUntilAuthenticated,
            goAwayOnBadCertificateEnvironment: configuration.goAwayOnBadCertificateEnvironment,
            gracePeriod: amount(configuration.goAwayGracePeriod), resetLimit: configuration.streamResetLimit,
            resetWindow: amount(configuration.streamResetWindow),
            firstRequestTimeout: amount(configuration.firstRequestTimeout),
            bodyTimeout: amount(configuration.streamBodyTimeout), idleTimeout: amount(configuration.idleTimeout),
            goAwayLinger: amount(configuration.goAwayLinger))
    }
}

/// One APNs connection of the mock without a socket or TLS: the bytes a client writes after the TLS handshake in,
/// everything the mock writes back out, through the same frame layer (``NGHTTP2Framing``, libnghttp2), wire watcher
/// and connection handler as a listener's connections, on an in-memory channel.
///
/// For the fuzz target `mock-h2`. Its state (keys, devices, faults, the delivery log, the clock) is the exchange's
/// own; the sandbox environment is served. Timers do not run (the channel's clock does not move), so a delayed
/// answer or a timeout is not reached.
public struct MockConnectionExchange: Sendable {
    let state: MockState
    let configuration: MockServerConfiguration

    /// A fresh state from `configuration`, as ``MockAdminExchange`` makes it.
    public init(configuration: MockServerConfiguration = MockServerConfiguration()) throws {
        state = try MockState(exchange: configuration)
        self.configuration = configuration
    }

    /// Feeds `bytes` (the client preface and frames, as a client would write them) in reads of at most `readSize`
    /// bytes to a new connection and returns everything the mock wrote, then closes it.
    public func respond(to bytes: [UInt8], readSize: Int = 16384) -> [UInt8] {
        let processor = MockRequestProcessor(
            environment: .sandbox, state: state, configuration: configuration, management: false)
        let maxStreams = configuration.maxConcurrentStreams
        let wire = ConnectionWire(
            advertisedMaxStreams: UInt32(configuration.oneStreamUntilAuthenticated ? 1 : maxStreams))
        let channel = EmbeddedChannel()
        var out: [UInt8] = []
        func drain() {
            while let buffer = try? channel.readOutbound(as: ByteBuffer.self) { out += buffer.readableBytesView }
        }
        do {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(H2WireWatcher(wire: wire))
            try sync.addHandler(NGHTTP2Framing(advertisedMaxStreams: maxStreams))
            try sync.addHandler(
                APNsConnectionHandler(
                    processor: processor,
                    logger: Logger(label: "kkpush.mock", factory: { _ in SwiftLogNoOpLogHandler() }),
                    settings: APNsConnectionHandler.Settings(configuration: configuration), wire: wire))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            var offset = 0
            while offset < bytes.count, channel.isActive {
                let end = min(bytes.count, offset + max(1, readSize))
                try channel.writeInbound(channel.allocator.buffer(bytes: bytes[offset..<end]))
                channel.pipeline.fireChannelReadComplete()
                drain()
                offset = end
            }
        } catch {
            // A closed channel or a protocol error: what was written so far is the answer.
        }
        drain()
        _ = try? channel.finish(acceptAlreadyClosed: true)
        return out
    }
}
