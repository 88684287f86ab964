import KKPushCore

/// The app side: which `build_environment` string a Kantine Koning build reports on token update.
///
/// From the app's `getBuildEnvironment()` (README, "Build Environment Detection"):
///
/// | scheme | build configuration | flags | `aps-environment` | `build_environment` |
/// |---|---|---|---|---|
/// | Release Testing | Debug | `DEBUG`, `ENABLE_LOGGING` | development | `development` |
/// | Release | Release | none | production | `production` |
///
/// The README gives the `ENABLE_LOGGING`-without-`DEBUG` branch two ways: `getBuildEnvironment()`
/// returns `"testing"`, the "Backend Environment Mapping" snippet returns `"development"`. Both are
/// modelled (``AppBuild/loggingVariant``); `testing` resolves to **production** on the server, which
/// is wrong for a build signed with the development entitlement (see ``AppBuild/problems()``).
public enum AppBuildScheme: String, Sendable, Codable, CaseIterable {
    /// The "Release Testing" scheme: Debug configuration, `DEBUG` flag, development entitlement.
    case releaseTesting = "release-testing"
    /// The "Release" scheme: Release configuration, no flags, production entitlement.
    case release
    /// A Release configuration built with `ENABLE_LOGGING` but without `DEBUG` ("niet gebruikt" in the README).
    case releaseWithLogging = "release-with-logging"

    /// The Xcode build configuration the scheme uses.
    public var buildConfiguration: String { self == .releaseTesting ? "Debug" : "Release" }

    /// The `aps-environment` entitlement the build is signed with, so the environment its tokens belong to.
    public var tokenEnvironment: APNsEnvironment {
        switch self {
        case .releaseTesting: .sandbox
        case .release: .production
        // The README does not say how this variant is signed. A logging build is made for testing,
        // so kkpush assumes the development entitlement (that is what makes `testing` a mistake).
        case .releaseWithLogging: .sandbox
        }
    }

    /// Parses a scheme name as people write it: `Release Testing`, `release-testing`, `Release`, ...
    public init?(name: String) {
        let key = name.trimmingWhitespace().lowercased().replacingOccurrences(of: "_", with: "-")
            .replacingOccurrences(of: " ", with: "-")
        switch key {
        case "release-testing", "releasetesting", "debug", "testing-scheme": self = .releaseTesting
        case "release", "appstore", "app-store", "testflight": self = .release
        case "release-with-logging", "release-logging", "enable-logging": self = .releaseWithLogging
        default: return nil
        }
    }
}

/// Which of the README's two `ENABLE_LOGGING` snippets a build follows.
public enum LoggingVariant: String, Sendable, Codable, CaseIterable {
    /// `getBuildEnvironment()`: returns `"testing"`.
    case testing
    /// The "Backend Environment Mapping" snippet: returns `"development"`.
    case development
}

/// A build of the app: its scheme and what it reports.
public struct AppBuild: Sendable, Hashable, Codable {
    /// The scheme it was built with.
    public var scheme: AppBuildScheme
    /// For ``AppBuildScheme/releaseWithLogging``: which snippet the code follows.
    public var loggingVariant: LoggingVariant

    /// Creates a build description.
    public init(scheme: AppBuildScheme, loggingVariant: LoggingVariant = .testing) {
        self.scheme = scheme
        self.loggingVariant = loggingVariant
    }

    /// The `build_environment` string the app sends with its token update.
    public var buildEnvironment: String {
        switch scheme {
        case .releaseTesting: BuildEnvironment.development
        case .release: BuildEnvironment.production
        case .releaseWithLogging: loggingVariant == .testing ? BuildEnvironment.testing : BuildEnvironment.development
        }
    }

    /// What is wrong with what this build reports: a `build_environment` that makes the server
    /// pick the other environment than the one the build's tokens belong to.
    public func problems() -> [Problem] {
        let serverSide = EnvironmentResolver.resolve(buildEnvironment: buildEnvironment).environment
        guard serverSide != scheme.tokenEnvironment else { return [] }
        return [
            Problem(
                .error, code: "build-environment-mismatch",
                message:
                    "A \(scheme.rawValue) build reports build_environment \"\(buildEnvironment)\", which the server resolves to \(serverSide), but its tokens are \(scheme.tokenEnvironment) tokens.",
                fix:
                    "Make getBuildEnvironment() return \"\(scheme.tokenEnvironment == .sandbox ? "development" : "production")\" for this scheme (the README's ENABLE_LOGGING branch returns \"testing\")."
            )
        ]
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
                .warning, code: "build-environment-missing",
                message: "No build_environment was sent; on its own, that resolves to production on the server.",
                fix:
                    "Send build_environment with every token update (\"development\" for Release Testing, \"production\" for Release)."
            )
        }
        if value == development || value == production { return nil }
        if value == testing {
            return Problem(
                .warning, code: "build-environment-testing",
                message:
                    "build_environment \"testing\" on its own resolves to production on the server, but the README's ENABLE_LOGGING builds that send it are test builds; if the build has the development entitlement its tokens are sandbox tokens (BadDeviceToken in production).",
                fix:
                    "Make getBuildEnvironment() return \"development\" for builds signed with aps-environment development, \"production\" otherwise."
            )
        }
        if knownValues.contains(value) {
            let env = sandboxValues.contains(value) ? "sandbox" : "production"
            return Problem(
                .warning, code: "build-environment-nonstandard",
                message:
                    "build_environment '\(value)' is understood by the server (\(env)), but the app sends only \"development\" or \"production\".",
                fix: "Send \"development\" for Release Testing builds and \"production\" for Release builds.")
        }
        let normalized = value.trimmingWhitespace().lowercased()
        if knownValues.contains(normalized) {
            let resolvesTo = sandboxValues.contains(normalized) ? "sandbox after normalising" : "production anyway"
            return Problem(
                .warning, code: "build-environment-not-normalized",
                message:
                    "build_environment \"\(value)\" differs from \"\(normalized)\" only in case or white space; the server compares exactly, so on its own it resolves to production (it would be \(resolvesTo)).",
                fix: "Send exactly \"\(normalized)\" (lowercase, no spaces).")
        }
        let shown = value.count > 40 ? String(value.prefix(40)) + "…" : value
        return Problem(
            .error, code: "build-environment-unknown",
            message:
                "build_environment \"\(shown)\" is not a value the backend knows; on its own it resolves to production.",
            fix:
                "Send exactly \"development\" (Release Testing / Debug builds, sandbox) or \"production\" (Release builds), lowercase."
        )
    }
}
