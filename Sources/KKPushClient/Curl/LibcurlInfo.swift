internal import CCurl
import KKPushCore

/// What the libcurl kkpush runs against can do.
public struct LibcurlInfo: Sendable, Codable, Equatable {
    /// libcurl's version, for example `7.88.1`.
    public var version: String
    /// The TLS library libcurl uses, for example `OpenSSL/3.0.19`.
    public var sslVersion: String?
    /// The nghttp2 version, if libcurl was built with it.
    public var nghttp2Version: String?
    /// True if libcurl supports HTTP/2.
    public var hasHTTP2: Bool
    /// True if libcurl supports TLS.
    public var hasSSL: Bool

    /// The libcurl loaded at run time (not the headers kkpush was compiled against).
    public static var current: LibcurlInfo {
        Libcurl.globalInit()
        guard let info = kk_curl_version_info() else {
            return LibcurlInfo(version: "unknown", sslVersion: nil, nghttp2Version: nil, hasHTTP2: false, hasSSL: false)
        }
        let data = info.pointee
        return LibcurlInfo(
            version: data.version.map { String(cString: $0) } ?? "unknown",
            sslVersion: data.ssl_version.map { String(cString: $0) },
            nghttp2Version: data.nghttp2_version.map { String(cString: $0) },
            hasHTTP2: kk_curl_version_has_http2(info) != 0,
            hasSSL: kk_curl_version_has_ssl(info) != 0)
    }

    /// Throws a clear error if this libcurl cannot talk to APNs (no HTTP/2 or no TLS).
    public func requireAPNsSupport() throws {
        if !hasSSL {
            throw KKPushError(
                code: .libcurlNoTls,
                message:
                    "The libcurl the client runs against (\(version)) has no TLS support; APNs needs HTTP/2 over TLS.",
                fix: "Install libcurl with OpenSSL: apt-get install libcurl4-openssl-dev")
        }
        if !hasHTTP2 {
            throw KKPushError(
                code: .libcurlNoHttp2,
                message:
                    "The libcurl the client runs against (\(version)) was built without HTTP/2 (nghttp2); APNs speaks HTTP/2 only.",
                fix:
                    "Install a libcurl built with nghttp2: apt-get install libcurl4-openssl-dev libnghttp2-14, then rebuild kkpush"
            )
        }
    }
}

/// Process-wide libcurl set-up.
public enum Libcurl {
    private static let initialized: Bool = {
        curl_global_init(kk_curl_global_all()) == CURLE_OK
    }()

    /// Runs `curl_global_init` exactly once per process; call before any other libcurl use.
    /// Returns false if libcurl could not initialise.
    @discardableResult
    public static func globalInit() -> Bool { initialized }
}
