import COpenSSL

/// One side's TLS settings on the system's OpenSSL: an `SSL_CTX`, set up once and then only read, from
/// which every connection's ``TLSHandler`` makes its own `SSL`.
///
/// The mock's listener is the server side (a PEM chain and key, ALPN `h2`, an optional client CA for
/// certificate-based provider connections); tests that speak raw frames to it are the client side.
package final class TLSContext: @unchecked Sendable {
    /// Server or client.
    package enum Role: Sendable { case server, client }

    let context: OpaquePointer
    package let role: Role
    /// The ALPN list in wire form after one byte of total length, as `kk_alpn_select` reads it (server), or
    /// the wire form itself (client). Owned here: OpenSSL keeps the pointer, not a copy, on the server side.
    private let alpn: UnsafeMutableBufferPointer<UInt8>?
    /// Sent as SNI by a client connection (none when nil).
    package let serverName: String?
    /// How long a closing connection waits for the peer's close_notify after sending its own.
    package let shutdownTimeoutNanoseconds: Int64

    private init(
        role: Role, alpn protocols: [String], serverName: String?, shutdownTimeoutNanoseconds: Int64
    ) throws(TLSError) {
        TLSError.clearQueue()
        guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.fromQueue("SSL_CTX_new")
        }
        self.context = context
        self.role = role
        self.serverName = serverName
        self.shutdownTimeoutNanoseconds = shutdownTimeoutNanoseconds
        var wire: [UInt8] = []
        for name in protocols where !name.isEmpty && name.utf8.count < 256 {
            wire.append(UInt8(name.utf8.count))
            wire += name.utf8
        }
        if wire.isEmpty || wire.count > 255 {
            alpn = nil
        } else {
            let prefix = role == .server ? [UInt8(wire.count)] : []
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: prefix.count + wire.count)
            _ = buffer.initialize(from: prefix + wire)
            alpn = buffer
        }
        guard kk_ssl_ctx_set_min_tls12(context) == 1 else { throw TLSError.fromQueue("SSL_CTX_set_min_proto_version") }
        // Writes go to a memory BIO and always complete; a buffer may move between a retried write and the
        // next. Idle connections give their read/write buffers back.
        _ = kk_ssl_ctx_set_mode(
            context, Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS)
        )
        // No TLS 1.2 renegotiation: a client cannot make the server redo handshakes on an open connection.
        kk_ssl_ctx_no_renegotiation(context)
        if let alpn, role == .server {
            kk_ssl_ctx_set_alpn_select(context, alpn.baseAddress)
        }
    }

    deinit {
        SSL_CTX_free(context)
        alpn?.deallocate()
    }

    /// A server context: the certificate chain and private key (PEM files), ALPN `protocols` in order of
    /// preference, and with `clientCA` a client certificate asked for: a connection may present one, which
    /// must then chain to that CA (PEM), or none.
    package static func server(
        certificateChainFile: String, privateKeyFile: String, clientCAFile: String? = nil,
        applicationProtocols: [String], shutdownTimeoutNanoseconds: Int64 = 250_000_000
    ) throws(TLSError) -> TLSContext {
        let tls = try TLSContext(
            role: .server, alpn: applicationProtocols, serverName: nil,
            shutdownTimeoutNanoseconds: shutdownTimeoutNanoseconds)
        try tls.use(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile)
        // Resumed sessions (libcurl resumes on every new connection) are looked up under this context; without
        // one, a server that verifies peers fails each resumption ("session id context uninitialized").
        let sessionContext = Array("kkpush".utf8)
        guard SSL_CTX_set_session_id_context(tls.context, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw TLSError.fromQueue("SSL_CTX_set_session_id_context")
        }
        if let clientCAFile {
            guard SSL_CTX_load_verify_locations(tls.context, clientCAFile, nil) == 1 else {
                throw TLSError.fromQueue("reading the client CA \(clientCAFile)")
            }
            // Asked for, not required (no SSL_VERIFY_FAIL_IF_NO_PEER_CERT): token-based clients send none.
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, nil)
        }
        return tls
    }

    /// A client context trusting the CA certificates in `trustRootsFile` (PEM), offering ALPN `protocols`,
    /// and presenting the certificate in `certificateChainFile` with `privateKeyFile` (PEM) if given. The chain
    /// is verified; the host name is not (the tests connect to 127.0.0.1 by address).
    package static func client(
        trustRootsFile: String, applicationProtocols: [String], serverName: String? = nil,
        certificateChainFile: String? = nil, privateKeyFile: String? = nil
    ) throws(TLSError) -> TLSContext {
        let tls = try TLSContext(
            role: .client, alpn: applicationProtocols, serverName: serverName, shutdownTimeoutNanoseconds: 250_000_000)
        if let certificateChainFile, let privateKeyFile {
            try tls.use(certificateChainFile: certificateChainFile, privateKeyFile: privateKeyFile)
        }
        guard SSL_CTX_load_verify_locations(tls.context, trustRootsFile, nil) == 1 else {
            throw TLSError.fromQueue("reading the trust roots \(trustRootsFile)")
        }
        SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, nil)
        return tls
    }

    private func use(certificateChainFile: String, privateKeyFile: String) throws(TLSError) {
        guard SSL_CTX_use_certificate_chain_file(context, certificateChainFile) == 1 else {
            throw TLSError.fromQueue("reading the certificate chain \(certificateChainFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError.fromQueue("reading the private key \(privateKeyFile)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            // OpenSSL drops the certificate when the key does not match it, and then says only "no certificate
            // assigned".
            TLSError.clearQueue()
            throw TLSError(
                operation: "setup",
                reasons: ["\(privateKeyFile) is not the key of the certificate in \(certificateChainFile)"])
        }
    }

    /// A new `SSL` for one connection, in accept or connect state.
    func makeConnection() throws(TLSError) -> OpaquePointer {
        TLSError.clearQueue()
        guard let ssl = SSL_new(context) else { throw TLSError.fromQueue("SSL_new") }
        switch role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            if let alpn, SSL_set_alpn_protos(ssl, alpn.baseAddress, UInt32(alpn.count)) != 0 {
                SSL_free(ssl)
                throw TLSError.fromQueue("SSL_set_alpn_protos")
            }
            if let serverName, kk_ssl_set_host_name(ssl, serverName) != 1 {
                SSL_free(ssl)
                throw TLSError.fromQueue("SSL_set_tlsext_host_name")
            }
        }
        return ssl
    }
}
