import CNGHTTP2
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The mock's HTTP/2 frame layer: libnghttp2 (the library libcurl speaks HTTP/2 through) between the TLS bytes and
/// ``APNsConnectionHandler``, which it hands the frames it decoded and whose frames it encodes.
///
/// libnghttp2 does the framing, HPACK (both ways), the connection preface, SETTINGS and PING acknowledgements,
/// stream states and the protocol's connection errors (GOAWAY on a frame that breaks RFC 9113 at the connection
/// level: a bad preface, a frame on a stream in the wrong state, an HPACK error, a flood of frames that each need an
/// answer, more than 8 CONTINUATION frames). The mock keeps its own decisions as they were on NIOHTTP2: RFC 9113's
/// header-block rules (``RequestHeaderCheck``; libnghttp2's HTTP messaging checks are off), the concurrency limit it
/// advertises (``H2WireWatcher``), the resets it counts, and connection-level flow control: libnghttp2 sends no
/// WINDOW_UPDATE of its own on the connection; the handler's WINDOW_UPDATE frames say how much to credit (stream-level
/// windows are credited as each DATA chunk arrives, as NIOHTTP2 did).
///
/// The handler sees the same frames and events as from `NIOHTTP2Handler`: `HTTP2Frame`s for HEADERS (with the
/// decoded header list), DATA (one per DATA frame, its bytes whole), RST_STREAM, SETTINGS, PING, GOAWAY and
/// WINDOW_UPDATE; `StreamClosedEvent` when a stream closes; `NIOHTTP2WindowUpdatedEvent` with the connection window
/// the client has left after each DATA frame. They are delivered after libnghttp2 returns, never from inside it, so
/// what the handler writes in answer is queued into the session, not re-entering it. A frame's write promise
/// completes once its bytes are written to the TLS handler.
///
/// Why not NIOHTTP2Handler: on libnghttp2 the mock's whole request costs about a fifth fewer instructions, its
/// HTTP/2 part about half (the Performance guide has the counts), and libcurl already links the library.
final class NGHTTP2Framing: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = ByteBuffer

    /// What libnghttp2 ended the connection with (a connection error it answered with GOAWAY, or bytes that are
    /// not HTTP/2): the handler closes on it.
    struct ConnectionFailure: Error, CustomStringConvertible {
        var code: Int32
        var description: String { "HTTP/2 connection error: \(String(cString: nghttp2_strerror(code)))" }
    }

    /// What the session decoded, kept until libnghttp2 returns.
    private enum Inbound {
        case frame(HTTP2Frame)
        case closed(Int32, UInt32)
        /// A DATA frame of this many bytes (padding included) was received. The connection window the client had left
        /// after it is worked out when this is handed on: the window now, plus the DATA of this read not handed on yet.
        /// So the handler sees the window as it was after this frame, and never a figure from before a credit it gave.
        case window(Int)
    }

    /// An answer's DATA waiting for libnghttp2 to send it (flow control may hold it back).
    private struct Outgoing {
        var bytes: ByteBuffer
        var ended: Bool
    }

    struct Settings {
        var maxConcurrentStreams: Int
        var initialWindowSize: Int = 65535
        var maxFrameSize: Int = 16384
        var maxHeaderListSize: Int
        var headerTableSize: Int = 4096
        /// RST_STREAM frames a client may send in a burst, and per second after it: libnghttp2 answers more with
        /// GOAWAY. Set so no well-formed client reaches it (libcurl resets every stream it finished); the limit that
        /// counts is the handler's, on pending streams only.
        var resetBurst: UInt64 = 1_000_000
        var resetRate: UInt64 = 1_000_000
    }

    private let settings: Settings
    private var session: OpaquePointer?
    private var context: ChannelHandlerContext?
    /// Frames and events decoded, not yet handed on.
    private var inbound: [Inbound] = []
    private var delivering = false
    /// Inside a call into libnghttp2: a flush asked for then waits until it returns.
    private var inSession = false
    private var flushWanted = false
    /// The header list of the HEADERS frame being decoded. Pairs, made into `HPACKHeaders` whole: its `add` stops the
    /// process on a name that is not ASCII (a precondition), and a client's bytes are not to be trusted so.
    private var headerBlock: [(String, String)] = []
    /// DATA bytes of the frame being decoded (libnghttp2 hands them in chunks).
    private var dataChunks: ByteBuffer?
    private var outgoing: [Int32: Outgoing] = [:]
    /// DATA bytes received whose window event is not handed on yet.
    private var undeliveredData = 0
    /// Write promises of frames submitted, completed when libnghttp2 sends the frame (or fails it).
    private var promised: [(stream: Int32, type: UInt8, promise: EventLoopPromise<Void>)] = []
    /// Promises of frames serialized into the bytes not yet written.
    private var sent: [EventLoopPromise<Void>] = []
    /// GOAWAYs the handler submitted; a GOAWAY sent beyond those is libnghttp2's own (a connection error).
    private var ownGoAways = 0
    private var ownGoAwaySubmitted = false
    /// Where the client's frames begin and end in the bytes read.
    private var frames = InboundFrameBoundaries()
    private var failure: ConnectionFailure?
    private var failureReported = false

    init(settings: Settings) {
        self.settings = settings
    }

    /// As the mock's listeners set it up: libnghttp2 is told the limits it enforces itself, above what the client is
    /// told (``H2WireWatcher`` writes the advertised ones: `advertisedMaxStreams`, or 1 until the first valid token
    /// with `one_stream_until_auth`; a header list of 8000 bytes, decoded up to 64 KiB so a longer one is answered
    /// 431 on its stream).
    convenience init(advertisedMaxStreams: Int) {
        self.init(
            settings: .init(
                maxConcurrentStreams: H2WireWatcher.internalMaxStreams(advertised: advertisedMaxStreams),
                maxHeaderListSize: H2WireWatcher.internalMaxHeaderListSize))
    }

    // MARK: Session

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, _, user in
            NGHTTP2Framing.this(user).headerBlock.removeAll(keepingCapacity: true)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, _, name, nameLength, value, valueLength, _, user in
            NGHTTP2Framing.this(user).headerBlock.append(
                (
                    String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
                ))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { session, _, id, data, length, user in
            let me = NGHTTP2Framing.this(user)
            let chunk = UnsafeRawBufferPointer(start: data, count: length)
            if me.dataChunks == nil {
                me.dataChunks = me.context!.channel.allocator.buffer(capacity: length)
            }
            me.dataChunks!.writeBytes(chunk)
            // Stream-level window: credited at once, as NIOHTTP2 did (the connection's is the handler's call).
            nghttp2_session_consume_stream(session, id, length)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, user in
            NGHTTP2Framing.this(user).received(frame!, session: session)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, code, user in
            NGHTTP2Framing.this(user).inbound.append(.closed(id, code))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            NGHTTP2Framing.this(user).frameSent(frame!.pointee.hd, failed: false)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, _, user in
            NGHTTP2Framing.this(user).frameSent(frame!.pointee.hd, failed: true)
            return 0
        }
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_no_http_messaging(option, 1)
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_stream_reset_rate_limit(option, settings.resetBurst, settings.resetRate)
        nghttp2_session_server_new2(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: UInt32(settings.headerTableSize)
            ),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(settings.maxConcurrentStreams)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: UInt32(settings.initialWindowSize)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: UInt32(settings.maxFrameSize)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(settings.maxHeaderListSize)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        if context.channel.isActive { flushSession(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        for p in promised { p.promise.fail(ChannelError.ioOnClosedChannel) }
        for p in sent { p.fail(ChannelError.ioOnClosedChannel) }
        promised.removeAll()
        sent.removeAll()
        nghttp2_session_del(session)
        session = nil
        self.context = nil
    }

    private static func this(_ user: UnsafeMutableRawPointer?) -> NGHTTP2Framing {
        Unmanaged<NGHTTP2Framing>.fromOpaque(user!).takeUnretainedValue()
    }

    // MARK: Reading

    func channelActive(context: ChannelHandlerContext) {
        flushSession(context: context)  // the server's SETTINGS (the TLS handler holds it until the handshake)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard failure == nil, session != nil else { return }
        let buffer = unwrapInboundIn(data)
        inSession = true
        buffer.withUnsafeReadableBytes { raw in
            frames.split(raw, ignoringIdleResets: ownGoAwaySubmitted) { segment in
                guard failure == nil, let base = segment.baseAddress, segment.count > 0 else { return }
                let rc = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), segment.count)
                if rc < 0 { failure = ConnectionFailure(code: Int32(rc)) }
            }
        }
        inSession = false
        deliver(context: context)
        if flushWanted || failure != nil { flushSession(context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        // The handler flushes what it answered; anything the session queued by itself (SETTINGS and PING
        // acknowledgements, stream WINDOW_UPDATEs) goes out now too.
        if session != nil, nghttp2_session_want_write(session) != 0 { flushSession(context: context) }
    }

    /// A whole frame was decoded: hands it on (queued until the session returns).
    private func received(_ frame: UnsafePointer<nghttp2_frame>, session: OpaquePointer?) {
        let hd = frame.pointee.hd
        let id = HTTP2StreamID(hd.stream_id)
        let endStream = hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        let payload: HTTP2Frame.FramePayload
        switch UInt32(hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            payload = .headers(.init(headers: HPACKHeaders(headerBlock), endStream: endStream))
            headerBlock.removeAll(keepingCapacity: true)
        case NGHTTP2_DATA.rawValue:
            let bytes = dataChunks ?? ByteBuffer()
            dataChunks = nil
            payload = .data(.init(data: .byteBuffer(bytes), endStream: endStream))
            inbound.append(.frame(HTTP2Frame(streamID: id, payload: payload)))
            let length = Int(hd.length)
            undeliveredData += length
            inbound.append(.window(length))
            return
        case NGHTTP2_RST_STREAM.rawValue:
            payload = .rstStream(HTTP2ErrorCode(networkCode: Int(frame.pointee.rst_stream.error_code)))
        case NGHTTP2_SETTINGS.rawValue:
            if hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                payload = .settings(.ack)
            } else {
                payload = .settings(.settings([]))  // libnghttp2 applies them; the handler only sees one came
            }
        case NGHTTP2_PING.rawValue:
            payload = .ping(HTTP2PingData(), ack: hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0)
        case NGHTTP2_GOAWAY.rawValue:
            let g = frame.pointee.goaway
            payload = .goAway(
                lastStreamID: HTTP2StreamID(g.last_stream_id),
                errorCode: HTTP2ErrorCode(networkCode: Int(g.error_code)),
                opaqueData: nil)
        case NGHTTP2_WINDOW_UPDATE.rawValue:
            payload = .windowUpdate(windowSizeIncrement: Int(frame.pointee.window_update.window_size_increment))
        default:
            return  // PRIORITY and extension frames: nothing for the mock
        }
        inbound.append(.frame(HTTP2Frame(streamID: id, payload: payload)))
    }

    /// Hands the queued frames and events on, in order; what the handler writes meanwhile is queued into the session.
    private func deliver(context: ChannelHandlerContext) {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        var next = 0
        while next < inbound.count {
            // The handler may have closed the connection meanwhile, and the session may be gone with it.
            guard let session else {
                inbound.removeAll()
                return
            }
            let item = inbound[next]
            next += 1
            switch item {
            case .frame(let frame):
                context.fireChannelRead(wrapInboundOut(frame))
            case .closed(let id, let code):
                outgoing[id] = nil
                context.fireUserInboundEventTriggered(
                    StreamClosedEvent(
                        streamID: HTTP2StreamID(id), reason: code == 0 ? nil : HTTP2ErrorCode(networkCode: Int(code))))
            case .window(let length):
                undeliveredData -= length
                let window = Int(nghttp2_session_get_local_window_size(session)) + undeliveredData
                context.fireUserInboundEventTriggered(
                    NIOHTTP2WindowUpdatedEvent(
                        streamID: .rootStream, inboundWindowSize: window, outboundWindowSize: nil))
            }
            if next == inbound.count {
                inbound.removeAll(keepingCapacity: true)
                next = 0
            }
        }
        if let failure, !failureReported, context.channel.isActive {
            failureReported = true
            context.fireErrorCaught(failure)
        }
    }

    // MARK: Writing

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        guard let session, failure == nil else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        let id = Int32(Int(frame.streamID))
        var rc: Int32 = 0
        var type = NGHTTP2_HEADERS.rawValue
        switch frame.payload {
        case .headers(let h):
            if !h.endStream { outgoing[id] = Outgoing(bytes: ByteBuffer(), ended: false) }
            rc = submitHeaders(id, h.headers, endStream: h.endStream)
        case .data(let d):
            type = NGHTTP2_DATA.rawValue
            guard case .byteBuffer(var bytes) = d.data, var queued = outgoing[id] else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            queued.bytes.writeBuffer(&bytes)
            queued.ended = d.endStream
            outgoing[id] = queued
            rc = nghttp2_session_resume_data(session, id)
            if rc == NGHTTP2_ERR_INVALID_ARGUMENT.rawValue { rc = 0 }  // not deferred yet: the provider reads it
        case .rstStream(let code):
            type = NGHTTP2_RST_STREAM.rawValue
            outgoing[id] = nil
            rc = nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, UInt32(http2ErrorCode: code))
        case .goAway(let last, let code, let opaque):
            type = NGHTTP2_GOAWAY.rawValue
            ownGoAways += 1
            ownGoAwaySubmitted = true
            let bytes = opaque.map { Array($0.readableBytesView) } ?? []
            rc = bytes.withUnsafeBufferPointer {
                nghttp2_submit_goaway(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), Int32(Int(last)), UInt32(http2ErrorCode: code),
                    $0.baseAddress, $0.count)
            }
        case .settings(.settings(let list)):
            type = NGHTTP2_SETTINGS.rawValue
            var entries = list.compactMap { setting -> nghttp2_settings_entry? in
                guard let id = Self.settingID(setting.parameter) else { return nil }
                return nghttp2_settings_entry(settings_id: id, value: UInt32(setting.value))
            }
            rc = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        case .windowUpdate(let increment) where id == 0:
            // The connection's credit, decided by the handler.
            rc = nghttp2_session_consume_connection(session, increment)
            promise?.succeed()
            return
        default:
            promise?.fail(ChannelError.operationUnsupported)
            return
        }
        guard rc == 0 else {
            promise?.fail(ConnectionFailure(code: rc))
            return
        }
        if let promise {
            promised.append((id, UInt8(type), promise))
        }
    }

    func flush(context: ChannelHandlerContext) {
        if inSession {
            flushWanted = true
            return
        }
        flushSession(context: context)
    }

    private static func settingID(_ parameter: HTTP2SettingsParameter) -> Int32? {
        switch parameter {
        case .headerTableSize: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue)
        case .maxConcurrentStreams: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue)
        case .initialWindowSize: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue)
        case .maxFrameSize: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue)
        case .maxHeaderListSize: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue)
        default: nil
        }
    }

    /// Submits a HEADERS frame: an answer's (with a DATA provider reading ``outgoing`` unless it ends the stream).
    private func submitHeaders(_ id: Int32, _ headers: HPACKHeaders, endStream: Bool) -> Int32 {
        // One buffer with every name and value; libnghttp2 copies them before it returns.
        var bytes: [UInt8] = []
        var spans: [(name: Range<Int>, value: Range<Int>, flags: UInt8)] = []
        spans.reserveCapacity(headers.count)
        for (name, value, indexing) in headers {
            let n = bytes.count
            bytes.append(contentsOf: name.utf8)
            let v = bytes.count
            bytes.append(contentsOf: value.utf8)
            let flags = indexing == .indexable ? NGHTTP2_NV_FLAG_NONE.rawValue : NGHTTP2_NV_FLAG_NO_INDEX.rawValue
            spans.append((n..<v, v..<bytes.count, UInt8(flags)))
        }
        return bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            let base = buffer.baseAddress  // nil only when there are no fields, and then nothing points into it
            var nva = spans.map {
                nghttp2_nv(
                    name: base! + $0.name.lowerBound, value: base! + $0.value.lowerBound, namelen: $0.name.count,
                    valuelen: $0.value.count, flags: $0.flags)
            }
            if endStream {
                return nghttp2_submit_response(session, id, &nva, nva.count, nil)
            }
            var provider = nghttp2_data_provider()
            provider.read_callback = { _, id, buf, length, flags, _, user in
                NGHTTP2Framing.this(user).readAnswer(id, into: buf!, length: length, flags: flags!)
            }
            return nghttp2_submit_response(session, id, &nva, nva.count, &provider)
        }
    }

    /// libnghttp2 asks for an answer's DATA.
    private func readAnswer(
        _ id: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard var queued = outgoing[id] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let n = min(length, queued.bytes.readableBytes)
        if n == 0, !queued.ended { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
        queued.bytes.withUnsafeReadableBytes { raw in
            if n > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress!, byteCount: n) }
        }
        queued.bytes.moveReaderIndex(forwardBy: n)
        if queued.ended, queued.bytes.readableBytes == 0 {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            outgoing[id] = nil
        } else {
            outgoing[id] = queued
        }
        return n
    }

    /// A frame left (or will never leave): its write promise goes with the bytes it is in.
    private func frameSent(_ hd: nghttp2_frame_hd, failed: Bool) {
        if hd.type == UInt8(NGHTTP2_GOAWAY.rawValue), !failed {
            if ownGoAways == 0 {
                failure = failure ?? ConnectionFailure(code: NGHTTP2_ERR_PROTO.rawValue)
            } else {
                ownGoAways -= 1
            }
        }
        // A DATA frame's promise is the one of its last frame (END_STREAM).
        if hd.type == UInt8(NGHTTP2_DATA.rawValue), hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) == 0, !failed {
            return
        }
        guard let index = promised.firstIndex(where: { $0.stream == hd.stream_id && $0.type == hd.type }) else {
            return
        }
        let promise = promised.remove(at: index).promise
        if failed {
            promise.fail(ChannelError.ioOnClosedChannel)
        } else {
            sent.append(promise)
        }
    }

    /// Writes out everything the session has to send, in one buffer, then hands on what it decoded meanwhile.
    private func flushSession(context: ChannelHandlerContext) {
        flushWanted = false
        guard let session else { return }
        var out: ByteBuffer?
        inSession = true
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                failure = failure ?? ConnectionFailure(code: Int32(n))
                break
            }
            if n == 0 { break }
            if out == nil { out = context.channel.allocator.buffer(capacity: max(n, 256)) }
            out!.writeBytes(UnsafeRawBufferPointer(start: data, count: n))
        }
        inSession = false
        if let out {
            let promises = sent
            sent.removeAll()
            if promises.isEmpty {
                context.write(wrapOutboundOut(out), promise: nil)
            } else {
                let written = context.eventLoop.makePromise(of: Void.self)
                for p in promises { written.futureResult.cascade(to: p) }
                context.write(wrapOutboundOut(out), promise: written)
            }
            context.flush()
        }
        if !inbound.isEmpty || (failure != nil && !failureReported) { deliver(context: context) }
    }
}

/// The boundaries of the client's frames in the bytes read (the 24-byte preface, then each frame's 9-byte header and
/// its payload), so one frame can be left out before libnghttp2 sees it: after the mock's GOAWAY, a RST_STREAM of a
/// stream the client never opened. RFC 9113 §6.4 makes that a connection error, and libnghttp2 answers it with GOAWAY
/// `PROTOCOL_ERROR` and ends the connection, losing the answers still due on it; after a GOAWAY, §6.8 asks that
/// frames on streams above its last-stream-id be ignored, and the mock does (as it did on NIOHTTP2).
struct InboundFrameBoundaries {
    private var prefaceLeft = 24
    /// The first bytes of a frame header that ended a read, held back until the header is whole.
    private var held: [UInt8] = []
    private var payloadLeft = 0
    private var skipLeft = 0
    /// The highest stream a HEADERS frame opened (or tried to).
    private var highestOpened: UInt32 = 0

    /// Calls `feed` with the parts of `raw` to pass on, in order, leaving out the frames to ignore.
    mutating func split(
        _ raw: UnsafeRawBufferPointer, ignoringIdleResets: Bool, feed: (UnsafeRawBufferPointer) -> Void
    ) {
        var i = 0
        if !held.isEmpty {
            let take = min(9 - held.count, raw.count)
            held.append(contentsOf: raw[0..<take])
            i = take
            guard held.count == 9 else { return }
            let header = held
            held.removeAll(keepingCapacity: true)
            header.withUnsafeBytes { bytes in
                if frameStarts(bytes, at: 0, ignoringIdleResets: ignoringIdleResets) { feed(bytes) }
            }
        }
        var start = i
        while i < raw.count {
            if prefaceLeft > 0 {
                let n = min(prefaceLeft, raw.count - i)
                prefaceLeft -= n
                i += n
            } else if skipLeft > 0 {
                let n = min(skipLeft, raw.count - i)
                skipLeft -= n
                i += n
                start = i
            } else if payloadLeft > 0 {
                let n = min(payloadLeft, raw.count - i)
                payloadLeft -= n
                i += n
            } else if raw.count - i < 9 {
                held.append(contentsOf: raw[i...])
                break
            } else {
                if frameStarts(raw, at: i, ignoringIdleResets: ignoringIdleResets) {
                    i += 9
                } else {
                    feed(UnsafeRawBufferPointer(rebasing: raw[start..<i]))
                    i += 9
                    start = i
                }
            }
        }
        feed(UnsafeRawBufferPointer(rebasing: raw[start..<i]))
    }

    /// Reads the frame header at `offset`: true if the frame is passed on, false if it is skipped.
    private mutating func frameStarts(_ bytes: UnsafeRawBufferPointer, at offset: Int, ignoringIdleResets: Bool) -> Bool
    {
        let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
        let type = bytes[offset + 3]
        let stream =
            (UInt32(bytes[offset + 5]) << 24 | UInt32(bytes[offset + 6]) << 16 | UInt32(bytes[offset + 7]) << 8
                | UInt32(bytes[offset + 8])) & 0x7FFF_FFFF
        if type == 0x1, stream > highestOpened { highestOpened = stream }
        if ignoringIdleResets, type == 0x3, stream > highestOpened {
            skipLeft = length
            return false
        }
        payloadLeft = length
        return true
    }
}
