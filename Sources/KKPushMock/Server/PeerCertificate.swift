import KKPushAuth
import KKPushCore

/// What the mock needs from a client certificate: the environments it covers and its topics.
struct PeerCertificate: Sendable {
    var environments: Set<APNsEnvironment>
    var topics: Set<String>

    /// Reads the certificate (DER) with the shared certificate inspector.
    init(der: [UInt8]) throws {
        let info = try CertificateInfo(der: der)
        environments = Set(info.environments)
        var topics = Set(info.topics)
        if let bundle = info.bundleID { topics.insert(bundle) }
        self.topics = topics
    }
}
