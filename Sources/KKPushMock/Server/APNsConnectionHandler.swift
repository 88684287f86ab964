import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2

/// Serves one APNs connection at the HTTP/2 frame level (no per-stream channels, no HTTP/1
/// conversion): collects each stream's HEADERS and DATA, runs the request through
/// ``MockRequestProcessor`` and answers with HEADERS (+ DATA for errors), exactly as APNs.
///
/// Also: connection-level flow control (WINDOW_UPDATE for every DATA byte received, also on streams
/// reset or closed), raising `MAX_CONCURRENT_STREAMS` after the first valid token, GOAWAY / close /
/// reset / stall faults, the idle timeout (GOAWAY `{"reason":"IdleTimeout"}`) and rapid-reset
/// protection.
///
/// **Abuse.** RFC 9113 asks that one stream's trouble stay on that stream: a stream error (a bad
/// header) is `RST_STREAM` on that stream only, from NIOHTTP2Handler, and the connection goes on; a
/// stream past the advertised `MAX_CONCURRENT_STREAMS` gets `RST_STREAM(REFUSED_STREAM)` and nothing
/// else (§5.1.2; see ``H2WireWatcher``); a header list over the advertised 8000 bytes gets `431` on
/// its stream (§10.5.1). A body past the largest payload limit is answered at once
/// (`413 PayloadTooLarge`, HEADERS and DATA), then `RST_STREAM(NO_ERROR)` once that answer is out
/// (§8.1), so no stream holds more than ~5 KiB (+ one frame). A connection that has not sent its first
/// request HEADERS within ``Settings/firstRequestTimeout`` of being accepted is closed (a preface
/// trickled byte by byte); a stream whose body has not ended within ``Settings/bodyTimeout`` gets
/// `RST_STREAM(REFUSED_STREAM)` (never judged, so the client may send it again). While the
/// connection cannot write (the client does not read its answers), it is not read either.
///
/// **GOAWAY.** Every GOAWAY the mock sends names as last-stream-id the highest stream it *judged*:
/// whose request it received whole and answered or logged (accepted or rejected), including streams
/// whose answer a `delay` fault still holds. After a graceful GOAWAY (a `goaway` fault, the idle
/// timeout, shutdown or restart) the connection keeps serving the streams up to that id (requests
/// still arriving, delayed answers) and closes once they are answered, or after
/// ``MockServerConfiguration/goAwayGracePeriod``; streams above it are never judged, so a client
/// may retry them safely.
///
/// **Resets.** A RST_STREAM for a stream the mock already finished (answered, or never seen) is
/// ignored, as RFC 9113 §5.4.2 allows (libcurl sends `RST_STREAM(STREAM_CLOSED)` after every
/// completed stream; NIOHTTP2Handler drops those before this handler). Only resets of streams still
/// pending (request incomplete, or answer not yet sent) count, against
/// ``MockServerConfiguration/streamResetLimit`` per ``MockServerConfiguration/streamResetWindow``;
/// past it the mock answers GOAWAY `ENHANCE_YOUR_CALM` (with the last-stream-id above) and closes.
///
/// **Decisions and I/O.** The connection-level decisions above (phase, timeouts, limits, resets, draining) are
/// ``ConnectionStateMachine``'s, a value tested in virtual time; this handler feeds it the events, schedules its
/// timers on the event loop and writes the frames it asks for.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request not complete yet: its HEADERS and the body so far (the machine tracks its due time and size).
    struct PendingStream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
        /// When its HEADERS arrived (for `kkpush_mock_request_duration_seconds`).
        var started: NIODeadline
    }

    /// Asks a connection to end gracefully: GOAWAY (`{"reason":"Shutdown"}`), answer what it judged,
    /// close (``MockAPNsServer/shutdown()`` and ``MockAPNsServer/restart()``).
    struct GracefulCloseEvent: Sendable {}

    /// Limits and timings from the configuration.
    struct Settings: Sendable {
        var maxConcurrentStreams: Int
        var raiseStreamsAfterAuth: Bool
        var goAwayOnBadCertificateEnvironment: Bool
        var gracePeriod: TimeAmount
        var resetLimit: Int
        var resetWindow: TimeAmount
        /// A connection must send its first request HEADERS this soon after it was accepted.
        var firstRequestTimeout: TimeAmount
        /// A stream's body must end this soon after its HEADERS.
        var bodyTimeout: TimeAmount
        /// A connection that reads no frame and writes no answer this long gets GOAWAY `IdleTimeout`.
        var idleTimeout: TimeAmount = .hours(1)
        /// The longest a drained connection keeps reading after its GOAWAY (bounded by the grace period too), for
        /// requests the client wrote before the GOAWAY reached it. Not configurable: the state machine's tests
        /// set it, in virtual time.
        var goAwayLinger: TimeAmount = .seconds(1)
    }

    private let processor: MockRequestProcessor
    /// The mock's metrics (``MockState/metrics``).
    private var metrics: MockMetrics { processor.state.metrics }
    private let logger: Logger
    private let settings: Settings
    private let wire: ConnectionWire
    /// The connection-level decisions: phase, timeouts, limits, resets, draining.
    private var machine: ConnectionStateMachine
    /// The machine's timers as scheduled on the event loop, with their deadlines.
    private var timers: [ConnectionStateMachine.Timer: (deadline: NIODeadline, task: Scheduled<Void>)] = [:]

    /// Streams whose request is not complete yet (the machine's pending streams).
    private var streams: [HTTP2StreamID: PendingStream] = [:]
    /// Streams judged whose answer a delay holds: the scheduled answers.
    private var delayed: [HTTP2StreamID: Scheduled<Void>] = [:]
    private var auth = ConnectionAuthentication(mode: .token)
    private var authResolved = false
    private var needsFlush = false
    /// While draining: the last frame written (the GOAWAY, then each answer's last frame), so the
    /// connection closes only once it is on the wire.
    private var lastWrite: EventLoopFuture<Void>?
    private var streamsRaised = false
    private var ids = RequestIDGenerator()
    private var payloadMemo = PayloadVerdictMemo()

    /// A header list's size as RFC 9113 §6.5.2 counts it: names and values plus 32 per field.
    static func headerListSize(_ headers: HPACKHeaders) -> Int {
        var size = 0
        for (name, value, _) in headers { size += name.utf8.count + value.utf8.count + 32 }
        return size
    }

    /// Tells the server's connection tracker how far this connection has proven itself (speaking HTTP/2 after
    /// the TLS handshake, then authenticated), so a flood of strangers is evicted before it.
    private let standing: @Sendable (ConnectionTracker.Standing) -> Void
    private var spoke = false
    private var accepted = false

    init(
        processor: MockRequestProcessor, logger: Logger, settings: Settings, wire: ConnectionWire,
        standing: @escaping @Sendable (ConnectionTracker.Standing) -> Void = { _ in }
    ) {
        self.processor = processor
        self.logger = logger
        self.settings = settings
        self.wire = wire
        self.standing = standing
        self.machine = ConnectionStateMachine(limits: settings)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        forgetOpenStreams()
    }

    /// Takes the streams still open off `kkpush_mock_open_streams` (the connection is over).
    private func forgetOpenStreams() {
        metrics.streamsChanged(processor.environment, by: -machine.forgetOpenStreams())
    }

    func handlerAdded(context: ChannelHandlerContext) {
        machine.start(at: context.eventLoop.now)
        syncTimers(context: context)
    }

    /// What the connection knows of `id`, for the debug log of inbound RST_STREAM frames.
    func describeStream(_ id: HTTP2StreamID) -> String {
        machine.describe(id)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        defer { syncTimers(context: context) }
        if !spoke {
            spoke = true  // a frame: the TLS handshake is done and the client preface arrived
            standing(.speaking)
        }
        // Nothing is read once closed; streams above a GOAWAY's last-stream-id are never judged (the client may
        // retry them).
        guard machine.frameReceived(on: frame.streamID, at: context.eventLoop.now) else { return }
        switch frame.payload {
        case .headers(let h):
            if streams[frame.streamID] != nil {
                // Trailers: ignored, but they may end the stream.
                if h.endStream { complete(frame.streamID, context: context) }
                break
            }
            switch machine.streamOpened(frame.streamID, advertisedLimit: Int(wire.advertisedMaxStreams)) {
            case .notNew:
                break
            case .refuse(let open):
                // Over MAX_CONCURRENT_STREAMS: this stream only is refused, unprocessed (RFC 9113 §5.1.2).
                logger.debug(
                    "stream over the concurrency limit; REFUSED_STREAM",
                    metadata: ["stream": "\(frame.streamID)", "open": "\(open)"])
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.refusedStream))),
                    promise: nil)
                needsFlush = true
                return
            case .open(let counted):
                if counted { metrics.streamsChanged(processor.environment, by: 1) }
                if Self.headerListSize(h.headers) > H2WireWatcher.advertisedMaxHeaderListSize {
                    // Over the advertised MAX_HEADER_LIST_SIZE: 431 on this stream only, never judged
                    // (RFC 9113 §10.5.1), and RST_STREAM(NO_ERROR) if its body is still to come.
                    logger.debug("header list over 8000 bytes; 431", metadata: ["stream": "\(frame.streamID)"])
                    metrics.countAnswer(environment: processor.environment, status: 431, reason: nil)
                    metrics.observeDuration(environment: processor.environment, nanoseconds: 0)
                    let written = context.eventLoop.makePromise(of: Void.self)
                    var headers = HPACKHeaders()
                    headers.add(name: ":status", value: "431")
                    context.writeAndFlush(
                        wrapOutboundOut(
                            HTTP2Frame(
                                streamID: frame.streamID, payload: .headers(.init(headers: headers, endStream: true)))),
                        promise: written)
                    if !h.endStream {
                        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                        let id = frame.streamID
                        written.futureResult.whenSuccess {
                            let (handler, context) = loopBound.value
                            guard context.channel.isActive else { return }
                            context.writeAndFlush(
                                handler.wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.noError))),
                                promise: nil)
                        }
                    }
                    return
                }
                let now = context.eventLoop.now
                streams[frame.streamID] = PendingStream(headers: h.headers, body: nil, started: now)
                machine.requestStarted(frame.streamID, at: now, awaitingBody: !h.endStream)
                if h.endStream { complete(frame.streamID, context: context) }
            }
        case .settings(.ack):
            machine.settingsAcked()
        case .data(let d):
            // Connection flow control is credited from NIOHTTP2's window events (userInboundEventTriggered),
            // which count every DATA byte, also those of streams already reset or closed.
            if var pending = streams[frame.streamID], case .byteBuffer(var bytes) = d.data {
                streams[frame.streamID] = nil  // avoid a copy-on-write of the buffer
                machine.bodyReceived(frame.streamID, bytes: bytes.readableBytes)
                if pending.body == nil, d.endStream {
                    pending.body = bytes  // judged at once: the slice of the read buffer is fine
                } else if pending.body == nil {
                    // Kept until the body ends: a copy, so the stream does not pin the whole read buffer
                    // its bytes came in (with many such streams, that was most of the memory held).
                    var copy = context.channel.allocator.buffer(capacity: bytes.readableBytes)
                    copy.writeBuffer(&bytes)
                    pending.body = copy
                } else {
                    pending.body!.writeBuffer(&bytes)
                }
                streams[frame.streamID] = pending
                if !d.endStream, pending.body?.readableBytes ?? 0 > Self.earlyAnswerBodySize {
                    // Over every payload limit: answer now (413 from the shared rules) and ask the client
                    // to stop sending (RST_STREAM NO_ERROR after the complete response, RFC 9113 §8.1).
                    complete(frame.streamID, context: context, resetAfterAnswer: true)
                    return
                }
            }
            if d.endStream { complete(frame.streamID, context: context) }
        case .rstStream(let code):
            reset(frame.streamID, code: code, context: context)
        default:
            break  // SETTINGS, PING, PRIORITY, WINDOW_UPDATE, GOAWAY: handled by NIOHTTP2Handler or ignored.
        }
        closeIfDrained(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        maybeCredit(context: context)  // requests that ended may have freed the budget
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let update = event as? NIOHTTP2WindowUpdatedEvent {
            if update.streamID == .rootStream, let window = update.inboundWindowSize {
                machine.windowUpdated(to: window)
                maybeCredit(context: context)
            }
            return
        }
        if let closed = event as? StreamClosedEvent {
            defer { syncTimers(context: context) }
            let (wasOpen, wasPending) = machine.streamClosed(closed.streamID)
            if wasOpen { metrics.streamsChanged(processor.environment, by: -1) }
            // Reset by NIOHTTP2 (a stream error) or by the client: nothing more comes for it.
            if wasPending {
                streams[closed.streamID] = nil
                logger.debug(
                    "pending stream closed",
                    metadata: ["stream": "\(closed.streamID)", "reason": "\(closed.reason.map { "\($0)" } ?? "-")"])
                closeIfDrained(context: context)
            }
            return
        }
        if event is NIOHTTP2StreamCreatedEvent { return }
        if event is GracefulCloseEvent {
            defer { syncTimers(context: context) }
            switch machine.gracefulCloseRequested() {
            case .goAway: goAway(context: context, reason: .shutdown)
            case .closeChannel: context.close(promise: nil)  // a stalled connection: nothing to drain
            case .finish: finishClose(context: context)  // drained, only waiting in case the client still writes
            case .none: break
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.stop()
        forgetOpenStreams()
        for (_, task) in delayed { task.cancel() }
        delayed.removeAll()
        syncTimers(context: context)
        context.fireChannelInactive()
    }

    /// Backpressure: while the channel cannot take more writes (a client that does not read its
    /// answers), stop reading it; read again once it can.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        switch machine.writabilityChanged(isWritable: context.channel.isWritable) {
        case false?:
            logger.debug("connection not writable; reading paused")
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        case true?:
            logger.debug("connection writable again; reading resumed")
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
            context.read()
        case nil:
            break
        }
        context.fireChannelWritabilityChanged()
    }

    /// NIOHTTP2Handler reports two kinds of protocol errors here. A connection error comes after the
    /// GOAWAY it wrote (seen by ``H2WireWatcher``): the connection is over. A stream error comes after
    /// the RST_STREAM it wrote for that stream only: the connection and its other streams go on (the
    /// stream's state is dropped when NIOHTTP2 reports it closed). Anything else (TLS, I/O) closes.
    ///
    /// After our GOAWAY, frames on streams above its last-stream-id (a client resetting the requests it will
    /// retry elsewhere, as Go's does with RST_STREAM CANCEL; HEADERS it wrote before the GOAWAY arrived) are to
    /// be ignored (RFC 9113 §6.8), and NIOHTTP2 reports them as errors (NoSuchStream, …). The streams up to
    /// the last-stream-id are still answered, so the connection stays until they are (or the grace ends).
    /// Only a GOAWAY NIOHTTP2 wrote itself (a connection error) ends it at once.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch machine.errorCaught(isHTTP2Error: error is any NIOHTTP2Error, goAwaysOnWire: wire.goAwaysWritten) {
        case .streamError:
            logger.debug("stream error; that stream was reset, the connection goes on", metadata: ["error": "\(error)"])
        case .ignoredAfterGoAway:
            logger.debug("frame after GOAWAY ignored (RFC 9113 §6.8)", metadata: ["error": "\(error)"])
        case .close:
            logger.debug("connection error; closing", metadata: ["error": "\(error)"])
            syncTimers(context: context)
            context.close(promise: nil)
        }
    }

    // MARK: Flow control and timers

    /// Tops the connection's receive window back up once half of it is used: every DATA byte counts,
    /// including those NIOHTTP2 dropped for streams already reset or closed (without that, a client
    /// whose bodies were cut short loses window for good and every later body stalls).
    ///
    /// While the bodies of incomplete requests hold more than the pending-body budget, no credit is given:
    /// flow control then holds the client back, so a connection holds at most that (plus one window) however
    /// many streams it opens. Credit resumes as those requests end or are reset.
    private func maybeCredit(context: ChannelHandlerContext) {
        guard let increment = machine.connectionCredit(channelActive: context.channel.isActive) else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil)
        needsFlush = true
    }

    /// Forgets a pending stream: its request and the body bytes it held.
    @discardableResult
    private func removePending(_ id: HTTP2StreamID) -> PendingStream? {
        machine.requestEnded(id)
        return streams.removeValue(forKey: id)
    }

    /// Runs the machine's timers on the event loop: each scheduled for the deadline the machine wants, moved
    /// when that changes, cancelled when it has none.
    private func syncTimers(context: ChannelHandlerContext) {
        for timer in ConnectionStateMachine.Timer.allCases {
            let due = machine.deadline(timer)
            if timers[timer]?.deadline == due { continue }
            timers.removeValue(forKey: timer)?.task.cancel()
            guard let due else { continue }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let task = context.eventLoop.scheduleTask(deadline: due) {
                let (handler, context) = loopBound.value
                // Cancelled while another task of the same event-loop tick ran, and replaced: not this one's turn.
                guard handler.timers[timer]?.deadline == due else { return }
                handler.timers[timer] = nil
                handler.timerFired(timer, context: context)
                handler.syncTimers(context: context)
            }
            timers[timer] = (due, task)
        }
    }

    private func timerFired(_ timer: ConnectionStateMachine.Timer, context: ChannelHandlerContext) {
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
        case .graceOver(let unanswered):
            logger.debug("GOAWAY grace over; closing", metadata: ["unanswered": "\(unanswered)"])
            finishClose(context: context)
        case .lingerOver:
            finishClose(context: context)
        }
    }

    // MARK: Resets

    private func reset(_ id: HTTP2StreamID, code: HTTP2ErrorCode, context: ChannelHandlerContext) {
        let verdict = machine.streamReset(id, at: context.eventLoop.now)
        let incomplete: Bool
        switch verdict {
        case .ignored:
            // Already answered or closed (NIOHTTP2Handler normally drops these before us).
            logger.debug("RST_STREAM of a finished stream; ignored", metadata: ["stream": "\(id)", "code": "\(code)"])
            return
        case .pending(let i), .tooMany(let i, _):
            incomplete = i
        }
        if incomplete {
            streams[id] = nil
        } else {
            delayed.removeValue(forKey: id)?.cancel()
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

    // MARK: One request

    private func resolveAuthentication(context: ChannelHandlerContext) {
        authResolved = true
        guard let tls = try? context.pipeline.syncOperations.handler(type: TLSHandler.self),
            let peer = tls.peerCertificateDER
        else {
            if !settings.raiseStreamsAfterAuth { streamsRaised = true }
            return
        }
        let info = try? PeerCertificate(der: peer)
        auth = ConnectionAuthentication(mode: .certificate(info))
        raiseStreams(context: context)
        if settings.goAwayOnBadCertificateEnvironment, let info, !info.environments.contains(processor.environment) {
            goAway(context: context, reason: .badCertificateEnvironment)
        }
    }

    /// A request body larger than this is answered before it ends: the largest payload limit (voip's
    /// 5120 bytes), so no stream holds more than that plus one frame.
    static let earlyAnswerBodySize = PushType.allCases.map(\.payloadLimit).max() ?? 5120

    private func complete(_ id: HTTP2StreamID, context: ChannelHandlerContext, resetAfterAnswer: Bool = false) {
        guard let pending = removePending(id) else { return }
        if !authResolved { resolveAuthentication(context: context) }
        guard machine.mayServe(id) else { return }

        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(pending.headers.count)
        var authorization: String? = nil
        for (name, value, _) in pending.headers {
            if name.first == ":" {
                if name == ":method" { method = value } else if name == ":path" { path = value }
            } else {
                headers.append((name, value))
                if name == "authorization" && authorization == nil { authorization = value }
            }
        }
        var bodyBytes: [UInt8] = []
        if var body = pending.body { bodyBytes = body.readBytes(length: body.readableBytes) ?? [] }
        let received = ReceivedRequest(method: method, path: path, headers: headers, body: bodyBytes)

        // How long the connection sat idle before this request (since the last request or answer; nil for its
        // first), for the black-hole fault.
        let idleMilliseconds = machine.requestReceived(at: context.eventLoop.now).map {
            Int($0.nanoseconds / 1_000_000)
        }
        if processor.isBroadcastAPI(path: path) {
            completeBroadcastAPI(
                id, received, authorization: authorization, context: context, resetAfterAnswer: resetAfterAnswer)
            return
        }
        let routed = processor.route(received, ids: &ids, idleMilliseconds: idleMilliseconds)

        // GOAWAY faults with after_streams 0 refuse this stream: GOAWAY before it is judged, so it is
        // neither logged nor answered, and the last-stream-id leaves it out.
        if let fault = machine.refusingGoAway(in: routed.goAways) {
            processor.state.consumeGoAway(id: fault.id)
            metrics.faultFired("goaway")
            goAway(context: context, reason: fault.reason)
            return
        }
        switch routed.outcome {
        case .close:
            logger.debug("fault: closing connection", metadata: ["stream": "\(id)"])
            machine.stop()
            context.close(promise: nil)
            return
        case .reset:
            logger.debug(
                "fault: resetting connection (TCP RST)",
                metadata: ["stream": "\(id)", "in_flight": "\(delayed.count + streams.count)"])
            machine.stop()
            Self.abort(context: context)
            return
        case .stall:
            logger.debug("fault: stalling connection", metadata: ["stream": "\(id)"])
            machine.stop()
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            return
        case .blackHole:
            // Silent for good: nothing read, nothing written (answers still delayed are dropped), no close.
            logger.debug(
                "fault: black hole after idle", metadata: ["stream": "\(id)", "idle_ms": "\(idleMilliseconds ?? 0)"])
            machine.stop()
            for (_, task) in delayed { task.cancel() }
            delayed.removeAll()
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            return
        default:
            break
        }

        let outcome: MockRequestProcessor.Outcome
        if let early = routed.outcome {
            outcome = early
        } else if let r = routed.routed {
            outcome = processor.judge(
                r.request, authorization: authorization, auth: &auth, ids: &ids, memo: &payloadMemo)
        } else {
            outcome = MockRequestProcessor.Outcome.rejected(
                status: 500, reason: .internalServerError, apnsID: ids.next(), timestamp: nil)
        }
        machine.judged(id)
        // The one place an answer is decided: counted here, as an accepted request enters the log here.
        switch outcome {
        case .accepted:
            metrics.countAnswer(environment: processor.environment, status: 200, reason: nil)
            if !accepted {
                accepted = true  // a certificate connection authenticates at the handshake: trusted from here
                standing(.trusted)
            }
        case .rejected(let status, let reason, let apnsID, _):
            metrics.countAnswer(environment: processor.environment, status: status, reason: reason)
            let (environment, injected) = (processor.environment, routed.injected)
            let time = processor.state.clock.now().millisecondsSince1970
            processor.state.recordRejection { sequence in
                RejectedRequest(
                    sequence: sequence, time: time, environment: environment, status: status,
                    reason: reason.rawValue,
                    token: Optional(MockRequestProcessor.token(of: path)).flatMap { $0.isEmpty ? nil : $0 },
                    topic: received.value(of: APNsHeader.topic),
                    pushType: received.value(of: APNsHeader.pushType), apnsID: apnsID, injected: injected)
            }
        case .close, .reset, .stall, .blackHole, .channel: break
        }
        let started = pending.started
        if auth.justAuthenticated {
            auth.justAuthenticated = false
            standing(.trusted)
            raiseStreams(context: context)
        }

        if routed.delayMs > 0 {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let goAways = routed.goAways
            let delay = TimeAmount.milliseconds(Int64(routed.delayMs))
            let task = context.eventLoop.scheduleTask(in: delay) {
                let (handler, context) = loopBound.value
                handler.answerDelayed(
                    id, outcome: outcome, goAways: goAways, resetAfterAnswer: resetAfterAnswer, started: started,
                    context: context)
            }
            delayed[id] = task
            machine.answerDelayed(id, until: .now() + delay)
            return
        }
        if resetAfterAnswer {
            answerThenReset(id, outcome: outcome, context: context)
        } else {
            answer(id, outcome: outcome, context: context)
        }
        metrics.observeDuration(
            environment: processor.environment, nanoseconds: (context.eventLoop.now - started).nanoseconds)
        countGoAways(routed.goAways, context: context)
    }

    /// Judges and answers a broadcast or channel-management request (no faults, no delay), and counts it.
    private func completeBroadcastAPI(
        _ id: HTTP2StreamID, _ received: ReceivedRequest, authorization: String?, context: ChannelHandlerContext,
        resetAfterAnswer: Bool
    ) {
        let outcome = processor.judgeBroadcastAPI(received, authorization: authorization, auth: &auth, ids: &ids)
        machine.judged(id)
        if case .channel(let a) = outcome {
            let environment = processor.environment
            metrics.countBroadcastAnswer(
                environment: environment, operation: a.operation, status: a.status, reason: a.reason)
            if let reason = a.reason {
                let time = processor.state.clock.now().millisecondsSince1970
                processor.state.recordRejection { sequence in
                    RejectedRequest(
                        sequence: sequence, time: time, environment: environment, status: a.status,
                        reason: reason.rawValue, token: nil, topic: nil,
                        pushType: received.value(of: APNsHeader.pushType), apnsID: a.requestID, injected: false)
                }
            } else if !accepted {
                accepted = true
                standing(.trusted)
            }
        }
        if auth.justAuthenticated {
            auth.justAuthenticated = false
            standing(.trusted)
            raiseStreams(context: context)
        }
        if resetAfterAnswer {
            answerThenReset(id, outcome: outcome, context: context)
        } else {
            answer(id, outcome: outcome, context: context)
        }
    }

    /// Answers a stream whose request has not ended, then resets it with NO_ERROR (RFC 9113 §8.1: the
    /// client stops sending the body). The reset waits until the answer's last frame is written:
    /// written at once, it would close the stream and NIOHTTP2 would drop the answer's DATA still
    /// buffered for flow control, so the client saw a 413 without its `{"reason":...}` body.
    private func answerThenReset(
        _ id: HTTP2StreamID, outcome: MockRequestProcessor.Outcome, context: ChannelHandlerContext
    ) {
        let written = context.eventLoop.makePromise(of: Void.self)
        answer(id, outcome: outcome, context: context, lastFramePromise: written)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.futureResult.whenSuccess {
            let (handler, context) = loopBound.value
            guard context.channel.isActive else { return }
            context.writeAndFlush(
                handler.wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.noError))), promise: nil)
        }
        context.flush()
        needsFlush = false
    }

    private func answerDelayed(
        _ id: HTTP2StreamID, outcome: MockRequestProcessor.Outcome, goAways: [MockFault], resetAfterAnswer: Bool,
        started: NIODeadline, context: ChannelHandlerContext
    ) {
        delayed[id] = nil
        defer { syncTimers(context: context) }
        guard machine.delayedAnswerDue(id) else { return }  // reset by the client meanwhile, or closed
        guard context.channel.isActive else { return }
        if resetAfterAnswer {
            answerThenReset(id, outcome: outcome, context: context)
        } else {
            answer(id, outcome: outcome, context: context)
        }
        metrics.observeDuration(
            environment: processor.environment, nanoseconds: (context.eventLoop.now - started).nanoseconds)
        countGoAways(goAways, context: context)
        context.flush()
        needsFlush = false
        closeIfDrained(context: context)
    }

    /// Counts an answer against the GOAWAY faults it matched; GOAWAY if one is reached.
    private func countGoAways(_ faults: [MockFault], context: ChannelHandlerContext) {
        guard let fault = machine.countAnswer(matching: faults) else { return }
        processor.state.consumeGoAway(id: fault.id)
        metrics.faultFired("goaway")
        goAway(context: context, reason: fault.reason)
    }

    private func answer(
        _ id: HTTP2StreamID, outcome: MockRequestProcessor.Outcome, context: ChannelHandlerContext,
        lastFramePromise: EventLoopPromise<Void>? = nil
    ) {
        machine.answerWritten(at: context.eventLoop.now)
        // While draining, the connection closes once the last answer's last frame is written.
        var promise = lastFramePromise
        if case .draining = machine.phase {
            let p = promise ?? context.eventLoop.makePromise(of: Void.self)
            promise = p
            lastWrite = p.futureResult
        }
        switch outcome {
        case .accepted(let apnsID, let uniqueID):
            // apns-id and apns-unique-id are new on every answer: indexing them would only churn the HPACK tables
            // (each insertion evicts an older id, and every lookup scans them).
            var headers = HPACKHeaders()
            headers.reserveCapacity(3)
            headers.add(name: ":status", value: "200")
            headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
            if let uniqueID { headers.add(name: "apns-unique-id", value: uniqueID, indexing: .nonIndexable) }
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: promise)
        case .rejected(let status, let reason, let apnsID, let timestamp):
            var members: [String: JSONValue] = ["reason": .string(reason.rawValue)]
            if let timestamp { members["timestamp"] = .int(Int(timestamp)) }
            let body = JSONValue.object(members).encoded()
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: String(status))
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: false)))),
                promise: nil)
            let buffer = context.channel.allocator.buffer(bytes: body)
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
                promise: promise)
        case .channel(let a):
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: String(a.status))
            headers.add(name: "apns-request-id", value: a.requestID)
            var body = a.body
            if let reason = a.reason {
                headers.add(name: "content-type", value: "application/json")
                body = JSONValue.object(["reason": .string(reason.rawValue)]).encoded()
            }
            for (name, value) in a.headers { headers.add(name: name, value: value) }
            context.write(
                wrapOutboundOut(
                    HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: body.isEmpty)))),
                promise: body.isEmpty ? promise : nil)
            if !body.isEmpty {
                let buffer = context.channel.allocator.buffer(bytes: body)
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
                    promise: promise)
            }
        case .close, .reset, .stall, .blackHole:
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        needsFlush = true
    }

    private func raiseStreams(context: ChannelHandlerContext) {
        guard !streamsRaised else { return }
        streamsRaised = true
        guard settings.raiseStreamsAfterAuth else { return }
        // NIOHTTP2 gets its own (higher) limit; H2WireWatcher puts the advertised one on the wire.
        wire.advertisedMaxStreams = UInt32(self.settings.maxConcurrentStreams)
        let settings: HTTP2Settings = [
            HTTP2Setting(
                parameter: .maxConcurrentStreams,
                value: H2WireWatcher.internalMaxStreams(advertised: self.settings.maxConcurrentStreams))
        ]
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))), promise: nil)
        needsFlush = true
    }

    // MARK: Ending the connection

    /// Sends GOAWAY (debug data `{"reason":...}` if a reason is given) naming the highest stream
    /// judged, then serves the streams up to it that are still pending and closes (at the latest
    /// after the grace period).
    private func goAway(context: ChannelHandlerContext, reason: APNsReason?, errorCode: HTTP2ErrorCode = .noError) {
        // Keep reading a little after the last answer (a client still writing would otherwise get a broken
        // pipe), except when the server itself is stopping.
        guard let goAway = machine.goAway(at: context.eventLoop.now, linger: reason != .shutdown) else { return }
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
    private func closeIfDrained(context: ChannelHandlerContext) {
        guard let step = machine.closeIfDrained(at: context.eventLoop.now) else { return }
        drain(step, context: context)
    }

    /// Everything up to the last-stream-id is answered: flush and keep reading (and ignoring) until the machine's
    /// drain timer (sooner if the client closes first), or close now.
    private func drain(_ step: ConnectionStateMachine.DrainStep, context: ChannelHandlerContext) {
        switch step {
        case .linger:
            context.flush()
            needsFlush = false
        case .close:
            finishClose(context: context)
        }
    }

    /// Flushes what was written and closes (TLS close_notify, then the socket).
    private func finishClose(context: ChannelHandlerContext) {
        machine.close()
        syncTimers(context: context)
        for (_, task) in delayed { task.cancel() }
        delayed.removeAll()
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
