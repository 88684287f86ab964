import Foundation
import KKPushTestSupport
import Testing

/// `kkpush build inspect`, `diagnose --build/--distribution` and `env resolve --distribution`, through the command line, on
/// the generated builds in `Certificates/builds/` (`.ci/smoke-release` runs these against the release build too).
@Suite("kkpush build inspect and the signed build's evidence")
struct AnswersBuildCLITests {
    static func path(_ relative: String) -> String { Repository.file("Certificates/builds/\(relative)").path }
    static let root = ["--trust-root", path("ca/root.crt")]

    @Test("the archive of a Release Testing build signed for App Store Connect: the mismatch, named, exit 1")
    func archiveMismatch() async throws {
        let r = try await CLI.run(["build", "inspect", Self.path("archives/Kantine Koning.xcarchive")] + Self.root)
        #expect(r.status == 1, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("Signed for: aps-environment production — from the executable's code signature"))
        #expect(r.stdout.contains("Scheme: release-testing (Debug), from the archive's SchemeName \"Release Testing\""))
        #expect(
            r.stdout.contains(
                "Debug (release-testing): build_environment \"development\" → backend: sandbox ✗ MISMATCH"))
        #expect(r.stdout.contains("Fixed app (sends aps_environment \"production\"): backend: production ✓"))
        #expect(r.stdout.contains("Verdict: build-environment-mismatch: Signed for production, reports development"))
        // The Notification Service Extension has no aps-environment of its own, and needs none.
        #expect(r.stdout.contains("info build-aps-missing"))
    }

    @Test("--json: stable keys, every field of the profile and the signature")
    func json() async throws {
        let r = try await CLI.run(["build", "inspect", Self.path("ipas/appstore.ipa"), "--json"] + Self.root)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let o = try r.json()
        #expect(o["kind"] as? String == "ipa")
        #expect(o["aps_environment"] as? String == "production" && o["token_environment"] as? String == "production")
        #expect(o["distribution"] as? String == "app-store")
        #expect(o["team_id"] as? String == "KKTEAM0001" && o["bundle_id"] as? String == "nl.kantinekoning.app")
        #expect(o["expires"] as? String == "2036-01-15T09:30:00Z")
        #expect(o["misrouted"] is NSNull)
        let profile = try #require(o["profile"] as? [String: Any])
        #expect(profile["name"] as? String == "Kantine Koning App Store")
        #expect((profile["signature"] as? [String: Any])?["state"] as? String == "verified")
        let certificate = try #require((profile["certificates"] as? [[String: Any]])?.first)
        #expect((certificate["sha1"] as? String)?.count == 40)
        let configurations = try #require(o["configurations"] as? [[String: Any]])
        #expect(
            configurations.contains { $0["scheme"] as? String == "release-testing" && $0["misrouted"] as? Bool == true }
        )
        #expect(configurations.contains { $0["scheme"] as? String == "release" && $0["misrouted"] as? Bool == false })
        #expect(
            (o["problems"] as? [[String: Any]])?.contains { $0["code"] as? String == "build-configuration-dependent" }
                == true)
    }

    @Test("--scheme judges what the app reports: release on App Store Connect is fine, release-testing is not")
    func scheme() async throws {
        let fine = try await CLI.run(
            ["build", "inspect", Self.path("ipas/appstore.ipa"), "--scheme", "release"] + Self.root)
        #expect(fine.status == 0, "\(fine.stdout)")
        #expect(fine.stdout.contains("Verdict: ok: production tokens, and the backend sends them to production."))
        let wrong = try await CLI.run(
            ["build", "inspect", Self.path("ipas/appstore.ipa"), "--scheme", "release-testing", "--json"] + Self.root)
        #expect(wrong.status == 1)
        #expect(try wrong.json()["misrouted"] as? Bool == true)
        // A Release build run from Xcode (a development profile): the other mismatch cell.
        let xcode = try await CLI.run(
            ["build", "inspect", Self.path("ipas/development.ipa"), "--scheme", "release"] + Self.root)
        #expect(xcode.status == 1 && xcode.stdout.contains("Signed for development, reports production"))
        let usage = try await CLI.run(["build", "inspect", Self.path("ipas/appstore.ipa"), "--scheme", "testflight"])
        #expect(usage.status == 64 && usage.stderr.contains("is a distribution"))
    }

    @Test("an expired or tampered profile is exit 1; a damaged or hostile build is exit 2, named; never a crash")
    func badBuilds() async throws {
        for (file, code) in [
            ("profiles/expired.mobileprovision", "build-profile-expired"),
            ("profiles/tampered.mobileprovision", "build-profile-signature-invalid"),
        ] {
            let r = try await CLI.run(["build", "inspect", Self.path(file)] + Self.root)
            #expect(r.status == 1 && r.stdout.contains(code), "\(file): \(r.stdout)")
        }
        for (file, code) in [
            ("ipas/zip-bomb.ipa", "build-member-too-large"), ("ipas/lying-size.ipa", "build-member-too-large"),
            ("ipas/truncated.ipa", "build-zip-unreadable"), ("ipas/no-payload.ipa", "build-ipa-no-app"),
            ("executables/truncated", "build-macho-truncated"), ("profiles/truncated.mobileprovision", "build-profile"),
            ("ipas/not-a-zip.ipa", "build-"), ("nothing-here.ipa", "build-file-missing"),
        ] {
            let r = try await CLI.run(["build", "inspect", Self.path(file), "--json"])
            #expect(r.status == 2, "\(file): \(r.stdout)\(r.stderr)")
            let error = try #require(try r.json()["error"] as? [String: Any], "\(file)")
            #expect((error["code"] as? String)?.hasPrefix(code) == true, "\(file): \(error)")
            #expect((error["message"] as? String)?.contains((file as NSString).lastPathComponent) == true)
        }
    }

    @Test(
        "diagnose --build: \"signed for production, reports development\" is its own verdict, fixed on the app's side")
    func diagnoseBuild() async throws {
        let r = try await CLI.run([
            "diagnose", "--build", Self.path("ipas/appstore.ipa"), "--build-environment", "development",
            "--ignore-process-env", "--json",
        ])
        #expect(r.status == 1, "\(r.stderr)")
        let verdict = try #require(try r.json()["verdict"] as? [String: Any])
        #expect(verdict["code"] as? String == "signed-build-mismatch")
        #expect((verdict["fix"] as? String)?.contains("aps_environment") == true)
        // The fixed app sends aps_environment: the backend routes it right, nothing blocks.
        let update = """
            {"token": "\(String(repeating: "ab", count: 32))", "build_environment": "development", \
            "aps_environment": "production", "app_version": "2.4.1", "hardware_identifier": "6F1C2A8E-0000-4000-8000-00000000A001"}
            """
        let fixed = try await CLI.run(
            ["diagnose", "--build", Self.path("ipas/appstore.ipa"), "--token-update", "-", "--ignore-process-env"],
            stdin: update)
        #expect(!fixed.stdout.contains("signed-build-mismatch"), "\(fixed.stdout)")
        // --distribution instead of a build; both at once is a usage error.
        let told = try await CLI.run([
            "diagnose", "--distribution", "testflight", "--build-environment", "development", "--ignore-process-env",
        ])
        #expect(told.status == 1 && told.stdout.contains("Verdict: signed-build-mismatch"))
        let both = try await CLI.run([
            "diagnose", "--distribution", "testflight", "--build", Self.path("ipas/appstore.ipa"),
        ])
        #expect(both.status == 64)
        let unreadable = try await CLI.run([
            "diagnose", "--build", Self.path("ipas/not-a-zip.ipa"), "--build-environment", "development",
        ])
        #expect(unreadable.status == 2 && unreadable.stderr.contains("--build"))
    }

    @Test("env resolve --distribution names the misrouting; a distribution given as a scheme is refused")
    func envResolve() async throws {
        let r = try await CLI.run([
            "env", "resolve", "--scheme", "release-testing", "--distribution", "testflight", "--ignore-process-env",
            "--json",
        ])
        #expect(r.status == 0)
        let o = try r.json()
        #expect(o["apns_environment"] as? String == "sandbox" && o["token_environment"] as? String == "production")
        #expect(o["misrouted"] as? Bool == true)
        #expect((o["warnings"] as? [[String: Any]])?.first?["code"] as? String == "build-environment-mismatch")
        let fixed = try await CLI.run([
            "env", "resolve", "--scheme", "release-testing", "--distribution", "testflight", "--sends-aps-environment",
            "--ignore-process-env", "--json",
        ])
        let f = try fixed.json()
        #expect(f["apns_environment"] as? String == "production" && f["decided_by"] as? String == "aps_environment")
        #expect(f["misrouted"] as? Bool == false)
        let scheme = try await CLI.run(["env", "resolve", "--scheme", "testflight"])
        #expect(scheme.status == 64 && scheme.stderr.contains("is a distribution, not a scheme"))
    }
}
