import Foundation
import KKPushAuth
import KKPushCore
import KKPushMock
import KKPushSystem
import KKPushTestSupport
import Testing

/// `mock certs`' report, as KKPushMock makes it: a server certificate from the committed test CA written into a
/// folder, its fields and JSON field names, and the folder's rules (created, never overwritten without asking).
@Suite("Mock certificate report")
struct MockCertificateReportTests {
    @Test("Issued for a name and an address, loopback added, under the stable field names; a second run refused")
    func issue() throws {
        try withTemporaryDirectory(prefix: "kkpush-mock-certs") { dir in
            let out = OutputFolder(dir + "/certs", label: "(out)", forceLabel: "(force)")
            let report = try MockCertificateReport.issue(
                hostNames: ["Mock.Example.Test"], addresses: ["10.0.0.2"], loopback: true, days: 30,
                caFolder: Repository.certificates.path, out: out, replace: false)
            #expect(report.hostNames == ["mock.example.test", "localhost"])
            #expect(report.addresses == ["10.0.0.2", "127.0.0.1", "::1"])
            #expect(report.serveName == "Mock.Example.Test" && report.caFile.hasSuffix("/ca.crt"))
            let mode = try FileManager.default.attributesOfItem(atPath: report.privateKey)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let info = try CertificateInfo(contentsOfFile: report.certificate)
            #expect(abs(info.notAfter.timeIntervalSince(report.notAfter)) < 1)
            let o = try #require(
                try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
            #expect(
                Set(o.keys) == [
                    "certificate", "private_key", "ca_file", "host_names", "addresses", "serial", "not_after",
                ])
            #expect(o["serial"] as? String == report.serial && (o["not_after"] as? String)?.hasSuffix("Z") == true)

            let again = try #require(throws: KKPushError.self) {
                try MockCertificateReport.issue(
                    hostNames: ["mock.example.test"], addresses: [], loopback: false, days: 30,
                    caFolder: Repository.certificates.path, out: out, replace: false)
            }
            #expect(again.code == .outputExists)
        }
    }

    @Test("A certificates folder without the CA is named by the caller's label")
    func missingCA() throws {
        try withTemporaryDirectory(prefix: "kkpush-mock-certs") { dir in
            let error = try #require(throws: KKPushError.self) {
                try MockCertificateReport.issue(
                    hostNames: ["mock.example.test"], addresses: [], loopback: true, days: 30, caFolder: dir,
                    caFolderLabel: "(certs)", out: OutputFolder(dir + "/out"), replace: false)
            }
            #expect(error.message.contains("(certs)"))
        }
    }
}
