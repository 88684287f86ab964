import KKPushCore
import KantineKoning
import Testing

@Suite("Environment resolution (backend rules)")
struct EnvironmentResolutionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var build: String?
        var testUser = false
        var force: String? = nil
        var legacy: String? = nil
        var expected: APNsEnvironment
        var decidedBy: ResolutionRule
        var warning: String? = nil
        var testDescription: String {
            "build=\(build.map { "\"\($0)\"" } ?? "nil") test=\(testUser) force=\(force ?? "-") legacy=\(legacy ?? "-")"
        }
    }

    static let cases: [Case] = [
        // build_environment alone
        Case(build: "development", expected: .sandbox, decidedBy: .buildEnvironment),
        Case(
            build: "debug", expected: .sandbox, decidedBy: .buildEnvironment, warning: "build-environment-nonstandard"),
        Case(build: "production", expected: .production, decidedBy: .fallback),
        Case(build: "release", expected: .production, decidedBy: .fallback, warning: "build-environment-nonstandard"),
        Case(build: "appstore", expected: .production, decidedBy: .fallback, warning: "build-environment-nonstandard"),
        Case(build: "testing", expected: .production, decidedBy: .fallback, warning: "build-environment-testing"),
        Case(build: nil, expected: .production, decidedBy: .fallback, warning: "build-environment-missing"),
        Case(build: "staging", expected: .production, decidedBy: .fallback, warning: "build-environment-unknown"),
        Case(build: "", expected: .production, decidedBy: .fallback, warning: "build-environment-unknown"),
        // exact matching, as the backend: near-misses fall through to production and are warned about
        Case(
            build: "Development", expected: .production, decidedBy: .fallback,
            warning: "build-environment-not-normalized"),
        Case(
            build: " development", expected: .production, decidedBy: .fallback,
            warning: "build-environment-not-normalized"),
        Case(
            build: "DEBUG\n", expected: .production, decidedBy: .fallback, warning: "build-environment-not-normalized"),
        // test user
        Case(
            build: "production", testUser: true, expected: .sandbox, decidedBy: .testUser,
            warning: "test-user-production-build"),
        Case(build: "development", testUser: true, expected: .sandbox, decidedBy: .testUser),
        Case(
            build: nil, testUser: true, expected: .sandbox, decidedBy: .testUser, warning: "build-environment-missing"),
        // APNS_FORCE_ENV wins over everything
        Case(
            build: "development", force: "production", expected: .production, decidedBy: .forceEnv,
            warning: "force-env-override"),
        Case(build: "production", testUser: true, force: "production", expected: .production, decidedBy: .forceEnv),
        Case(
            build: "production", force: "sandbox", legacy: "production", expected: .sandbox, decidedBy: .forceEnv,
            warning: "force-env-override"),
        Case(
            build: "development", force: "Sandbox", expected: .sandbox, decidedBy: .buildEnvironment,
            warning: "force-env-ignored"),
        Case(
            build: "production", force: "staging", expected: .production, decidedBy: .fallback,
            warning: "force-env-ignored"),
        Case(build: "production", force: "", expected: .production, decidedBy: .fallback),
        // the legacy APNS_ENV
        Case(
            build: "production", legacy: "sandbox", expected: .sandbox, decidedBy: .legacyAPNSEnv,
            warning: "server-env-override"),
        Case(
            build: "development", legacy: "sandbox", expected: .sandbox, decidedBy: .legacyAPNSEnv,
            warning: "server-env-legacy"),
        Case(
            build: "development", legacy: "production", expected: .production, decidedBy: .legacyAPNSEnv,
            warning: "server-env-override"),
        Case(
            build: "development", testUser: false, legacy: "dev", expected: .sandbox, decidedBy: .buildEnvironment,
            warning: "server-env-ignored"),
        Case(
            build: "production", testUser: true, legacy: "production", expected: .production, decidedBy: .legacyAPNSEnv,
            warning: "server-env-legacy"),
    ]

    @Test("Each rule, in order", arguments: cases)
    func resolves(_ c: Case) {
        let r = EnvironmentResolver.resolve(
            buildEnvironment: c.build, isTestUser: c.testUser,
            settings: ServerAPNsSettings(forceEnv: c.force, legacyAPNSEnv: c.legacy))
        #expect(r.environment == c.expected)
        #expect(r.decidedBy == c.decidedBy)
        #expect(r.steps.last?.rule == c.decidedBy)
        #expect(r.steps.last?.decided == true)
        #expect(r.steps.dropLast().allSatisfy { !$0.decided })
        // Rules are evaluated in the documented order and none is skipped over.
        let order = ResolutionRule.allCases
        #expect(r.steps.map(\.rule) == Array(order.prefix(r.steps.count)))
        if let warning = c.warning {
            #expect(r.warnings.contains { $0.code.rawValue == warning }, "warnings: \(r.warnings.map(\.code))")
        } else {
            #expect(r.warnings.isEmpty, "unexpected: \(r.warnings.map(\.code))")
        }
    }

    @Test("The override that contradicts the device is an error naming the README's fix")
    func legacyOverrideFix() throws {
        let r = EnvironmentResolver.resolve(
            buildEnvironment: "production", settings: ServerAPNsSettings(legacyAPNSEnv: "sandbox"))
        let p = try #require(r.warnings.first { $0.code.rawValue == "server-env-override" })
        #expect(p.severity == .error)
        #expect(p.fix.contains("fly secrets unset APNS_ENV -a kantine-koning"))
        #expect(p.message.contains("BadDeviceToken"))
    }

    @Test("Server settings come from the process environment's variable names")
    func settingsFromEnvironment() {
        let s = ServerAPNsSettings.from(environment: ["APNS_FORCE_ENV": "sandbox", "APNS_ENV": "production", "X": "y"])
        #expect(s.forceEnv == "sandbox")
        #expect(s.legacyAPNSEnv == "production")
        #expect(ServerAPNsSettings.from(environment: [:]) == ServerAPNsSettings())
    }
}

@Suite("App build schemes")
struct AppBuildTests {
    @Test(
        "Each scheme reports the README's build_environment",
        arguments: [
            (AppBuild(scheme: .releaseTesting), "development", APNsEnvironment.sandbox, true),
            (AppBuild(scheme: .release), "production", .production, true),
            (AppBuild(scheme: .releaseWithLogging, loggingVariant: .development), "development", .sandbox, true),
            (AppBuild(scheme: .releaseWithLogging, loggingVariant: .testing), "testing", .production, false),
        ])
    func schemes(build: AppBuild, reports: String, server: APNsEnvironment, consistent: Bool) {
        #expect(build.buildEnvironment == reports)
        #expect(EnvironmentResolver.resolve(buildEnvironment: build.buildEnvironment).environment == server)
        #expect(build.problems().isEmpty == consistent)
        if !consistent {
            #expect(build.problems().first?.code.rawValue == "build-environment-mismatch")
        }
    }

    @Test(
        "Scheme names parse as people write them",
        arguments: [
            ("Release Testing", AppBuildScheme.releaseTesting), ("release-testing", .releaseTesting),
            ("Release", .release),
            ("release_with_logging", .releaseWithLogging),
        ])
    func schemeNames(name: String, scheme: AppBuildScheme) {
        #expect(AppBuildScheme(name: name) == scheme)
    }

    @Test func unknownSchemeName() { #expect(AppBuildScheme(name: "Nightly") == nil) }
}
