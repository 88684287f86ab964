public import KKPushCore

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
    /// `aps_environment`, the entitlement the app is signed with, is exactly `development` (sandbox) or
    /// `production`: the backend change kkpush proposes (see ``EnvironmentResolver``).
    case apsEnvironment = "aps_environment"
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
    /// The `aps_environment` as given (nil if not sent).
    public var apsEnvironment: String?
    /// The APNs environment the backend will push to.
    public var environment: APNsEnvironment
    /// The rule that decided it.
    public var decidedBy: ResolutionRule
    /// Every rule the server evaluated, in order, up to and including the deciding one.
    public var steps: [ResolutionStep]
    /// The environment the device's tokens belong to: from `aps_environment` when it is `development` or
    /// `production` (what the build is signed for), else as far as `build_environment` tells (auto-detection
    /// without overrides); nil when neither tells.
    public var deviceEnvironment: APNsEnvironment?
    /// What looks wrong: overrides that contradict the device, unknown values, near-misses.
    public var warnings: [Problem]
}

/// The server side: resolves an enrollment's APNs environment as the Kantine Koning backend's
/// `determine_apns_environment/1` does, plus the legacy `APNS_ENV` override, plus the `aps_environment` rule
/// kkpush proposes.
///
/// Order: `APNS_FORCE_ENV` (`sandbox`/`production`) → `APNS_ENV` (legacy, same values) → `aps_environment`
/// (`development` → sandbox, `production` → production) → `is_test_user` → `build_environment` in
/// `development`/`debug` → production.
///
/// **Without `aps_environment`** (today's app does not send it) the rules are exactly the real backend's
/// `determine_apns_environment/1` (with the legacy `APNS_ENV` some deployments still set): the
/// `aps_environment` rule does not apply, and nothing else changes.
///
/// **The `aps_environment` rule is the backend change kkpush proposes.** `build_environment` comes from the
/// app's `#if DEBUG`, its build configuration; the token's environment follows the `aps-environment`
/// entitlement, which Xcode sets from the provisioning profile: a Debug-configuration build on TestFlight has
/// production tokens and reports "development", and the backend sends them to sandbox (BadDeviceToken). The
/// fixed app also sends the entitlement's value, read from its embedded profile, and the backend prefers it,
/// after the server's own overrides (they still pin every push) and before `is_test_user` (the signature is the
/// truth about the token):
///
/// ```elixir
/// def determine_apns_environment(device_enrollment) do
///   case System.get_env("APNS_FORCE_ENV") do
///     env when env in ["sandbox", "production"] -> env
///     _ ->
///       case device_enrollment.aps_environment do
///         env when env in ["development"] -> "sandbox"
///         "production" -> "production"
///         _ ->
///           # the old logic, for apps that do not send aps_environment
///           if device_enrollment.is_test_user do
///             "sandbox"
///           else
///             case device_enrollment.build_environment do
///               env when env in ["development", "debug"] -> "sandbox"
///               _ -> "production"
///             end
///           end
///       end
///   end
/// end
/// ```
///
/// An `aps_environment` other than exactly `development` or `production` (`"Production"`, `"sandbox"`) is
/// ignored, as that `case` ignores it, with the warning `aps-environment-unknown`; the old rules decide. Where
/// `aps_environment` decides and the old rules would have chosen the other environment, a warning says so
/// (`build-environment-contradicts-signature`, `test-user-contradicts-signature`): this server routes the push
/// right, a backend without the rule misroutes it.
///
/// **Case and white space**: matching is exact, as the backend's Elixir `in` is: `"Development"`,
/// `" development"` or `"SANDBOX"` do not match and fall through (to production, for a build
/// environment). kkpush predicts what the server does, so it does not normalise; instead it warns
/// about such near-misses (`build-environment-not-normalized`, `force-env-ignored`), because they are
/// almost always a bug in whoever wrote the value.
public enum EnvironmentResolver {
    /// Resolves the environment for one enrollment.
    ///
    /// - Parameters:
    ///   - buildEnvironment: the `build_environment` the app reported (its build configuration).
    ///   - apsEnvironment: the `aps_environment` the app reported (the entitlement it is signed with), nil when
    ///     not sent: the rules are then the real backend's.
    ///   - isTestUser: the enrollment's `is_test_user`.
    ///   - settings: the server's `APNS_FORCE_ENV` and `APNS_ENV`.
    public static func resolve(
        buildEnvironment: String?,
        apsEnvironment: String? = nil,
        isTestUser: Bool = false,
        settings: ServerAPNsSettings = ServerAPNsSettings()
    ) -> EnvironmentResolution {
        var steps: [ResolutionStep] = []
        var warnings: [Problem] = []
        let signed = apsEnvironment.flatMap(signedEnvironment(for:))
        let fromBuild = deviceEnvironment(for: buildEnvironment)
        let device = signed ?? fromBuild
        // What says the device is a `device` build, for the override contradictions.
        // The signature decides; build_environment is only a claim (EnvironmentModel words both).
        let evidence: (APNsEnvironment) -> String = { device in
            signed != nil
                ? "aps_environment \(quoted(apsEnvironment ?? "")) (the entitlement the app is signed with) means its token is a \(device) token."
                : EnvironmentModel.claim(buildEnvironment: buildEnvironment, environment: device)
        }
        warnings += buildEnvironmentWarnings(buildEnvironment)
        if let apsEnvironment, signed == nil {
            warnings.append(apsEnvironmentUnknown(apsEnvironment))
        }

        func finish(_ rule: ResolutionRule, _ env: APNsEnvironment, _ detail: String) -> EnvironmentResolution {
            steps.append(ResolutionStep(rule: rule, decided: true, environment: env, detail: detail))
            return EnvironmentResolution(
                buildEnvironment: buildEnvironment, apsEnvironment: apsEnvironment, environment: env, decidedBy: rule,
                steps: steps, deviceEnvironment: device, warnings: warnings)
        }

        // 1. APNS_FORCE_ENV
        if let force = settings.forceEnv, let env = exactEnvironment(force) {
            if let device, device != env {
                warnings.append(
                    overrideContradiction(
                        variable: ServerAPNsSettings.forceVariable, env: env, device: device, evidence: evidence,
                        code: .forceEnvOverride))
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
                        variable: ServerAPNsSettings.legacyVariable, env: env, device: device, evidence: evidence,
                        code: .serverEnvOverride))
            } else {
                warnings.append(
                    Problem(
                        .warning, code: .serverEnvLegacy,
                        message:
                            "The server sets the legacy APNS_ENV=\(legacy); it pins every push to \(env), whatever the device's build.",
                        fix:
                            "Remove it and let auto-detection decide: \(OverrideRemedy.unset(ServerAPNsSettings.legacyVariable))"
                    ))
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

        // 3. aps_environment (the proposed rule): what the build is signed for.
        if let value = apsEnvironment, let env = signed {
            // What the old rules (is_test_user, then build_environment) would have chosen.
            let byBuild: APNsEnvironment =
                buildEnvironment.map { BuildEnvironment.sandboxValues.contains($0) } == true ? .sandbox : .production
            if isTestUser, env == .production {
                warnings.append(
                    Problem(
                        .warning, code: .testUserContradictsSignature,
                        message:
                            "The enrollment is a test user, which the old rule sends to sandbox, but the app is signed for production (aps_environment \(quoted(value))): its tokens are production tokens. This server prefers aps_environment and pushes to production; a backend without that rule sends them to sandbox (BadDeviceToken).",
                        fix:
                            "Clear is_test_user for this enrollment (its build is not a development build); the backend needs the aps_environment rule (a signed aps_environment decides before is_test_user)."
                    ))
            } else if !isTestUser, byBuild != env {
                let reported = buildEnvironment.map { "reports \(quoted($0))" } ?? "reports no build_environment"
                warnings.append(
                    Problem(
                        .warning, code: .buildEnvironmentContradictsSignature,
                        message:
                            "Signed for \(env.entitlementValue), \(reported): build_environment alone resolves to \(byBuild), but the token is a \(env) token (aps_environment \(quoted(value))). The build's configuration is not its distribution (a Debug-configuration build on TestFlight, a Release build run from Xcode). This server prefers aps_environment and pushes to \(env); a backend without that rule sends it to \(byBuild) (BadDeviceToken).",
                        fix:
                            "On the app side nothing more: keep sending aps_environment, which this server already prefers; make sure the production backend has the aps_environment rule (EnvironmentResolver's doc comment: the proposed determine_apns_environment/1), else it misroutes this build."
                    ))
            }
            return finish(
                .apsEnvironment, env,
                "aps_environment \(quoted(value)) (the entitlement the app is signed with) → \(env).")
        }
        steps.append(
            ResolutionStep(
                rule: .apsEnvironment, decided: false, environment: nil,
                detail: apsEnvironment.map {
                    "aps_environment \(quoted($0)) is not development or production: ignored."
                } ?? "aps_environment is not sent: the old rules decide."))

        // 4. Test user
        if isTestUser {
            if device == .production {
                warnings.append(
                    Problem(
                        .warning, code: .testUserProductionBuild,
                        message:
                            "The enrollment is a test user, so the server pushes to sandbox, but \(EnvironmentModel.claim(buildEnvironment: buildEnvironment, environment: .production)) If it is, APNs sandbox rejects the token (BadDeviceToken).",
                        fix: "Clear is_test_user for this enrollment, or \(EnvironmentModel.installFix(for: .sandbox))."
                    ))
            }
            return finish(.testUser, .sandbox, "The enrollment is a test user: sandbox.")
        }
        steps.append(ResolutionStep(rule: .testUser, decided: false, environment: nil, detail: "Not a test user."))

        // 5. build_environment
        if let value = buildEnvironment, BuildEnvironment.sandboxValues.contains(value) {
            return finish(
                .buildEnvironment, .sandbox, "build_environment \(quoted(value)) is development or debug: sandbox.")
        }
        steps.append(
            ResolutionStep(
                rule: .buildEnvironment, decided: false, environment: nil,
                detail: buildEnvironment.map { "build_environment \(quoted($0)) is not development or debug." }
                    ?? "build_environment is missing."))

        // 6. Everything else
        let detail =
            buildEnvironment.map { "build_environment \(quoted($0)) → production (the default)." }
            ?? "No build_environment → production (the default)."
        return finish(.fallback, .production, detail)
    }

    /// The environment an `aps_environment` value names, matched exactly as the proposed backend rule matches:
    /// `development` → sandbox, `production` → production; anything else (`Production`, `sandbox`) → nil.
    public static func signedEnvironment(for apsEnvironment: String) -> APNsEnvironment? {
        APNsEnvironment(entitlementValue: apsEnvironment)
    }

    /// The warning for an `aps_environment` the server ignores (`aps-environment-unknown`), naming the value.
    public static func apsEnvironmentUnknown(_ value: String) -> Problem {
        Problem(
            .warning, code: .apsEnvironmentUnknown,
            message:
                "aps_environment \(quoted(value)) is not \"development\" or \"production\"\(apsEnvironmentHint(value)); the server compares exactly, ignores it and falls back to is_test_user and build_environment.",
            fix: "Send the entitlement's value: development or production (exactly, as the embedded profile has it).")
    }

    /// What an unknown `aps_environment` probably meant, for messages: "" when nothing is recognisable.
    static func apsEnvironmentHint(_ value: String) -> String {
        switch value.trimmingWhitespace().lowercased() {
        case let v where v == "development" || v == "production": " (\(quoted(v)) in another case or with white space)"
        case "sandbox", "dev", "debug": " (an environment's name, not the entitlement's value \"development\")"
        case "prod", "release", "appstore": " (not the entitlement's value \"production\")"
        default: ""
        }
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
                    code: variable == ServerAPNsSettings.forceVariable ? .forceEnvIgnored : .serverEnvIgnored,
                    message:
                        "\(variable)=\(quoted(value)) differs from \"\(normalized)\" only in case or white space; the server compares exactly and ignores it.",
                    fix: "Set \(variable)=\(normalized), or unset it to use auto-detection.")
            ]
        }
        return [
            Problem(
                .warning,
                code: variable == ServerAPNsSettings.forceVariable ? .forceEnvIgnored : .serverEnvIgnored,
                message: "\(variable)=\(quoted(value)) is neither sandbox nor production; the server ignores it.",
                fix: "Unset \(variable) (auto-detection), or set it to sandbox or production.")
        ]
    }

    private static func overrideContradiction(
        variable: String, env: APNsEnvironment, device: APNsEnvironment, evidence: (APNsEnvironment) -> String,
        code: Problem.Code
    ) -> Problem {
        let fix =
            variable == ServerAPNsSettings.legacyVariable
            ? "\(OverrideRemedy.unset(variable)) (auto-detection then sends this device to \(device))"
            : "\(OverrideRemedy.unset(variable)), or set it to \(device) if every device is a \(device) build"
        return Problem(
            .error, code: code,
            message:
                "\(variable)=\(env) sends this device's pushes to \(env), but \(evidence(device)) APNs \(env) answers BadDeviceToken to a \(device) token (to the app it looks like an APNs timeout).",
            fix: fix)
    }

    private static func quoted(_ s: String) -> String { "\"\(s)\"" }
}
