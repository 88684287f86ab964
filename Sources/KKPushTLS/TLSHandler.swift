import COpenSSL
package import NIOCore
import NIOTLS

/// TLS on a NIO channel through the system's OpenSSL: ciphertext below, plaintext above.
///
/// The connection's `SSL` reads and writes two memory BIOs; the handler moves bytes between them and the
/// channel. Writes made before the handshake ends wait for it. When the handshake ends it fires
/// `TLSUserEvent.handshakeCompleted` with the ALPN protocol; ``peerCertificateDER`` holds the client's
/// certificate, if it sent one. Closing sends close_notify after every written byte, then waits for the peer's
/// close_notify at most the context's shutdown timeout. Closing from the context *below* this handler skips
/// close_notify (an abortive close).
package final class TLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private enum State {
        /// Added to a channel not yet active.
        case idle
        case handshaking
        case active
        /// close_notify sent; waiting for the peer's, or for the timeout.
        case closing
        case closed
    }

    /// Largest plaintext read in one go before it is passed on.
    private static let readChunk = 64 * 1024
    /// One TLS record's plaintext at most.
    private static let recordSize = 16 * 1024

    private let tls: TLSContext
    private var ssl: OpaquePointer?
    private var inbound: OpaquePointer?
    private var outbound: OpaquePointer?
    private var state = State.idle
    private var pending = CircularBuffer<(ByteBuffer, EventLoopPromise<Void>?)>()
    private var closePromise: EventLoopPromise<Void>?
    private var shutdownTimer: Scheduled<Void>?

    /// The protocol ALPN chose, once the handshake is done.
    package private(set) var negotiatedProtocol: String?
    /// The peer's certificate (DER), once the handshake is done, if it sent one.
    package private(set) var peerCertificateDER: [UInt8]?

    package init(context tls: TLSContext) {
        self.tls = tls
    }

    // MARK: Life cycle

    package func handlerAdded(context: ChannelHandlerContext) {
        do {
            let ssl = try tls.makeConnection()
            guard let inbound = BIO_new(BIO_s_mem()), let outbound = BIO_new(BIO_s_mem()) else {
                SSL_free(ssl)
                throw TLSError.fromQueue("BIO_new")
            }
            SSL_set_bio(ssl, inbound, outbound)  // the SSL owns both from here
            self.ssl = ssl
            self.inbound = inbound
            self.outbound = outbound
        } catch {
            state = .closed
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        if context.channel.isActive { startHandshake(context: context) }
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        shutdownTimer?.cancel()
        shutdownTimer = nil
        state = .closed
        failPending(ChannelError.ioOnClosedChannel)
        closePromise?.fail(ChannelError.ioOnClosedChannel)
        closePromise = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        inbound = nil
        outbound = nil
    }

    package func channelActive(context: ChannelHandlerContext) {
        startHandshake(context: context)
        context.fireChannelActive()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        shutdownTimer?.cancel()
        shutdownTimer = nil
        state = .closed
        failPending(ChannelError.ioOnClosedChannel)
        // The socket is closed: a close that waited for the peer's close_notify is done.
        closePromise?.succeed(())
        closePromise = nil
        context.fireChannelInactive()
    }

    // MARK: Inbound

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        guard state != .closed, let inbound else { return }
        bytes.withUnsafeReadableBytes { raw in
            if let base = raw.baseAddress, raw.count > 0 { _ = BIO_write(inbound, base, Int32(raw.count)) }
        }
        switch state {
        case .idle:
            startHandshake(context: context)
        case .handshaking:
            handshake(context: context)
        case .active, .closing:
            readPlaintext(context: context)
        case .closed:
            break
        }
    }

    private func startHandshake(context: ChannelHandlerContext) {
        guard state == .idle, ssl != nil else { return }
        state = .handshaking
        handshake(context: context)
    }

    private func handshake(context: ChannelHandlerContext) {
        guard let ssl else { return }
        TLSError.clearQueue()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            state = .active
            negotiatedProtocol = Self.alpn(of: ssl)
            peerCertificateDER = Self.peerCertificate(of: ssl)
            sendCiphertext(context: context, promise: nil, flush: false)
            context.fireUserInboundEventTriggered(
                TLSUserEvent.handshakeCompleted(negotiatedProtocol: negotiatedProtocol))
            guard state == .active else { return }
            encryptPending(context: context)
            context.flush()
            // Application data may have come in the same read as the client's Finished.
            readPlaintext(context: context)
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            sendCiphertext(context: context, promise: nil, flush: true)
        default:
            let error = TLSError.fromQueue("handshake")
            sendCiphertext(context: context, promise: nil, flush: true)  // the alert, if OpenSSL wrote one
            fail(context: context, error: error)
        }
    }

    /// Decrypts what the inbound BIO holds and passes it on.
    private func readPlaintext(context: ChannelHandlerContext) {
        guard let ssl else { return }
        var plaintext: ByteBuffer?
        var peerClosed = false
        var failure: TLSError?
        reading: while true {
            if plaintext == nil { plaintext = context.channel.allocator.buffer(capacity: Self.recordSize) }
            TLSError.clearQueue()
            var result: Int32 = 0
            plaintext!.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.recordSize) { raw in
                result = SSL_read(ssl, raw.baseAddress, Int32(raw.count))
                return result > 0 ? Int(result) : 0
            }
            if result > 0 {
                if plaintext!.readableBytes >= Self.readChunk { pass(&plaintext, context: context) }
                if state == .closed { return }
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                break reading
            case SSL_ERROR_ZERO_RETURN:
                peerClosed = true
                break reading
            default:
                failure = TLSError.fromQueue("read")
                break reading
            }
        }
        pass(&plaintext, context: context)
        // Post-handshake messages (session tickets, key updates) and alerts go out as they come.
        if state == .active || state == .closing, let outbound, BIO_ctrl_pending(outbound) > 0 {
            sendCiphertext(context: context, promise: nil, flush: true)
        }
        if let failure {
            fail(context: context, error: failure)
        } else if peerClosed {
            peerSentCloseNotify(context: context)
        }
    }

    private func pass(_ plaintext: inout ByteBuffer?, context: ChannelHandlerContext) {
        guard let buffer = plaintext, buffer.readableBytes > 0 else { return }
        plaintext = nil
        // While closing, what the peer still sends is read only to find its close_notify.
        guard state == .active else { return }
        context.fireChannelRead(wrapInboundOut(buffer))
    }

    private func peerSentCloseNotify(context: ChannelHandlerContext) {
        switch state {
        case .active:
            encryptPending(context: context)
            if let ssl {
                TLSError.clearQueue()
                _ = SSL_shutdown(ssl)
            }
            sendCiphertext(context: context, promise: nil, flush: true)
            guard state == .active else { return }
            state = .closed
            context.fireUserInboundEventTriggered(TLSUserEvent.shutdownCompleted)
            context.close(promise: nil)
        case .closing:
            finishClose(context: context)
        case .idle, .handshaking, .closed:
            break
        }
    }

    // MARK: Outbound

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch state {
        case .idle, .handshaking, .active:
            pending.append((unwrapOutboundIn(data), promise))
        case .closing:
            promise?.fail(ChannelError.outputClosed)
        case .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    package func flush(context: ChannelHandlerContext) {
        switch state {
        case .idle, .handshaking:
            break  // the handshake's end writes and flushes what waits
        case .active:
            encryptPending(context: context)
            context.flush()
        case .closing, .closed:
            context.flush()
        }
    }

    package func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all else {
            if mode == .output, state == .active { sendCloseNotify(context: context) }
            context.close(mode: mode, promise: promise)
            return
        }
        switch state {
        case .idle, .handshaking:
            state = .closed
            failPending(ChannelError.ioOnClosedChannel)
            context.close(promise: promise)
        case .active:
            sendCloseNotify(context: context)
            guard state == .active else {  // encrypting failed, and the connection is already closing
                context.close(promise: promise)
                return
            }
            state = .closing
            closePromise = promise
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            shutdownTimer = context.eventLoop.scheduleTask(in: .nanoseconds(tls.shutdownTimeoutNanoseconds)) {
                let (handler, context) = loopBound.value
                handler.finishClose(context: context)
            }
        case .closing:
            if let promise {
                if let closePromise {
                    closePromise.futureResult.cascade(to: promise)
                } else {
                    closePromise = promise
                }
            }
        case .closed:
            context.close(promise: promise)
        }
    }

    /// Encrypts what was written, then close_notify, and flushes.
    private func sendCloseNotify(context: ChannelHandlerContext) {
        encryptPending(context: context)
        if let ssl {
            TLSError.clearQueue()
            _ = SSL_shutdown(ssl)
        }
        sendCiphertext(context: context, promise: nil, flush: true)
    }

    private func finishClose(context: ChannelHandlerContext) {
        guard state == .closing else { return }
        shutdownTimer?.cancel()
        shutdownTimer = nil
        state = .closed
        let promise = closePromise
        closePromise = nil
        context.close(promise: promise)
    }

    /// Encrypts the waiting writes into one buffer and writes it, completing their promises with it.
    private func encryptPending(context: ChannelHandlerContext) {
        guard let ssl, !pending.isEmpty else { return }
        var promises: [EventLoopPromise<Void>] = []
        while let (buffer, promise) = pending.popFirst() {
            if let promise { promises.append(promise) }
            var failed = false
            buffer.withUnsafeReadableBytes { raw in
                var offset = 0
                while offset < raw.count {
                    TLSError.clearQueue()
                    let written = SSL_write(
                        ssl, raw.baseAddress! + offset, Int32(min(raw.count - offset, Int(Int32.max))))
                    if written <= 0 {
                        failed = true
                        return
                    }
                    offset += Int(written)
                }
            }
            if failed {
                let error = TLSError.fromQueue("write")
                for promise in promises { promise.fail(error) }
                fail(context: context, error: error)
                return
            }
        }
        let combined: EventLoopPromise<Void>?
        switch promises.count {
        case 0: combined = nil
        case 1: combined = promises[0]
        default:
            let all = context.eventLoop.makePromise(of: Void.self)
            for promise in promises { all.futureResult.cascade(to: promise) }
            combined = all
        }
        sendCiphertext(context: context, promise: combined, flush: false)
    }

    /// Writes what the outbound BIO holds to the channel (completing `promise` with that write, or at once
    /// when there is nothing), and flushes if asked.
    private func sendCiphertext(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?, flush: Bool) {
        guard let outbound else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        let count = Int(BIO_ctrl_pending(outbound))
        guard count > 0 else {
            promise?.succeed(())
            if flush { context.flush() }
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            Int(max(0, BIO_read(outbound, raw.baseAddress, Int32(count))))
        }
        if flush {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        } else {
            context.write(wrapOutboundOut(buffer), promise: promise)
        }
    }

    // MARK: Failure

    private func fail(context: ChannelHandlerContext, error: TLSError) {
        guard state != .closed else { return }
        state = .closed
        shutdownTimer?.cancel()
        shutdownTimer = nil
        failPending(error)
        context.fireErrorCaught(error)
        let promise = closePromise
        closePromise = nil
        context.close(promise: promise)
    }

    private func failPending(_ error: any Error) {
        while let (_, promise) = pending.popFirst() { promise?.fail(error) }
    }

    // MARK: What the handshake settled

    private static func alpn(of ssl: OpaquePointer) -> String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    private static func peerCertificate(of ssl: OpaquePointer) -> [UInt8]? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &der)
        guard length > 0, let der else { return nil }
        defer { kk_openssl_free(der) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }
}
