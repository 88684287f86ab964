import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport
import Testing

@Suite("Client certificates")
struct CertificateTests {
    static let bundle = "nl.kantinekoning.app"

    struct Expectation: Sendable, CustomTestStringConvertible {
        var name: String
        var environments: [APNsEnvironment]
        var topics: [String]
        var cnPrefix: String
        var testDescription: String { name }
    }

    static let expectations: [Expectation] = [
        Expectation(
            name: "development", environments: [.sandbox], topics: [bundle],
            cnPrefix: "Apple Development IOS Push Services"),
        Expectation(
            name: "production", environments: [.production], topics: [bundle],
            cnPrefix: "Apple Production IOS Push Services"),
        Expectation(
            name: "universal", environments: [.sandbox, .production],
            topics: [bundle, bundle + ".voip", bundle + ".complication"], cnPrefix: "Apple Push Services"),
    ]

    enum Source: String, CaseIterable, Sendable { case pem, der, p12 }

    @Test("Certificates/ are read correctly from PEM, DER and .p12", arguments: expectations, Source.allCases)
    func inspect(expectation: Expectation, source: Source) async throws {
        let crt = Fixtures.path("client-\(expectation.name).crt")
        let info: CertificateInfo
        switch source {
        case .pem: info = try CertificateInfo(pem: String(contentsOfFile: crt, encoding: .utf8))
        case .der:
            let der = try await run(["openssl", "x509", "-in", crt, "-outform", "DER"])
            #expect(der.status == 0)
            info = try CertificateInfo(der: [UInt8](der.stdout))
        case .p12:
            info = try ClientCredential.loadPKCS12(
                path: Fixtures.path("client-\(expectation.name).p12"), password: "kkpush"
            ).info
        }
        #expect(info.bundleID == Self.bundle)
        #expect(info.commonName == "\(expectation.cnPrefix): \(Self.bundle)")
        #expect(info.subject.hasPrefix("UID=\(Self.bundle), CN=\(expectation.cnPrefix)"))
        #expect(info.environments == expectation.environments)
        #expect(info.topics == expectation.topics)
        #expect(info.issuer.contains("kkpush test Apple WWDR CA"))
        #expect(info.notBefore < info.notAfter)
        // Valid in the middle of its validity, with no warnings.
        let middle = info.notBefore.addingTimeInterval(info.notAfter.timeIntervalSince(info.notBefore) / 2)
        #expect(info.problems(now: middle).isEmpty)
    }

    @Test("The universal certificate's topic kinds")
    func topicKinds() throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("client-universal.crt"))
        #expect(
            info.topicEntries == [
                CertificateTopic(topic: Self.bundle, kind: "app"),
                CertificateTopic(topic: Self.bundle + ".voip", kind: "voip"),
                CertificateTopic(topic: Self.bundle + ".complication", kind: "complication"),
            ])
    }

    @Test("Dates match what openssl reports", arguments: ["development", "expired", "expiring-soon"])
    func dates(name: String) async throws {
        let path = Fixtures.path("client-\(name).crt")
        let info = try CertificateInfo(contentsOfFile: path)
        let result = try await run(["openssl", "x509", "-in", path, "-noout", "-enddate", "-serial"])
        #expect(result.status == 0)
        // notAfter=Oct 17 19:37:55 2026 GMT
        let line = try #require(result.stdoutText.split(separator: "\n").first { $0.hasPrefix("notAfter=") })
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        let text = line.dropFirst("notAfter=".count).split(separator: " ", omittingEmptySubsequences: true).joined(
            separator: " ")
        #expect(formatter.date(from: text) == info.notAfter)
        #expect(result.stdoutText.contains("serial=\(info.serialNumber ?? "?")"))
    }

    @Test("The expired certificate is an error, today and at any time after its end")
    func expired() throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("client-expired.crt"))
        #expect(info.notAfter < Date())
        for now in [Date(), info.notAfter, info.notAfter.addingTimeInterval(86_400 * 400)] {
            let problems = info.problems(now: now)
            #expect(problems.map(\.code.rawValue) == ["certificate-expired"])
            #expect(problems.hasErrors)
        }
    }

    @Test(
        "The expiring-soon certificate warns within 30 days of its end, not before",
        arguments: [1.0, 7, 29.9, 30.5, 60])
    func expiring(daysLeft: Double) throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("client-expiring-soon.crt"))
        #expect(info.notAfter.timeIntervalSince(info.notBefore) > 300 * 86_400)
        let problems = info.problems(now: info.notAfter.addingTimeInterval(-daysLeft * 86_400))
        if daysLeft <= 30 {
            #expect(problems.map(\.code.rawValue) == ["certificate-expiring"])
            #expect(problems.first?.severity == .warning)
        } else {
            #expect(problems.isEmpty)
        }
    }

    @Test("A non-APNs certificate (the mock server's) is flagged")
    func notAPNs() throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("server.crt"))
        #expect(info.environments.isEmpty)
        #expect(info.bundleID == nil)
        #expect(info.commonName == "localhost")
        #expect(!info.isCertificateAuthority)
        let problems = info.problems(now: info.notBefore.addingTimeInterval(60))
        #expect(problems.map(\.code.rawValue) == ["certificate-not-apns"])
        #expect(problems.first?.severity == .error)
    }

    @Test("A certificate authority's certificate is named as one, and is an error")
    func certificateAuthority() throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("ca.crt"))
        #expect(info.isCertificateAuthority)
        let problem = try #require(info.problems(now: info.notBefore.addingTimeInterval(60)).first)
        #expect(problem.code.rawValue == "certificate-not-apns" && problem.severity == .error)
        #expect(problem.message.contains("certificate authority"))
    }

    struct P12Case: Sendable, CustomTestStringConvertible {
        var file: String
        var password: String?
        var error: String?
        var testDescription: String { "\(file) password=\(password ?? "nil") → \(error ?? "ok")" }
    }

    static let p12Cases: [P12Case] = [
        P12Case(file: "client-universal.p12", password: "kkpush"),
        P12Case(file: "client-nopass.p12", password: nil),
        P12Case(file: "client-nopass.p12", password: ""),
        P12Case(file: "client-legacy.p12", password: "kkpush"),
        P12Case(file: "client-universal.p12", password: "wrong", error: "p12-password"),
        P12Case(file: "client-universal.p12", password: nil, error: "p12-password"),
        P12Case(file: "client-legacy.p12", password: "wrong", error: "p12-password"),
        P12Case(file: "client-universal.crt", password: "kkpush", error: "p12-unreadable"),
        P12Case(file: "missing.p12", password: "kkpush", error: "file-missing"),
    ]

    @Test(".p12 loading, including the legacy RC2 file and wrong passwords", arguments: p12Cases)
    func pkcs12(testCase: P12Case) throws {
        do {
            let credential = try ClientCredential.loadPKCS12(
                path: Fixtures.path(testCase.file), password: testCase.password)
            #expect(testCase.error == nil)
            #expect(credential.info.environments == [.sandbox, .production])
            #expect(credential.keyDescription == "RSA (2048-bit)")
            // The PEM it hands to libcurl is what the PEM files hold.
            let expected = try CertificateInfo(contentsOfFile: Fixtures.path("client-universal.crt"))
            #expect(
                try CertificateInfo(pem: credential.certificatePEM()).sha256Fingerprint == expected.sha256Fingerprint)
            #expect(try credential.privateKeyPEM().hasPrefix("-----BEGIN PRIVATE KEY-----"))
            #expect(try credential.chainPEM().contains("BEGIN CERTIFICATE"))
        } catch let error as KKPushError {
            #expect(error.code.rawValue == testCase.error, "\(error)")
            #expect(error.fix != nil)
        }
    }

    @Test("PEM certificate + key pairs load; a key of another certificate is refused")
    func pemPairs() async throws {
        let credential = try ClientCredential.loadPEM(
            certificatePath: Fixtures.path("client-production.crt"), keyPath: Fixtures.path("client-production.key"),
            password: nil)
        #expect(credential.info.environments == [.production])
        // Round trip through the openssl CLI: the key it exports is the certificate's key.
        try await withTemporaryDirectory { dir in
            try credential.privateKeyPEM().write(toFile: dir + "/key.pem", atomically: true, encoding: .utf8)
            try credential.certificatePEM().write(toFile: dir + "/cert.pem", atomically: true, encoding: .utf8)
            let a = try await run(["openssl", "pkey", "-in", dir + "/key.pem", "-pubout"])
            let b = try await run(["openssl", "x509", "-in", dir + "/cert.pem", "-noout", "-pubkey"])
            #expect(a.status == 0 && b.status == 0)
            #expect(a.stdoutText == b.stdoutText)
            // An encrypted copy of the key needs its password.
            let enc = try await run([
                "openssl", "pkey", "-in", dir + "/key.pem", "-aes256", "-passout", "pass:secret", "-out",
                dir + "/enc.pem",
            ])
            #expect(enc.status == 0)
            let cert = Fixtures.path("client-production.crt")
            #expect(
                try ClientCredential.loadPEM(certificatePath: cert, keyPath: dir + "/enc.pem", password: "secret").info
                    .bundleID == Self.bundle)
            #expect {
                try ClientCredential.loadPEM(certificatePath: cert, keyPath: dir + "/enc.pem", password: nil)
            } throws: {
                ($0 as? KKPushError)?.code.rawValue == "key-encrypted"
            }
            #expect {
                try ClientCredential.loadPEM(certificatePath: cert, keyPath: dir + "/enc.pem", password: "nope")
            } throws: {
                ($0 as? KKPushError)?.code.rawValue == "key-password"
            }
        }
        #expect {
            try ClientCredential.loadPEM(
                certificatePath: Fixtures.path("client-production.crt"),
                keyPath: Fixtures.path("client-development.key"), password: nil)
        } throws: { ($0 as? KKPushError)?.code.rawValue == "certificate-key-mismatch" }
    }

    @Test("CertificateInfo(contentsOfFile:) reads a .p12 with its password")
    func inspectP12() throws {
        let info = try CertificateInfo(contentsOfFile: Fixtures.path("client-expiring-soon.p12"), password: "kkpush")
        #expect(info.topics.count == 3)
        #expect(throws: KKPushError.self) {
            try CertificateInfo(contentsOfFile: Fixtures.path("client-expiring-soon.p12"))
        }
    }
}
