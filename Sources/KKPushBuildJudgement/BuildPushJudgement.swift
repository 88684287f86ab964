package import Foundation
package import KKPushBuild
package import KKPushCore
package import KantineKoning

/// What a build's signature means for the Kantine Koning app's pushes: which APNs environment accepts its tokens,
/// what each configuration of it reports as build_environment, and where the backend sends it. Shared by
/// `kkpush build inspect` and `kkpush diagnose --build`.
package struct BuildPushJudgement: Sendable {
    /// One configuration of the build, and where the backend sends what it reports.
    package struct Configuration: Sendable {
        package var scheme: AppBuildScheme
        package var buildEnvironment: String
        package var server: APNsEnvironment
        package var misrouted: Bool
    }

    package var report: BuildReport
    /// The scheme, if known (`--scheme`, or the archive's SchemeName).
    package var scheme: AppBuildScheme?
    package var schemeSource: String?
    /// How the caller takes the scheme (an option's name), for the messages that ask for it.
    package var schemeOption: String
    /// The Kantine Koning distribution the profile stands for.
    package var distribution: AppDistribution?
    package var configurations: [Configuration]
    /// Where the backend sends the fixed app's pushes (it sends aps_environment).
    package var fixedServer: APNsEnvironment?
    package var problems: [Problem]

    /// `schemeFlag`: the scheme the user gave, by the option `schemeOption` (named in the messages).
    package init(report: BuildReport, schemeFlag: AppBuildScheme?, schemeOption: String, now: Date) {
        self.report = report
        self.schemeOption = schemeOption
        if let schemeFlag {
            scheme = schemeFlag
            schemeSource = schemeOption
        } else if let name = report.schemeName, let parsed = AppBuildScheme(name: name) {
            scheme = parsed
            schemeSource = "the archive's SchemeName \"\(name)\""
        }
        distribution = report.distribution.flatMap(Self.appDistribution)
        let token = report.tokenEnvironment
        configurations = [AppBuildScheme.releaseTesting, .release].map { s in
            let reported = AppBuild(scheme: s).buildEnvironment
            let server = EnvironmentResolver.resolve(buildEnvironment: reported).environment
            return Configuration(
                scheme: s, buildEnvironment: reported, server: server, misrouted: token.map { $0 != server } ?? false)
        }
        if let scheme, !configurations.contains(where: { $0.scheme == scheme }) {
            let reported = AppBuild(scheme: scheme).buildEnvironment
            let server = EnvironmentResolver.resolve(buildEnvironment: reported).environment
            configurations.append(
                Configuration(
                    scheme: scheme, buildEnvironment: reported, server: server,
                    misrouted: token.map { $0 != server } ?? false))
        }
        fixedServer =
            report.apsEnvironment.map {
                EnvironmentResolver.resolve(buildEnvironment: nil, apsEnvironment: $0).environment
            }
        problems = report.problems
        guard let token else { return }
        let how =
            distribution.map {
                $0 == .testFlight
                    ? "an App Store Connect build (TestFlight or the App Store)"
                    : "a \($0.title) build (\($0.profileKind) profile)"
            } ?? "this build"
        if let scheme, let row = configurations.first(where: { $0.scheme == scheme }), row.misrouted {
            problems.append(
                Problem(
                    .error, code: .buildEnvironmentMismatch,
                    message:
                        "Signed for \(token.entitlementValue), reports \(row.buildEnvironment): \(how) built with the \(scheme.rawValue) scheme (\(scheme.buildConfiguration), from \(schemeSource ?? schemeOption)) sends build_environment \"\(row.buildEnvironment)\", which the backend resolves to \(row.server); its \(token) tokens get BadDeviceToken there.",
                    fix:
                        "Make the app send aps_environment (\(token.entitlementValue)) read from its embedded profile (KantineKoningSigning), which the backend prefers; or build it with the \(token == .production ? "Release" : "Release Testing") scheme."
                ))
        } else if scheme == nil, let row = configurations.first(where: \.misrouted) {
            problems.append(
                Problem(
                    .warning, code: .buildConfigurationDependent,
                    message:
                        "If this build was made in the \(row.scheme.buildConfiguration) configuration (\(row.scheme.rawValue)), today's app reports build_environment \"\(row.buildEnvironment)\" and the backend sends its \(token) tokens to \(row.server): BadDeviceToken. The configuration cannot be read from a signed build.",
                    fix:
                        "Pass \(schemeOption) to judge it; better, make the app send aps_environment from its embedded profile (KantineKoningSigning), which the backend prefers whatever the configuration."
                ))
        }
    }

    /// The profile's distribution as the app's model names it (App Store Connect covers TestFlight and the App Store).
    package static func appDistribution(_ d: ProfileDistribution) -> AppDistribution? {
        switch d {
        case .development: .xcode
        case .adHoc: .adHoc
        case .enterprise: .enterprise
        case .appStore: .testFlight
        case .developerID: nil
        }
    }

    /// True when the command exits 1: an error in the build or an extension, or a known misrouting.
    package var failed: Bool {
        problems.hasErrors || report.extensions.contains { $0.problems.hasErrors }
    }

    /// The distribution as people say it.
    package static func distributionText(_ d: ProfileDistribution?) -> String {
        switch d {
        case .development: "development (run from Xcode or a development export)"
        case .adHoc: "ad-hoc"
        case .appStore: "app-store (App Store Connect: TestFlight and the App Store)"
        case .enterprise: "enterprise (in-house)"
        case .developerID: "developer-id (macOS, outside the Mac App Store)"
        case nil: "unknown"
        }
    }

    package static func day(_ date: Date?) -> String {
        guard let date else { return "unknown" }
        return date.formatted(.iso8601.year().month().day())
    }

}
