package import KKPushCore

// The reports of the environment walk-throughs (`env resolve`, `env schemes`, `demo`): each one value a command line
// renders as text and encodes as JSON. Their coding keys are the stable field names scripts read; `encode(to:)`
// writes `null` where a field is unknown (never leaves it out) unless the field belongs to an input not given.

/// How a build environment becomes an APNs environment, as the Kantine Koning backend decides it, with each rule that
/// decided and what is wrong with it (``resolve(buildEnvironment:apsEnvironment:scheme:distribution:loggingVariant:sendsAPSEnvironment:isTestUser:settings:port:)``).
package struct EnvironmentResolutionReport: Encodable, Sendable {
    /// The backend's resolution.
    package var resolution: EnvironmentResolution
    /// The `aps_environment` the app reports (given, or the fixed app's from its distribution), if any.
    package var apsEnvironment: String?
    /// The APNs host and port the backend sends to.
    package var endpoint: APNsEndpoint
    /// The app build modelled from a scheme, if one was given.
    package var appBuild: AppBuild?
    /// How the build reached the phone, if given: it decides its tokens' environment.
    package var distribution: AppDistribution?
    package var isTestUser: Bool
    /// The server's settings the resolution used.
    package var settings: ServerAPNsSettings
    /// What is wrong: the build's own problems, the resolution's warnings, and a distribution the server misroutes.
    package var warnings: [Problem]

    /// The environment the build's tokens belong to, when its distribution is known.
    package var tokenEnvironment: APNsEnvironment? { distribution?.tokenEnvironment }

    /// Whether the server sends the build's tokens to another environment (nil when the distribution is unknown).
    package var misrouted: Bool? { tokenEnvironment.map { $0 != resolution.environment } }

    /// Resolves what an app reports: `buildEnvironment` and `apsEnvironment` as given, or (with `scheme`) what a
    /// build of that scheme reports; `distribution` tells its tokens' environment. `port` is the APNs port (443 or
    /// 2197).
    package static func resolve(
        buildEnvironment: String?, apsEnvironment: String?, scheme: AppBuildScheme?, distribution: AppDistribution?,
        loggingVariant: LoggingVariant, sendsAPSEnvironment: Bool, isTestUser: Bool, settings: ServerAPNsSettings,
        port: Int
    ) -> EnvironmentResolutionReport {
        var build = buildEnvironment
        var aps = apsEnvironment
        var appBuild: AppBuild?
        var appProblems: [Problem] = []
        if let scheme {
            let b = AppBuild(
                scheme: scheme, distribution: distribution, loggingVariant: loggingVariant,
                sendsAPSEnvironment: sendsAPSEnvironment)
            appBuild = b
            build = b.buildEnvironment
            aps = b.apsEnvironment ?? aps
            appProblems = b.problems()
        }
        let resolution = EnvironmentResolver.resolve(
            buildEnvironment: build, apsEnvironment: aps, isTestUser: isTestUser, settings: settings)
        var warnings = appProblems + resolution.warnings
        // A distribution without a scheme: the tokens' environment is known, whatever the app reports.
        if appBuild == nil, let distribution, distribution.tokenEnvironment != resolution.environment {
            let signedFor = distribution.tokenEnvironment
            warnings.insert(
                Problem(
                    .error, code: .distributionMismatch,
                    message:
                        "A \(distribution.title) build is signed with \(distribution == .xcode ? "a development" : "an \(distribution.profileKind)") profile: aps-environment \(signedFor.entitlementValue), \(signedFor) tokens. The server sends its pushes to \(resolution.environment): BadDeviceToken.",
                    fix:
                        "Make the app send aps_environment (\(signedFor.entitlementValue)) from its embedded profile, or build_environment \"\(signedFor == .sandbox ? "development" : "production")\"; and clear any override that pins \(resolution.environment)."
                ), at: 0)
        }
        return EnvironmentResolutionReport(
            resolution: resolution, apsEnvironment: aps, endpoint: .apple(resolution.environment, port: port),
            appBuild: appBuild, distribution: distribution, isTestUser: isTestUser, settings: settings,
            warnings: warnings)
    }

    private enum CodingKeys: String, CodingKey {
        case buildEnvironment = "build_environment"
        case apsEnvironment = "aps_environment"
        case apnsEnvironment = "apns_environment"
        case host, port
        case decidedBy = "decided_by"
        case deviceEnvironment = "device_environment"
        case tokenEnvironment = "token_environment"
        case misrouted
        case isTestUser = "is_test_user"
        case server, rules, warnings, scheme
        case buildConfiguration = "build_configuration"
        case distribution
        case profileKind = "profile_kind"
    }

    /// The server's two variables, under their own names.
    private struct Server: Encodable {
        var settings: ServerAPNsSettings
        enum CodingKeys: String, CodingKey {
            case force = "APNS_FORCE_ENV"
            case legacy = "APNS_ENV"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(settings.forceEnv, forKey: .force)
            try c.encode(settings.legacyAPNSEnv, forKey: .legacy)
        }
    }

    /// One rule of the resolution.
    private struct Rule: Encodable {
        var step: ResolutionStep
        enum CodingKeys: String, CodingKey { case rule, decided, environment, detail }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(step.rule.rawValue, forKey: .rule)
            try c.encode(step.decided, forKey: .decided)
            try c.encode(step.environment?.rawValue, forKey: .environment)
            try c.encode(step.detail, forKey: .detail)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(resolution.buildEnvironment, forKey: .buildEnvironment)
        try c.encode(apsEnvironment, forKey: .apsEnvironment)
        try c.encode(resolution.environment.rawValue, forKey: .apnsEnvironment)
        try c.encode(endpoint.host, forKey: .host)
        try c.encode(endpoint.port, forKey: .port)
        try c.encode(resolution.decidedBy.rawValue, forKey: .decidedBy)
        try c.encode(resolution.deviceEnvironment?.rawValue, forKey: .deviceEnvironment)
        try c.encode(tokenEnvironment?.rawValue, forKey: .tokenEnvironment)
        try c.encode(misrouted, forKey: .misrouted)
        try c.encode(isTestUser, forKey: .isTestUser)
        try c.encode(Server(settings: settings), forKey: .server)
        try c.encode(resolution.steps.map(Rule.init), forKey: .rules)
        try c.encode(warnings, forKey: .warnings)
        // The scheme's and the distribution's fields only when given (absent, not null: the input was not there).
        if let appBuild {
            try c.encode(appBuild.scheme.rawValue, forKey: .scheme)
            try c.encode(appBuild.scheme.buildConfiguration, forKey: .buildConfiguration)
        }
        if let distribution {
            try c.encode(distribution.rawValue, forKey: .distribution)
            try c.encode(distribution.profileKind, forKey: .profileKind)
        }
    }
}

/// Every scheme × distribution of the app: what the build reports, what it is signed for, where the backend sends it
/// today and where it sends the fixed app (which sends `aps_environment`). Encodes as a JSON array, one object per
/// cell.
package struct EnvironmentSchemesReport: Encodable, Sendable {
    /// One build of the table.
    package struct Cell: Encodable, Sendable {
        package var build: AppBuild
        /// Where the backend sends today's app (build_environment only).
        package var server: APNsEnvironment
        /// Where it sends the fixed app.
        package var fixed: APNsEnvironment
        package var problems: [Problem]

        /// The backend sends this build's tokens to another environment than theirs.
        package var mismatch: Bool { server != build.tokenEnvironment }

        private enum CodingKeys: String, CodingKey {
            case scheme
            case loggingVariant = "logging_variant"
            case buildConfiguration = "build_configuration"
            case distribution
            case profileKind = "profile_kind"
            case apsEnvironment = "aps_environment"
            case tokenEnvironment = "token_environment"
            case buildEnvironment = "build_environment"
            case apnsEnvironment = "apns_environment"
            case mismatch
            case fixedAppAPNsEnvironment = "fixed_app_apns_environment"
            case problems
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(build.scheme.rawValue, forKey: .scheme)
            try c.encode(
                build.scheme == .releaseWithLogging ? build.loggingVariant.rawValue : nil, forKey: .loggingVariant)
            try c.encode(build.scheme.buildConfiguration, forKey: .buildConfiguration)
            try c.encode(build.distribution.rawValue, forKey: .distribution)
            try c.encode(build.distribution.profileKind, forKey: .profileKind)
            try c.encode(build.tokenEnvironment.entitlementValue, forKey: .apsEnvironment)
            try c.encode(build.tokenEnvironment.rawValue, forKey: .tokenEnvironment)
            try c.encode(build.buildEnvironment, forKey: .buildEnvironment)
            try c.encode(server.rawValue, forKey: .apnsEnvironment)
            try c.encode(mismatch, forKey: .mismatch)
            try c.encode(fixed.rawValue, forKey: .fixedAppAPNsEnvironment)
            try c.encode(problems, forKey: .problems)
        }
    }

    package var cells: [Cell]

    /// The cells the backend misroutes today.
    package var mismatches: [Cell] { cells.filter(\.mismatch) }

    /// The table over ``AppBuild/table``.
    package static func table() -> EnvironmentSchemesReport {
        EnvironmentSchemesReport(
            cells: AppBuild.table.map { b in
                var fixedApp = b
                fixedApp.sendsAPSEnvironment = true
                return Cell(
                    build: b, server: EnvironmentResolver.resolve(buildEnvironment: b.buildEnvironment).environment,
                    fixed: EnvironmentResolver.resolve(
                        buildEnvironment: fixedApp.buildEnvironment, apsEnvironment: fixedApp.apsEnvironment
                    ).environment, problems: b.problems())
            })
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(cells)
    }
}

/// The environment-resolution walk-through: every app build of ``builds`` against every server setting of
/// ``setups``, where its pushes go and which combinations break delivery, each breaking one with the fix that works
/// under its settings (``OverrideRemedy/fix(build:settings:testUser:resolution:)``).
package struct EnvironmentDemoReport: Encodable, Sendable {
    /// A server setting of the walk-through.
    package struct ServerSetup: Sendable {
        package var name: String
        package var settings: ServerAPNsSettings
        package var testUser: Bool

        package init(name: String, settings: ServerAPNsSettings, testUser: Bool) {
            self.name = name
            self.settings = settings
            self.testUser = testUser
        }
    }

    /// One build under one setup.
    package struct Row: Encodable, Sendable {
        package var setup: String
        package var build: AppBuild
        package var resolution: EnvironmentResolution
        /// The build's own problems and the resolution's warnings.
        package var problems: [Problem]
        /// The fix, for a row that breaks.
        package var fix: String?

        /// The backend sends the build's tokens to their own environment.
        package var delivers: Bool { resolution.environment == build.tokenEnvironment }
        /// What APNs answers a push to the build: `200`, or `400 BadDeviceToken`.
        package var expectedAPNsAnswer: String { delivers ? "200" : "400 BadDeviceToken" }

        private enum CodingKeys: String, CodingKey {
            case server, scheme, distribution
            case buildEnvironment = "build_environment"
            case tokenEnvironment = "token_environment"
            case apnsEnvironment = "apns_environment"
            case host
            case decidedBy = "decided_by"
            case delivers
            case expectedAPNsAnswer = "expected_apns_answer"
            case problems, fix
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(setup, forKey: .server)
            try c.encode(build.scheme.rawValue, forKey: .scheme)
            try c.encode(build.distribution.rawValue, forKey: .distribution)
            try c.encode(build.buildEnvironment, forKey: .buildEnvironment)
            try c.encode(build.tokenEnvironment.rawValue, forKey: .tokenEnvironment)
            try c.encode(resolution.environment.rawValue, forKey: .apnsEnvironment)
            try c.encode(resolution.environment.host, forKey: .host)
            try c.encode(resolution.decidedBy.rawValue, forKey: .decidedBy)
            try c.encode(delivers, forKey: .delivers)
            try c.encode(expectedAPNsAnswer, forKey: .expectedAPNsAnswer)
            try c.encode(problems, forKey: .problems)
            try c.encode(fix, forKey: .fix)
        }
    }

    /// One setup and its rows.
    package struct Group: Sendable {
        package var setup: ServerSetup
        package var rows: [Row]
    }

    /// The setups in the order shown, each with its rows.
    package var groups: [Group]

    /// Every row, setup by setup.
    package var rows: [Row] { groups.flatMap(\.rows) }
    /// The rows that break delivery.
    package var broken: Int { rows.count { !$0.delivers } }

    /// The server settings the README discusses.
    package static let setups: [ServerSetup] = [
        ServerSetup(name: "auto-detection (recommended)", settings: .init(), testUser: false),
        ServerSetup(name: "APNS_ENV=sandbox (legacy)", settings: .init(legacyAPNSEnv: "sandbox"), testUser: false),
        ServerSetup(
            name: "APNS_ENV=production (legacy)", settings: .init(legacyAPNSEnv: "production"), testUser: false),
        ServerSetup(name: "APNS_FORCE_ENV=sandbox", settings: .init(forceEnv: "sandbox"), testUser: false),
        ServerSetup(name: "is_test_user", settings: .init(), testUser: true),
    ]

    /// The Kantine Koning builds.
    package static let builds: [AppBuild] = [
        AppBuild(scheme: .releaseTesting), AppBuild(scheme: .release),
        AppBuild(scheme: .releaseWithLogging, loggingVariant: .testing),
        // The mismatch cells Apple's signing makes: a Debug build on TestFlight, a Release build run from Xcode.
        AppBuild(scheme: .releaseTesting, distribution: .testFlight), AppBuild(scheme: .release, distribution: .xcode),
    ]

    /// The setups shown: ``setups``, plus `processSettings` (the running process's `APNS_FORCE_ENV` and `APNS_ENV`)
    /// when either is set.
    package static func allSetups(processSettings settings: ServerAPNsSettings) -> [ServerSetup] {
        var set: [String] = []
        if let v = settings.forceEnv, !v.isEmpty { set.append("\(ServerAPNsSettings.forceVariable)=\(v)") }
        if let v = settings.legacyAPNSEnv, !v.isEmpty { set.append("\(ServerAPNsSettings.legacyVariable)=\(v)") }
        guard !set.isEmpty else { return setups }
        return setups + [
            ServerSetup(
                name: "this process's environment: \(set.joined(separator: ", "))", settings: settings, testUser: false)
        ]
    }

    /// Runs the walk-through: every build of ``builds`` under every setup of ``allSetups(processSettings:)``.
    package static func run(processSettings: ServerAPNsSettings = ServerAPNsSettings()) -> EnvironmentDemoReport {
        EnvironmentDemoReport(
            groups: allSetups(processSettings: processSettings).map { setup in
                let rows = builds.map { build in
                    let r = EnvironmentResolver.resolve(
                        buildEnvironment: build.buildEnvironment, isTestUser: setup.testUser, settings: setup.settings)
                    let ok = r.environment == build.tokenEnvironment
                    return Row(
                        setup: setup.name, build: build, resolution: r, problems: build.problems() + r.warnings,
                        fix: ok
                            ? nil
                            : OverrideRemedy.fix(
                                build: build, settings: setup.settings, testUser: setup.testUser, resolution: r))
                }
                return Group(setup: setup, rows: rows)
            })
    }

    private enum CodingKeys: String, CodingKey { case rows, broken, total }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let rows = rows
        try c.encode(rows, forKey: .rows)
        try c.encode(rows.count { !$0.delivers }, forKey: .broken)
        try c.encode(rows.count, forKey: .total)
    }
}
