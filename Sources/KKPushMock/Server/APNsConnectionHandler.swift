import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS

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
/// header, ``RequestHeaderCheck``) is `RST_STREAM(PROTOCOL_ERROR)` on that stream only and the connection goes on
/// (past 200 of them, GOAWAY `ENHANCE_YOUR_CALM`, the limit NIOHTTP2 puts on stream errors); a
/// stream past the advertised `MAX_CONCURRENT_STREAMS` gets `RST_STREAM(REFUSED_STREAM)` and nothing
/// else (§5.1.2; see ``H2WireWatcher``); a header list over the advertised 8000 bytes gets `431` on
/// its stream (§10.5.1). A body past the largest payload limit is answered at once
/// (`413 PayloadTooLarge`, HEADERS and DATA), then `RST_STREAM(NO_ERROR)` once that answer is out
/// (§8.1), so no stream holds more than ~5 KiB (+ one frame). A connection that has not sent its first
/// request HEADERS within ``Settings/firstRequestTimeout`` of its TLS handshake is closed (a preface
/// trickled byte by byte; the handshake itself has `HandshakeTimeoutHandler`'s limit); a stream whose
/// body has not ended within ``Settings/bodyTimeout`` gets `RST_STREAM(REFUSED_STREAM)` (never judged,
/// so the client may send it again). While the connection cannot write (the client does not read its
/// answers), it is not read either.
///
/// **GOAWAY.** Every GOAWAY the mock sends names as last-stream-id the highest stream it *judged*:
/// whose request it received whole and answered or logged (accepted or rejected), including streams
/// whose answer a `delay` fault still holds. After a graceful GOAWAY (a `goaway` fault, the idle
/// timeout, shutdown or restart) the connection keeps serving the streams up to that id (requests
/// still arriving: it keeps reading them and crediting their flow-control window; delayed answers) and
/// closes once they are answered, or after ``MockServerConfiguration/goAwayGracePeriod``. A request up to
/// that id still incomplete when the grace ends gets `RST_STREAM(REFUSED_STREAM)` before the close (never
/// judged, so the client knows to send it again); none is left without a word. Streams above it are never
/// judged, so a client may retry them safely.
///
/// **Resets.** A RST_STREAM for a stream the mock already finished (answered, or never seen) is
/// ignored, as RFC 9113 §5.4.2 allows (libcurl sends `RST_STREAM(STREAM_CLOSED)` after every
/// completed stream). Only resets of streams still
/// pending (request incomplete, or answer not yet sent) count, against
/// ``MockServerConfiguration/streamResetLimit`` per ``MockServerConfiguration/streamResetWindow``;
/// past it the mock answers GOAWAY `ENHANCE_YOUR_CALM` (with the last-stream-id above) and closes.
///
/// **Decisions and I/O.** The connection-level decisions above (phase, timeouts, limits, resets, draining) are
/// ``ConnectionStateMachine``'s, a value tested in virtual time; this handler feeds it the events, schedules its
/// timers on the event loop and writes the frames it asks for.
///
/// **Files.** This one holds the connection's state and its channel events; one request, judged and answered, is in
/// `APNsConnectionHandler+Requests.swift`; flow control, timers and resets in `+Timers`; GOAWAY, draining and
/// closing in `+Closing`.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A request not complete yet: its HEADERS and the body so far (the machine tracks its due time and size).
    struct PendingStream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
        /// When its HEADERS arrived (for `kkpush_mock_request_duration_seconds`).
        var started: NIODeadline
        /// Its `content-length`, if it sent one: the body must be exactly that long (RFC 9113 §8.1.1).
        var declaredLength: Int? = nil
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
        /// A connection must send its first request HEADERS this soon after its TLS handshake completed.
        var firstRequestTimeout: TimeAmount
        /// A stream's body must end this soon after its HEADERS.
        var bodyTimeout: TimeAmount
        /// A connection that reads no frame and writes no answer this long (counted from its TLS handshake)
        /// gets GOAWAY `IdleTimeout`.
        var idleTimeout: TimeAmount = .hours(1)
        /// The longest a drained connection keeps reading after its GOAWAY (bounded by the grace period too), for
        /// requests the client wrote before the GOAWAY reached it. Not a user setting (a test's configuration may
        /// lengthen it); the state machine's tests set it in virtual time.
        var goAwayLinger: TimeAmount = .seconds(1)
    }

    let processor: MockRequestProcessor
    /// The mock's metrics (``MockState/metrics``).
    var metrics: MockMetrics { processor.state.metrics }
    let logger: Logger
    let settings: Settings
    let wire: ConnectionWire
    /// The connection-level decisions: phase, timeouts, limits, resets, draining.
    var machine: ConnectionStateMachine
    /// The machine's timers as scheduled on the event loop, with their deadlines (indexed by the timer's raw value).
    var timers: [(deadline: NIODeadline, task: Scheduled<Void>)?] = Array(
        repeating: nil, count: ConnectionStateMachine.Timer.allCases.count)

    /// Streams whose request is not complete yet (the machine's pending streams).
    var streams: [HTTP2StreamID: PendingStream] = [:]
    /// Streams judged whose answer a delay holds (``DelayedAnswers``).
    var delayed = DelayedAnswers()
    /// A held answer was written since the last ``finishDelayedAnswers(context:)``.
    var delayedAnswersWritten = false
    var auth = ConnectionAuthentication(mode: .token)
    var authResolved = false
    var needsFlush = false
    /// While draining: the last frame written (the GOAWAY, then each answer's last frame), so the
    /// connection closes only once it is on the wire.
    var lastWrite: EventLoopFuture<Void>?
    var streamsRaised = false
    var ids = RequestIDGenerator()
    var payloadMemo = PayloadVerdictMemo()
    /// Streams reset for a malformed header block so far (``malformed(_:problem:context:)``).
    var malformedBlocks = 0
    /// Past this many malformed header blocks the connection gets GOAWAY `ENHANCE_YOUR_CALM`: the limit NIOHTTP2
    /// puts on stream errors per connection ("glitches"), kept now that the mock checks header blocks itself.
    static let malformedBlockLimit = 200

    /// A header list's size as RFC 9113 §6.5.2 counts it: names and values plus 32 per field.
    static func headerListSize(_ headers: HPACKHeaders) -> Int {
        var size = 0
        for (name, value, _) in headers { size += name.utf8.count + value.utf8.count + 32 }
        return size
    }

    /// Tells the server's connection tracker how far this connection has proven itself (speaking HTTP/2 after
    /// the TLS handshake, then authenticated), so a flood of strangers is evicted before it.
    let standing: @Sendable (ConnectionTracker.Standing) -> Void
    private var spoke = false
    var accepted = false

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

    /// The connection is up: its first-request and idle timeouts start. When the TLS handshake completes, or at
    /// the first frame if no TLS handler said so (a pipeline without TLS, as the virtual-time tests build).
    private func connectionUp(context: ChannelHandlerContext) {
        guard machine.start(at: context.eventLoop.now) else { return }
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
            connectionUp(context: context)
            standing(.speaking)
        }
        // Nothing is read once closed; streams above a GOAWAY's last-stream-id are never judged (the client may
        // retry them).
        guard machine.frameReceived(on: frame.streamID, at: context.eventLoop.now) else { return }
        switch frame.payload {
        case .headers(let h):
            if streams[frame.streamID] != nil {
                // Trailers: ignored, but they may end the stream.
                if let problem = RequestHeaderCheck.trailers(h.headers) {
                    malformed(frame.streamID, problem: problem, context: context)
                    return
                }
                if h.endStream, !lengthBroken(frame.streamID, ended: true, context: context) {
                    complete(frame.streamID, context: context)
                }
                break
            }
            if let problem = RequestHeaderCheck.request(h.headers) {
                malformed(frame.streamID, problem: problem, context: context)
                return
            }
            guard let declaredLength = RequestHeaderCheck.contentLength(h.headers) else {
                malformed(frame.streamID, problem: "content-length is not one length in digits", context: context)
                return
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
                    metrics.countAnswer(
                        environment: processor.environment, status: 431, reason: nil, pushType: nil, priority: nil)
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
                streams[frame.streamID] = PendingStream(
                    headers: h.headers, body: nil, started: now, declaredLength: declaredLength.length)
                machine.requestStarted(frame.streamID, at: now, awaitingBody: !h.endStream)
                if h.endStream, !lengthBroken(frame.streamID, ended: true, context: context) {
                    complete(frame.streamID, context: context)
                }
            }
        case .settings(.ack):
            machine.settingsAcked()
        case .data(let d):
            // Connection flow control is credited from the window events (userInboundEventTriggered), which count
            // every DATA byte, also those of streams already reset or closed.
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
                if lengthBroken(frame.streamID, ended: d.endStream, context: context) { return }
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
            break  // SETTINGS, PING, PRIORITY, WINDOW_UPDATE, GOAWAY: handled by the frame layer or ignored.
        }
        closeIfDrained(context: context)
    }

    /// A body longer than its `content-length`, or ended shorter: malformed (RFC 9113 §8.1.1), a stream error.
    private func lengthBroken(_ id: HTTP2StreamID, ended: Bool, context: ChannelHandlerContext) -> Bool {
        guard let pending = streams[id], let declared = pending.declaredLength else { return false }
        let received = pending.body?.readableBytes ?? 0
        guard received > declared || (ended && received != declared) else { return false }
        malformed(id, problem: "a body of \(received) bytes against content-length \(declared)", context: context)
        return true
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
            // Reset by the mock (a stream error) or by the client: nothing more comes for it.
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
        if case .handshakeCompleted = event as? TLSUserEvent { connectionUp(context: context) }
        if event is GracefulCloseEvent {
            defer { syncTimers(context: context) }
            switch machine.gracefulCloseRequested() {
            case .goAway: goAway(context: context, reason: .shutdown, serverStopping: true)
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
        delayed.cancelAll()
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

    /// The frame layer (``NGHTTP2Framing``) reports a connection error here (`NGHTTP2Framing.ConnectionFailure`),
    /// after the GOAWAY libnghttp2 wrote (seen by ``H2WireWatcher``); anything else (TLS, I/O) comes here too. Either
    /// closes the connection. Stream errors do not come here: the mock's own (a malformed header block, a body
    /// against its `content-length`) are ``malformed(_:problem:context:)``'s, and a stream libnghttp2 resets is
    /// reported closed. After our GOAWAY, frames on streams above its last-stream-id are dropped by libnghttp2
    /// without an error (RFC 9113 §6.8). The machine also knows `NIOHTTP2Handler`'s stream errors, from when that
    /// was the frame layer.
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
}
