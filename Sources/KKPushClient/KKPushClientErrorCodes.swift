public import KKPushCore

// The error codes only KKPushClient throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `broadcast-preflight` (KKPushClient)
    public static let broadcastPreflight = Self("broadcast-preflight", kind: .verdict)
    /// `broadcast-transport` (KKPushClient)
    public static let broadcastTransport = Self("broadcast-transport", kind: .failed)
    /// `client-loop-threads` (KKPushClient)
    public static let clientLoopThreads = Self("client-loop-threads", kind: .usage)
    /// `client-max-connections` (KKPushClient)
    public static let clientMaxConnections = Self("client-max-connections", kind: .usage)
    /// `client-max-in-flight` (KKPushClient)
    public static let clientMaxInFlight = Self("client-max-in-flight", kind: .usage)
    /// `client-proxy-url` (KKPushClient)
    public static let clientProxyUrl = Self("client-proxy-url", kind: .usage)
    /// `client-timeout` (KKPushClient)
    public static let clientTimeout = Self("client-timeout", kind: .usage)
    /// `curl-global-init` (KKPushClient)
    public static let curlGlobalInit = Self("curl-global-init", kind: .failed)
    /// `curl-init` (KKPushClient)
    public static let curlInit = Self("curl-init", kind: .failed)
    /// `curl-multi-setopt` (KKPushClient)
    public static let curlMultiSetopt = Self("curl-multi-setopt", kind: .failed)
    /// `curl-out-of-memory` (KKPushClient)
    public static let curlOutOfMemory = Self("curl-out-of-memory", kind: .failed)
    /// `curl-setopt` (KKPushClient)
    public static let curlSetopt = Self("curl-setopt", kind: .failed)
    /// `libcurl-no-http2` (KKPushClient)
    public static let libcurlNoHttp2 = Self("libcurl-no-http2", kind: .verdict)
    /// `libcurl-no-tls` (KKPushClient)
    public static let libcurlNoTls = Self("libcurl-no-tls", kind: .verdict)
}
