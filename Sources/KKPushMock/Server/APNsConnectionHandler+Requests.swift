import Foundation
import KKPushCore
import KKPushHTTP
import KKPushTLS
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2

// One request, from its last frame to its answer: authentication, routing and judging (`MockRequestProcessor`), faults,
// delayed answers, the answer's frames, and raising MAX_CONCURRENT_STREAMS after the first valid token.
extension APNsConnectionHandler {
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

    func complete(_ id: HTTP2StreamID, context: ChannelHandlerContext, resetAfterAnswer: Bool = false) {
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
            delayed.cancelAll()
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
            metrics.countAnswer(
                environment: processor.environment, status: 200, reason: nil,
                pushType: received.value(of: APNsHeader.pushType), priority: received.value(of: APNsHeader.priority))
            if !accepted {
                accepted = true  // a certificate connection authenticates at the handshake: trusted from here
                standing(.trusted)
            }
        case .rejected(let status, let reason, let apnsID, _):
            metrics.countAnswer(
                environment: processor.environment, status: status, reason: reason,
                pushType: received.value(of: APNsHeader.pushType), priority: received.value(of: APNsHeader.priority))
            let (environment, injected) = (processor.environment, routed.injected)
            let time = processor.state.clock.now().millisecondsSince1970
            processor.state.recordRejection { sequence in
                RejectedRequest(
                    sequence: sequence, time: time, environment: environment, status: status,
                    reason: reason.rawValue,
                    token: Optional(MockRequestProcessor.token(of: path)).flatMap { $0.isEmpty ? nil : $0 },
                    topic: received.value(ofLowercase: APNsHeader.topic),
                    pushType: received.value(ofLowercase: APNsHeader.pushType), apnsID: apnsID, injected: injected)
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
            let due = context.eventLoop.now + .milliseconds(Int64(routed.delayMs))
            machine.answerDelayed(id, until: due)
            hold(
                DelayedAnswers.Answer(
                    id: id, due: due, outcome: outcome, goAways: routed.goAways, resetAfterAnswer: resetAfterAnswer,
                    started: started), context: context)
            return
        }
        deliver(
            id, outcome: outcome, goAways: routed.goAways, resetAfterAnswer: resetAfterAnswer, started: started,
            context: context)
    }

    /// Writes the answer (then `RST_STREAM(NO_ERROR)` when its body was cut short), observes its duration and counts
    /// it against the GOAWAY faults it matched.
    private func deliver(
        _ id: HTTP2StreamID, outcome: MockRequestProcessor.Outcome, goAways: [MockFault], resetAfterAnswer: Bool,
        started: NIODeadline, context: ChannelHandlerContext
    ) {
        if resetAfterAnswer {
            answerThenReset(id, outcome: outcome, context: context)
        } else {
            answer(id, outcome: outcome, context: context)
        }
        metrics.observeDuration(
            environment: processor.environment, nanoseconds: (context.eventLoop.now - started).nanoseconds)
        countGoAways(goAways, context: context)
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
                        pushType: received.value(ofLowercase: APNsHeader.pushType), apnsID: a.requestID, injected: false
                    )
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
    /// written at once, it would close the stream and the frame layer would drop the answer's DATA still
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

    /// Writes a held answer that came due, unflushed; false if its stream was reset meanwhile (or the connection
    /// closed). ``finishDelayedAnswers(context:)`` follows, once for every answer due at the same time.
    func answerDelayed(_ answer: DelayedAnswers.Answer, context: ChannelHandlerContext) {
        guard machine.delayedAnswerDue(answer.id) else { return }  // reset by the client meanwhile, or closed
        guard context.channel.isActive else { return }
        deliver(
            answer.id, outcome: answer.outcome, goAways: answer.goAways, resetAfterAnswer: answer.resetAfterAnswer,
            started: answer.started, context: context)
        delayedAnswersWritten = true
    }

    /// After the held answers that came due: one flush for them, the close of a draining connection they ended,
    /// and the machine's timers.
    func finishDelayedAnswers(context: ChannelHandlerContext) {
        defer { syncTimers(context: context) }
        guard delayedAnswersWritten else { return }
        delayedAnswersWritten = false
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

    func answer(
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
        // libnghttp2 gets its own (higher) limit; H2WireWatcher puts the advertised one on the wire.
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
}
