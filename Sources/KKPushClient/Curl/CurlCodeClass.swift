internal import CCurl

/// What a libcurl result code means to kkpush: the kind of failure and whether a retry may help.
struct CurlCodeClass {
    let transport: TransportError

    private static let retried: Set<Int> = [
        Int(CURLE_COULDNT_RESOLVE_HOST.rawValue), Int(CURLE_COULDNT_CONNECT.rawValue),
        Int(CURLE_GOT_NOTHING.rawValue), Int(CURLE_SEND_ERROR.rawValue), Int(CURLE_RECV_ERROR.rawValue),
        Int(CURLE_HTTP2.rawValue), Int(CURLE_HTTP2_STREAM.rawValue), Int(CURLE_PARTIAL_FILE.rawValue),
        Int(CURLE_OPERATION_TIMEDOUT.rawValue), Int(CURLE_SEND_FAIL_REWIND.rawValue),
    ]

    init(_ code: CURLcode) {
        if code == CURLE_OK {
            transport = .completed
            return
        }
        let kind: PushFailure.Kind
        switch code {
        case CURLE_OPERATION_TIMEDOUT: kind = .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            kind = .tls
        case CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_WRITE_ERROR:
            kind = .protocol
        default: kind = .connection
        }
        transport = TransportError(
            ok: false, timedOut: code == CURLE_OPERATION_TIMEDOUT, kind: kind,
            retried: Self.retried.contains(Int(code.rawValue)))
    }
}
