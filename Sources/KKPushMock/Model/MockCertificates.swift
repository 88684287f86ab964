package import Foundation
import KKPushAuth
package import KKPushCore
package import KKPushSystem

/// A server certificate for the mock under other names and addresses, issued from the test CA (`ca.crt` and `ca.key`
/// of a certificates folder) and written with its key into a folder: what `mock certs` makes
/// (``issue(hostNames:addresses:loopback:days:caFolder:out:replace:)``). One value a command line prints as text or
/// JSON; its coding keys are the stable field names.
package struct MockCertificateReport: Encodable, Sendable {
    /// The certificate file written.
    package var certificate: String
    /// The private key file written (mode 600).
    package var privateKey: String
    /// The CA certificate that signed it: what senders trust.
    package var caFile: String
    /// The certificate's DNS names and IP addresses (its subjectAltName), as it holds them.
    package var hostNames: [String]
    package var addresses: [String]
    /// Its serial number, hex.
    package var serial: String
    package var notAfter: Date
    /// The name a sender reaches the mock by, as given: the first host name, else the first address, else localhost.
    package var serveName: String

    /// Issues an EC P-256 serverAuth certificate for `hostNames` and `addresses` (and, with `loopback`, localhost,
    /// 127.0.0.1 and ::1) valid for `days`, signed by the CA in `caFolder` (nil: the certificates folder
    /// ``MockServerConfiguration/findCertificatesDirectory()`` finds; `caFolderLabel` names it in errors), and writes
    /// `server.crt` and `server.key` into `out`, replacing them only with `replace`.
    package static func issue(
        hostNames: [String], addresses: [String], loopback: Bool, days: Int, caFolder: String?,
        caFolderLabel: String = "(certs)", out: OutputFolder, replace: Bool
    ) throws -> MockCertificateReport {
        guard let folder = caFolder ?? MockServerConfiguration.findCertificatesDirectory() else {
            throw KKPushError(
                code: .fileMissing, message: "No Certificates folder with the test CA was found.",
                fix:
                    "Give \(caFolderLabel) DIR (a folder with ca.crt and ca.key), or run from the kkpush checkout.")
        }
        let caCertificate = folder + "/ca.crt"
        let certificatePEM = try InputFile.readText(
            caCertificate, what: "CA certificate", label: caFolderLabel, maximumSize: 1 << 20)
        let keyPEM = try InputFile.readText(
            folder + "/ca.key", what: "CA key", label: caFolderLabel, maximumSize: 1 << 20)
        try out.prepare(["server.crt", "server.key"], replace: replace)
        let (names, ips) = ServerCertificateIssuer.subjectNames(
            hostNames: hostNames, addresses: addresses, loopback: loopback)
        let issued = try ServerCertificateIssuer.issue(
            hostNames: names, addresses: ips, days: days, caCertificatePEM: certificatePEM, caKeyPEM: keyPEM)
        try out.write(issued.privateKeyPEM, to: "server.key", mode: 0o600)
        try out.write(issued.certificatePEM, to: "server.crt", mode: 0o644)
        // The report keeps the certificate's facts, never its key.
        return MockCertificateReport(
            certificate: out.file("server.crt"), privateKey: out.file("server.key"), caFile: caCertificate,
            hostNames: issued.hostNames, addresses: issued.addresses, serial: issued.serial, notAfter: issued.notAfter,
            serveName: hostNames.first ?? addresses.first ?? "localhost")
    }

    private enum CodingKeys: String, CodingKey {
        case certificate
        case privateKey = "private_key"
        case caFile = "ca_file"
        case hostNames = "host_names"
        case addresses
        case serial
        case notAfter = "not_after"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(certificate, forKey: .certificate)
        try c.encode(privateKey, forKey: .privateKey)
        try c.encode(caFile, forKey: .caFile)
        try c.encode(hostNames, forKey: .hostNames)
        try c.encode(addresses, forKey: .addresses)
        try c.encode(serial, forKey: .serial)
        try c.encode(notAfter.formatted(.iso8601), forKey: .notAfter)
    }
}
