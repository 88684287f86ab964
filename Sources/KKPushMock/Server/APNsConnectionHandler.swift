import Foundation
import KKPushCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL

/// Serves one APNs connection at the HTTP/2 frame level (no per-stream channels, no HTTP/1
/// conversion): collects each stream's HEADERS and DATA, runs the request through
/// ``MockRequestProcessor`` and answers with HEADERS (+ DATA for errors), exactly as APNs.
///
/// Also: connection-level flow control (WINDOW_UPDATE as DATA is consumed), raising
/// `MAX_CONCURRENT_STREAMS` after the first valid token, GOAWAY / close / stall faults, and the
/// idle timeout (GOAWAY `{"reason":"IdleTimeout"}`).
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    struct PendingStream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    private let processor: MockRequestProcessor
    private let logger: Logger
    private let maxConcurrentStreams: Int
    private let raiseStreamsAfterAuth: Bool
    private let goAwayOnBadCertificateEnvironment: Bool

    private var streams: [HTTP2StreamID: PendingStream] = [:]
    private var auth = ConnectionAuthentication(mode: .token)
    private var authResolved = false
    private var unacknowledgedBytes = 0
    private var needsFlush = false
    private var lastAnsweredStream: HTTP2StreamID = .rootStream
    private var goAwayCounts: [String: Int] = [:]
    private var closing = false
    private var streamsRaised = false
    private var ids = RequestIDGenerator()
    private var payloadMemo = PayloadVerdictMemo()

    init(
        processor: MockRequestProcessor, logger: Logger, maxConcurrentStreams: Int, raiseStreamsAfterAuth: Bool,
        goAwayOnBadCertificateEnvironment: Bool
    ) {
        self.processor = processor
        self.logger = logger
        self.maxConcurrentStreams = maxConcurrentStreams
        self.raiseStreamsAfterAuth = raiseStreamsAfterAuth
        self.goAwayOnBadCertificateEnvironment = goAwayOnBadCertificateEnvironment
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let h):
            if streams[frame.streamID] != nil {
                // Trailers: ignored, but they may end the stream.
                if h.endStream { complete(frame.streamID, context: context) }
            } else {
                streams[frame.streamID] = PendingStream(headers: h.headers, body: nil)
                if h.endStream { complete(frame.streamID, context: context) }
            }
        case .data(let d):
            let length: Int
            switch d.data {
            case .byteBuffer(let b): length = b.readableBytes
            case .fileRegion(let f): length = f.readableBytes
            }
            unacknowledgedBytes += length + (d.paddingBytes.map { $0 + 1 } ?? 0)
            if unacknowledgedBytes >= 16384 {
                context.write(
                    wrapOutboundOut(
                        HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                    promise: nil)
                unacknowledgedBytes = 0
                needsFlush = true
            }
            if var pending = streams[frame.streamID], case .byteBuffer(var bytes) = d.data {
                streams[frame.streamID] = nil  // avoid a copy-on-write of the buffer
                if pending.body == nil {
                    pending.body = bytes
                } else {
                    pending.body!.writeBuffer(&bytes)
                }
                streams[frame.streamID] = pending
                if !d.endStream, pending.body?.readableBytes ?? 0 > Self.earlyAnswerBodySize {
                    // Far over any payload limit: answer now (413 from the shared rules) and ask the
                    // client to stop sending (RST_STREAM NO_ERROR after a complete response, RFC 9113 §8.1).
                    complete(frame.streamID, context: context, resetAfterAnswer: true)
                    return
                }
            }
            if d.endStream { complete(frame.streamID, context: context) }
        case .rstStream:
            streams[frame.streamID] = nil
        default:
            break  // SETTINGS, PING, PRIORITY, WINDOW_UPDATE, GOAWAY: handled by NIOHTTP2Handler or ignored.
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            logger.debug("idle timeout; closing", metadata: ["environment": "\(processor.environment)"])
            goAway(context: context, lastStream: lastAnsweredStream, reason: .idleTimeout)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection error; closing", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // MARK: One request

    private func resolveAuthentication(context: ChannelHandlerContext) {
        authResolved = true
        guard let ssl = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let peer = ssl.peerCertificate
        else {
            if !raiseStreamsAfterAuth { streamsRaised = true }
            return
        }
        let info = try? PeerCertificate(der: peer.toDERBytes())
        auth = ConnectionAuthentication(mode: .certificate(info))
        raiseStreams(context: context)
        if goAwayOnBadCertificateEnvironment, let info, !info.environments.contains(processor.environment) {
            goAway(context: context, lastStream: .rootStream, reason: .badCertificateEnvironment)
        }
    }

    /// A request body this large is answered before it ends (the largest payload limit is 5120).
    static let earlyAnswerBodySize = 16384

    private func complete(_ id: HTTP2StreamID, context: ChannelHandlerContext, resetAfterAnswer: Bool = false) {
        guard let pending = streams.removeValue(forKey: id) else { return }
        if !authResolved { resolveAuthentication(context: context) }
        guard !closing else { return }

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

        let routed = processor.route(received, ids: &ids)
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
        if auth.justAuthenticated {
            auth.justAuthenticated = false
            raiseStreams(context: context)
        }

        // GOAWAY faults with after_streams 0 refuse this stream.
        for fault in routed.goAways {
            if case .goAway(let after, let reason) = fault.kind, after == 0 {
                processor.state.consumeGoAway(id: fault.id)
                goAway(context: context, lastStream: lastAnsweredStream, reason: reason)
                return
            }
        }
        switch outcome {
        case .close:
            logger.debug("fault: closing connection")
            closing = true
            context.close(promise: nil)
            return
        case .stall:
            logger.debug("fault: stalling connection")
            closing = true
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
            return
        default:
            break
        }
        if routed.delayMs > 0 {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let goAways = routed.goAways
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(routed.delayMs))) {
                let (handler, context) = loopBound.value
                guard !handler.closing, context.channel.isActive else { return }
                handler.answer(id, outcome: outcome, context: context)
                handler.countGoAways(goAways, stream: id, context: context)
                context.flush()
            }
            return
        }
        answer(id, outcome: outcome, context: context)
        if resetAfterAnswer {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.noError))), promise: nil)
        }
        countGoAways(routed.goAways, stream: id, context: context)
    }

    private func countGoAways(_ faults: [MockFault], stream: HTTP2StreamID, context: ChannelHandlerContext) {
        for fault in faults {
            guard case .goAway(let after, let reason) = fault.kind, after > 0 else { continue }
            let n = goAwayCounts[fault.id, default: 0] + 1
            goAwayCounts[fault.id] = n
            if n >= after {
                processor.state.consumeGoAway(id: fault.id)
                goAway(context: context, lastStream: stream, reason: reason)
                return
            }
        }
    }

    private func answer(_ id: HTTP2StreamID, outcome: MockRequestProcessor.Outcome, context: ChannelHandlerContext) {
        switch outcome {
        case .accepted(let apnsID, let uniqueID):
            var headers = HPACKHeaders()
            headers.reserveCapacity(3)
            headers.add(name: ":status", value: "200")
            headers.add(name: "apns-id", value: apnsID)
            if let uniqueID { headers.add(name: "apns-unique-id", value: uniqueID) }
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))),
                promise: nil)
        case .rejected(let status, let reason, let apnsID, let timestamp):
            var body = "{\"reason\":\"\(reason.rawValue)\""
            if let timestamp { body += ",\"timestamp\":\(timestamp)" }
            body += "}"
            var headers = HPACKHeaders()
            headers.add(name: ":status", value: String(status))
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "apns-id", value: apnsID)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: false)))),
                promise: nil)
            let buffer = context.channel.allocator.buffer(string: body)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
                promise: nil)
        case .close, .stall:
            return
        }
        if id > lastAnsweredStream { lastAnsweredStream = id }
        needsFlush = true
    }

    private func raiseStreams(context: ChannelHandlerContext) {
        guard !streamsRaised else { return }
        streamsRaised = true
        guard raiseStreamsAfterAuth else { return }
        let settings: HTTP2Settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))), promise: nil)
        needsFlush = true
    }

    /// Sends GOAWAY (NO_ERROR, debug data `{"reason":...}`) and closes once it is written.
    private func goAway(context: ChannelHandlerContext, lastStream: HTTP2StreamID, reason: APNsReason) {
        guard !closing else { return }
        closing = true
        let debug = context.channel.allocator.buffer(string: "{\"reason\":\"\(reason.rawValue)\"}")
        let frame = HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: debug))
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
            loopBound.value.close(promise: nil)
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
