import ArgumentParser
import Foundation
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
            (sandbox|production) → is_test_user → build_environment in development|debug → production. \
            Values are matched exactly, as the backend does: "Development" or " development" resolve to \
            production, with a warning. Exits 0 whatever the result (use `kkpush diagnose` for a verdict).
            """
    )

    @Option(
        name: .long,
        help: "The build_environment the app reports (development, production, ...). Omit to model a missing value.")
    var buildEnvironment: String?

    @Option(
        name: .long,
        help: "Take the build_environment from an app scheme instead: release-testing, release, release-with-logging.")
    var scheme: String?

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
            throw ValidationError("Unknown --scheme '\(scheme)': use release-testing, release or release-with-logging.")
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
        var appBuild: AppBuild?
        if let scheme, let parsed = AppBuildScheme(name: scheme) {
            let b = AppBuild(scheme: parsed, loggingVariant: loggingVariant ?? .testing)
            appBuild = b
            build = b.buildEnvironment
            appProblems = b.problems()
        }
        let resolution = EnvironmentResolver.resolve(buildEnvironment: build, isTestUser: testUser, settings: settings)
        let endpoint = APNsEndpoint.apple(resolution.environment, port: port)
        let warnings = appProblems + resolution.warnings

        if json {
            var object: [String: JSONValue] = [
                "build_environment": JSONValue(resolution.buildEnvironment),
                "apns_environment": .string(resolution.environment.rawValue),
                "host": .string(endpoint.host),
                "port": .int(endpoint.port),
                "decided_by": .string(resolution.decidedBy.rawValue),
                "device_environment": JSONValue(resolution.deviceEnvironment?.rawValue),
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
            Output.printJSON(.object(object))
            return
        }

        if let appBuild {
            print(
                "Scheme: \(appBuild.scheme.rawValue) (\(appBuild.scheme.buildConfiguration) configuration) reports build_environment \"\(appBuild.buildEnvironment)\""
            )
        }
        print("APNs environment: \(resolution.environment) (\(endpoint.host):\(endpoint.port))")
        print("build_environment: \(resolution.buildEnvironment.map { "\"\($0)\"" } ?? "(missing)")")
        print("Decided by: \(resolution.decidedBy.rawValue)")
        print("Rules, in order:")
        let ruleRows = resolution.steps.enumerated().map { i, step in
            [
                "  \(i + 1). \(step.rule.rawValue)", step.decided ? "→ \(step.environment?.rawValue ?? "")" : "skip",
                step.detail,
            ]
        }
        for line in Output.table(ruleRows) { print(line) }
        if warnings.isEmpty {
            print("Warnings: none")
        } else {
            print(warnings.hasErrors ? "Problems (the resolution above is still what the server does):" : "Warnings:")
            for line in Output.lines(warnings) { print(line) }
        }
    }
}

/// `kkpush env schemes`: the app's schemes and what each reports.
struct EnvSchemesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schemes",
        abstract: "List the app's build schemes, the build_environment each reports and where the server sends it."
    )

    @Flag(name: .long, help: "Print a JSON array.")
    var json = false

    func run() async throws {
        var builds = [AppBuild(scheme: .releaseTesting), AppBuild(scheme: .release)]
        builds += LoggingVariant.allCases.map { AppBuild(scheme: .releaseWithLogging, loggingVariant: $0) }
        let rows: [JSONValue] = builds.map { b in
            let r = EnvironmentResolver.resolve(buildEnvironment: b.buildEnvironment)
            return [
                "scheme": .string(b.scheme.rawValue),
                "logging_variant": b.scheme == .releaseWithLogging ? .string(b.loggingVariant.rawValue) : .null,
                "build_configuration": .string(b.scheme.buildConfiguration),
                "aps_environment": .string(b.scheme.tokenEnvironment.entitlementValue),
                "build_environment": .string(b.buildEnvironment),
                "apns_environment": .string(r.environment.rawValue),
                "problems": Output.json(b.problems()),
            ]
        }
        if json {
            Output.printJSON(.array(rows))
            return
        }
        let header = ["scheme", "config", "aps-environment", "build_environment", "server → APNs"]
        let table: [[String]] = zip(builds, rows).map { b, row in
            let name =
                b.scheme == .releaseWithLogging
                ? "\(b.scheme.rawValue) (\(b.loggingVariant.rawValue))" : b.scheme.rawValue
            let apns = (row["apns_environment"]?.stringValue ?? "") + (b.problems().isEmpty ? "" : "  ✗ MISMATCH")
            return [
                name, b.scheme.buildConfiguration, b.scheme.tokenEnvironment.entitlementValue, b.buildEnvironment, apns,
            ]
        }
        for line in Output.table([header] + table) { print(line) }
        let all = builds.flatMap { $0.problems() }
        if !all.isEmpty {
            print("")
            for line in Output.lines(all, indent: "") { print(line) }
        }
    }
}

extension LoggingVariant: ExpressibleByArgument {}
