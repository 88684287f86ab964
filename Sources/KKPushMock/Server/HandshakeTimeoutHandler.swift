import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Closes a connection that has not completed its TLS handshake and sent its first bytes in time (a
/// client that connects and never speaks, or stops mid-handshake).
final class HandshakeTimeoutHandler: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    private let timeout: TimeAmount
    private var task: Scheduled<Void>?

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { schedule(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        schedule(context: context)
        context.fireChannelActive()
    }

    private func schedule(context: ChannelHandlerContext) {
        guard task == nil else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        task = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.close(promise: nil) }
    }

    /// The first decrypted bytes mean the handshake is done: stop the timer and step aside.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let task {
            task.cancel()
            self.task = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        task?.cancel()
        task = nil
        context.fireChannelInactive()
    }
}
