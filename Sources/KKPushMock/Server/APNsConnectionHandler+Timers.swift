import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2

// Connection-level flow control, the state machine's timers on the event loop, and resets of pending streams.
extension APNsConnectionHandler {
    // MARK: Flow control and timers

    /// Tops the connection's receive window back up once half of it is used: every DATA byte counts,
    /// including those the frame layer dropped for streams already reset or closed (without that, a client
    /// whose bodies were cut short loses window for good and every later body stalls).
    ///
    /// While the bodies of incomplete requests hold more than the pending-body budget, no credit is given:
    /// flow control then holds the client back, so a connection holds at most that (plus one window) however
    /// many streams it opens. Credit resumes as those requests end or are reset.
    func maybeCredit(context: ChannelHandlerContext) {
        guard let increment = machine.connectionCredit(channelActive: context.channel.isActive) else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil)
        needsFlush = true
    }

    /// Forgets a pending stream: its request and the body bytes it held.
    @discardableResult
    func removePending(_ id: HTTP2StreamID) -> PendingStream? {
        machine.requestEnded(id)
        return streams.removeValue(forKey: id)
    }

    /// Runs the machine's timers on the event loop: each scheduled for the deadline the machine wants, moved
    /// when that changes, cancelled when it has none.
    /// (Called for every frame: the timers sit in an array indexed by the timer, not a dictionary to hash into.)
    func syncTimers(context: ChannelHandlerContext) {
        for timer in Self.allTimers {
            let due = machine.deadline(timer)
            let slot = timer.rawValue
            if timers[slot]?.deadline == due { continue }
            timers[slot]?.task.cancel()
            timers[slot] = nil
            guard let due else { continue }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let task = context.eventLoop.scheduleTask(deadline: due) {
                let (handler, context) = loopBound.value
                // Cancelled while another task of the same event-loop tick ran, and replaced: not this one's turn.
                guard handler.timers[slot]?.deadline == due else { return }
                handler.timers[slot] = nil
                handler.timerFired(timer, context: context)
                handler.syncTimers(context: context)
            }
            timers[slot] = (due, task)
        }
    }

    static let allTimers = ConnectionStateMachine.Timer.allCases

    func timerFired(_ timer: ConnectionStateMachine.Timer, context: ChannelHandlerContext) {
        switch machine.timerFired(timer, at: context.eventLoop.now) {
        case .none:
            break
        case .closeWithoutRequest:
            logger.debug("no request within the first-request timeout; closing")
            context.close(promise: nil)
        case .idleTimeout:
            logger.debug("idle timeout; closing", metadata: ["environment": "\(processor.environment)"])
            goAway(context: context, reason: .idleTimeout)
        case .refuseOverdue(let overdue):
            // Never judged: REFUSED_STREAM.
            for id in overdue {
                streams[id] = nil
                logger.debug(
                    "request body not finished within the body timeout; REFUSED_STREAM", metadata: ["stream": "\(id)"])
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: nil)
            }
            if !overdue.isEmpty {
                maybeCredit(context: context)
                context.flush()
                needsFlush = false
            }
            closeIfDrained(context: context)
        case .graceOver(let unanswered, let refused, let then):
            logger.debug(
                "GOAWAY grace over", metadata: ["unanswered": "\(unanswered)", "refused": "\(refused.count)"])
            delayed.cancelAll()
            // Up to the last-stream-id but never judged: REFUSED_STREAM, so the client knows to send them again
            // (a close alone would leave it unsure whether they were processed). The close waits for these.
            for id in refused {
                streams[id] = nil
                let written = context.eventLoop.makePromise(of: Void.self)
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.refusedStream))), promise: written)
                lastWrite = written.futureResult
            }
            drain(then, context: context)
        case .lingerOver:
            finishClose(context: context)
        }
    }

    // MARK: Resets

    /// A request's header block or trailers broke RFC 9113's rules (``RequestHeaderCheck``): a stream error, so
    /// `RST_STREAM(PROTOCOL_ERROR)` on that stream only (§8.1.1); it was never judged and the connection goes on,
    /// until a connection has sent more than ``malformedBlockLimit`` of them: then GOAWAY `ENHANCE_YOUR_CALM`.
    func malformed(_ id: HTTP2StreamID, problem: String, context: ChannelHandlerContext) {
        logger.debug(
            "malformed header block; RST_STREAM PROTOCOL_ERROR on that stream",
            metadata: ["stream": "\(id)", "problem": "\(problem)"])
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.protocolError))), promise: nil)
        needsFlush = true
        malformedBlocks += 1
        if malformedBlocks == Self.malformedBlockLimit + 1 {
            logger.debug(
                "too many malformed header blocks; GOAWAY ENHANCE_YOUR_CALM",
                metadata: ["malformed": "\(malformedBlocks)", "last_stream": "\(machine.highestJudged)"])
            goAway(context: context, reason: nil, errorCode: .enhanceYourCalm)
        }
    }

    func reset(_ id: HTTP2StreamID, code: HTTP2ErrorCode, context: ChannelHandlerContext) {
        let verdict = machine.streamReset(id, at: context.eventLoop.now)
        let incomplete: Bool
        switch verdict {
        case .ignored:
            // Already answered or closed: libcurl resets every stream it finished (RFC 9113 §5.4.2 lets us ignore it).
            logger.debug("RST_STREAM of a finished stream; ignored", metadata: ["stream": "\(id)", "code": "\(code)"])
            return
        case .pending(let i), .tooMany(let i, _):
            incomplete = i
        }
        if incomplete {
            streams[id] = nil
        } else {
            delayed.cancel(id)
        }
        logger.debug(
            "RST_STREAM of a pending stream",
            metadata: [
                "stream": "\(id)", "code": "\(code)",
                "state": "\(incomplete ? "request incomplete" : "answer delayed")",
            ])
        if case .tooMany(_, let resets) = verdict {
            logger.debug(
                "too many resets of pending streams; GOAWAY ENHANCE_YOUR_CALM",
                metadata: ["resets": "\(resets)", "last_stream": "\(machine.highestJudged)"])
            goAway(context: context, reason: nil, errorCode: .enhanceYourCalm)
        }
    }
}
