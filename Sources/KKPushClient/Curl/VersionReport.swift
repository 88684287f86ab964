package import KKPushAuth

/// What `version` reports: kkpush's own version and the libcurl (with nghttp2) and OpenSSL it runs against, as one
/// value a command line prints as text or JSON. Here, beside ``LibcurlInfo``, because KKPushClient is the module that
/// links both libraries (OpenSSL through KKPushAuth).
package struct VersionReport: Encodable, Sendable {
    /// kkpush's version (the caller's: the command line owns it).
    package var kkpush: String
    /// The libcurl loaded at run time.
    package var libcurl: LibcurlInfo
    /// The OpenSSL loaded at run time.
    package var openssl: OpenSSLInfo

    package init(kkpush: String, libcurl: LibcurlInfo, openssl: OpenSSLInfo) {
        self.kkpush = kkpush
        self.libcurl = libcurl
        self.openssl = openssl
    }

    /// The libraries this process runs against, with `kkpush` as its version.
    package static func current(kkpush: String) -> VersionReport {
        VersionReport(kkpush: kkpush, libcurl: .current, openssl: .current)
    }

    private enum CodingKeys: String, CodingKey {
        case kkpush, libcurl
        case libcurlSSL = "libcurl_ssl"
        case nghttp2, http2, openssl
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kkpush, forKey: .kkpush)
        try c.encode(libcurl.version, forKey: .libcurl)
        try c.encode(libcurl.sslVersion, forKey: .libcurlSSL)
        try c.encode(libcurl.nghttp2Version, forKey: .nghttp2)
        try c.encode(libcurl.hasHTTP2, forKey: .http2)
        try c.encode(openssl.versionText, forKey: .openssl)
    }
}
