public import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KantineKoning

/// `kkpush env`: how a build environment becomes an APNs environment.
struct EnvCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env",
        abstract: "Resolve a build environment to an APNs environment, as the Kantine Koning backend does.",
        subcommands: [EnvResolveCommand.self, EnvSchemesCommand.self]
    )
}

/// `kkpush env resolve`.
struct EnvResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Print the APNs environment and host the backend picks, and each rule that decided it.",
        discussion: """
            Rules, in the backend's order: APNS_FORCE_ENV (sandbox|production) → the legacy APNS_ENV \
            (sandbox|production) → aps_environment (development|production, the entitlement the app is signed with; \
            the rule kkpush's backend adds, preferred when the app sends it) → is_test_user → build_environment in \
            development|debug → production. Values are matched exactly, as the backend does: "Development" or \
            " development" resolve to production, with a warning.

            --scheme gives what the app's code reports (its configuration); --distribution gives what its tokens are \
            (Apple sets aps-environment from the provisioning profile: run from Xcode → development/sandbox; ad hoc, \
            enterprise, TestFlight, App Store → production). With both, a build whose report and signature disagree \
            is named. Exits 0 whatever the result (use `kkpush diagnose` for a verdict).
            """
    )

    @Option(
        name: .long,
        help: "The build_environment the app reports (development, production, ...). Omit to model a missing value.")
    var buildEnvironment: String?

    @Option(
        name: .long,
        help:
            "The aps_environment the app reports (development|production: the entitlement from its embedded profile)."
    )
    var apsEnvironment: String?

    @Option(
        name: .long,
        help: "Take the build_environment from an app scheme instead: release-testing, release, release-with-logging.")
    var scheme: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How the build reached the phone: \(AppDistribution.acceptedNames). Decides its tokens' environment.",
            valueName: "distribution"))
    var distribution: String?

    @Flag(
        name: .long,
        help: "With --scheme/--distribution: the fixed app, which sends aps_environment from its embedded profile.")
    var sendsApsEnvironment = false

    @Option(
        name: .long,
        help:
            "For --scheme release-with-logging: which README snippet the app follows (testing|development; default testing)."
    )
    var loggingVariant: LoggingVariant?

    @Flag(name: .long, help: "The enrollment is a test user (is_test_user).")
    var testUser = false

    @OptionGroup(title: "Server settings")
    var server: ServerSettingsOptions

    @Option(name: .long, parsing: .unconditional, help: "APNs port: 443, or Apple's alternative 2197.")
    var port: Int = APNsEndpoint.standardPort

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    func validate() throws {
        if scheme != nil && buildEnvironment != nil {
            throw ValidationError("Give --build-environment or --scheme, not both.")
        }
        if let scheme, AppBuildScheme(name: scheme) == nil {
            if AppDistribution(name: scheme) != nil {
                throw ValidationError(
                    "'\(scheme)' is a distribution, not a scheme: pass --distribution \(scheme), with --scheme release-testing or release for the configuration it was built in."
                )
            }
            throw ValidationError("Unknown --scheme '\(scheme)': use release-testing, release or release-with-logging.")
        }
        if let distribution, AppDistribution(name: distribution) == nil {
            throw ValidationError(
                "Unknown --distribution '\(distribution)': use \(AppDistribution.acceptedNames) (TestFlight and the App Store are both App Store Connect distribution)."
            )
        }
        if sendsApsEnvironment && (scheme == nil || distribution == nil) {
            throw ValidationError(
                "--sends-aps-environment models the fixed app: give --scheme and --distribution with it (or pass --aps-environment directly)."
            )
        }
        if sendsApsEnvironment && apsEnvironment != nil {
            throw ValidationError("Give --aps-environment or --sends-aps-environment, not both.")
        }
        if loggingVariant != nil, scheme.flatMap(AppBuildScheme.init(name:)) != .releaseWithLogging {
            throw ValidationError(
                "--logging-variant is for --scheme release-with-logging only; the other schemes have one build_environment."
            )
        }
        guard port == APNsEndpoint.standardPort || port == APNsEndpoint.alternatePort else {
            throw ValidationError("--port must be 443 or 2197 (Apple's two APNs ports), not \(port).")
        }
    }

    func run() async throws {
        let settings = server.settings()

        var appProblems: [Problem] = []
        var build = buildEnvironment
        var aps = apsEnvironment
        var appBuild: AppBuild?
        let parsedDistribution = distribution.flatMap(AppDistribution.init(name:))
        if let scheme, let parsed = AppBuildScheme(name: scheme) {
            let b = AppBuild(
                scheme: parsed, distribution: parsedDistribution, loggingVariant: loggingVariant ?? .testing,
                sendsAPSEnvironment: sendsApsEnvironment)
            appBuild = b
            build = b.buildEnvironment
            aps = b.apsEnvironment ?? aps
            appProblems = b.problems()
        }
        let resolution = EnvironmentResolver.resolve(
            buildEnvironment: build, apsEnvironment: aps, isTestUser: testUser, settings: settings)
        let endpoint = APNsEndpoint.apple(resolution.environment, port: port)
        var warnings = appProblems + resolution.warnings
        // A distribution without a scheme: the tokens' environment is known, whatever the app reports.
        let signedFor = parsedDistribution?.tokenEnvironment
        if appBuild == nil, let parsedDistribution, let signedFor, signedFor != resolution.environment {
            warnings.insert(
                Problem(
                    .error, code: "distribution-mismatch",
                    message:
                        "A \(parsedDistribution.title) build is signed with \(parsedDistribution == .xcode ? "a development" : "an \(parsedDistribution.profileKind)") profile: aps-environment \(signedFor.entitlementValue), \(signedFor) tokens. The server sends its pushes to \(resolution.environment): BadDeviceToken.",
                    fix:
                        "Make the app send aps_environment (\(signedFor.entitlementValue)) from its embedded profile, or build_environment \"\(signedFor == .sandbox ? "development" : "production")\"; and clear any override that pins \(resolution.environment)."
                ), at: 0)
        }

        if json {
            var object: [String: JSONValue] = [
                "build_environment": JSONValue(resolution.buildEnvironment),
                "aps_environment": JSONValue(aps),
                "apns_environment": .string(resolution.environment.rawValue),
                "host": .string(endpoint.host),
                "port": .int(endpoint.port),
                "decided_by": .string(resolution.decidedBy.rawValue),
                "device_environment": JSONValue(resolution.deviceEnvironment?.rawValue),
                "token_environment": JSONValue(signedFor?.rawValue),
                "misrouted": signedFor.map { .bool($0 != resolution.environment) } ?? .null,
                "is_test_user": .bool(testUser),
                "server": [
                    "APNS_FORCE_ENV": JSONValue(settings.forceEnv),
                    "APNS_ENV": JSONValue(settings.legacyAPNSEnv),
                ],
                "rules": .array(
                    resolution.steps.map { step in
                        [
                            "rule": .string(step.rule.rawValue), "decided": .bool(step.decided),
                            "environment": JSONValue(step.environment?.rawValue), "detail": .string(step.detail),
                        ]
                    }),
                "warnings": Output.json(warnings),
            ]
            if let appBuild {
                object["scheme"] = .string(appBuild.scheme.rawValue)
                object["build_configuration"] = .string(appBuild.scheme.buildConfiguration)
            }
            if let parsedDistribution {
                object["distribution"] = .string(parsedDistribution.rawValue)
                object["profile_kind"] = .string(parsedDistribution.profileKind)
            }
            Output.printJSON(.object(object))
            return
        }

        if let appBuild {
            print(
                "Scheme: \(appBuild.scheme.rawValue) (\(appBuild.scheme.buildConfiguration) configuration) reports build_environment \"\(appBuild.buildEnvironment)\"\(appBuild.apsEnvironment.map { " and aps_environment \"\($0)\"" } ?? "")"
            )
        }
        if let parsedDistribution, let signedFor {
            print(
                "Distribution: \(parsedDistribution.title) → \(parsedDistribution.profileKind) profile → aps-environment \(signedFor.entitlementValue): \(signedFor) tokens"
            )
        }
        print("APNs environment: \(resolution.environment) (\(endpoint.host):\(endpoint.port))")
        print("build_environment: \(resolution.buildEnvironment.map { "\"\($0)\"" } ?? "(missing)")")
        if let aps { print("aps_environment: \"\(aps)\"") }
        print("Decided by: \(resolution.decidedBy.rawValue)")
        print("Rules, in order:")
        let ruleRows = resolution.steps.enumerated().map { i, step in
            [
                "  \(i + 1). \(step.rule.rawValue)", step.decided ? "→ \(step.environment?.rawValue ?? "")" : "skip",
                step.detail,
            ]
        }
        for line in Output.table(ruleRows) { print(line) }
        if let signedFor {
            print(
                signedFor == resolution.environment
                    ? "Routing: right (the server sends \(signedFor) tokens to \(signedFor))."
                    : "Routing: WRONG — \(signedFor) tokens sent to \(resolution.environment) (BadDeviceToken).")
        }
        if warnings.isEmpty {
            print("Warnings: none")
        } else {
            print(warnings.hasErrors ? "Problems (the resolution above is still what the server does):" : "Warnings:")
            for line in Output.lines(warnings) { print(line) }
        }
    }
}

/// `kkpush env schemes`: every configuration × distribution, what it reports and where the server sends it.
struct EnvSchemesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schemes",
        abstract:
            "Show every scheme × distribution: what the build reports, what it is signed for, where the server sends it.",
        discussion: """
            A build's build_environment follows its configuration (the app's #if DEBUG); its tokens' environment \
            follows its distribution, because Xcode sets the aps-environment entitlement from the provisioning \
            profile (Apple, "APS Environment Entitlement": development profiles give development; production \
            profiles and TestFlight's prerelease versions give production). Cells where the two disagree are \
            marked ✗: the server sends those tokens to the wrong environment. The last column shows the fixed app, \
            which also sends aps_environment from its embedded profile (the KantineKoningSigning module).
            """
    )

    @Flag(name: .long, help: "Print a JSON array, one object per cell.")
    var json = false

    func run() async throws {
        let builds = AppBuild.table
        struct Cell {
            var build: AppBuild
            var server: APNsEnvironment
            var fixed: APNsEnvironment
            var problems: [Problem]
        }
        let cells = builds.map { b in
            var f = b
            f.sendsAPSEnvironment = true
            return Cell(
                build: b, server: EnvironmentResolver.resolve(buildEnvironment: b.buildEnvironment).environment,
                fixed: EnvironmentResolver.resolve(
                    buildEnvironment: f.buildEnvironment, apsEnvironment: f.apsEnvironment
                )
                .environment, problems: b.problems())
        }
        if json {
            Output.printJSON(
                .array(
                    cells.map { c in
                        [
                            "scheme": .string(c.build.scheme.rawValue),
                            "logging_variant": c.build.scheme == .releaseWithLogging
                                ? .string(c.build.loggingVariant.rawValue) : .null,
                            "build_configuration": .string(c.build.scheme.buildConfiguration),
                            "distribution": .string(c.build.distribution.rawValue),
                            "profile_kind": .string(c.build.distribution.profileKind),
                            "aps_environment": .string(c.build.tokenEnvironment.entitlementValue),
                            "token_environment": .string(c.build.tokenEnvironment.rawValue),
                            "build_environment": .string(c.build.buildEnvironment),
                            "apns_environment": .string(c.server.rawValue),
                            "mismatch": .bool(c.server != c.build.tokenEnvironment),
                            "fixed_app_apns_environment": .string(c.fixed.rawValue),
                            "problems": Output.json(c.problems),
                        ]
                    }))
            return
        }
        let header = [
            "scheme (config)", "distribution", "profile → aps-environment", "reports", "server → APNs", "fixed app",
        ]
        let rows: [[String]] = cells.map { c in
            let b = c.build
            let name =
                b.scheme == .releaseWithLogging
                ? "\(b.scheme.rawValue) (\(b.loggingVariant.rawValue))"
                : "\(b.scheme.rawValue) (\(b.scheme.buildConfiguration))"
            let mark = c.server == b.tokenEnvironment ? "✓" : "✗ MISMATCH"
            return [
                name, b.distribution.title, "\(b.distribution.profileKind) → \(b.tokenEnvironment.entitlementValue)",
                b.buildEnvironment, "\(c.server.rawValue) \(mark)",
                "\(c.fixed.rawValue) \(c.fixed == b.tokenEnvironment ? "✓" : "✗")",
            ]
        }
        for line in Output.table([header] + rows) { print(line) }
        let mismatches = cells.filter { $0.server != $0.build.tokenEnvironment }
        print("")
        print(
            "\(mismatches.count) of \(cells.count) cells are misrouted today; the fixed app (aps_environment sent) routes all \(cells.count) right."
        )
        print(
            "Source: Apple, APS Environment Entitlement — \"Xcode sets the value of the entitlement based on your app's current provisioning profile\"; production profiles and TestFlight (Prerelease Versions and Beta Testers) use production."
        )
        print("Read a real build with: kkpush build inspect PATH (an .ipa, .xcarchive, .app, profile or executable).")
    }
}

extension LoggingVariant: ExpressibleByArgument {}
