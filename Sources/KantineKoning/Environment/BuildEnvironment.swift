import Foundation
public import KKPushCore

/// The app side: which `build_environment` string a Kantine Koning build reports on token update.
///
/// From the app's `getBuildEnvironment()` (README, "Build Environment Detection"): the string follows the **build
/// configuration** (`#if DEBUG`), which the scheme picks:
///
/// | scheme | build configuration | flags | `build_environment` |
/// |---|---|---|---|
/// | Release Testing | Debug | `DEBUG`, `ENABLE_LOGGING` | `development` |
/// | Release | Release | none | `production` |
///
/// The scheme does **not** decide the APNs environment of the build's tokens. Apple's documentation of the
/// `aps-environment` entitlement: "Xcode sets the value of the entitlement based on your app's current provisioning
/// profile. For example, if you're using a development provisioning profile, Xcode sets the value to `development`.
/// Production provisioning profile and Prerelease Versions and Beta Testers use `production`."
/// (developer.apple.com/documentation/bundleresources/entitlements/aps-environment). The profile follows the
/// **distribution** (``AppDistribution``): a Release Testing build uploaded to TestFlight is signed for production and
/// reports `development`. The app's README ties the entitlement to the scheme ("Release Testing → aps-environment:
/// development"); that holds only for builds run from Xcode, and kkpush follows Apple here.
///
/// The README gives the `ENABLE_LOGGING`-without-`DEBUG` branch two ways: `getBuildEnvironment()`
/// returns `"testing"`, the "Backend Environment Mapping" snippet returns `"development"`. Both are
/// modelled (``AppBuild/loggingVariant``); `testing` resolves to **production** on the server.
public enum AppBuildScheme: String, Sendable, Codable, CaseIterable {
    /// The "Release Testing" scheme: Debug configuration, `DEBUG` flag.
    case releaseTesting = "release-testing"
    /// The "Release" scheme: Release configuration, no flags.
    case release
    /// A Release configuration built with `ENABLE_LOGGING` but without `DEBUG` ("niet gebruikt" in the README).
    case releaseWithLogging = "release-with-logging"

    /// The Xcode build configuration the scheme uses.
    public var buildConfiguration: String { self == .releaseTesting ? "Debug" : "Release" }

    /// How the README means the scheme to be distributed: Release Testing run from Xcode, Release through App Store
    /// Connect. Only a default: any scheme can be archived and uploaded to TestFlight.
    public var intendedDistribution: AppDistribution {
        switch self {
        case .releaseTesting, .releaseWithLogging: .xcode
        case .release: .appStore
        }
    }

    /// Parses a scheme name as people write it: `Release Testing`, `release-testing`, `Release`, `Debug`, ...
    /// Distribution names (`testflight`, `app-store`) are not schemes: see ``AppDistribution/init(name:)``.
    public init?(name: String) {
        let key = name.trimmingWhitespace().lowercased().replacingOccurrences(of: "_", with: "-")
            .replacingOccurrences(of: " ", with: "-")
        switch key {
        case "release-testing", "releasetesting", "debug", "testing-scheme": self = .releaseTesting
        case "release": self = .release
        case "release-with-logging", "release-logging", "enable-logging": self = .releaseWithLogging
        default: return nil
        }
    }
}

/// How a build reaches a phone, which decides the provisioning profile it is signed with and so the
/// `aps-environment` its tokens belong to (Apple: the entitlement follows the profile, not the configuration).
///
/// | distribution | profile | `aps-environment` | APNs |
/// |---|---|---|---|
/// | run from Xcode, development export | iOS App Development | development | sandbox |
/// | ad hoc | Ad Hoc | production | production |
/// | enterprise (in-house) | In House | production | production |
/// | TestFlight | App Store Connect | production | production |
/// | App Store | App Store Connect (re-signed by Apple) | production | production |
public enum AppDistribution: String, Sendable, Codable, CaseIterable {
    /// Run from Xcode on a phone, or exported with a development profile.
    case xcode
    /// An ad hoc export to registered devices.
    case adHoc = "ad-hoc"
    /// An Apple Developer Enterprise Program (in-house) export.
    case enterprise
    /// Uploaded to App Store Connect and installed through TestFlight.
    case testFlight = "testflight"
    /// Installed from the App Store.
    case appStore = "app-store"

    /// The `aps-environment` the profile gives, so the environment the build's tokens belong to.
    public var tokenEnvironment: APNsEnvironment { self == .xcode ? .sandbox : .production }

    /// The kind of provisioning profile that signs such a build, as Xcode names it.
    public var profileKind: String {
        switch self {
        case .xcode: "development"
        case .adHoc: "ad hoc"
        case .enterprise: "in-house (enterprise)"
        case .testFlight, .appStore: "App Store Connect"
        }
    }

    /// For people: "TestFlight", "run from Xcode", ...
    public var title: String {
        switch self {
        case .xcode: "run from Xcode"
        case .adHoc: "ad hoc"
        case .enterprise: "enterprise"
        case .testFlight: "TestFlight"
        case .appStore: "App Store"
        }
    }

    /// Parses a distribution as people write it: `xcode`, `development`, `ad-hoc`, `enterprise`, `in-house`,
    /// `testflight`, `app-store`, `app-store-connect` (TestFlight and the App Store share one profile: it parses as
    /// `testflight`, whose tokens are the same production tokens).
    public init?(name: String) {
        let key = name.trimmingWhitespace().lowercased().replacingOccurrences(of: "_", with: "-")
            .replacingOccurrences(of: " ", with: "-")
        switch key {
        case "xcode", "development", "dev", "run-from-xcode", "development-export": self = .xcode
        case "ad-hoc", "adhoc", "release-testing-export": self = .adHoc
        case "enterprise", "in-house", "inhouse": self = .enterprise
        case "testflight", "test-flight", "app-store-connect", "appstoreconnect": self = .testFlight
        case "app-store", "appstore": self = .appStore
        default: return nil
        }
    }

    /// The names ``init(name:)`` documents, for help texts and errors.
    public static let acceptedNames = "xcode, ad-hoc, enterprise, testflight, app-store"
}

/// Which of the README's two `ENABLE_LOGGING` snippets a build follows.
public enum LoggingVariant: String, Sendable, Codable, CaseIterable {
    /// `getBuildEnvironment()`: returns `"testing"`.
    case testing
    /// The "Backend Environment Mapping" snippet: returns `"development"`.
    case development
}

/// A build of the app: a configuration (its scheme: what the app's code reports) × a distribution (its profile:
/// what its tokens are).
public struct AppBuild: Sendable, Hashable, Codable {
    /// The scheme it was built with.
    public var scheme: AppBuildScheme
    /// How it reached the phone.
    public var distribution: AppDistribution
    /// For ``AppBuildScheme/releaseWithLogging``: which snippet the code follows.
    public var loggingVariant: LoggingVariant
    /// True for the fixed app: it reads `aps-environment` from its embedded profile (the `KantineKoningSigning`
    /// module) and sends it as `aps_environment` next to `build_environment`.
    public var sendsAPSEnvironment: Bool

    /// Creates a build description; the distribution defaults to the scheme's intended one.
    public init(
        scheme: AppBuildScheme, distribution: AppDistribution? = nil, loggingVariant: LoggingVariant = .testing,
        sendsAPSEnvironment: Bool = false
    ) {
        self.scheme = scheme
        self.distribution = distribution ?? scheme.intendedDistribution
        self.loggingVariant = loggingVariant
        self.sendsAPSEnvironment = sendsAPSEnvironment
    }

    /// The environment the build's tokens belong to: the distribution's, whatever the configuration.
    public var tokenEnvironment: APNsEnvironment { distribution.tokenEnvironment }

    /// The `build_environment` string the app sends with its token update (from `#if DEBUG`).
    public var buildEnvironment: String {
        switch scheme {
        case .releaseTesting: BuildEnvironment.development
        case .release: BuildEnvironment.production
        case .releaseWithLogging: loggingVariant == .testing ? BuildEnvironment.testing : BuildEnvironment.development
        }
    }

    /// The `aps_environment` the fixed app sends (the entitlement's value), nil for today's app.
    public var apsEnvironment: String? { sendsAPSEnvironment ? tokenEnvironment.entitlementValue : nil }

    /// A short name: "release-testing on TestFlight".
    public var label: String {
        let name = scheme == .releaseWithLogging ? "\(scheme.rawValue) (\(loggingVariant.rawValue))" : scheme.rawValue
        return "\(name) \(distribution == .xcode ? "run from Xcode" : "on \(distribution.title)")"
    }

    /// What is wrong with what this build reports: a `build_environment` (or `aps_environment`) that makes the server
    /// pick the other environment than the one the build's tokens belong to.
    public func problems() -> [Problem] {
        let serverSide = EnvironmentResolver.resolve(buildEnvironment: buildEnvironment, apsEnvironment: apsEnvironment)
            .environment
        guard serverSide != tokenEnvironment else { return [] }
        let signed =
            "\(distribution.title) builds are signed with \(distribution.profileKind == "development" ? "a" : "an") \(distribution.profileKind) profile, so aps-environment \(tokenEnvironment.entitlementValue) and \(tokenEnvironment) tokens (the entitlement follows the profile, not the configuration)"
        let right = tokenEnvironment == .sandbox ? "development" : "production"
        let signedFix =
            "send aps_environment read from the embedded profile (the KantineKoningSigning module: SignedEnvironmentReader.current().tokenUpdateValue) next to build_environment; the backend prefers it."
        let fix =
            scheme == .releaseWithLogging
            ? "Make getBuildEnvironment() return \"\(right)\" for this build (its ENABLE_LOGGING branch returns \"\(buildEnvironment)\"), or better, \(signedFix)"
            : "Make the app \(signedFix) Until then, \(tokenEnvironment == .production ? "archive builds for TestFlight, ad hoc and enterprise with the Release scheme" : "run builds from Xcode with the Release Testing scheme") so build_environment says \"\(right)\"."
        return [
            Problem(
                .error, code: .buildEnvironmentMismatch,
                message:
                    "A \(scheme.rawValue) build (\(scheme.buildConfiguration) configuration) \(distribution == .xcode ? "run from Xcode" : "distributed through \(distribution.title)") reports build_environment \"\(buildEnvironment)\", which the server resolves to \(serverSide); but \(signed). Every push to it is BadDeviceToken.",
                fix: fix
            )
        ]
    }

    /// Every scheme × distribution, the table `kkpush env schemes` prints (the logging scheme in both variants).
    public static var table: [AppBuild] {
        var schemes: [(AppBuildScheme, LoggingVariant)] = [(.releaseTesting, .testing), (.release, .testing)]
        schemes += LoggingVariant.allCases.map { (.releaseWithLogging, $0) }
        return schemes.flatMap { scheme, variant in
            AppDistribution.allCases.map { AppBuild(scheme: scheme, distribution: $0, loggingVariant: variant) }
        }
    }
}

/// The `build_environment` values the app and backend know.
public enum BuildEnvironment {
    /// Reported by Release Testing / Debug builds; the server resolves it to sandbox.
    public static let development = "development"
    /// Also resolved to sandbox by the server.
    public static let debug = "debug"
    /// Reported by Release builds; production.
    public static let production = "production"
    /// Values the server's comment lists as production.
    public static let release = "release"
    /// Values the server's comment lists as production.
    public static let appstore = "appstore"
    /// The README's `ENABLE_LOGGING` branch; the server resolves it to **production**.
    public static let testing = "testing"

    /// The values the server maps to sandbox, exactly as its Elixir `case` does.
    public static let sandboxValues: Set<String> = [development, debug]

    /// Every value the app or the backend's comments mention.
    public static let knownValues: [String] = [development, debug, production, release, appstore, testing]

    /// The judgement of a `build_environment` value on its own: nil for exactly `development` or `production`
    /// (what the app sends), else one problem. The one rule `kkpush env resolve`, `token verify` and
    /// `diagnose` all apply, so the three say the same about the same value:
    ///
    /// - missing: warning `build-environment-missing` (the server resolves it to production);
    /// - `testing`: warning `build-environment-testing` (production on the server; the README's logging build);
    /// - `debug`, `release`, `appstore`: warning `build-environment-nonstandard` (the server knows them);
    /// - a known value but for case or white space (`"Development"`, `" development"`): warning
    ///   `build-environment-not-normalized` (the server compares exactly: production);
    /// - anything else: error `build-environment-unknown` (outside the contract; production).
    ///
    /// Whether the resulting environment is wrong for the device is a separate question (its token's
    /// environment: `--known-environment`, an enrollment, `diagnose --probe`).
    public static func judgement(of value: String?) -> Problem? {
        guard let value else {
            return Problem(
                .warning, code: .buildEnvironmentMissing,
                message: "No build_environment was sent; on its own, that resolves to production on the server.",
                fix:
                    "Send build_environment with every token update (\"development\" or \"production\"), and aps_environment from the embedded profile."
            )
        }
        if value == development || value == production { return nil }
        if value == testing {
            return Problem(
                .warning, code: .buildEnvironmentTesting,
                message:
                    "build_environment \"testing\" on its own resolves to production on the server, but the ENABLE_LOGGING builds that send it are test builds; if the build has the development entitlement its tokens are sandbox tokens (BadDeviceToken in production).",
                fix:
                    "Make getBuildEnvironment() return \"development\" for builds signed with aps-environment development, \"production\" otherwise."
            )
        }
        if knownValues.contains(value) {
            let env = sandboxValues.contains(value) ? "sandbox" : "production"
            return Problem(
                .warning, code: .buildEnvironmentNonstandard,
                message:
                    "build_environment '\(value)' is understood by the server (\(env)), but the app sends only \"development\" or \"production\".",
                fix: "Send \"development\" or \"production\" exactly, and aps_environment from the embedded profile.")
        }
        let normalized = value.trimmingWhitespace().lowercased()
        if knownValues.contains(normalized) {
            let resolvesTo = sandboxValues.contains(normalized) ? "sandbox after normalising" : "production anyway"
            return Problem(
                .warning, code: .buildEnvironmentNotNormalized,
                message:
                    "build_environment \"\(value)\" differs from \"\(normalized)\" only in case or white space; the server compares exactly, so on its own it resolves to production (it would be \(resolvesTo)).",
                fix: "Send exactly \"\(normalized)\" (lowercase, no spaces).")
        }
        let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
        return Problem(
            .error, code: .buildEnvironmentUnknown,
            message:
                "build_environment \"\(shown)\" is not a value the backend knows; on its own it resolves to production.",
            fix:
                "Send exactly \"development\" (Debug configuration) or \"production\" (Release configuration), lowercase; and aps_environment (development or production, from the embedded profile), which decides the token's environment."
        )
    }
}
