import Foundation
import KKPushAuth
import Testing

@testable import KKPushBench

/// The provider-token signing benchmark (`jwt bench`), as KKPushBench runs it: real ES256 signatures on this thread,
/// its rates and its JSON field names.
@Suite("Signing benchmark")
struct SigningBenchReportTests {
    @Test("A short run signs tokens, rates per CPU and per wall-clock second; no OpenSSL figure unless asked")
    func shortRun() throws {
        let report = try SigningBenchReport.run(
            key: try ES256PrivateKey.generate(), seconds: 0.1, compareOpenSSL: false)
        #expect(report.signs >= 256 && report.signs % 256 == 0)
        #expect(report.seconds >= 0.1 && report.cpuSeconds > 0)
        #expect(report.signPerSecond > 0 && report.signPerWallSecond > 0)
        #expect(report.opensslSignPerSecond == nil && report.ratioToOpenSSL == nil)
        let o = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        #expect(
            Set(o.keys) == [
                "signs", "seconds", "cpu_seconds", "sign_per_second", "sign_per_wall_second",
                "openssl_sign_per_second", "ratio_to_openssl",
            ])
        #expect(o["signs"] as? Int == report.signs && o["openssl_sign_per_second"] is NSNull)
        #expect(o["sign_per_second"] as? Double == report.signPerSecond.rounded())
    }

    @Test("A comparison with OpenSSL's own figure, as `openssl speed` reports it")
    func comparedWithOpenSSL() throws {
        let rate = try SigningBenchReport.opensslSignRate(seconds: 1)
        #expect(rate > 0)
        var report = try SigningBenchReport.measure(key: try ES256PrivateKey.generate(), seconds: 0.1)
        report.opensslSignPerSecond = rate
        #expect(report.ratioToOpenSSL == report.signPerSecond / rate)
    }
}
