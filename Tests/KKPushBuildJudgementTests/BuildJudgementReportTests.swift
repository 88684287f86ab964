import Foundation
import KKPushBuild
import KKPushCore
import KKPushTestSupport
import KantineKoning
import Testing

@testable import KKPushBuildJudgement

/// `build inspect`'s report, as KKPushBuildJudgement makes it from the committed builds (`Certificates/builds/`,
/// signed under a test root): the verdict, the configurations and the JSON field names.
@Suite("Build judgement report")
struct BuildJudgementReportTests {
    static let builds = Repository.certificates.appendingPathComponent("builds")
    static let at = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    static func judged(_ path: String, scheme: AppBuildScheme? = nil) throws -> BuildPushJudgement {
        try BuildPushJudgement.inspect(
            path: builds.appendingPathComponent(path).path, scheme: scheme, schemeOption: "(scheme)",
            extraRoots: [Data(contentsOf: builds.appendingPathComponent("ca/root.crt"))], now: at)
    }

    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test("An App Store profile built with release-testing: misrouted, the verdict names it, exit-worthy")
    func misrouted() throws {
        let judged = try Self.judged("profiles/appstore.mobileprovision", scheme: .releaseTesting)
        #expect(judged.report.tokenEnvironment == .production && judged.misrouted == true && judged.failed)
        #expect(judged.verdict.code.rawValue == "build-environment-mismatch" && !judged.verdict.isOK)
        #expect(judged.verdictText.hasPrefix("build-environment-mismatch: "))
        let o = try Self.object(judged)
        #expect(
            Set(o.keys) == [
                "path", "kind", "bundle_id", "team_id", "version", "build_number", "aps_environment",
                "aps_environment_source", "token_environment", "apns_host", "distribution", "distribution_source",
                "export_method", "scheme", "scheme_source", "expires", "entitlements", "configurations",
                "fixed_app_backend_environment", "misrouted", "problems", "verdict", "verdict_text", "ok", "profile",
                "extensions",
            ])
        #expect(o["scheme"] as? String == "release-testing" && o["scheme_source"] as? String == "(scheme)")
        #expect(o["ok"] as? Bool == false && o["misrouted"] as? Bool == true && o["version"] is NSNull)
        let verdict = try #require(o["verdict"] as? [String: Any])
        #expect(Set(verdict.keys) == ["code", "message", "fix", "why"])
        let profile = try #require(o["profile"] as? [String: Any])
        #expect(profile["distribution"] as? String == "app-store" && profile["signature"] is [String: Any])
        #expect((profile["expires"] as? String)?.hasSuffix("Z") == true)
        let configuration = try #require((o["configurations"] as? [[String: Any]])?.first)
        #expect(
            Set(configuration.keys) == [
                "scheme", "build_configuration", "build_environment", "backend_environment", "misrouted",
            ])
    }

    @Test("A development profile without a scheme: ok as far as the build tells, asking for the scheme by its name")
    func okWithoutScheme() throws {
        let judged = try Self.judged("profiles/development.mobileprovision")
        #expect(!judged.failed && judged.misrouted == nil && judged.verdict.isOK)
        #expect(judged.verdict.message.contains("(pass (scheme) to judge"))
        let o = try Self.object(judged)
        #expect(o["misrouted"] is NSNull && o["scheme"] is NSNull && o["executable"] == nil)
    }

    @Test("An executable: its slices under their field names, and no profile field")
    func executable() throws {
        let judged = try Self.judged("executables/fat-production")
        let o = try Self.object(judged)
        #expect(o["profile"] == nil)
        let executable = try #require(o["executable"] as? [String: Any])
        #expect(executable["universal"] as? Bool == true)
        let slice = try #require((executable["slices"] as? [[String: Any]])?.first)
        #expect(
            Set(slice.keys) == [
                "architecture", "signed", "identifier", "team_id", "aps_environment", "der_entitlements",
                "xml_entitlements", "cms_signature", "ad_hoc", "entitlement_disagreements",
            ])
    }
}
