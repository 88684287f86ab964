public import KKPushCore

// The error codes only KKPushClient throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `broadcast-preflight` (KKPushClient)
    public static let broadcastPreflight: Self = "broadcast-preflight"
    /// `broadcast-transport` (KKPushClient)
    public static let broadcastTransport: Self = "broadcast-transport"
    /// `client-loop-threads` (KKPushClient)
    public static let clientLoopThreads: Self = "client-loop-threads"
    /// `client-max-connections` (KKPushClient)
    public static let clientMaxConnections: Self = "client-max-connections"
    /// `client-max-in-flight` (KKPushClient)
    public static let clientMaxInFlight: Self = "client-max-in-flight"
    /// `client-proxy-url` (KKPushClient)
    public static let clientProxyUrl: Self = "client-proxy-url"
    /// `client-timeout` (KKPushClient)
    public static let clientTimeout: Self = "client-timeout"
    /// `curl-global-init` (KKPushClient)
    public static let curlGlobalInit: Self = "curl-global-init"
    /// `curl-init` (KKPushClient)
    public static let curlInit: Self = "curl-init"
    /// `curl-multi-setopt` (KKPushClient)
    public static let curlMultiSetopt: Self = "curl-multi-setopt"
    /// `curl-out-of-memory` (KKPushClient)
    public static let curlOutOfMemory: Self = "curl-out-of-memory"
    /// `curl-setopt` (KKPushClient)
    public static let curlSetopt: Self = "curl-setopt"
    /// `libcurl-no-http2` (KKPushClient)
    public static let libcurlNoHttp2: Self = "libcurl-no-http2"
    /// `libcurl-no-tls` (KKPushClient)
    public static let libcurlNoTls: Self = "libcurl-no-tls"
}
