import NIOCore

/// What ``H2WireWatcher`` and ``APNsConnectionHandler`` share about one connection (both run on its
/// event loop; never used elsewhere).
final class ConnectionWire {
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` the client is told (the value on the wire).
    var advertisedMaxStreams: UInt32
    /// The `SETTINGS_MAX_HEADER_LIST_SIZE` the client is told (APNs: 8000).
    let advertisedMaxHeaderListSize: UInt32 = UInt32(H2WireWatcher.advertisedMaxHeaderListSize)
    /// GOAWAY frames written to the connection so far (by the frame layer's connection errors or by
    /// the mock's own GOAWAYs).
    var goAwaysWritten = 0

    init(advertisedMaxStreams: UInt32) {
        self.advertisedMaxStreams = advertisedMaxStreams
    }
}

/// Watches the HTTP/2 frames the frame layer (``NGHTTP2Framing``, libnghttp2) writes (it sits between the TLS
/// handler and the frame layer, on the byte stream):
///
/// - rewrites `SETTINGS_MAX_CONCURRENT_STREAMS` to ``ConnectionWire/advertisedMaxStreams``. libnghttp2
///   answers a stream over the limit it sent with GOAWAY `PROTOCOL_ERROR`, losing every stream in
///   flight; RFC 9113 §5.1.2 allows refusing just that stream. So libnghttp2 is given a limit above the
///   advertised one (``internalMaxStreams(advertised:)``), the client is told the advertised one, and
///   ``APNsConnectionHandler`` refuses a stream past it with `RST_STREAM(REFUSED_STREAM)`.
/// - rewrites `SETTINGS_MAX_HEADER_LIST_SIZE` to 8000 (what APNs sends) while the frame layer is told
///   ``internalMaxHeaderListSize``, so ``APNsConnectionHandler`` answers a header list over 8000 on its
///   stream only (`431`) instead of the connection ending.
/// - counts the GOAWAY frames written, so an error the frame layer reports can be told apart: a
///   connection error comes with a GOAWAY, a stream error with a RST_STREAM only.
final class H2WireWatcher: ChannelOutboundHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// The limit libnghttp2 enforces itself: far enough above the advertised one that only the mock's
    /// own refusal ever applies.
    static func internalMaxStreams(advertised: Int) -> Int {
        min(Int(Int32.max), 2 * max(advertised, 1) + 100)
    }

    /// What the client is told it may send as a header list.
    static let advertisedMaxHeaderListSize = 8000
    /// What the frame layer is told it may receive as a header list.
    static let internalMaxHeaderListSize = 65536

    private let wire: ConnectionWire
    /// The current frame's header bytes, while fewer than 9 have been seen.
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var payloadLeft = 0
    /// Whether the current frame is a SETTINGS frame (not an ACK) to rewrite, and how far into its
    /// payload we are.
    private var inSettings = false
    private var settingsOffset = 0
    private var settingID: UInt16 = 0

    init(wire: ConnectionWire) {
        self.wire = wire
        header.reserveCapacity(9)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(var buffer):
            if scan(&buffer) {
                context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
            } else {
                context.write(data, promise: promise)
            }
        case .fileRegion(let region):
            // Never written by libnghttp2 for this server; only a DATA payload could be one.
            skip(region.readableBytes)
            context.write(data, promise: promise)
        }
    }

    private func skip(_ count: Int) {
        payloadLeft = max(0, payloadLeft - count)
        if payloadLeft == 0 { inSettings = false }
    }

    /// Follows the frames in `buffer`; returns true if it changed a byte.
    private func scan(_ buffer: inout ByteBuffer) -> Bool {
        var changed = false
        var index = buffer.readerIndex
        let end = buffer.writerIndex
        while index < end {
            if payloadLeft > 0 {
                let n = min(payloadLeft, end - index)
                if inSettings {
                    for i in index..<(index + n) {
                        let k = settingsOffset % 6
                        if k < 2 {
                            let byte = UInt16(buffer.getInteger(at: i, as: UInt8.self)!)
                            settingID = k == 0 ? byte << 8 : settingID | byte
                        } else if settingID == 0x3 || settingID == 0x6 {
                            let value = settingID == 0x3 ? wire.advertisedMaxStreams : wire.advertisedMaxHeaderListSize
                            let byte = UInt8(truncatingIfNeeded: value >> (8 * UInt32(5 - k)))
                            if buffer.getInteger(at: i, as: UInt8.self) != byte {
                                buffer.setInteger(byte, at: i)
                                changed = true
                            }
                        }
                        settingsOffset += 1
                    }
                }
                index += n
                skip(n)
                continue
            }
            let n = min(9 - header.count, end - index)
            header += buffer.getBytes(at: index, length: n) ?? []
            index += n
            guard header.count == 9 else { break }
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            let type = header[3]
            let flags = header[4]
            header.removeAll(keepingCapacity: true)
            if type == 0x7 { wire.goAwaysWritten += 1 }
            inSettings = type == 0x4 && flags & 0x1 == 0 && length > 0
            settingsOffset = 0
            payloadLeft = length
        }
        return changed
    }
}
