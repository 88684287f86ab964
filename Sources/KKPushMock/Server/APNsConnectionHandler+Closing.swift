import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2

// Ending a connection: GOAWAY with the highest stream judged, draining, closing (gracefully or with a TCP RST).
extension APNsConnectionHandler {
    // MARK: Ending the connection

    /// Sends GOAWAY (debug data `{"reason":...}` if a reason is given) naming the highest stream
    /// judged, then serves the streams up to it that are still pending and closes (at the latest
    /// after the grace period). `serverStopping`: the server itself is stopping (shutdown, restart).
    func goAway(
        context: ChannelHandlerContext, reason: APNsReason?, errorCode: HTTP2ErrorCode = .noError,
        serverStopping: Bool = false
    ) {
        // Keep reading a little after the last answer (a client still writing would otherwise meet a closed socket,
        // whose TCP RST may throw away answers it has not read yet), except when the server itself is stopping. A
        // `goaway` fault whose reason is Shutdown is not the server stopping: it lingers too.
        guard let goAway = machine.goAway(at: context.eventLoop.now, linger: !serverStopping) else { return }
        for id in goAway.dropped { streams[id] = nil }  // incomplete requests above the last-stream-id: never judged
        let last = goAway.lastStream
        let debug = reason.map {
            context.channel.allocator.buffer(bytes: JSONValue.object(["reason": .string($0.rawValue)]).encoded())
        }
        logger.debug(
            "GOAWAY",
            metadata: [
                "last_stream": "\(last)", "error": "\(errorCode)", "reason": "\(reason?.rawValue ?? "-")",
                "pending": "\(goAway.pending)",
            ])
        let frame = HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: errorCode, opaqueData: debug))
        let written = context.eventLoop.makePromise(of: Void.self)
        lastWrite = written.futureResult
        context.writeAndFlush(wrapOutboundOut(frame), promise: written)
        needsFlush = false
        // Nothing pending: linger or close now; else the machine's drain timer ends the wait.
        if let step = goAway.then { drain(step, context: context) }
    }

    /// While draining, once everything up to the last-stream-id is answered: linger or close.
    func closeIfDrained(context: ChannelHandlerContext) {
        guard let step = machine.closeIfDrained(at: context.eventLoop.now) else { return }
        drain(step, context: context)
    }

    /// Everything up to the last-stream-id is answered: flush and keep reading (and ignoring) until the machine's
    /// drain timer (sooner if the client closes first), or close now.
    func drain(_ step: ConnectionStateMachine.DrainStep, context: ChannelHandlerContext) {
        switch step {
        case .linger:
            context.flush()
            needsFlush = false
        case .close:
            finishClose(context: context)
        }
    }

    /// Flushes what was written and closes (TLS close_notify, then the socket).
    func finishClose(context: ChannelHandlerContext) {
        machine.close()
        syncTimers(context: context)
        delayed.cancelAll()
        streams.removeAll()
        needsFlush = false
        context.flush()
        guard let lastWrite else {
            context.close(promise: nil)
            return
        }
        self.lastWrite = nil
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        lastWrite.whenComplete { _ in loopBound.value.close(promise: nil) }
    }

    /// Closes the socket abortively: `SO_LINGER` 0 then close, under TLS (no close_notify), so the
    /// peer gets a TCP RST and sees ECONNRESET.
    static func abort(context: ChannelHandlerContext) {
        let channel = context.channel
        // Closing from the TLS handler's context starts below it: no close_notify, straight to the socket.
        let closing = (try? context.pipeline.syncOperations.context(handlerType: TLSHandler.self)) ?? context
        let loopBound = NIOLoopBound(closing, eventLoop: context.eventLoop)
        if let provider = channel as? any SocketOptionProvider {
            provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                loopBound.value.close(promise: nil)
            }
        } else {
            closing.close(promise: nil)
        }
    }
}
