package import Foundation
package import KKPushCore

/// What `cert inspect` reports about an APNs client certificate: what it is (``CertificateInfo``) and what is wrong
/// with it at a time, including a PEM key that does not belong to it. One value a command line prints as text or
/// JSON; its coding keys are the stable field names (`warnings` holds the problems).
package struct CertificateInspectionReport: Encodable, Sendable {
    package var info: CertificateInfo
    /// What is wrong, errors first as ``CertificateInfo/problems(now:)`` orders them, then a key mismatch.
    package var problems: [Problem]

    /// True when APNs would refuse the certificate (or the key is not its key).
    package var refused: Bool { problems.hasErrors }

    package init(info: CertificateInfo, problems: [Problem]) {
        self.info = info
        self.problems = problems
    }

    /// Reads the certificate `file` (PEM, DER or PKCS#12 with `password`) and judges it at `now`; with `keyFile`, checks
    /// that the PEM key belongs to it. `passwordHint` says how the caller takes a password (the fix of a wrong one);
    /// `keyLabel` is how the caller names the key file. A key given with a .p12 (which holds its own key) throws
    /// ``KKPushError/Code/certKeyWithP12``; an unreadable file, a wrong password or key throw as the readers do.
    package static func inspect(
        file: String, password: String?, passwordHint: String, keyFile: String?, keyLabel: String, now: Date
    ) throws -> CertificateInspectionReport {
        let info = try CertificateInfo(contentsOfFile: file, password: password, passwordHint: passwordHint)
        var keyProblems: [Problem] = []
        if let keyFile {
            do {
                _ = try ClientCredential.loadPEM(
                    certificatePath: file, keyPath: keyFile, password: password, passwordHint: passwordHint,
                    keyLabel: keyLabel)
            } catch let error as KKPushError where error.code == .certificateKeyMismatch {
                keyProblems.append(
                    Problem(.error, code: Problem.Code(error.code), message: error.message, fix: error.fix ?? ""))
            } catch let error as KKPushError where error.code.rawValue.hasPrefix("certificate-") {
                // The file read as a certificate above, but not as a PEM or DER one: it is a .p12, which carries its
                // own key (already checked against its certificate when it was opened).
                throw KKPushError(
                    code: .certKeyWithP12,
                    message:
                        "\(keyLabel) checks a PEM key against a PEM or DER certificate, but \(file) is a .p12, which holds its own key.",
                    fix:
                        "Leave out \(keyLabel) for a .p12 (its key is checked when it opens), or give the PEM certificate with its key."
                )
            }
        }
        return CertificateInspectionReport(info: info, problems: info.problems(now: now) + keyProblems)
    }

    private enum CodingKeys: String, CodingKey {
        case subject
        case commonName = "common_name"
        case bundleID = "bundle_id"
        case topics
        case topicKinds = "topic_kinds"
        case environments
        case notBefore = "not_before"
        case notAfter = "not_after"
        case issuer
        case serialNumber = "serial_number"
        case sha256Fingerprint = "sha256_fingerprint"
        case warnings
    }

    /// A topic and its kind (`null` when the certificate names none).
    private struct TopicKind: Encodable {
        var entry: CertificateTopic
        enum CodingKeys: String, CodingKey { case topic, kind }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(entry.topic, forKey: .topic)
            try c.encode(entry.kind, forKey: .kind)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(info.subject, forKey: .subject)
        try c.encode(info.commonName, forKey: .commonName)
        try c.encode(info.bundleID, forKey: .bundleID)
        try c.encode(info.topics, forKey: .topics)
        try c.encode(info.topicEntries.map(TopicKind.init), forKey: .topicKinds)
        try c.encode(info.environments.map(\.rawValue), forKey: .environments)
        // RFC 3339 text whatever the encoder's date strategy: the field's form is part of the schema.
        try c.encode(info.notBefore.formatted(.iso8601), forKey: .notBefore)
        try c.encode(info.notAfter.formatted(.iso8601), forKey: .notAfter)
        try c.encode(info.issuer, forKey: .issuer)
        try c.encode(info.serialNumber, forKey: .serialNumber)
        try c.encode(info.sha256Fingerprint, forKey: .sha256Fingerprint)
        try c.encode(problems, forKey: .warnings)
    }
}
