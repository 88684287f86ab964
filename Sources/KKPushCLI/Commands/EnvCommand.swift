public import ArgumentParser
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
        let report = EnvironmentResolutionReport.resolve(
            buildEnvironment: buildEnvironment, apsEnvironment: apsEnvironment,
            scheme: scheme.flatMap(AppBuildScheme.init(name:)),
            distribution: distribution.flatMap(AppDistribution.init(name:)), loggingVariant: loggingVariant ?? .testing,
            sendsAPSEnvironment: sendsApsEnvironment, isTestUser: testUser, settings: server.settings(), port: port)
        Output.printReport(report, json: json)
    }
}

extension EnvironmentResolutionReport: CommandReport {
    var textLines: [String] {
        let r = resolution
        var lines: [String] = []
        if let appBuild {
            lines.append(
                "Scheme: \(appBuild.scheme.rawValue) (\(appBuild.scheme.buildConfiguration) configuration) reports build_environment \"\(appBuild.buildEnvironment)\"\(appBuild.apsEnvironment.map { " and aps_environment \"\($0)\"" } ?? "")"
            )
        }
        if let distribution, let signedFor = tokenEnvironment {
            lines.append(
                "Distribution: \(distribution.title) → \(distribution.profileKind) profile → aps-environment \(signedFor.entitlementValue): \(signedFor) tokens"
            )
        }
        lines.append("APNs environment: \(r.environment) (\(endpoint.host):\(endpoint.port))")
        lines.append("build_environment: \(r.buildEnvironment.map { "\"\($0)\"" } ?? "(missing)")")
        if let apsEnvironment { lines.append("aps_environment: \"\(apsEnvironment)\"") }
        lines.append("Decided by: \(r.decidedBy.rawValue)")
        lines.append("Rules, in order:")
        lines += Output.table(
            r.steps.enumerated().map { i, step in
                [
                    "  \(i + 1). \(step.rule.rawValue)",
                    step.decided ? "→ \(step.environment?.rawValue ?? "")" : "skip",
                    step.detail,
                ]
            })
        if let signedFor = tokenEnvironment {
            lines.append(
                signedFor == r.environment
                    ? "Routing: right (the server sends \(signedFor) tokens to \(signedFor))."
                    : "Routing: WRONG — \(signedFor) tokens sent to \(r.environment) (BadDeviceToken).")
        }
        if warnings.isEmpty {
            lines.append("Warnings: none")
        } else {
            lines.append(
                warnings.hasErrors ? "Problems (the resolution above is still what the server does):" : "Warnings:")
            lines += Output.lines(warnings)
        }
        return lines
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
        Output.printReport(EnvironmentSchemesReport.table(), json: json)
    }
}

extension EnvironmentSchemesReport: CommandReport {
    var textLines: [String] {
        let header = [
            "scheme (config)", "distribution", "profile → aps-environment", "reports", "server → APNs", "fixed app",
        ]
        let rows: [[String]] = cells.map { c in
            let b = c.build
            let name =
                b.scheme == .releaseWithLogging
                ? "\(b.scheme.rawValue) (\(b.loggingVariant.rawValue))"
                : "\(b.scheme.rawValue) (\(b.scheme.buildConfiguration))"
            return [
                name, b.distribution.title, "\(b.distribution.profileKind) → \(b.tokenEnvironment.entitlementValue)",
                b.buildEnvironment, "\(c.server.rawValue) \(c.mismatch ? "✗ MISMATCH" : "✓")",
                "\(c.fixed.rawValue) \(c.fixed == b.tokenEnvironment ? "✓" : "✗")",
            ]
        }
        return Output.table([header] + rows) + [
            "",
            "\(mismatches.count) of \(cells.count) cells are misrouted today; the fixed app (aps_environment sent) routes all \(cells.count) right.",
            "Source: Apple, APS Environment Entitlement — \"Xcode sets the value of the entitlement based on your app's current provisioning profile\"; production profiles and TestFlight (Prerelease Versions and Beta Testers) use production.",
            "Read a real build with: kkpush build inspect PATH (an .ipa, .xcarchive, .app, profile or executable).",
        ]
    }
}

extension LoggingVariant: ExpressibleByArgument {}
