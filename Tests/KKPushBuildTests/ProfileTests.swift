import Foundation
import KKPushBuild
import KKPushCore
import KKPushTestSupport
import Testing

/// The profiles `Certificates/builds/` holds, made by its generator: signed by a test chain under "KKPush Test Apple
/// Root CA" as Apple signs real ones, so every field, every distribution and every signature state is checked here
/// without Apple's private keys.
@Suite("Provisioning profiles")
struct ProfileTests {
    static let builds = Repository.certificates.appendingPathComponent("builds")

    static func bytes(_ relativePath: String) throws -> Data {
        try Data(contentsOf: builds.appendingPathComponent(relativePath))
    }

    /// The test root, PEM as committed (``ProvisioningProfile/parse(_:what:trustedRoots:)`` takes PEM or DER).
    static func testRoot() throws -> Data { try bytes("ca/root.crt") }

    /// Reads `profiles/<name>`, checked against the test root unless `roots` says otherwise.
    static func profile(_ name: String, roots: [Data]? = nil) throws -> ProvisioningProfile {
        try ProvisioningProfile.parse(
            bytes("profiles/\(name)"), what: name, trustedRoots: roots ?? [testRoot()])
    }

    /// Runs `openssl` with `arguments` and `stdin`; its standard output.
    static func openssl(_ arguments: [String], stdin: Data? = nil) async throws -> Data {
        let result = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments, stdin: stdin, timeout: 30)
        guard result.status == 0 else {
            throw KKPushError(
                code: KKPushError.Code(rawValue: "test-openssl"),
                message: String(decoding: result.stderr, as: UTF8.self))
        }
        return result.stdout
    }

    /// A bare XML property list with `body` inside its top-level dictionary.
    static func plist(_ body: String) -> Data {
        Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>\(body)</dict></plist>
            """.utf8)
    }

    /// Expects `body` to throw a ``KKPushError`` whose code is `code` and whose message names `what`.
    static func expectError(
        _ code: String, naming what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("expected \(code), but it was read", sourceLocation: sourceLocation)
        } catch let error as KKPushError {
            #expect(error.code.rawValue == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(what), "\(error)", sourceLocation: sourceLocation)
            #expect(error.fix != nil, sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a KKPushError: \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: The default trust

    @Test("The default trust is Apple Root CA, and its DER hashes to the pinned fingerprint")
    func appleRootPin() async throws {
        #expect(ProvisioningProfile.appleRoots.count == 1)
        let der = try #require(ProvisioningProfile.appleRoots.first)
        let out = try await Self.openssl(
            ["x509", "-inform", "DER", "-noout", "-fingerprint", "-sha256", "-subject", "-nameopt", "RFC2253"],
            stdin: der)
        let text = String(decoding: out, as: UTF8.self)
        let fingerprint = ProvisioningProfile.appleRootCASHA256.enumerated()
            .map { ($0.offset > 0 && $0.offset % 2 == 0 ? ":" : "") + String($0.element) }.joined()
        #expect(
            text.contains("sha256 Fingerprint=\(fingerprint)") || text.contains("SHA256 Fingerprint=\(fingerprint)"))
        #expect(text.contains("subject=CN=Apple Root CA,OU=Apple Certification Authority,O=Apple Inc.,C=US"))
    }

    // MARK: Bad input

    @Test("An empty file, random bytes and a bare `0x30` are errors naming the file")
    func garbage() {
        Self.expectError("build-profile-empty", naming: "empty.mobileprovision") {
            _ = try ProvisioningProfile.parse(Data(), what: "empty.mobileprovision")
        }
        var generator = SystemRandomNumberGenerator()
        let random = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        var notCMS = random
        notCMS[0] = 0x42
        Self.expectError("build-profile-unreadable", naming: "random.mobileprovision") {
            _ = try ProvisioningProfile.parse(notCMS, what: "random.mobileprovision")
        }
        for prefix: [UInt8] in [[0x30], [0x30, 0x80], [0x30, 0x82, 0xFF, 0xFF], [0x30, 0x03, 0x02, 0x01, 0x01]] {
            Self.expectError("build-profile-unreadable", naming: "sequence.mobileprovision") {
                _ = try ProvisioningProfile.parse(Data(prefix), what: "sequence.mobileprovision")
            }
            var bytes = random
            bytes.replaceSubrange(0..<prefix.count, with: prefix)
            #expect(throws: KKPushError.self) {
                _ = try ProvisioningProfile.parse(bytes, what: "sequence.mobileprovision")
            }
        }
    }

    @Test("A CMS ContentInfo that is not SignedData is an error naming its type")
    func notSignedData() {
        // ContentInfo { id-data, [0] OCTET STRING "hi" }.
        let data = Data([
            0x30, 0x11, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01, 0xA0, 0x04, 0x04, 0x02, 0x68,
            0x69,
        ])
        Self.expectError("build-profile-not-signed-data", naming: "data.p7") {
            _ = try ProvisioningProfile.parse(data, what: "data.p7")
        }
        do {
            _ = try ProvisioningProfile.parse(data, what: "data.p7")
        } catch {
            #expect("\(error)".contains("pkcs7-data"))
        }
    }

    @Test("Bare property lists: read as unsigned; not a dictionary, unreadable, or a wrongly typed key is an error")
    func barePlists() throws {
        let bare = try ProvisioningProfile.parse(
            Self.plist(
                "<key>Name</key><string>Bare</string>"
                    + "<key>TeamIdentifier</key><array><string>KKTEAM0001</string></array>"),
            what: "bare.plist")
        #expect(bare.signature.state == .unsigned)
        #expect(bare.signature.chain.isEmpty)
        #expect(bare.name == "Bare")
        #expect(bare.teamIdentifiers == ["KKTEAM0001"])
        #expect(bare.developerCertificates.isEmpty)
        #expect(bare.provisionedDevices == nil)

        let array = Data(#"<?xml version="1.0"?><plist version="1.0"><array/></plist>"#.utf8)
        Self.expectError("build-profile-not-a-dictionary", naming: "array.plist") {
            _ = try ProvisioningProfile.parse(array, what: "array.plist")
        }
        let cut = Data(#"<?xml version="1.0"?><plist version="1.0"><dict><key>Name</key>"#.utf8)
        Self.expectError("build-profile-plist-unreadable", naming: "cut.plist") {
            _ = try ProvisioningProfile.parse(cut, what: "cut.plist")
        }
        let cases = [
            ("<key>Name</key><integer>3</integer>", "Name"),
            ("<key>TeamIdentifier</key><string>KKTEAM0001</string>", "TeamIdentifier"),
            ("<key>ProvisionedDevices</key><array><integer>1</integer></array>", "ProvisionedDevices[0]"),
            ("<key>ExpirationDate</key><string>2030</string>", "ExpirationDate"),
            ("<key>Entitlements</key><array/>", "Entitlements"),
            ("<key>Entitlements</key><dict><key>aps-environment</key><true/></dict>", "Entitlements.aps-environment"),
            ("<key>DeveloperCertificates</key><array><string>x</string></array>", "DeveloperCertificates[0]"),
        ]
        for (body, key) in cases {
            Self.expectError("build-profile-field-invalid", naming: key) {
                _ = try ProvisioningProfile.parse(Self.plist(body), what: "typed.plist")
            }
        }
        Self.expectError("build-profile-certificate-unreadable", naming: "DeveloperCertificates[0]") {
            _ = try ProvisioningProfile.parse(
                Self.plist("<key>DeveloperCertificates</key><array><data>AAEC</data></array>"), what: "cert.plist")
        }
    }

    // MARK: Distribution

    @Test(
        "Distribution is inferred as fastlane and app_info do, with the reason",
        arguments: [
            ("<key>ProvisionsAllDevices</key><true/>", ProfileDistribution.enterprise, "ProvisionsAllDevices true"),
            (
                "<key>ProvisionsAllDevices</key><true/><key>Platform</key><array><string>OSX</string></array>",
                .developerID, "macOS"
            ),
            (
                "<key>ProvisionedDevices</key><array><string>a</string></array>"
                    + "<key>Entitlements</key><dict><key>get-task-allow</key><true/></dict>",
                .development, "get-task-allow true"
            ),
            (
                "<key>ProvisionedDevices</key><array><string>a</string></array>"
                    + "<key>Entitlements</key><dict><key>get-task-allow</key><false/></dict>",
                .adHoc, "get-task-allow false"
            ),
            ("<key>ProvisionedDevices</key><array/>", .adHoc, "get-task-allow absent"),
            (
                "<key>ProvisionedDevices</key><array><string>a</string></array>"
                    + "<key>Platform</key><array><string>OSX</string></array>",
                .development, "macOS"
            ),
            (
                "<key>Entitlements</key><dict><key>get-task-allow</key><false/>"
                    + "<key>beta-reports-active</key><true/></dict>",
                .appStore, "No ProvisionedDevices"
            ),
            ("<key>Platform</key><array><string>OSX</string></array>", .appStore, "No ProvisionedDevices"),
        ])
    func distribution(body: String, expected: ProfileDistribution, reason: String) throws {
        let profile = try ProvisioningProfile.parse(Self.plist(body), what: "rules.plist")
        #expect(profile.distribution == expected)
        #expect(profile.distributionReason.contains(reason), "\(profile.distributionReason)")
        #expect(profile.distributionReason.hasSuffix("."))
    }

    @Test("The bundle ID is the application identifier without its team prefix, wildcards kept")
    func bundleIDs() throws {
        for (appID, bundleID) in [
            ("KKTEAM0001.nl.kantinekoning.app", "nl.kantinekoning.app"), ("KKTEAM0001.*", "*"),
            ("KKTEAM0001.nl.kantinekoning.*", "nl.kantinekoning.*"), ("OTHERPFX99.nl.x", "nl.x"),
        ] {
            let profile = try ProvisioningProfile.parse(
                Self.plist(
                    "<key>TeamIdentifier</key><array><string>KKTEAM0001</string></array>"
                        + "<key>Entitlements</key><dict><key>application-identifier</key>"
                        + "<string>\(appID)</string></dict>"),
                what: "ids.plist")
            #expect(profile.applicationIdentifier == appID)
            #expect(profile.bundleID == bundleID)
        }
        let noPrefix = try ProvisioningProfile.parse(
            Self.plist("<key>Entitlements</key><dict><key>application-identifier</key><string>nl.x.y</string></dict>"),
            what: "ids.plist")
        #expect(noPrefix.bundleID == nil)
    }
}

// MARK: - The generated profiles

/// What each generated profile holds, as `Certificates/builds/generate.py` writes it.
struct ProfileExpectation: Sendable, CustomTestStringConvertible {
    var file: String
    var name: String
    var distribution: ProfileDistribution
    var apsEnvironment: String?
    var getTaskAllow: Bool?
    var betaReportsActive: Bool?
    var devices: Int?
    var provisionsAllDevices = false
    var team = "KKTEAM0001"
    var teamName = "Kantine Koning (test)"
    var bundleID = "nl.kantinekoning.app"
    var appIDName = "Kantine Koning"
    var certificate: String
    var platforms = ["iOS", "xrOS", "visionOS"]
    var isXcodeManaged = false
    var expires = Date(timeIntervalSince1970: 2_084_002_200)  // 2036-01-15T09:30:00Z

    var testDescription: String { file }

    static let all: [ProfileExpectation] = [
        ProfileExpectation(
            file: "development.mobileprovision", name: "Kantine Koning Development", distribution: .development,
            apsEnvironment: "development", getTaskAllow: true, devices: 3, certificate: "apple-development"),
        ProfileExpectation(
            file: "adhoc.mobileprovision", name: "Kantine Koning Ad Hoc", distribution: .adHoc,
            apsEnvironment: "production", getTaskAllow: false, devices: 2, certificate: "apple-distribution"),
        ProfileExpectation(
            file: "appstore.mobileprovision", name: "Kantine Koning App Store", distribution: .appStore,
            apsEnvironment: "production", getTaskAllow: false, betaReportsActive: true,
            certificate: "apple-distribution"),
        ProfileExpectation(
            file: "appstore-ber.mobileprovision", name: "Kantine Koning App Store", distribution: .appStore,
            apsEnvironment: "production", getTaskAllow: false, betaReportsActive: true,
            certificate: "apple-distribution"),
        ProfileExpectation(
            file: "appstore-no-push.mobileprovision", name: "Kantine Koning App Store No Push",
            distribution: .appStore, apsEnvironment: nil, getTaskAllow: false, betaReportsActive: true,
            certificate: "apple-distribution"),
        ProfileExpectation(
            file: "enterprise.mobileprovision",
            name: "iOS Team Inhouse Provisioning Profile: nl.kantinekoning.enterprise", distribution: .enterprise,
            apsEnvironment: "production", getTaskAllow: false, provisionsAllDevices: true, team: "KKENTR0001",
            teamName: "Kantine Koning Enterprise (test)", bundleID: "nl.kantinekoning.enterprise",
            certificate: "iphone-distribution-enterprise", isXcodeManaged: true),
        ProfileExpectation(
            file: "expired.mobileprovision", name: "Kantine Koning Development 2023", distribution: .development,
            apsEnvironment: "development", getTaskAllow: true, devices: 3, certificate: "apple-development",
            expires: Date(timeIntervalSince1970: 1_705_311_000)),  // 2024-01-15T09:30:00Z
        ProfileExpectation(
            file: "macos-development.provisionprofile", name: "Kantine Koning macOS Development",
            distribution: .development, apsEnvironment: "development", getTaskAllow: nil, devices: 1,
            certificate: "apple-development", platforms: ["OSX"]),
    ]
}

extension ProfileTests {
    /// What `openssl x509` says about `ca/<name>.crt`.
    static func certificateFacts(_ name: String) async throws -> [String: String] {
        let out = try await openssl([
            "x509", "-in", builds.appendingPathComponent("ca/\(name).crt").path, "-noout", "-fingerprint", "-sha1",
            "-serial", "-subject", "-nameopt", "RFC2253,-esc_msb", "-startdate", "-enddate",
        ])
        var facts: [String: String] = [:]
        for line in String(decoding: out, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            facts[String(line[..<equals]).lowercased()] = String(line[line.index(after: equals)...])
        }
        return facts
    }

    /// `openssl x509 -dates` form: `Jan  1 00:00:00 2026 GMT`.
    static func opensslDate(_ text: String?) -> Date? {
        guard let text else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy 'GMT'"
        return formatter.date(from: text.split(separator: " ").joined(separator: " "))
    }

    @Test(
        "Every generated profile: each field, the distribution, aps-environment and a verified signature",
        arguments: ProfileExpectation.all)
    func generated(_ expected: ProfileExpectation) async throws {
        let profile = try Self.profile(expected.file)
        #expect(profile.name == expected.name)
        #expect(profile.uuid?.count == 36)
        #expect(profile.teamIdentifiers == [expected.team])
        #expect(profile.teamName == expected.teamName)
        #expect(profile.appIDName == expected.appIDName)
        #expect(profile.applicationIdentifier == "\(expected.team).\(expected.bundleID)")
        #expect(profile.bundleID == expected.bundleID)
        #expect(profile.platforms == expected.platforms)
        #expect(profile.isMacOS == (expected.platforms == ["OSX"]))
        #expect(profile.expirationDate == expected.expires)
        #expect(profile.creationDate.map { $0 < expected.expires } == true)
        #expect(profile.apsEnvironment == expected.apsEnvironment)
        #expect(profile.getTaskAllow == expected.getTaskAllow)
        #expect(profile.betaReportsActive == expected.betaReportsActive)
        #expect(profile.provisionedDevices?.count == expected.devices)
        #expect(profile.provisionsAllDevices == expected.provisionsAllDevices)
        #expect(profile.isXcodeManaged == expected.isXcodeManaged)
        #expect(profile.distribution == expected.distribution)
        #expect(profile.distributionReason.hasSuffix("."))
        #expect(profile.entitlements["com.apple.developer.team-identifier"] == .string(expected.team))
        #expect(profile.plist["UUID"] == profile.uuid.map(PropertyListValue.string))

        let facts = try await Self.certificateFacts(expected.certificate)
        #expect(profile.developerCertificates.count == 1)
        let certificate = try #require(profile.developerCertificates.first)
        #expect(certificate.sha1 == facts["sha1 fingerprint"]?.replacingOccurrences(of: ":", with: ""))
        #expect(certificate.serialNumber == facts["serial"])
        #expect(certificate.subject == facts["subject"])
        #expect(certificate.notBefore == Self.opensslDate(facts["notbefore"]))
        #expect(certificate.notAfter == Self.opensslDate(facts["notafter"]))
        #expect(certificate.organizationalUnit == expected.team)
        #expect(certificate.commonName.map { certificate.subject.contains("CN=\($0)") } == true)

        let signature = profile.signature
        #expect(signature.state == .verified, "\(signature.detail)")
        #expect(signature.signerSubject == "KKPush Test Apple iPhone OS Provisioning Profile Signing")
        #expect(signature.signerIssuer == "KKPush Test Apple iPhone Certification Authority")
        #expect(
            signature.chain == [
                "KKPush Test Apple iPhone OS Provisioning Profile Signing",
                "KKPush Test Apple iPhone Certification Authority", "KKPush Test Apple Root CA",
            ])
        #expect(signature.trustAnchor == "KKPush Test Apple Root CA")
    }

    @Test("The plist is the very one `openssl cms -verify -noverify` takes out", arguments: ProfileExpectation.all)
    func plistMatchesOpenSSL(_ expected: ProfileExpectation) async throws {
        let path = Self.builds.appendingPathComponent("profiles/\(expected.file)").path
        let content = try await Self.openssl(["cms", "-verify", "-noverify", "-binary", "-inform", "DER", "-in", path])
        let reference = try PropertyListValue.parse(content, what: "openssl's output").value
        #expect(try Self.profile(expected.file).plist == reference)
    }

    @Test("With the default trust (Apple Root CA), a profile under the test root is chain-untrusted, not verified")
    func defaultTrust() throws {
        let profile = try Self.profile("appstore.mobileprovision", roots: ProvisioningProfile.appleRoots)
        #expect(profile.signature.state == .chainUntrusted)
        #expect(profile.signature.trustAnchor == nil)
        #expect(
            profile.signature.detail.contains("self-signed certificate in certificate chain"), "\(profile.signature)")
        #expect(profile.signature.chain.first == "KKPush Test Apple iPhone OS Provisioning Profile Signing")
        // The fields are read all the same.
        #expect(profile.apsEnvironment == "production")
        #expect(profile.distribution == .appStore)
    }

    @Test("The expired profile is read and verified: the chain is checked without dates, expiry is a field")
    func expired() throws {
        let profile = try Self.profile("expired.mobileprovision")
        #expect(try #require(profile.expirationDate) < Date())
        #expect(profile.signature.state == .verified)
    }

    @Test("A BER profile (indefinite lengths, chunked content) reads the same as its DER twin")
    func ber() throws {
        let bytes = try Self.bytes("profiles/appstore-ber.mobileprovision")
        #expect(Array(bytes.prefix(2)) == [0x30, 0x80])
        let ber = try Self.profile("appstore-ber.mobileprovision")
        let der = try Self.profile("appstore.mobileprovision")
        #expect(ber.plist == der.plist)
        #expect(ber.uuid == der.uuid)
        #expect(ber.developerCertificates == der.developerCertificates)
        #expect(ber.signature.state == .verified)
    }

    @Test("A byte changed after signing: the signature is invalid, with OpenSSL's reason, and the fields still read")
    func tampered() throws {
        let tampered = try Self.profile("tampered.mobileprovision")
        let original = try Self.profile("development.mobileprovision")
        #expect(tampered.signature.state == .invalid)
        #expect(tampered.signature.detail.contains("does not verify"))
        #expect(tampered.signature.detail.contains("content verify error"), "\(tampered.signature.detail)")
        #expect(tampered.signature.trustAnchor == nil)
        #expect(tampered.uuid == original.uuid)
        #expect(tampered.provisionedDevices?.count == 3)
        #expect(tampered.provisionedDevices?.first != original.provisionedDevices?.first)
    }

    @Test("Signed by an unrelated self-signed certificate: chain-untrusted even with the test root")
    func stranger() throws {
        let profile = try Self.profile("untrusted-signer.mobileprovision")
        #expect(profile.signature.state == .chainUntrusted)
        #expect(profile.signature.signerSubject == "Stranger Profile Signer")
        #expect(profile.signature.chain == ["Stranger Profile Signer"])
        #expect(profile.signature.trustAnchor == nil)
        #expect(profile.signature.detail.contains("self-signed certificate"), "\(profile.signature.detail)")
        #expect(profile.plist == (try Self.profile("development.mobileprovision")).plist)
    }

    @Test("A truncated profile is an error naming the file")
    func truncated() {
        Self.expectError("build-profile-unreadable", naming: "truncated.mobileprovision") {
            _ = try Self.profile("truncated.mobileprovision")
        }
    }

    @Test("macOS: the App ID, aps-environment and get-task-allow come from the macOS keys")
    func macOS() throws {
        let profile = try Self.profile("macos-development.provisionprofile")
        #expect(profile.entitlements["application-identifier"] == nil)
        #expect(profile.entitlements["com.apple.application-identifier"] == .string("KKTEAM0001.nl.kantinekoning.app"))
        #expect(profile.applicationIdentifier == "KKTEAM0001.nl.kantinekoning.app")
        #expect(profile.entitlements["com.apple.developer.aps-environment"] == .string("development"))
        #expect(profile.apsEnvironment == "development")
        #expect(profile.isMacOS)
        #expect(profile.distribution == .development)
        #expect(profile.distributionReason.contains("macOS"))
    }

    @Test("Bytes after the CMS are an error, unless they are zero padding")
    func trailing() throws {
        let bytes = try Self.bytes("profiles/appstore.mobileprovision")
        Self.expectError("build-profile-trailing-data", naming: "appended.mobileprovision") {
            _ = try ProvisioningProfile.parse(bytes + Data("junk".utf8), what: "appended.mobileprovision")
        }
        let padded = try ProvisioningProfile.parse(
            bytes + Data(count: 3), what: "padded.mobileprovision", trustedRoots: [Self.testRoot()])
        #expect(padded.signature.state == .verified)
    }

    @Test("A trusted root that is no certificate is an error naming it")
    func badRoot() async throws {
        let bytes = try Self.bytes("profiles/appstore.mobileprovision")
        for root in [Data("nope".utf8), Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8)] {
            Self.expectError("build-profile-trusted-root-unreadable", naming: "trusted root 1") {
                _ = try ProvisioningProfile.parse(bytes, what: "appstore.mobileprovision", trustedRoots: [root])
            }
        }
        // DER works as well as PEM.
        let der = try await Self.openssl([
            "x509", "-in", Self.builds.appendingPathComponent("ca/root.crt").path, "-outform", "DER",
        ])
        let profile = try ProvisioningProfile.parse(bytes, what: "appstore.mobileprovision", trustedRoots: [der])
        #expect(profile.signature.state == .verified)
    }

    // MARK: CMS made here with openssl

    /// `openssl cms -sign` over `content` with `ca/<signer>.crt` and its key, and `extra` arguments.
    static func sign(_ content: Data, signer: String, extra: [String]) async throws -> Data {
        try await withTemporaryDirectory(prefix: "kkpush-profile") { dir in
            let input = dir + "/content"
            try content.write(to: URL(fileURLWithPath: input))
            let ca = builds.appendingPathComponent("ca")
            return try await openssl(
                [
                    "cms", "-sign", "-binary", "-outform", "DER", "-md", "sha256", "-in", input,
                    "-signer", ca.appendingPathComponent("\(signer).crt").path,
                    "-inkey", ca.appendingPathComponent("\(signer).key").path,
                ] + extra)
        }
    }

    @Test("A profile signed by a certificate that chains to the root but is not a profile signer is not trusted")
    func wrongSigner() async throws {
        let content = try await Self.openssl([
            "cms", "-verify", "-noverify", "-binary", "-inform", "DER", "-in",
            Self.builds.appendingPathComponent("profiles/development.mobileprovision").path,
        ])
        // The developer's own certificate: OpenSSL already refuses its chain (Apple's critical marker extension).
        let wwdr = Self.builds.appendingPathComponent("ca/wwdr.crt").path
        let byDeveloper = try await Self.sign(
            content, signer: "apple-development", extra: ["-nodetach", "-certfile", wwdr])
        let developer = try ProvisioningProfile.parse(
            byDeveloper, what: "developer.mobileprovision", trustedRoots: [Self.testRoot()])
        #expect(developer.signature.state == .chainUntrusted)
        #expect(developer.signature.trustAnchor == nil)
        // The iPhone CA: its chain is fine, but it is not a provisioning profile signing certificate.
        let byCA = try await Self.sign(content, signer: "iphone-ca", extra: ["-nodetach"])
        let ca = try ProvisioningProfile.parse(byCA, what: "ca.mobileprovision", trustedRoots: [Self.testRoot()])
        #expect(ca.signature.state == .chainUntrusted)
        #expect(ca.signature.detail.contains("not a provisioning profile signing certificate"), "\(ca.signature)")
        #expect(
            ca.signature.chain == ["KKPush Test Apple iPhone Certification Authority", "KKPush Test Apple Root CA"])
        #expect(ca.signature.trustAnchor == nil)
    }

    @Test("A SignedData whose content is no plist, a detached one, and one without its signer's certificate")
    func oddSignedData() async throws {
        let chain = Self.builds.appendingPathComponent("ca/profile-chain.pem").path
        let text = try await Self.sign(
            Data("not a plist".utf8), signer: "profile-signing", extra: ["-nodetach", "-certfile", chain])
        Self.expectError("build-profile-plist-unreadable", naming: "text.p7") {
            _ = try ProvisioningProfile.parse(text, what: "text.p7", trustedRoots: [Self.testRoot()])
        }
        let plist = Self.plist("<key>Name</key><string>Signed</string>")
        let detached = try await Self.sign(plist, signer: "profile-signing", extra: [])
        Self.expectError("build-profile-no-content", naming: "detached.p7") {
            _ = try ProvisioningProfile.parse(detached, what: "detached.p7", trustedRoots: [Self.testRoot()])
        }
        let bare = try await Self.sign(plist, signer: "profile-signing", extra: ["-nodetach", "-nocerts"])
        let profile = try ProvisioningProfile.parse(bare, what: "nocerts.p7", trustedRoots: [Self.testRoot()])
        #expect(profile.name == "Signed")
        #expect(profile.signature.state == .invalid)
        #expect(profile.signature.detail.contains("does not carry the certificate of its signer"))
    }
}
