import KKPushCore

/// The server's APNs settings: the process environment variables that override auto-detection.
public struct ServerAPNsSettings: Sendable, Hashable, Codable {
    /// `APNS_FORCE_ENV`: `sandbox` or `production` pins every push; any other value is ignored.
    public var forceEnv: String?
    /// `APNS_ENV`: the legacy override the README warns about. Some deployments still set it; where
    /// set to `sandbox` or `production` it pins every push, like `APNS_FORCE_ENV` (the README's
    /// "APNS timeouts" failure: `APNS_ENV=sandbox` with Release builds).
    public var legacyAPNSEnv: String?

    /// Creates settings; `nil` means the variable is not set.
    public init(forceEnv: String? = nil, legacyAPNSEnv: String? = nil) {
        self.forceEnv = forceEnv
        self.legacyAPNSEnv = legacyAPNSEnv
    }

    /// The settings as a server process would see them (`APNS_FORCE_ENV`, `APNS_ENV`).
    public static func from(environment: [String: String]) -> ServerAPNsSettings {
        ServerAPNsSettings(forceEnv: environment["APNS_FORCE_ENV"], legacyAPNSEnv: environment["APNS_ENV"])
    }

    /// The name of the force variable.
    public static let forceVariable = "APNS_FORCE_ENV"
    /// The name of the legacy variable.
    public static let legacyVariable = "APNS_ENV"
}

/// One rule of the resolution, in the order the server applies them.
public enum ResolutionRule: String, Sendable, Codable, CaseIterable {
    /// `APNS_FORCE_ENV` set to `sandbox` or `production`.
    case forceEnv = "APNS_FORCE_ENV"
    /// The legacy `APNS_ENV` set to `sandbox` or `production`.
    case legacyAPNSEnv = "APNS_ENV"
    /// The enrollment is a test user: sandbox.
    case testUser = "is_test_user"
    /// `build_environment` is `development` or `debug`: sandbox.
    case buildEnvironment = "build_environment"
    /// Anything else, including missing: production.
    case fallback = "default"
}

/// What one rule did.
public struct ResolutionStep: Sendable, Hashable, Codable {
    /// The rule.
    public var rule: ResolutionRule
    /// True if this rule decided the environment.
    public var decided: Bool
    /// The environment it chose, if it decided.
    public var environment: APNsEnvironment?
    /// Why it did or did not apply.
    public var detail: String
}

/// The outcome of resolving an enrollment's APNs environment.
public struct EnvironmentResolution: Sendable, Hashable, Codable {
    /// The `build_environment` as given (nil if missing).
    public var buildEnvironment: String?
    /// The APNs environment the backend will push to.
    public var environment: APNsEnvironment
    /// The rule that decided it.
    public var decidedBy: ResolutionRule
    /// Every rule the server evaluated, in order, up to and including the deciding one.
    public var steps: [ResolutionStep]
    /// The environment the device's tokens belong to, as far as `build_environment` tells
    /// (auto-detection without overrides); nil when the value is unknown or missing.
    public var deviceEnvironment: APNsEnvironment?
    /// What looks wrong: overrides that contradict the device, unknown values, near-misses.
    public var warnings: [Problem]
}

/// The server side: resolves an enrollment's APNs environment exactly as the Kantine Koning
/// backend's `determine_apns_environment/1` does, plus the legacy `APNS_ENV` override.
///
/// Order: `APNS_FORCE_ENV` (`sandbox`/`production`) → `APNS_ENV` (legacy, same values) →
/// `is_test_user` → `build_environment` in `development`/`debug` → production.
///
/// **Case and white space**: matching is exact, as the backend's Elixir `in` is: `"Development"`,
/// `" development"` or `"SANDBOX"` do not match and fall through (to production, for a build
/// environment). kkpush predicts what the server does, so it does not normalise; instead it warns
/// about such near-misses (`build-environment-not-normalized`, `force-env-ignored`), because they are
/// almost always a bug in whoever wrote the value.
public enum EnvironmentResolver {
    /// Resolves the environment for one enrollment.
    public static func resolve(
        buildEnvironment: String?,
        isTestUser: Bool = false,
        settings: ServerAPNsSettings = ServerAPNsSettings()
    ) -> EnvironmentResolution {
        var steps: [ResolutionStep] = []
        var warnings: [Problem] = []
        let device = deviceEnvironment(for: buildEnvironment)
        warnings += buildEnvironmentWarnings(buildEnvironment)

        func finish(_ rule: ResolutionRule, _ env: APNsEnvironment, _ detail: String) -> EnvironmentResolution {
            steps.append(ResolutionStep(rule: rule, decided: true, environment: env, detail: detail))
            return EnvironmentResolution(
                buildEnvironment: buildEnvironment, environment: env, decidedBy: rule, steps: steps,
                deviceEnvironment: device, warnings: warnings)
        }

        // 1. APNS_FORCE_ENV
        if let force = settings.forceEnv, let env = exactEnvironment(force) {
            if let device, device != env {
                warnings.append(
                    overrideContradiction(
                        variable: ServerAPNsSettings.forceVariable, env: env, device: device,
                        buildEnvironment: buildEnvironment, code: "force-env-override"))
            }
            return finish(.forceEnv, env, "APNS_FORCE_ENV=\(force) pins every push to \(env).")
        }
        steps.append(
            ResolutionStep(
                rule: .forceEnv, decided: false, environment: nil,
                detail: settings.forceEnv.map { "APNS_FORCE_ENV=\(quoted($0)) is not sandbox or production: ignored." }
                    ?? "APNS_FORCE_ENV is not set."))
        if let force = settings.forceEnv {
            warnings += ignoredVariableWarnings(ServerAPNsSettings.forceVariable, force)
        }

        // 2. APNS_ENV (legacy)
        if let legacy = settings.legacyAPNSEnv, let env = exactEnvironment(legacy) {
            if let device, device != env {
                warnings.append(
                    overrideContradiction(
                        variable: ServerAPNsSettings.legacyVariable, env: env, device: device,
                        buildEnvironment: buildEnvironment, code: "server-env-override"))
            } else {
                warnings.append(
                    Problem(
                        .warning, code: "server-env-legacy",
                        message:
                            "The server sets the legacy APNS_ENV=\(legacy); it pins every push to \(env), whatever the device's build.",
                        fix: "Remove it and let auto-detection decide: fly secrets unset APNS_ENV -a kantine-koning"))
            }
            return finish(.legacyAPNSEnv, env, "APNS_ENV=\(legacy) (legacy override) pins every push to \(env).")
        }
        steps.append(
            ResolutionStep(
                rule: .legacyAPNSEnv, decided: false, environment: nil,
                detail: settings.legacyAPNSEnv.map { "APNS_ENV=\(quoted($0)) is not sandbox or production: ignored." }
                    ?? "APNS_ENV is not set."))
        if let legacy = settings.legacyAPNSEnv {
            warnings += ignoredVariableWarnings(ServerAPNsSettings.legacyVariable, legacy)
        }

        // 3. Test user
        if isTestUser {
            if device == .production {
                warnings.append(
                    Problem(
                        .warning, code: "test-user-production-build",
                        message:
                            "The enrollment is a test user, so the server pushes to sandbox, but build_environment \(quoted(buildEnvironment ?? "")) is a production build whose tokens APNs sandbox rejects (BadDeviceToken).",
                        fix: "Clear is_test_user for this enrollment, or install a Release Testing build on the device."
                    ))
            }
            return finish(.testUser, .sandbox, "The enrollment is a test user: sandbox.")
        }
        steps.append(ResolutionStep(rule: .testUser, decided: false, environment: nil, detail: "Not a test user."))

        // 4. build_environment
        if let value = buildEnvironment, BuildEnvironment.sandboxValues.contains(value) {
            return finish(
                .buildEnvironment, .sandbox, "build_environment \(quoted(value)) is development or debug: sandbox.")
        }
        steps.append(
            ResolutionStep(
                rule: .buildEnvironment, decided: false, environment: nil,
                detail: buildEnvironment.map { "build_environment \(quoted($0)) is not development or debug." }
                    ?? "build_environment is missing."))

        // 5. Everything else
        let detail =
            buildEnvironment.map { "build_environment \(quoted($0)) → production (the default)." }
            ?? "No build_environment → production (the default)."
        return finish(.fallback, .production, detail)
    }

    /// The environment a build's tokens belong to, judged from `build_environment` alone:
    /// `development`/`debug` → sandbox, `production`/`release`/`appstore` → production; `testing`,
    /// unknown values and missing → nil (kkpush cannot tell).
    public static func deviceEnvironment(for buildEnvironment: String?) -> APNsEnvironment? {
        guard let value = buildEnvironment else { return nil }
        if BuildEnvironment.sandboxValues.contains(value) { return .sandbox }
        if [BuildEnvironment.production, BuildEnvironment.release, BuildEnvironment.appstore].contains(value) {
            return .production
        }
        return nil
    }

    /// What is wrong with a `build_environment` value on its own: ``BuildEnvironment/judgement(of:)``, the one
    /// rule `env resolve`, `token verify` and `diagnose` share.
    public static func buildEnvironmentWarnings(_ buildEnvironment: String?) -> [Problem] {
        BuildEnvironment.judgement(of: buildEnvironment).map { [$0] } ?? []
    }

    private static func exactEnvironment(_ value: String) -> APNsEnvironment? {
        APNsEnvironment(rawValue: value)
    }

    private static func ignoredVariableWarnings(_ variable: String, _ value: String) -> [Problem] {
        if value.isEmpty { return [] }
        let normalized = value.trimmingWhitespace().lowercased()
        if APNsEnvironment(rawValue: normalized) != nil {
            return [
                Problem(
                    .warning,
                    code: variable == ServerAPNsSettings.forceVariable ? "force-env-ignored" : "server-env-ignored",
                    message:
                        "\(variable)=\(quoted(value)) differs from \"\(normalized)\" only in case or white space; the server compares exactly and ignores it.",
                    fix: "Set \(variable)=\(normalized), or unset it to use auto-detection.")
            ]
        }
        return [
            Problem(
                .warning,
                code: variable == ServerAPNsSettings.forceVariable ? "force-env-ignored" : "server-env-ignored",
                message: "\(variable)=\(quoted(value)) is neither sandbox nor production; the server ignores it.",
                fix: "Unset \(variable) (auto-detection), or set it to sandbox or production.")
        ]
    }

    private static func overrideContradiction(
        variable: String, env: APNsEnvironment, device: APNsEnvironment, buildEnvironment: String?, code: String
    ) -> Problem {
        let fix =
            variable == ServerAPNsSettings.legacyVariable
            ? "fly secrets unset APNS_ENV -a kantine-koning (auto-detection then sends this device to \(device))"
            : "fly secrets unset APNS_FORCE_ENV -a kantine-koning, or set it to \(device) if every device is a \(device) build"
        return Problem(
            .error, code: code,
            message:
                "\(variable)=\(env) sends this device's pushes to \(env), but build_environment \(quoted(buildEnvironment ?? "")) means its token is a \(device) token: APNs answers BadDeviceToken (the README's \"APNS timeouts\").",
            fix: fix)
    }

    private static func quoted(_ s: String) -> String { "\"\(s)\"" }
}
