import Dispatch
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization

/// An ``HTTP1Server``'s handling without a socket: raw HTTP/1.1 request bytes in, raw response bytes
/// out, through the same NIO HTTP/1.1 codec (with its error handling: a request it cannot parse gets its
/// 400) and the same body limit, on an in-memory channel. For fuzz targets and socket-free tests.
public enum HTTP1Exchange {
    /// Feeds `request` (one or more requests, as a client would write them) to a new connection and
    /// returns everything written back. Blocks the calling thread while `handler` runs (on the
    /// concurrency pool): call it from synchronous code (a test, a fuzz target), never from a handler.
    public static func respond(
        to request: [UInt8], maximumBody: Int = 1 << 20, handler: @escaping HTTP1Server.Handler
    ) -> [UInt8] {
        let channel = EmbeddedChannel()
        var output: [UInt8] = []
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(Collector(maximumBody: maximumBody, handler: handler))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            var buffer = channel.allocator.buffer(capacity: request.count)
            buffer.writeBytes(request)
            try channel.writeInbound(buffer)
        } catch {
            // A request the codec refuses closes the channel; what was written before is still read below.
        }
        while let part = try? channel.readOutbound(as: ByteBuffer.self) {
            output += part.readableBytesView
        }
        _ = try? channel.finish()
        return output
    }

    /// Runs `operation` to its end and returns its value, blocking this thread meanwhile.
    static func runBlocking<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let value = await operation()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let maximumBody: Int
        let handler: HTTP1Server.Handler
        var assembler: HTTPRequestAssembler

        init(maximumBody: Int, handler: @escaping HTTP1Server.Handler) {
            self.maximumBody = maximumBody
            self.handler = handler
            assembler = HTTPRequestAssembler(maximumBody: maximumBody)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .request(let request, let head) = assembler.add(unwrapInboundIn(data)) else { return }
            let handler = self.handler
            let response = HTTP1Exchange.runBlocking { await handler(request) }
            let parts = HTTP1Server.responseParts(response, version: head.version, keepAlive: head.isKeepAlive)
            for part in parts { context.write(wrapOutboundOut(part), promise: nil) }
            context.flush()
            if !head.isKeepAlive { context.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
