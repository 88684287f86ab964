import Foundation
import KKPushTestSupport
import Testing

/// What a signed build means for delivery, in `build inspect` and `diagnose --build`: an expired profile judged
/// by its distribution, the build's bundle id against the topic, a build without aps-environment, an
/// entitlements file (a request), and the fix for a wildcard App ID. On the generated builds in
/// `Certificates/builds/`.
@Suite("Build judgement")
struct BuildJudgementTests {
    static func path(_ relative: String) -> String { Repository.file("Certificates/builds/\(relative)").path }
    static let root = ["--trust-root", path("ca/root.crt")]
    /// After every generated profile's expiry (2036).
    static let later = "2037-06-01T00:00:00Z"
    static let laterUnix = "2127000000"

    @Test("An expired App Store Connect profile is a warning to renew before the next upload, not the verdict")
    func expiredAppStoreIsAWarning() async throws {
        let r = try await CLI.run(
            ["build", "inspect", Self.path("ipas/appstore.ipa"), "--at", Self.later, "--scheme", "release"] + Self.root)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("warning build-profile-expired"))
        #expect(r.stdout.contains("Apple re-signs TestFlight and App Store installs"))
        #expect(r.stdout.contains("before the next upload"))
        #expect(r.stdout.contains("Verdict: ok: production tokens"))

        let d = try await CLI.run([
            "diagnose", "--build", Self.path("ipas/appstore.ipa"), "--build-environment", "production", "--now",
            Self.laterUnix, "--ignore-process-env", "--json",
        ])
        #expect(d.status == 0, "\(d.stdout)\(d.stderr)")
        let o = try d.json()
        #expect(o["verdict"] is NSNull)
        let findings = try #require(o["findings"] as? [[String: Any]])
        #expect(
            findings.contains {
                $0["code"] as? String == "build-profile-expired" && $0["severity"] as? String == "warning"
            })
    }

    @Test("An expired in-house or ad hoc profile stops the app launching: the verdict, exit 1")
    func expiredInHouseAndAdHocAreVerdicts() async throws {
        for (build, words) in [("ipas/enterprise.ipa", "(in-house) expired"), ("ipas/adhoc.ipa", "(ad hoc) expired")] {
            let r = try await CLI.run(["build", "inspect", Self.path(build), "--at", Self.later] + Self.root)
            #expect(r.status == 1, "\(build): \(r.stdout)")
            #expect(r.stdout.contains("Verdict: build-profile-expired"), "\(build): \(r.stdout)")
            #expect(r.stdout.contains(words), "\(build): \(r.stdout)")
        }
    }

    @Test("diagnose --build compares the build's bundle id with the topic, the push type's suffix stripped")
    func bundleIDAgainstTopic() async throws {
        let other = try await CLI.run([
            "diagnose", "--build", Self.path("ipas/appstore.ipa"), "--build-environment", "development",
            "--topic", "com.example.other", "--ignore-process-env", "--json",
        ])
        #expect(other.status == 1, "\(other.stdout)\(other.stderr)")
        let verdict = try #require(try other.json()["verdict"] as? [String: Any])
        #expect(verdict["code"] as? String == "build-other-app")
        #expect((verdict["message"] as? String)?.contains("nl.kantinekoning.app") == true)
        // Another app's signature is no evidence: no signed-build verdict about this app's tokens.
        #expect(!other.stdout.contains("signed-build-mismatch"))

        for topic in [
            "nl.kantinekoning.app", "nl.kantinekoning.app.voip", "nl.kantinekoning.app.complication",
            "nl.kantinekoning.app.push-type.liveactivity", "nl.kantinekoning.app.pushkit.fileprovider",
        ] {
            let same = try await CLI.run([
                "diagnose", "--build", Self.path("ipas/appstore.ipa"), "--build-environment", "production",
                "--topic", topic, "--ignore-process-env", "--json",
            ])
            #expect(!same.stdout.contains("build-other-app"), "\(topic): \(same.stdout)")
        }
    }

    @Test("diagnose --build on a build signed without aps-environment: the verdict (exit 1), not an unusable input")
    func noAPSEnvironmentIsTheVerdict() async throws {
        let r = try await CLI.run(
            [
                "diagnose", "--build", Self.path("profiles/appstore-no-push.mobileprovision"), "--ignore-process-env",
                "--json",
            ] + [])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let verdict = try #require(try r.json()["verdict"] as? [String: Any])
        #expect(verdict["code"] as? String == "build-aps-missing")
        #expect((verdict["why"] as? String)?.contains("never gets a device token") == true)
    }

    @Test("diagnose --build on an entitlements file: a request, never taken for the signed build")
    func entitlementsFileIsARequest() async throws {
        // The file requests development; a build_environment of production would contradict a signature saying so.
        let r = try await CLI.run([
            "diagnose", "--build", Self.path("entitlements/KantineKoning.entitlements"), "--build-environment",
            "production", "--ignore-process-env", "--json",
        ])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let o = try r.json()
        #expect(o["verdict"] is NSNull)
        let findings = try #require(o["findings"] as? [[String: Any]])
        #expect(findings.contains { $0["code"] as? String == "build-entitlements-request" })
        #expect(!findings.contains { $0["code"] as? String == "signed-build-mismatch" })
    }

    @Test("A wildcard App ID without push: the fix is an explicit App ID, not enabling push on the wildcard")
    func wildcardAppID() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-wildcard-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let profile: [String: Any] = [
            "Name": "Kantine Koning Wildcard", "UUID": "00000000-0000-4000-8000-000000000001",
            "TeamIdentifier": ["KKTEAM0001"], "Platform": ["iOS"],
            "CreationDate": Date(timeIntervalSince1970: 1_800_000_000),
            "ExpirationDate": Date(timeIntervalSince1970: 2_100_000_000),
            "Entitlements": ["application-identifier": "KKTEAM0001.*", "get-task-allow": false],
        ]
        let file = dir.appendingPathComponent("wildcard.mobileprovision")
        try PropertyListSerialization.data(fromPropertyList: profile, format: .xml, options: 0).write(to: file)
        let r = try await CLI.run(["build", "inspect", file.path, "--json"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let problems = try #require(try r.json()["problems"] as? [[String: Any]])
        let missing = try #require(problems.first { $0["code"] as? String == "build-aps-missing" })
        let fix = try #require(missing["fix"] as? String)
        #expect(fix.contains("wildcard App ID cannot have Push Notifications"))
        #expect(fix.contains("explicit App ID"))
        #expect(!fix.contains("Enable Push Notifications for the App ID"))
    }
}
