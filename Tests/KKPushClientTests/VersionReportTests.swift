import Foundation
import KKPushAuth
import KKPushClient
import Testing

/// `version`'s report, as KKPushClient makes it: the libraries this process runs against, and its JSON field names.
@Suite("Version report")
struct VersionReportTests {
    @Test("The loaded libcurl (HTTP/2 and TLS, which APNs needs) and OpenSSL, under their stable field names")
    func current() throws {
        let report = VersionReport.current(kkpush: "0.9.9")
        #expect(report.libcurl.hasHTTP2 && report.libcurl.hasSSL)
        #expect(report.openssl.versionText.hasPrefix("OpenSSL"))
        let o = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(Set(o.keys) == ["kkpush", "libcurl", "libcurl_ssl", "nghttp2", "http2", "openssl"])
        #expect(o["kkpush"] as? String == "0.9.9" && o["http2"] as? Bool == true)
        #expect(o["libcurl"] as? String == report.libcurl.version && o["nghttp2"] as? String != nil)
        #expect(o["openssl"] as? String == report.openssl.versionText)
    }
}
