public import KKPushCore

/// kkpush's environment model, worded once. Every message that says which APNs environment a token belongs to, or
/// how to get a token of an environment, says it through this type, so no two messages can contradict the model
/// or each other.
///
/// The model: a device token belongs to the environment the `aps-environment` entitlement of its **signed build**
/// names (`development` → sandbox, `production` → production). Apple sets the entitlement from the provisioning
/// profile, and the profile follows the **distribution**: only development-signed builds (run from Xcode, or
/// exported with a development profile) get sandbox tokens; ad hoc, enterprise (in-house), TestFlight and App Store
/// builds are signed for production, whatever scheme or configuration they were built with.
///
/// What says it, strongest first (``Evidence``): a probe of both environments (APNs itself: **proved**); the
/// signature (a signed build, or the app's `aps_environment` read from its embedded profile: **signed**); the
/// app's `build_environment` (it follows `#if DEBUG`, the configuration, not the signature: only a **claim**, from
/// which an environment is **inferred**). A stronger piece of evidence always wins over a weaker one.
public enum EnvironmentModel {
    /// How a token's environment is known.
    public enum Evidence: String, Sendable, Codable, CaseIterable {
        /// A probe of both environments: APNs knows the token in one of them.
        case proved
        /// The build's signature: a signed build given, or `aps_environment` from the embedded profile.
        case signed
        /// Inferred from `build_environment`, a claim that follows the build configuration.
        case inferred

        /// Stronger evidence first.
        public var strength: Int {
            switch self {
            case .proved: 2
            case .signed: 1
            case .inferred: 0
            }
        }
    }

    /// The model in one sentence, for help texts and explanations.
    public static let rule =
        "A device token belongs to the environment its signed build's aps-environment entitlement names (development: sandbox, production: production); Apple sets it from the provisioning profile, so only development-signed builds (run from Xcode, or a development export) get sandbox tokens, and ad hoc, enterprise, TestFlight and App Store builds get production tokens, whatever their scheme."

    /// The builds whose tokens are `environment` tokens, by distribution.
    public static func builds(of environment: APNsEnvironment) -> String {
        environment == .sandbox
            ? "development-signed builds (run from Xcode, or exported with a development profile)"
            : "production-signed builds (ad hoc, enterprise, TestFlight, App Store)"
    }

    /// What a `build_environment` value says about the token: a claim, not the signature.
    /// "build_environment "production" claims a production build, so the token is inferred to be a production
    /// token; a claim only: …"
    public static func claim(buildEnvironment value: String?, environment: APNsEnvironment) -> String {
        let shown = value.map { "build_environment \"\($0)\"" } ?? "No build_environment"
        return
            "\(shown) claims a \(environment == .sandbox ? "development" : "production") build, so the token is inferred to be a \(environment) token; only a claim: the build's signature (aps-environment) decides, and a probe of both environments proves it."
    }

    /// The fix that gets a phone a token of `environment`, worded by distribution (a scheme does not decide it:
    /// a Release Testing build on TestFlight or ad hoc is production-signed).
    public static func installFix(for environment: APNsEnvironment) -> String {
        environment == .sandbox
            ? "install a development-signed build on the phone (run it from Xcode, or export it with a development profile); TestFlight and ad hoc builds are production-signed whatever their scheme, so their tokens are production tokens"
            : "install a production-signed build on the phone (TestFlight, ad hoc, enterprise or the App Store)"
    }

    /// A token environment with how it is known, for tables: "production (inferred)", "sandbox (proved)",
    /// "unknown".
    public static func label(_ environment: APNsEnvironment?, _ evidence: Evidence?) -> String {
        guard let environment else { return "unknown" }
        return evidence.map { "\(environment.rawValue) (\($0.rawValue))" } ?? environment.rawValue
    }
}
