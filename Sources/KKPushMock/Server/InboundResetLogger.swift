import Logging
import NIOCore
import NIOHTTP2

/// Logs every inbound RST_STREAM frame at debug level, with what the connection knew of the stream
/// (pending, finished, never seen). Installed between TLS and the frame layer (``NGHTTP2Framing``) only when the
/// mock logs at debug level (`kkpush mock serve -v`): every reset as it arrives on the bytes, before the frame
/// layer and ``APNsConnectionHandler`` act on the read it came in.
///
/// It reads only the 9-byte frame headers (and the 4-byte error code of RST_STREAM) and passes every
/// byte on unchanged. The stream's state is read before the frames of the same read are processed,
/// so a reset that follows its own stream's last frame in one read is shown as still incomplete.
final class InboundResetLogger: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private static let prefaceLength = 24

    private let logger: Logger
    private var prefaceLeft = InboundResetLogger.prefaceLength
    /// Bytes of the current frame's header (and RST_STREAM payload) gathered so far.
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to skip.
    private var skip = 0
    private var resets = 0

    init(logger: Logger) {
        self.logger = logger
        header.reserveCapacity(13)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        scan(buffer.readableBytesView, context: context)
        context.fireChannelRead(data)
    }

    private func scan(_ bytes: ByteBufferView, context: ChannelHandlerContext) {
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if prefaceLeft > 0 {
                let n = min(prefaceLeft, bytes.endIndex - i)
                prefaceLeft -= n
                i += n
                continue
            }
            if skip > 0 {
                let n = min(skip, bytes.endIndex - i)
                skip -= n
                i += n
                continue
            }
            header.append(bytes[i])
            i += 1
            guard header.count >= 9 else { continue }
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            let type = header[3]
            if type == 0x3 && length == 4 {
                guard header.count == 13 else { continue }
                let stream = Int(header[5] & 0x7F) << 24 | Int(header[6]) << 16 | Int(header[7]) << 8 | Int(header[8])
                let code =
                    UInt32(header[9]) << 24 | UInt32(header[10]) << 16 | UInt32(header[11]) << 8 | UInt32(header[12])
                resets += 1
                let id = HTTP2StreamID(stream)
                let state =
                    (try? context.pipeline.syncOperations.handler(type: APNsConnectionHandler.self))?.describeStream(id)
                    ?? "unknown"
                logger.debug(
                    "inbound RST_STREAM",
                    metadata: [
                        "stream": "\(stream)", "code": "\(HTTP2ErrorCode(networkCode: Int(code)))", "state": "\(state)",
                        "resets_on_connection": "\(resets)",
                    ])
                header.removeAll(keepingCapacity: true)
            } else {
                skip = length
                header.removeAll(keepingCapacity: true)
            }
        }
    }
}
