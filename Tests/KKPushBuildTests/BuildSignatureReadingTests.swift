import Foundation
import KKPushBuild
import KKPushCore
import KKPushTestSupport
import Testing

/// `BuildInspector` on the generated builds in `Certificates/builds/` (made by its generate.py: CMS profiles signed by
/// a test chain shaped like Apple's, executables with real code-signature blobs, .ipa zips, an archive, an export).
@Suite("Build inspection")
struct BuildSignatureReadingTests {
    /// The test root the generated profiles chain to (PEM, which the profile reader takes as it is).
    static func testRoot() throws -> Data {
        try Data(contentsOf: Repository.file("Certificates/builds/ca/root.crt"))
    }

    static let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-17

    static func inspect(_ relative: String, trusted: Bool = true) throws -> BuildReport {
        try BuildInspector.inspect(
            path: Repository.file("Certificates/builds/\(relative)").path,
            trustedRoots: trusted ? [try testRoot()] : ProvisioningProfile.appleRoots, now: now)
    }

    static func expectError(_ relative: String, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let report = try inspect(relative)
            Issue.record("expected \(code), got a report: \(report.problems)", sourceLocation: sourceLocation)
        } catch let error as KKPushError {
            #expect(error.code.rawValue == code, "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.message.contains((relative as NSString).lastPathComponent), sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected KKPushError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("an App Store Connect .ipa: production from the executable's DER entitlements, app-store, verified profile")
    func appStoreIPA() throws {
        let r = try Self.inspect("ipas/appstore.ipa")
        #expect(r.kind == .ipa)
        #expect(r.bundleID == "nl.kantinekoning.app" && r.teamID == "KKTEAM0001")
        #expect(r.version == "2.4.1" && r.buildNumber == "57")
        #expect(r.apsEnvironment == "production" && r.tokenEnvironment == .production)
        #expect(r.apsEnvironmentSource == "the executable's code signature (DER entitlements)")
        #expect(r.distribution == .appStore)
        #expect(r.profile?.signature.state == .verified)
        #expect(r.profile?.developerCertificates.first?.commonName?.hasPrefix("Apple Distribution") == true)
        #expect(r.problems.allSatisfy { $0.severity != .error }, "\(r.problems)")
    }

    @Test("each distribution's .ipa gives its aps-environment and distribution")
    func distributions() throws {
        let cases: [(String, String, ProfileDistribution)] = [
            ("ipas/development.ipa", "development", .development), ("ipas/adhoc.ipa", "production", .adHoc),
            ("ipas/enterprise.ipa", "production", .enterprise),
            ("apps/development/Kantine Koning.app", "development", .development),
        ]
        for (path, aps, distribution) in cases {
            let r = try Self.inspect(path)
            #expect(r.apsEnvironment == aps, "\(path)")
            #expect(r.distribution == distribution, "\(path)")
            #expect(r.executable != nil, "\(path)")
        }
        let adhoc = try Self.inspect("ipas/adhoc.ipa")
        #expect(adhoc.executable?.isUniversal == true)
        #expect(adhoc.executable?.slices.map(\.architecture) == ["arm64", "x86_64"])
        #expect(adhoc.profile?.provisionedDevices?.count == 2)
        #expect(try Self.inspect("ipas/enterprise.ipa").profile?.provisionsAllDevices == true)
    }

    @Test("the executable's signature is the truth when the embedded profile says otherwise")
    func disagreement() throws {
        let r = try Self.inspect("ipas/disagree.ipa")
        #expect(r.profile?.apsEnvironment == "development")
        #expect(r.apsEnvironment == "production")
        #expect(r.problems.contains { $0.code.rawValue == "build-profile-signature-disagree" && $0.severity == .error })
    }

    @Test("an app extension is read with its own profile")
    func extensions() throws {
        let r = try Self.inspect("ipas/with-extension.ipa")
        #expect(r.extensions.count == 1)
        #expect(r.extensions.first?.bundleID == "nl.kantinekoning.app.NotificationService")
        #expect(r.extensions.first?.profile != nil)
    }

    @Test("an .xcarchive names its scheme; a DistributionSummary.plist and the ExportOptions.plist beside it")
    func archiveAndExport() throws {
        let archive = try Self.inspect("archives/Kantine Koning.xcarchive")
        #expect(archive.kind == .xcarchive && archive.schemeName == "Release Testing")
        #expect(archive.apsEnvironment == "production" && archive.distribution == .appStore)
        let summary = try Self.inspect("export/DistributionSummary.plist")
        #expect(summary.kind == .distributionSummary)
        #expect(summary.apsEnvironment == "production" && summary.exportMethod == "app-store-connect")
        #expect(summary.distribution == .appStore && summary.teamID == "KKTEAM0001")
        #expect(summary.bundleID == "nl.kantinekoning.app")
    }

    @Test("an entitlements file is a request, XML or binary")
    func entitlements() throws {
        for name in ["KantineKoning.entitlements", "KantineKoning-binary.entitlements"] {
            let r = try Self.inspect("entitlements/\(name)")
            #expect(r.kind == .entitlements && r.apsEnvironment == "development")
            #expect(r.problems.contains { $0.code.rawValue == "build-entitlements-request" })
        }
    }

    @Test("profiles alone: expired, tampered, foreign signer, no push, macOS")
    func profiles() throws {
        #expect(
            try Self.inspect("profiles/expired.mobileprovision").problems.contains {
                $0.code.rawValue == "build-profile-expired"
            })
        #expect(
            try Self.inspect("profiles/tampered.mobileprovision").problems.contains {
                $0.code.rawValue == "build-profile-signature-invalid"
            })
        #expect(
            try Self.inspect("profiles/untrusted-signer.mobileprovision").problems.contains {
                $0.code.rawValue == "build-profile-untrusted"
            })
        #expect(
            try Self.inspect("profiles/appstore-no-push.mobileprovision").problems.contains {
                $0.code.rawValue == "build-aps-missing"
            })
        let mac = try Self.inspect("profiles/macos-development.provisionprofile")
        #expect(mac.apsEnvironment == "development")
        // Apple Root CA is the default anchor: the test chain is not Apple's.
        let strict = try Self.inspect("profiles/appstore.mobileprovision", trusted: false)
        #expect(strict.profile?.signature.state == .chainUntrusted)
        #expect(strict.problems.contains { $0.code.rawValue == "build-profile-untrusted" })
        let ber = try Self.inspect("profiles/appstore-ber.mobileprovision")
        #expect(ber.apsEnvironment == "production" && ber.profile?.signature.state == .verified)
    }

    @Test("a bare executable: its signature, and what get-task-allow and beta-reports-active tell")
    func executables() throws {
        let production = try Self.inspect("executables/thin-production")
        #expect(production.kind == .executable && production.apsEnvironment == "production")
        #expect(production.distribution == .appStore)
        let development = try Self.inspect("executables/thin-development")
        #expect(development.distribution == .development && development.tokenEnvironment == .sandbox)
        let unsigned = try Self.inspect("executables/unsigned")
        #expect(unsigned.apsEnvironment == nil && unsigned.problems.contains { $0.code.rawValue == "build-unsigned" })
        let forms = try Self.inspect("executables/entitlements-disagree")
        #expect(forms.apsEnvironment == "production")  // the DER form is enforced
        #expect(forms.problems.contains { $0.code.rawValue == "build-entitlements-forms-disagree" })
    }

    @Test("damaged and hostile inputs: a clear error naming the file, never a crash or a guess")
    func hostile() {
        Self.expectError("ipas/zip-bomb.ipa", "build-member-too-large")
        Self.expectError("ipas/lying-size.ipa", "build-member-too-large")
        Self.expectError("ipas/no-payload.ipa", "build-ipa-no-app")
        Self.expectError("ipas/truncated.ipa", "build-zip-unreadable")
        Self.expectError("profiles/truncated.mobileprovision", "build-profile-unreadable")
        Self.expectError("executables/truncated", "build-macho-truncated")
        Self.expectError("executables/not-macho", "build-kind-unknown")
        Self.expectError("no/such/file.ipa", "build-file-missing")
        do {
            _ = try Self.inspect("ipas/not-a-zip.ipa")
            Issue.record("random bytes gave a report")
        } catch let error as KKPushError {
            #expect(error.message.contains("not-a-zip.ipa"))
        } catch {
            Issue.record("\(error)")
        }
    }
}
