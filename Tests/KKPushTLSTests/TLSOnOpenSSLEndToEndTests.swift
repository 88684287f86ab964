import Foundation
import KKPushTLS
import KKPushTestSupport
import NIOCore
import NIOPosix
import NIOTLS
import Synchronization
import Testing

/// Both ends of real loopback connections through ``TLSHandler``: the handshake, ALPN, client
/// certificates, bulk data, close_notify and refusals. (The mock's tests run it against curl, h2load and
/// aioapns.)
@Suite("TLS on OpenSSL: TLSHandler end to end")
struct TLSOnOpenSSLEndToEndTests {
    /// What one end of a connection saw; touched only on its channel's event loop, read after it.
    final class Recorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let echo: Bool
        /// What arrived, in order. Kept as one buffer (a copy per read) rather than summed byte by byte: this runs
        /// on NIO's shared event loops, which other tests' clients use too, and a debug build's per-byte loop over
        /// 2 MiB once held one for over 5 s (the tests' stall watch caught it).
        var received = ByteBuffer()
        var events: [TLSUserEvent] = []
        var errors: [String] = []

        init(echo: Bool) { self.echo = echo }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.writeBuffer(&bytes)
            if echo { context.writeAndFlush(data, promise: nil) }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let event = event as? TLSUserEvent { events.append(event) }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append("\(error)")
        }
    }

    /// One end of a connection. Its handler and recorder are only read in closures submitted to the
    /// channel's event loop.
    struct End: @unchecked Sendable {
        let handler: TLSHandler
        let recorder: Recorder
        let channel: any Channel
    }

    /// The ends made so far (by a listener, or by one connect).
    final class Ends: Sendable {
        let list = Mutex<[End]>([])
    }

    /// A listener on 127.0.0.1 (port 0) whose connections run `TLSHandler` and an echoing ``Recorder``.
    final class Server: Sendable {
        let channel: any Channel
        private let accepted: Ends

        init(context tls: TLSContext) async throws {
            let accepted = Ends()
            self.accepted = accepted
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        let handler = TLSHandler(context: tls)
                        let recorder = Recorder(echo: true)
                        try child.pipeline.syncOperations.addHandler(handler)
                        try child.pipeline.syncOperations.addHandler(recorder)
                        accepted.list.withLock { $0.append(End(handler: handler, recorder: recorder, channel: child)) }
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        }

        var port: Int { channel.localAddress?.port ?? 0 }

        /// The server end of the first accepted connection, once there is one (at most 5 s).
        func firstConnection() async throws -> End {
            for _ in 0..<500 {
                if let first = accepted.list.withLock({ $0.first }) { return first }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw TLSError(operation: "accepting a connection within 5 s")
        }
    }

    /// The DER bytes of the PEM certificate in `path` (its base64 body decoded).
    static func der(ofPEM path: String) throws -> [UInt8] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return [UInt8](try #require(Data(base64Encoded: body)))
    }

    static let serverContext: TLSContext = try! TLSContext.server(
        certificateChainFile: Repository.certificate("server.crt"),
        privateKeyFile: Repository.certificate("server.key"),
        clientCAFile: Repository.certificate("wwdr.crt"), applicationProtocols: ["h2"])

    /// A connection to `port` through `TLSHandler`, with a recording (not echoing) ``Recorder``.
    static func connect(port: Int, context tls: TLSContext) async throws -> End {
        let made = Ends()
        _ = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let end = End(handler: TLSHandler(context: tls), recorder: Recorder(echo: false), channel: channel)
                    try channel.pipeline.syncOperations.addHandler(end.handler)
                    try channel.pipeline.syncOperations.addHandler(end.recorder)
                    made.list.withLock { $0.append(end) }
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return try #require(made.list.withLock { $0.first })
    }

    /// Waits (at most 10 s) until `condition`, read on `channel`'s event loop, holds.
    static func wait(on channel: any Channel, until condition: @escaping @Sendable () -> Bool) async throws -> Bool {
        for _ in 0..<1000 {
            if try await channel.eventLoop.submit(condition).get() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test("Handshake with ALPN h2; 1 MiB in 1,000 writes echoed back intact; close_notify both ways")
    func bulkEcho() async throws {
        let server = try await Server(context: Self.serverContext)
        let client = try TLSContext.client(
            trustRootsFile: Repository.certificate("ca.crt"), applicationProtocols: ["h2", "http/1.1"])
        let end = try await Self.connect(port: server.port, context: client)
        let channel = end.channel
        var expected = ByteBuffer()
        for write in 0..<1000 {
            let chunk = (0..<1024).map { UInt8(truncatingIfNeeded: (write &* 1024 &+ $0) &* 2_654_435_761 >> 13) }
            expected.writeBytes(chunk)
            channel.write(ByteBuffer(bytes: chunk), promise: nil)
        }
        try await channel.writeAndFlush(ByteBuffer()).get()
        #expect(try await Self.wait(on: channel) { end.recorder.received.readableBytes == 1024 * 1000 })
        let outcome = try await channel.eventLoop.submit {
            (
                end.recorder.received, end.recorder.events, end.handler.negotiatedProtocol,
                end.handler.peerCertificateDER != nil
            )
        }.get()
        #expect(outcome.0 == expected, "the echo is the bytes sent, in order")
        #expect(outcome.1 == [.handshakeCompleted(negotiatedProtocol: "h2")])
        #expect(outcome.2 == "h2")
        #expect(outcome.3, "the client sees the server's certificate")

        let serverEnd = try await server.firstConnection()
        #expect(try await serverEnd.channel.eventLoop.submit { serverEnd.handler.peerCertificateDER == nil }.get())
        // The client's close sends close_notify; the server answers with its own and closes.
        try await channel.close()
        try await serverEnd.channel.closeFuture.get()
        let serverEvents = try await serverEnd.channel.eventLoop.submit { serverEnd.recorder.events }.get()
        #expect(serverEvents == [.handshakeCompleted(negotiatedProtocol: "h2"), .shutdownCompleted])
        try await server.channel.close()
    }

    @Test("A client certificate chaining to the client CA (the WWDR test CA) reaches the server; another is refused")
    func clientCertificates() async throws {
        let server = try await Server(context: Self.serverContext)
        let good = try TLSContext.client(
            trustRootsFile: Repository.certificate("ca.crt"), applicationProtocols: ["h2"],
            certificateChainFile: Repository.certificate("client-development.crt"),
            privateKeyFile: Repository.certificate("client-development.key"))
        let channel = try await Self.connect(port: server.port, context: good).channel
        try await channel.writeAndFlush(ByteBuffer(string: "hello")).get()
        let serverEnd = try await server.firstConnection()
        #expect(
            try await Self.wait(on: serverEnd.channel) { serverEnd.recorder.received == ByteBuffer(string: "hello") })
        let der = try await serverEnd.channel.eventLoop.submit { serverEnd.handler.peerCertificateDER }.get()
        let expected = try Self.der(ofPEM: Repository.certificate("client-development.crt"))
        let same = der == expected
        #expect(same, "the server holds the client's certificate, byte for byte")
        try await channel.close()

        // A certificate of another CA (the server's own, from the test CA) does not chain to the client CA.
        let stranger = try TLSContext.client(
            trustRootsFile: Repository.certificate("ca.crt"), applicationProtocols: ["h2"],
            certificateChainFile: Repository.certificate("server.crt"),
            privateKeyFile: Repository.certificate("server.key"))
        let refused = try await Self.connect(port: server.port, context: stranger)
        let strangerChannel = refused.channel
        strangerChannel.writeAndFlush(ByteBuffer(string: "hello"), promise: nil as EventLoopPromise<Void>?)
        try await strangerChannel.closeFuture.get()
        let errors = try await strangerChannel.eventLoop.submit { refused.recorder.errors }.get()
        #expect(errors.contains { $0.contains("alert") }, "\(errors)")
        try await server.channel.close()
    }

    @Test("No protocol in common: the handshake goes on without ALPN, as it did with swift-nio-ssl")
    func noCommonProtocol() async throws {
        let server = try await Server(context: Self.serverContext)
        let client = try TLSContext.client(
            trustRootsFile: Repository.certificate("ca.crt"), applicationProtocols: ["http/1.1"])
        let end = try await Self.connect(port: server.port, context: client)
        let channel = end.channel
        try await channel.writeAndFlush(ByteBuffer(string: "ping")).get()
        #expect(try await Self.wait(on: channel) { end.recorder.received == ByteBuffer(string: "ping") })
        #expect(try await channel.eventLoop.submit { end.handler.negotiatedProtocol }.get() == nil)
        try await channel.close()
        try await server.channel.close()
    }

    @Test("A server the client's roots do not vouch for: certificate verify failed, and the connection closes")
    func untrustedServer() async throws {
        let server = try await Server(context: Self.serverContext)
        let client = try TLSContext.client(
            trustRootsFile: Repository.certificate("wwdr.crt"), applicationProtocols: ["h2"])
        let end = try await Self.connect(port: server.port, context: client)
        let channel = end.channel
        let write = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(ByteBuffer(string: "never sent"), promise: write)
        try await channel.closeFuture.get()
        await #expect(throws: (any Error).self) { try await write.futureResult.get() }
        let errors = try await channel.eventLoop.submit { end.recorder.errors }.get()
        #expect(errors.contains { $0.contains("certificate verify failed") }, "\(errors)")
        try await server.channel.close()
    }

    @Test("Plain text to the TLS listener: a TLS error, the connection closed, nothing passed on")
    func plainTextIsRefused() async throws {
        let server = try await Server(context: Self.serverContext)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: server.port).get()
        try await channel.writeAndFlush(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")).get()
        let serverEnd = try await server.firstConnection()
        try await serverEnd.channel.closeFuture.get()
        let seen = try await serverEnd.channel.eventLoop.submit {
            (serverEnd.recorder.received, serverEnd.recorder.errors)
        }.get()
        #expect(seen.0.readableBytes == 0)
        #expect(seen.1.count == 1 && seen.1[0].hasPrefix("TLS handshake failed"), "\(seen.1)")
        try? await channel.close()
        try await server.channel.close()
    }

    @Test("Setting up: a missing key file and a key that is not the certificate's are errors that name the file")
    func contextErrors() throws {
        #expect {
            _ = try TLSContext.server(
                certificateChainFile: Repository.certificate("server.crt"), privateKeyFile: "/nonexistent/key.pem",
                applicationProtocols: ["h2"])
        } throws: { error in
            "\(error)".contains("reading the private key /nonexistent/key.pem")
        }
        #expect {
            _ = try TLSContext.server(
                certificateChainFile: Repository.certificate("server.crt"),
                privateKeyFile: Repository.certificate("client-development.key"), applicationProtocols: ["h2"])
        } throws: { error in
            "\(error)".contains("client-development.key is not the key of the certificate")
        }
    }
}
