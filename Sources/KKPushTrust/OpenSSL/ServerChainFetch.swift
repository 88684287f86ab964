internal import COpenSSL
import Foundation
import KKPushCore

/// One TLS client handshake on a socket BIO, the way an APNs provider makes it (SNI, ALPN `h2`, TLS 1.2 or later),
/// that verifies nothing: it only collects what the server serves. The chain is judged afterwards
/// (``ChainVerification``), so a chain the trust store refuses is still shown whole.
final class ServerChainFetch {
    /// The served chain (leaf first; each `X509` up-referenced, freed on deinit), the TLS version and ALPN.
    let chain: [OpaquePointer]
    let tlsVersion: String
    let alpn: String?

    private init(chain: [OpaquePointer], tlsVersion: String, alpn: String?) {
        self.chain = chain
        self.tlsVersion = tlsVersion
        self.alpn = alpn
    }

    deinit { for certificate in chain { X509_free(certificate) } }

    /// Connects to `host`:`port` within `timeout` seconds (connect and handshake together), sending `serverName`
    /// as SNI, and returns what the server served. Throws ``KKPushError/Code/trustConnect`` or
    /// ``KKPushError/Code/trustHandshake``.
    static func fetch(host: String, port: Int, serverName: String?, timeout: Int) throws -> ServerChainFetch {
        ERR_clear_error()
        let deadline = Int(Date().timeIntervalSince1970) + timeout
        let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard let bio = BIO_new_connect(target) else {
            throw failure(.trustConnect, "OpenSSL could not make a connection to \(target).")
        }
        var bioOwned = true
        defer { if bioOwned { BIO_free_all(bio) } }
        _ = kk_bio_set_nbio(bio, 1)
        // Not BIO_do_connect_retry: it retries a refused connection until the timeout. A connection in progress is
        // waited for; a refused or unreachable one fails at once.
        while kk_bio_do_connect(bio) != 1 {
            guard kk_bio_should_retry(bio) != 0 else {
                throw failure(
                    .trustConnect, "No connection to \(target)", fix: connectFix, queue: true)
            }
            guard BIO_wait(bio, deadline, 50) == 1 else {
                throw failure(.trustConnect, "No connection to \(target) within \(timeout) s.", fix: connectFix)
            }
        }
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw failure(.trustHandshake, "OpenSSL could not make a TLS context.")
        }
        defer { SSL_CTX_free(context) }
        _ = kk_ssl_ctx_set_min_tls12(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        guard let ssl = SSL_new(context) else { throw failure(.trustHandshake, "OpenSSL could not make a connection.") }
        defer { SSL_free(ssl) }
        let alpnWire: [UInt8] = [2] + Array("h2".utf8)
        _ = SSL_set_alpn_protos(ssl, alpnWire, UInt32(alpnWire.count))
        if let serverName { _ = kk_ssl_set_host_name(ssl, serverName) }
        SSL_set_bio(ssl, bio, bio)
        bioOwned = false  // SSL_free frees it now
        SSL_set_connect_state(ssl)
        while true {
            let result = SSL_connect(ssl)
            if result == 1 { break }
            let error = SSL_get_error(ssl, result)
            guard error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE else {
                throw failure(
                    .trustHandshake, "\(target) accepted the connection but the TLS handshake failed",
                    fix:
                        "Check that the port speaks TLS 1.2 or later (APNs: 443 or 2197), and that no proxy answers in its place.",
                    queue: true)
            }
            let ready = BIO_wait(SSL_get_rbio(ssl), deadline, 50)
            guard ready == 1 else {
                throw failure(
                    .trustHandshake, "\(target) did not finish the TLS handshake within \(timeout) s.",
                    fix: "Check that the port speaks TLS (APNs: 443 or 2197) and that nothing holds the connection.")
            }
        }
        var chain: [OpaquePointer] = []
        if let stack = SSL_get_peer_cert_chain(ssl) {
            for index in 0..<kk_sk_x509_num(stack) {
                guard let certificate = kk_sk_x509_value(stack, index) else { continue }
                X509_up_ref(certificate)
                chain.append(certificate)
            }
        }
        var selected: UnsafePointer<UInt8>? = nil
        var selectedLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &selectedLength)
        let alpn = selected.map {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(selectedLength)), as: UTF8.self)
        }
        let version = String(cString: SSL_get_version(ssl))
        // A polite close; its answer is not waited for.
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        guard !chain.isEmpty else {
            for certificate in chain { X509_free(certificate) }
            throw failure(.trustHandshake, "\(target) finished the handshake without a certificate.")
        }
        return ServerChainFetch(chain: chain, tlsVersion: version, alpn: alpn)
    }

    private static let connectFix =
        "Check the host and port, that the name resolves, and that nothing (a firewall, a proxy that must be tunnelled through) blocks the port."

    private static func failure(
        _ code: KKPushError.Code, _ message: String, fix: String? = nil, queue: Bool = false
    ) -> KKPushError {
        var reasons: [String] = []
        var data: UnsafePointer<CChar>? = nil
        var flags: Int32 = 0
        // With each entry's data, where OpenSSL keeps the system's words ("Name or service not known").
        while case let error = ERR_get_error_all(nil, nil, nil, &data, &flags), error != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(error, &text, text.count)
            var reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let data, flags & ERR_TXT_STRING != 0, data.pointee != 0 { reason += " (\(String(cString: data)))" }
            reasons.append(reason)
        }
        let detail = queue && !reasons.isEmpty ? " (\(reasons.joined(separator: "; ")))." : queue ? "." : ""
        return KKPushError(
            code: code, message: message + detail,
            fix: fix ?? "Check the host and port; run the check again.")
    }
}
