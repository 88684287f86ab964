import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport
import Testing

/// The reports of `cert inspect`, `jwt verify`, `jwt decode` and `jwt scope`, as KKPushAuth makes them from the
/// committed test material: their fields and their JSON field names (the schema scripts read).
@Suite("Credential reports")
struct CommandReportTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("cert inspect: a universal certificate, its topics and times; its own key matches, another's does not")
    func certificate() throws {
        let report = try CertificateInspectionReport.inspect(
            file: Fixtures.path("client-universal.crt"), password: nil, passwordHint: "the password",
            keyFile: Fixtures.path("client-universal.key"), keyLabel: "(key)", now: Self.now)
        #expect(report.info.bundleID == "nl.kantinekoning.app" && report.info.environments.count == 2)
        #expect(!report.refused)
        let o = try Self.object(report)
        #expect(
            Set(o.keys) == [
                "subject", "common_name", "bundle_id", "topics", "topic_kinds", "environments", "not_before",
                "not_after", "issuer", "serial_number", "sha256_fingerprint", "warnings",
            ])
        #expect(o["environments"] as? [String] == report.info.environments.map(\.rawValue))
        #expect(o["bundle_id"] as? String == "nl.kantinekoning.app")
        #expect((o["not_after"] as? String)?.hasSuffix("Z") == true)
        let kinds = try #require(o["topic_kinds"] as? [[String: Any]])
        #expect(kinds.count == 3 && kinds.allSatisfy { Set($0.keys) == ["topic", "kind"] })
        #expect(
            kinds.contains { $0["topic"] as? String == "nl.kantinekoning.app.voip" && $0["kind"] as? String == "voip" })

        let mismatched = try CertificateInspectionReport.inspect(
            file: Fixtures.path("client-universal.crt"), password: nil, passwordHint: "the password",
            keyFile: Fixtures.path("client-production.key"), keyLabel: "(key)", now: Self.now)
        #expect(mismatched.refused && mismatched.problems.last?.code.rawValue == "certificate-key-mismatch")
    }

    @Test("cert inspect: a key with a .p12 is refused, naming the key by the caller's label")
    func keyWithP12() throws {
        let error = try #require(throws: KKPushError.self) {
            try CertificateInspectionReport.inspect(
                file: Fixtures.path("client-universal.p12"), password: "kkpush", passwordHint: "the password",
                keyFile: Fixtures.path("client-universal.key"), keyLabel: "(key)", now: Self.now)
        }
        #expect(error.code == .certKeyWithP12 && error.message.hasPrefix("(key) checks a PEM key"))
    }

    static func signed(keyID: String, teamID: String) throws -> String {
        try ProviderToken.sign(
            keyID: keyID, teamID: teamID, issuedAt: now,
            key: ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8")))
    }

    static func publicKey() throws -> ES256PublicKey {
        try ES256PublicKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
    }

    @Test("jwt verify: valid (a note due past APNs's hour), ids APNs rejects, and a failure, each with its fields")
    func verification() throws {
        let token = try Self.signed(keyID: "KKTEST0001", teamID: "KKTEAM0001")
        let keyFile = Fixtures.path("AuthKey_KKTEST0001.p8")
        let valid = ProviderTokenVerificationReport.verify(
            token, key: try Self.publicKey(), keyFile: keyFile, now: Self.now.addingTimeInterval(100), maxAge: 3600)
        #expect(valid.valid && valid.ageSeconds == 100 && !valid.olderThanAPNsAccepts)
        let o = try Self.object(valid)
        #expect(Set(o.keys) == ["valid", "signature_valid", "kid", "iss", "iat", "age_seconds", "note"])
        #expect(o["kid"] as? String == "KKTEST0001" && o["iat"] as? Int == 1_800_000_000 && o["note"] is NSNull)

        let old = ProviderTokenVerificationReport.verify(
            token, key: try Self.publicKey(), keyFile: keyFile, now: Self.now.addingTimeInterval(5000), maxAge: 7200)
        #expect(old.valid && old.olderThanAPNsAccepts)

        let swapped = ProviderTokenVerificationReport.verify(
            try Self.signed(keyID: "KKTEAM0001", teamID: "KKTEST0001"), key: try Self.publicKey(), keyFile: keyFile,
            now: Self.now, maxAge: 3600)
        #expect(!swapped.valid && !swapped.idProblems.isEmpty)
        let s = try Self.object(swapped)
        #expect(
            Set(s.keys) == [
                "valid", "signature_valid", "kid", "iss", "iat", "age_seconds", "code", "message", "fix",
                "apns_reason", "problems",
            ])
        #expect(s["apns_reason"] as? String == "InvalidProviderToken" && s["signature_valid"] as? Bool == true)

        let expired = ProviderTokenVerificationReport.verify(
            token, key: try Self.publicKey(), keyFile: keyFile, now: Self.now.addingTimeInterval(5000), maxAge: 3600)
        let e = try Self.object(expired)
        #expect(Set(e.keys) == ["valid", "signature_valid", "code", "message", "apns_reason"])
        #expect(e["apns_reason"] as? String == "ExpiredProviderToken" && e["signature_valid"] as? Bool == true)
        let malformed = ProviderTokenVerificationReport.verify(
            "a.b", key: try Self.publicKey(), keyFile: nil, now: Self.now, maxAge: 3600)
        #expect(try Self.object(malformed)["signature_valid"] is NSNull)
    }

    @Test("jwt decode: header, claims, age and the signature's form; a token that does not decode has one warning")
    func decode() throws {
        let report = ProviderTokenDecodeReport.decode(
            try Self.signed(keyID: "KKTEST0001", teamID: "KKTEAM0001"), now: Self.now.addingTimeInterval(1500))
        #expect(report.ageSeconds == 1500 && report.hmacAlgorithm == nil && report.problems.isEmpty)
        #expect(report.signatureForm == "raw r‖s (64 bytes, as APNs requires)")
        let o = try Self.object(report)
        #expect(
            Set(o.keys) == [
                "header", "claims", "issued_at", "age_seconds", "signature_bytes", "signature_form", "warnings", "note",
            ])
        #expect((o["header"] as? [String: Any])?["kid"] as? String == "KKTEST0001")
        #expect(o["signature_bytes"] as? Int == 64 && o["issued_at"] as? String == "2027-01-15T08:00:00Z")

        let broken = ProviderTokenDecodeReport.decode("nonsense", now: Self.now)
        #expect(broken.failure != nil)
        let b = try Self.object(broken)
        #expect(Set(b.keys) == ["header", "claims", "age_seconds", "warnings"] && b["header"] is NSNull)
        #expect((b["warnings"] as? [[String: Any]])?.first?["code"] as? String == broken.failure?.code.rawValue)
    }

    @Test("jwt scope: the credential that serves, the one that may not (with APNs's reason), an unknown Key ID")
    func scope() throws {
        try withTemporaryDirectory(prefix: "kkpush-scope") { dir in
            let file = dir + "/credentials.json"
            let entries: [[String: Any]] = [
                [
                    "name": "main", "team_id": "KKTEAM0001", "key_id": "KKTEST0001",
                    "key_file": Fixtures.path("AuthKey_KKTEST0001.p8"), "environments": ["production"],
                    "topics": ["nl.kantinekoning.app"],
                ]
            ]
            try JSONSerialization.data(withJSONObject: ["credentials": entries]).write(
                to: URL(fileURLWithPath: file))
            let serves = try CredentialScopeReport.judge(
                credentialsFile: file, credential: nil, keyID: "KKTEST0001", topic: "nl.kantinekoning.app",
                environment: .production)
            #expect(serves.serves && serves.chosen?.name == "main" && serves.servers == ["main"])
            let o = try Self.object(serves)
            #expect(Set(o.keys) == ["topic", "environment", "servers", "credential", "serves", "problem"])
            #expect(o["credential"] as? String == "main" && o["problem"] is NSNull)

            let sandbox = try CredentialScopeReport.judge(
                credentialsFile: file, credential: "main", keyID: nil, topic: "nl.kantinekoning.app",
                environment: .sandbox)
            #expect(!sandbox.serves && sandbox.problem?.kind == .environment)
            let problem = try #require(try Self.object(sandbox)["problem"] as? [String: Any])
            #expect(Set(problem.keys) == ["code", "message", "fix", "apns_reason"])
            #expect(problem["apns_reason"] as? String == "BadEnvironmentKeyIdInToken")

            let unknown = try #require(throws: KKPushError.self) {
                try CredentialScopeReport.judge(
                    credentialsFile: file, credential: nil, keyID: "NOPE000000", topic: "nl.kantinekoning.app",
                    environment: .production)
            }
            #expect(unknown.code == .unknownCredential && unknown.fix?.contains("(jwtDecodeCommand)") == true)
        }
    }
}
