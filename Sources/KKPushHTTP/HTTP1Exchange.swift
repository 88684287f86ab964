import NIOCore
import NIOEmbedded
import NIOHTTP1

/// An ``HTTP1Server``'s handling without a socket: raw HTTP/1.1 request bytes in, raw response bytes
/// out, through the same NIO HTTP/1.1 codec (with its error handling: a request it cannot parse gets its
/// 400) and the same body limit, on an in-memory channel. For fuzz targets and socket-free tests.
package enum HTTP1Exchange {
    /// Feeds `request` (one or more requests, as a client would write them) to a new connection and
    /// returns everything written back. The requests are answered one after another, as the server's
    /// pipelining does: the next is read once the answer to the one before it is written.
    package static func respond(
        to request: [UInt8], maximumBody: Int = 1 << 20, handler: @escaping HTTP1Server.Handler
    ) async -> [UInt8] {
        let channel = EmbeddedChannel()
        let collector = Collector(maximumBody: maximumBody)
        var output: [UInt8] = []
        func drain() {
            while let part = try? channel.readOutbound(as: ByteBuffer.self) { output += part.readableBytesView }
        }
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(collector)
            // An embedded channel connects at once.
            channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1), promise: nil)
            var buffer = channel.allocator.buffer(capacity: request.count)
            buffer.writeBytes(request)
            try channel.writeInbound(buffer)
        } catch {
            // A request the codec refuses closes the channel; what was written before is still read below.
        }
        while channel.isActive, let (request, head) = collector.next() {
            let response = await handler(request)
            for part in HTTP1Server.responseParts(response, version: head.version, keepAlive: head.isKeepAlive) {
                channel.write(part, promise: nil)
            }
            channel.flush()
            if !head.isKeepAlive { channel.close(promise: nil) }
        }
        drain()
        // acceptAlreadyClosed: a request that closed the connection (`connection: close`, or one the codec
        // refused) has closed the channel already. Plain finish() throws then before it runs the event loop,
        // and the pipeline's teardown, queued there by the close, never runs: channel, pipeline and handlers
        // (and the buffers they hold) keep one another alive, which LeakSanitizer reports.
        _ = try? channel.finish(acceptAlreadyClosed: true)
        return output
    }

    /// Assembles requests and keeps them, in order, for ``respond(to:maximumBody:handler:)`` to answer.
    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart

        var assembler: HTTPRequestAssembler
        var pending: [(HTTPRequest, HTTPRequestHead)] = []

        init(maximumBody: Int) {
            assembler = HTTPRequestAssembler(maximumBody: maximumBody)
        }

        func next() -> (HTTPRequest, HTTPRequestHead)? { pending.isEmpty ? nil : pending.removeFirst() }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .request(let request, let head) = assembler.add(unwrapInboundIn(data)) else { return }
            pending.append((request, head))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
