import KKPushCore
import KantineKoning
import Testing

/// The `aps_environment` rule kkpush proposes to the backend: what the app is signed for decides, after the
/// server's overrides and before `is_test_user` and `build_environment`; without it, the old rules, unchanged.
@Suite("Environment resolution: aps_environment (the proposed rule)")
struct APSEnvironmentResolutionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var aps: String?
        var build: String?
        var testUser = false
        var force: String? = nil
        var legacy: String? = nil
        var expected: APNsEnvironment
        var decidedBy: ResolutionRule
        var device: APNsEnvironment?
        var warnings: Set<String> = []
        var testDescription: String {
            "aps=\(aps.map { "\"\($0)\"" } ?? "nil") build=\(build.map { "\"\($0)\"" } ?? "nil") test=\(testUser) force=\(force ?? "-") legacy=\(legacy ?? "-")"
        }
    }

    static let cases: [Case] = [
        // aps_environment decides: the signature is the truth about the token
        Case(
            aps: "production", build: "development", expected: .production, decidedBy: .apsEnvironment,
            device: .production, warnings: ["build-environment-contradicts-signature"]),
        Case(
            aps: "development", build: "development", expected: .sandbox, decidedBy: .apsEnvironment, device: .sandbox),
        Case(
            aps: "production", build: "production", expected: .production, decidedBy: .apsEnvironment,
            device: .production),
        Case(
            aps: "development", build: "production", expected: .sandbox, decidedBy: .apsEnvironment, device: .sandbox,
            warnings: ["build-environment-contradicts-signature"]),
        Case(
            aps: "development", build: "testing", expected: .sandbox, decidedBy: .apsEnvironment, device: .sandbox,
            warnings: ["build-environment-testing", "build-environment-contradicts-signature"]),
        Case(
            aps: "production", build: "debug", expected: .production, decidedBy: .apsEnvironment, device: .production,
            warnings: ["build-environment-nonstandard", "build-environment-contradicts-signature"]),
        Case(
            aps: "development", build: nil, expected: .sandbox, decidedBy: .apsEnvironment, device: .sandbox,
            warnings: ["build-environment-missing", "build-environment-contradicts-signature"]),
        // is_test_user: the signature wins; a test user signed for production is warned about
        Case(
            aps: "production", build: "development", testUser: true, expected: .production, decidedBy: .apsEnvironment,
            device: .production, warnings: ["test-user-contradicts-signature"]),
        Case(
            aps: "development", build: "development", testUser: true, expected: .sandbox, decidedBy: .apsEnvironment,
            device: .sandbox),
        // not exactly development/production: ignored (warned about), the old rules decide
        Case(
            aps: "Production", build: "development", expected: .sandbox, decidedBy: .buildEnvironment, device: .sandbox,
            warnings: ["aps-environment-unknown"]),
        Case(
            aps: "sandbox", build: "production", expected: .production, decidedBy: .fallback, device: .production,
            warnings: ["aps-environment-unknown"]),
        Case(
            aps: " production", build: "production", testUser: true, expected: .sandbox, decidedBy: .testUser,
            device: .production, warnings: ["aps-environment-unknown", "test-user-production-build"]),
        Case(
            aps: "", build: "development", expected: .sandbox, decidedBy: .buildEnvironment, device: .sandbox,
            warnings: ["aps-environment-unknown"]),
        // the server's overrides still pin every push; their contradiction is judged against the signature
        Case(
            aps: "production", build: "development", force: "sandbox", expected: .sandbox, decidedBy: .forceEnv,
            device: .production, warnings: ["force-env-override"]),
        Case(
            aps: "production", build: "development", force: "production", expected: .production, decidedBy: .forceEnv,
            device: .production),
        Case(
            aps: "development", build: "production", legacy: "production", expected: .production,
            decidedBy: .legacyAPNSEnv, device: .sandbox, warnings: ["server-env-override"]),
        Case(
            aps: "production", build: "development", legacy: "production", expected: .production,
            decidedBy: .legacyAPNSEnv, device: .production, warnings: ["server-env-legacy"]),
        Case(
            aps: "production", build: "development", force: "Sandbox", expected: .production,
            decidedBy: .apsEnvironment, device: .production,
            warnings: ["force-env-ignored", "build-environment-contradicts-signature"]),
        // an unknown aps_environment: the override's contradiction is judged by build_environment, as before
        Case(
            aps: "prod", build: "development", force: "production", expected: .production, decidedBy: .forceEnv,
            device: .sandbox, warnings: ["aps-environment-unknown", "force-env-override"]),
    ]

    @Test("Each rule, in order", arguments: cases)
    func resolves(_ c: Case) {
        let r = EnvironmentResolver.resolve(
            buildEnvironment: c.build, apsEnvironment: c.aps, isTestUser: c.testUser,
            settings: ServerAPNsSettings(forceEnv: c.force, legacyAPNSEnv: c.legacy))
        #expect(r.environment == c.expected)
        #expect(r.decidedBy == c.decidedBy)
        #expect(r.deviceEnvironment == c.device)
        #expect(r.apsEnvironment == c.aps && r.buildEnvironment == c.build)
        #expect(r.steps.last?.rule == c.decidedBy && r.steps.last?.decided == true)
        #expect(r.steps.dropLast().allSatisfy { !$0.decided })
        #expect(r.steps.map(\.rule) == Array(ResolutionRule.allCases.prefix(r.steps.count)))
        #expect(Set(r.warnings.map(\.code.rawValue)) == c.warnings, "warnings: \(r.warnings.map(\.code))")
        for w in r.warnings { #expect(!w.message.isEmpty && !w.fix.isEmpty) }
    }

    @Test("The order is APNS_FORCE_ENV, APNS_ENV, aps_environment, is_test_user, build_environment, default")
    func order() {
        #expect(
            ResolutionRule.allCases.map(\.rawValue) == [
                "APNS_FORCE_ENV", "APNS_ENV", "aps_environment", "is_test_user", "build_environment", "default",
            ])
    }

    @Test("Without aps_environment the rules are the real backend's: the same result as before, never decided by it")
    func withoutIt() {
        let builds: [String?] = [nil, "development", "debug", "production", "release", "testing", "Development", ""]
        let settings: [String?] = [nil, "sandbox", "production", "Sandbox", ""]
        for build in builds {
            for testUser in [false, true] {
                for force in settings {
                    for legacy in settings {
                        let s = ServerAPNsSettings(forceEnv: force, legacyAPNSEnv: legacy)
                        let r = EnvironmentResolver.resolve(buildEnvironment: build, isTestUser: testUser, settings: s)
                        let explicit = EnvironmentResolver.resolve(
                            buildEnvironment: build, apsEnvironment: nil, isTestUser: testUser, settings: s)
                        #expect(r == explicit)
                        #expect(r.decidedBy != .apsEnvironment)
                        #expect(
                            !r.warnings.contains {
                                $0.code.rawValue.contains("signature") || $0.code.rawValue.hasPrefix("aps-")
                            })
                        // determine_apns_environment/1 (README), plus the legacy APNS_ENV.
                        let expected: APNsEnvironment =
                            if let f = force, let e = APNsEnvironment(rawValue: f) {
                                e
                            } else if let l = legacy, let e = APNsEnvironment(rawValue: l) {
                                e
                            } else if testUser || ["development", "debug"].contains(build ?? "") {
                                .sandbox
                            } else {
                                .production
                            }
                        #expect(r.environment == expected, "build=\(build ?? "nil") test=\(testUser)")
                        if r.decidedBy != .forceEnv && r.decidedBy != .legacyAPNSEnv {
                            #expect(
                                r.steps.first { $0.rule == .apsEnvironment }?.detail
                                    == "aps_environment is not sent: the old rules decide.")
                        }
                    }
                }
            }
        }
    }

    @Test("The contradiction says what the build reports, what it is signed for, and who misroutes it")
    func contradictionMessage() throws {
        let r = EnvironmentResolver.resolve(buildEnvironment: "development", apsEnvironment: "production")
        let p = try #require(r.warnings.first { $0.code.rawValue == "build-environment-contradicts-signature" })
        #expect(p.severity == .warning)
        #expect(p.message.contains("Signed for production, reports \"development\""))
        #expect(p.message.contains("configuration is not its distribution"))
        #expect(p.message.contains("a backend without that rule sends it to sandbox"))
        #expect(p.fix.contains("keep sending aps_environment, which this server already prefers"))
        #expect(r.steps.last?.detail.contains("aps_environment \"production\"") == true)
    }

    @Test("An override that contradicts the signature names aps_environment as the device's evidence")
    func overrideEvidence() throws {
        let r = EnvironmentResolver.resolve(
            buildEnvironment: "development", apsEnvironment: "production",
            settings: ServerAPNsSettings(forceEnv: "sandbox"))
        let p = try #require(r.warnings.first { $0.code.rawValue == "force-env-override" })
        #expect(p.severity == .error)
        #expect(p.message.contains("aps_environment \"production\""))
        #expect(p.message.contains("production token"))
        #expect(!p.message.contains("build_environment"))
    }

    @Test(
        "An unknown aps_environment is named, with what it probably meant",
        arguments: [
            ("Production", "in another case"), ("sandbox", "not the entitlement's value \"development\""),
            ("prod", "not the entitlement's value \"production\""),
            ("adhoc", "is not \"development\" or \"production\";"),
        ])
    func unknownValue(value: String, says: String) throws {
        let r = EnvironmentResolver.resolve(buildEnvironment: "production", apsEnvironment: value)
        let p = try #require(r.warnings.first { $0.code.rawValue == "aps-environment-unknown" })
        #expect(p.severity == .warning)
        #expect(p.message.contains("aps_environment \"\(value)\""))
        #expect(p.message.contains(says), "\(p.message)")
        #expect(p.fix.contains("development or production"))
        #expect(r.steps.first { $0.rule == .apsEnvironment }?.detail.contains("ignored") == true)
    }
}
