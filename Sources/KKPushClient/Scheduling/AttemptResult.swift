import Foundation

/// What the transport reported about one finished attempt (filled in by `CurlTransfer`; no libcurl
/// types, so the scheduler can judge it and tests can make one).
struct AttemptResult {
    /// libcurl's result code (0: the transfer completed).
    var curlCode: Int
    var curlMessage: String
    /// What the code means to kkpush (see `CurlCodeClass`).
    var transport: TransportError
    /// The answer came over HTTP/1.0 or 1.1 (ALPN did not select h2).
    var isHTTP1: Bool
    var status: Int
    var requestBytesSent: Int
    /// libcurl's own account of the error (`CURLOPT_ERRORBUFFER`): the first failure of the transfer,
    /// more precise than the code's generic text (a TLS alert, the reason a stream closed).
    var detail: String
    /// The whole body was handed to libcurl on the last send: the request may have reached the server.
    var bodySent: Bool
    /// How many times libcurl sent the request in this attempt (more than 1 after a re-send it made on
    /// its own: a refused stream, which the protocol says the server never processed).
    var sends: Int
    /// libcurl wanted to send the request again after its connection failed with the request sent; kkpush
    /// refused (the server may have processed it) and retries it itself, flagged.
    var resendRefused: Bool
    /// The local port of the connection the last send went on (0 if none).
    var localPort: Int
    /// The number of the connection the last send went on (nil if none).
    var connection: Int? = nil
    /// When the last send started (monotonic ns).
    var sentNanos: UInt64
    /// `retry-after` from the answer, in seconds, if present and readable.
    var retryAfter: Double?
    var apnsID: String?
    var apnsUniqueID: String?
    var body: [UInt8]
}

/// What a transfer's result code means to kkpush, without the transport's own codes.
struct TransportError: Sendable, Equatable {
    /// The transfer completed (an answer may still be incomplete or unreadable).
    var ok: Bool
    /// The request timed out (`CURLE_OPERATION_TIMEDOUT`).
    var timedOut: Bool
    /// The failure's kind (`.protocol` for a completed transfer without a usable answer).
    var kind: PushFailure.Kind
    /// A failure worth a retry: the connection could not be made or broke (resolve, connect, send,
    /// receive, HTTP/2 framing, timeout).
    var retried: Bool

    static let completed = TransportError(ok: true, timedOut: false, kind: .protocol, retried: false)
}
