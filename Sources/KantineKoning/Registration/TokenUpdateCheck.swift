public import Foundation
public import KKPushCore

/// What a token-update check knows besides the body: the enrollment, the bearer's claims, where the
/// token is known to work, and the server's settings.
public struct TokenUpdateContext: Sendable {
    /// The APNs environment the token is known to work in (a push to it was accepted), if known.
    public var knownEnvironment: APNsEnvironment?
    /// The enrollment the update is for, if known (the backend looks it up from the JWT's device id).
    public var enrollment: Enrollment?
    /// The bearer token's claims, if a bearer was given and decoded (its signature and expiry are
    /// checked by `DeviceJWT` in KKPushBackend, which adds its own problems).
    public var claims: DeviceClaims?
    /// The server's `APNS_FORCE_ENV` / `APNS_ENV`.
    public var settings: ServerAPNsSettings
    /// The bundle id the backend expects in `bundle_id`; nil accepts any.
    public var expectedBundleID: String?
    /// Whether the enrollment is a test user, when ``enrollment`` is not known (else its `is_test_user` counts).
    public var isTestUser: Bool

    /// Creates a context; every field defaults to "unknown".
    public init(
        knownEnvironment: APNsEnvironment? = nil, enrollment: Enrollment? = nil, claims: DeviceClaims? = nil,
        settings: ServerAPNsSettings = ServerAPNsSettings(), expectedBundleID: String? = TokenUpdate.defaultBundleID,
        isTestUser: Bool = false
    ) {
        self.knownEnvironment = knownEnvironment
        self.enrollment = enrollment
        self.claims = claims
        self.settings = settings
        self.expectedBundleID = expectedBundleID
        self.isTestUser = isTestUser
    }
}

/// The verdict on one token update.
public struct TokenUpdateReport: Sendable, Hashable {
    /// The body, if it had every required field with the right type.
    public var update: TokenUpdate?
    /// The server's environment resolution for it (nil when the body is not JSON).
    public var resolution: EnvironmentResolution?
    /// Every problem found, in the order checked.
    public var problems: [Problem]

    /// Creates a report.
    public init(update: TokenUpdate?, resolution: EnvironmentResolution?, problems: [Problem]) {
        self.update = update
        self.resolution = resolution
        self.problems = problems
    }

    /// True when no problem is an error.
    public var valid: Bool { !problems.hasErrors }

    /// The APNs environment the backend will push this token to.
    public var resolvedEnvironment: APNsEnvironment? { resolution?.environment }

    /// The problem codes, in order.
    public var codes: [String] { problems.map(\.code.rawValue) }
}

/// The checks of a token update, applied by `kkpush token verify` and by the simulated backend alike.
///
/// Codes (stable):
/// - body: `body-not-json`, `missing-field`, `wrong-type`, `unknown-field` (info), `field-not-snake-case`
/// - token (from ``DeviceToken/normalize(_:)``): `MissingDeviceToken`, `BadDeviceToken` (not hex, odd,
///   shorter than 64 or longer than 400 hex digits), `token-normalized` (warning: uppercase, white space);
///   plus `token-description-form` (error: `<…>` brackets or spaces, or iOS 13's `{length = …, bytes = …}`:
///   the app sent `deviceToken.description`, which the backend stores as is)
/// - environment: ``BuildEnvironment/judgement(of:)`` (shared with `env resolve` and `diagnose`):
///   `build-environment-unknown` (error: not a value the backend knows, so it resolves to production),
///   `build-environment-not-normalized` (warning: a known value but for case or white space),
///   `build-environment-nonstandard` (warning: `debug`, `release`, `appstore`), and the resolver's warnings (`build-environment-testing`, `force-env-override`,
///   `server-env-override`, `server-env-legacy`, `force-env-ignored`, `server-env-ignored`,
///   `test-user-production-build`), `build-environment-contradicts-token` (error: the backend will push to
///   the other environment than the one the token is known to work in)
/// - `aps_environment` (optional; where valid the backend prefers it, see ``EnvironmentResolver``):
///   `aps-environment-unknown` (error: not exactly `development` or `production`; the backend ignores it),
///   `wrong-type`, and the resolver's `build-environment-contradicts-signature` (warning: the build reports a
///   configuration its signature contradicts; a backend without the `aps_environment` rule misroutes it) and
///   `test-user-contradicts-signature` (warning: a test user signed for production)
/// - `app-version-invalid`, `hardware-identifier-not-uuid`, `hardware-identifier-mismatch`,
///   `bundle-id-mismatch`, `platform-unsupported`
/// - bearer against enrollment and body: `jwt-wrong-tenant`, `jwt-device-mismatch`, `jwt-hardware-mismatch`,
///   `jwt-teams-mismatch` (warning), `enrollment-revoked`, `jwt-superseded` (a JWT of an earlier generation)
/// - `live_activity` (optional, ``LiveActivityTokens``): see ``liveActivity(_:)``; a `null` push-to-start token is
///   `push-to-start-token-null` (info, never an error)
public enum TokenUpdateRules {
    /// The codes that blame the server's `APNS_FORCE_ENV`/`APNS_ENV`, not the app: a backend reports them
    /// but does not refuse a token update for them.
    public static let serverSettingCodes: Set<Problem.Code> = [
        .forceEnvOverride, .serverEnvOverride, .serverEnvLegacy, .forceEnvIgnored, .serverEnvIgnored,
    ]

    /// Checks a token-update body as received.
    public static func check(body: Data, context: TokenUpdateContext = TokenUpdateContext()) -> TokenUpdateReport {
        guard let fields = (try? JSONValue.parse(Array(body)))?.objectValue else {
            let snippet = String(decoding: body.prefix(40), as: UTF8.self)
            return TokenUpdateReport(
                update: nil, resolution: nil,
                problems: [
                    Problem(
                        .error, code: .bodyNotJson,
                        message: "The token-update body is not a JSON object (it starts with '\(snippet)').",
                        fix:
                            "Send a JSON object with token, build_environment, app_version and hardware_identifier (Content-Type: application/json)."
                    )
                ])
        }
        return check(fields: fields, context: context)
    }

    /// For a body read from a file the user named: nil when it is a JSON object (its fields are then
    /// judged by ``check(body:context:)``), else `token-update-malformed` (exit 2) saying what the file holds.
    public static func fileShapeError(_ body: Data, label: String) -> KKPushError? {
        let fix =
            "Give the JSON object the app POSTs: {\"token\", \"build_environment\", \"app_version\", \"hardware_identifier\", ...}."
        guard let object = try? JSONValue.parse(Array(body)) else {
            let start = String(decoding: body.prefix(24), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
            let why = JSONInput.syntaxProblem(Array(body)).map { ": \($0)" } ?? ""
            return KKPushError(
                code: .tokenUpdateMalformed,
                message: "The token-update body \(label) is not JSON\(why) (it starts with '\(start)').", fix: fix)
        }
        if object.objectValue != nil { return nil }
        return KKPushError(
            code: .tokenUpdateMalformed,
            message: "The token-update body \(label) is \(typeName(object)), not a JSON object.", fix: fix)
    }

    /// Checks an already typed token update (for example one the simulation builds).
    public static func check(_ update: TokenUpdate, context: TokenUpdateContext = TokenUpdateContext())
        -> TokenUpdateReport
    {
        guard let data = try? update.jsonData() else {
            return TokenUpdateReport(update: update, resolution: nil, problems: [])
        }
        return check(body: data, context: context)
    }

    // MARK: - The checks

    static func check(fields: [String: JSONValue], context: TokenUpdateContext) -> TokenUpdateReport {
        var problems: [Problem] = []
        let known = Set(TokenUpdate.requiredFields + TokenUpdate.optionalFields)

        // Unknown fields (camelCase twins of known ones are errors: the backend ignores them).
        for key in fields.keys.sorted() where !known.contains(key) {
            let snake = snakeCase(key)
            if snake != key, known.contains(snake) {
                problems.append(
                    Problem(
                        .error, code: .fieldNotSnakeCase,
                        message: "The body has '\(key)'; the backend reads '\(snake)' and ignores '\(key)'.",
                        fix: "Rename the field to '\(snake)' (the backend's names are snake_case)."))
            } else {
                problems.append(
                    Problem(
                        .info, code: .unknownField,
                        message: "The body has the field '\(key)', which the backend ignores.",
                        fix: tokenAliases.contains(key)
                            ? "Send the device token as 'token'." : "Remove it, or check its spelling."))
            }
        }

        func string(_ name: String, required: Bool) -> String? {
            guard let value = fields[name], value != .null else {
                if required {
                    let alias = fields.keys.first {
                        snakeCase($0) == name || (name == "token" && tokenAliases.contains($0))
                    }
                    problems.append(
                        Problem(
                            .error, code: .missingField,
                            message: "The required field '\(name)' is missing"
                                + (alias.map { " (the body has '\($0)' instead)" } ?? "") + ".",
                            fix: fixForMissing(name)))
                }
                return nil
            }
            guard let text = value.stringValue else {
                problems.append(
                    Problem(
                        .error, code: .wrongType,
                        message: "The field '\(name)' is \(typeName(value)), not a string.",
                        fix: "Send '\(name)' as a JSON string."))
                return nil
            }
            return text
        }

        let token = string("token", required: true)
        let buildEnvironment = string("build_environment", required: true)
        let appVersion = string("app_version", required: true)
        let hardwareIdentifier = string("hardware_identifier", required: true)
        let bundleID = string("bundle_id", required: false)
        let platform = string("platform", required: false)
        let apsEnvironment = string("aps_environment", required: false)
        var isNewToken: Bool?
        if let value = fields["is_new_token"], value != .null {
            if let b = value.boolValue {
                isNewToken = b
            } else {
                problems.append(
                    Problem(
                        .error, code: .wrongType,
                        message: "The field 'is_new_token' is \(typeName(value)), not true or false.",
                        fix: "Send is_new_token as a JSON boolean."))
            }
        }

        if let token { problems += tokenProblems(token) }

        // Live Activity tokens (TokenUpdate+LiveActivity.swift).
        var liveActivity: LiveActivityTokens?
        if let value = fields["live_activity"], value != .null {
            let (tokens, found) = Self.liveActivity(value)
            liveActivity = tokens
            problems += found
        }

        // Environment.
        let isTestUser = context.enrollment?.isTestUser ?? context.isTestUser
        let resolution = EnvironmentResolver.resolve(
            buildEnvironment: buildEnvironment, apsEnvironment: apsEnvironment, isTestUser: isTestUser,
            settings: context.settings)
        // The resolver ignores an aps_environment it does not know (a warning); here it is the app's error.
        var environmentProblems = resolution.warnings.map {
            $0.code == .apsEnvironmentUnknown ? apsEnvironmentProblem(apsEnvironment ?? "") : $0
        }
        if buildEnvironment == nil {
            environmentProblems.removeAll { $0.code == .buildEnvironmentMissing }
        }
        problems += environmentProblems
        problems += contradictionProblems(token: token, resolution: resolution, context: context)

        if let appVersion, !isVersion(appVersion) {
            problems.append(
                Problem(
                    .error, code: .appVersionInvalid,
                    message: "app_version '\(appVersion)' is not a version.",
                    fix:
                        "Send CFBundleShortVersionString: 1 to 3 numbers with dots (\"1.4.2\"), optionally a build (\"1.4.2 (57)\" or \"1.4.2+57\")."
                ))
        }

        if let hardwareIdentifier {
            problems += hardwareProblems(hardwareIdentifier, context: context)
        }
        if let bundleID, let expected = context.expectedBundleID, bundleID != expected {
            problems.append(
                Problem(
                    .error, code: .bundleIdMismatch,
                    message:
                        "bundle_id '\(bundleID)' is not this backend's app '\(expected)'; its tokens are for another topic.",
                    fix:
                        "Send the token to the backend of the app that registered it (APNs answers DeviceTokenNotForTopic otherwise)."
                ))
        }
        if let platform, platform != "ios" {
            problems.append(
                Problem(
                    .error, code: .platformUnsupported,
                    message: "platform '\(platform)' is not supported; the backend pushes through APNs to iOS only.",
                    fix: "Send platform \"ios\", or leave it out."))
        }

        // Bearer claims against the enrollment.
        if let claims = context.claims, let enrollment = context.enrollment {
            problems += claims.problems(against: enrollment)
        }

        var update: TokenUpdate?
        if let token, let buildEnvironment, let appVersion, let hardwareIdentifier {
            update = TokenUpdate(
                token: token, buildEnvironment: buildEnvironment, appVersion: appVersion,
                hardwareIdentifier: hardwareIdentifier, bundleID: bundleID, platform: platform, isNewToken: isNewToken,
                apsEnvironment: apsEnvironment, liveActivity: liveActivity)
        }
        return TokenUpdateReport(update: update, resolution: resolution, problems: problems)
    }

    /// The token's problems: ``DeviceToken/normalize(_:)``'s, plus `token-description-form` when the app
    /// sent a description string instead of hex (the backend stores what it gets, so that is an error here).
    static func tokenProblems(_ token: String) -> [Problem] {
        var problems = DeviceToken.normalize(token).problems
        let trimmed = token.trimmingWhitespace()
        if trimmed.contains("length =") || trimmed.contains("bytes = 0x") || trimmed.contains("length=") {
            problems.append(
                Problem(
                    .error, code: .tokenDescriptionForm,
                    message:
                        "The token is the iOS 13+ description string ('{length = 32, bytes = 0x…}'), which is truncated and not hex.",
                    fix:
                        "Send deviceToken.map { String(format: \"%02x\", $0) }.joined(), never deviceToken.description."
                ))
        } else if trimmed.hasPrefix("<") || trimmed.hasSuffix(">") || trimmed.contains(" ") {
            problems.append(
                Problem(
                    .error, code: .tokenDescriptionForm,
                    message:
                        "The token has < > brackets or spaces: it is NSData's description string, which the backend stores as is (APNs then answers BadDeviceToken).",
                    fix:
                        "Send the token as plain lowercase hex: deviceToken.map { String(format: \"%02x\", $0) }.joined()."
                ))
        }
        return problems
    }

    /// An `aps_environment` that is not exactly `development` or `production`: an error here (the app sent
    /// something other than the entitlement's value), though the server ignores it (``EnvironmentResolver``'s
    /// `aps-environment-unknown` warning) and falls back to the old rules.
    static func apsEnvironmentProblem(_ value: String) -> Problem {
        Problem(
            .error, code: .apsEnvironmentUnknown,
            message:
                "The field 'aps_environment' is \"\(value)\", not \"development\" or \"production\"\(EnvironmentResolver.apsEnvironmentHint(value)); the backend ignores it and routes by is_test_user and build_environment.",
            fix:
                "Send the entitlement's value: development or production (the aps-environment of the embedded profile, exactly), or leave the field out."
        )
    }

    static func contradictionProblems(
        token: String?, resolution: EnvironmentResolution, context: TokenUpdateContext
    ) -> [Problem] {
        var known = context.knownEnvironment
        var source = "the known environment given (knownEnvironment)"
        if known == nil, let enrollment = context.enrollment, let stored = enrollment.apnsToken,
            let token, stored == token.trimmingWhitespace().lowercased()
        {
            if let signed = enrollment.apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:)) {
                known = signed
                source =
                    "the enrollment, which registered the same token signed for aps_environment '\(enrollment.apsEnvironment ?? "")'"
            } else if let env = EnvironmentResolver.deviceEnvironment(for: enrollment.buildEnvironment) {
                known = env
                source =
                    "the enrollment, which registered the same token as build_environment '\(enrollment.buildEnvironment ?? "")'"
            }
        }
        guard let known else { return [] }
        if resolution.environment != known {
            return [
                Problem(
                    .error, code: .buildEnvironmentContradictsToken,
                    message:
                        "The token is known to work in \(known) (\(source)), but the backend will push it to \(resolution.environment) (decided by \(resolution.decidedBy.rawValue)); APNs answers BadDeviceToken.",
                    fix: known == .sandbox
                        ? "A sandbox token comes from \(EnvironmentModel.builds(of: .sandbox)): send aps_environment \"development\" (or build_environment \"development\") and unset any APNS_ENV/APNS_FORCE_ENV override."
                        : "A production token comes from \(EnvironmentModel.builds(of: .production)): send aps_environment \"production\" (or build_environment \"production\") and unset any APNS_ENV/APNS_FORCE_ENV override."
                )
            ]
        }
        if let device = resolution.deviceEnvironment, device != known {
            let claim =
                resolution.apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:)) != nil
                ? "aps_environment '\(resolution.apsEnvironment ?? "")' means a build signed for \(device)"
                : "build_environment '\(resolution.buildEnvironment ?? "")' means a \(device) build"
            return [
                Problem(
                    .warning, code: .buildEnvironmentContradictsToken,
                    message:
                        "\(claim), but the token is known to work in \(known) (\(source)); only the server override (\(resolution.decidedBy.rawValue)) makes the push land.",
                    fix:
                        "Send the aps_environment (and build_environment) that matches the build's aps-environment entitlement."
                )
            ]
        }
        return []
    }

    static func hardwareProblems(_ value: String, context: TokenUpdateContext) -> [Problem] {
        var problems: [Problem] = []
        if UUID(uuidString: value) == nil {
            let containsUUID =
                value.split(whereSeparator: { !($0.isHexDigit || $0 == "-") })
                .contains { UUID(uuidString: String($0)) != nil }
                || uuidSuffix(value) != nil
            problems.append(
                Problem(
                    .error, code: .hardwareIdentifierNotUuid,
                    message: containsUUID
                        ? "hardware_identifier '\(value)' has a UUID with something concatenated to it."
                        : "hardware_identifier '\(value)' is not a UUID.",
                    fix:
                        "Send UIDevice.current.identifierForVendor?.uuidString only, not concatenated with the bundle id."
                ))
        }
        if let enrollment = context.enrollment, enrollment.hardwareIdentifier.lowercased() != value.lowercased() {
            problems.append(
                Problem(
                    .error, code: .hardwareIdentifierMismatch,
                    message:
                        "hardware_identifier \(value) is not the phone of enrollment \(enrollment.id) (\(enrollment.hardwareIdentifier)).",
                    fix:
                        "identifierForVendor changed (reinstall, TestFlight/App Store switch): re-enroll, or send the update with this phone's own enrollment JWT."
                ))
        }
        // With an enrollment, the body is compared with it (above) and the claims with it (DeviceClaims).
        if context.enrollment == nil, let claimed = context.claims?.hardwareIdentifier,
            claimed.lowercased() != value.lowercased()
        {
            problems.append(
                Problem(
                    .error, code: .jwtHardwareMismatch,
                    message: "The bearer token was issued to hardware_identifier \(claimed), the body says \(value).",
                    fix:
                        "Send each enrollment's token update with the JWT issued to this phone; re-enroll if identifierForVendor changed."
                ))
        }
        return problems
    }

    /// `major[.minor[.patch]]`, optionally followed by a build: ` (57)`, `+57` or `-beta.1`.
    public static func isVersion(_ text: String) -> Bool {
        var rest = Substring(text)
        var parts = 0
        while true {
            let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
            guard !digits.isEmpty else { return false }
            parts += 1
            rest = rest.dropFirst(digits.count)
            if parts < 3, rest.hasPrefix("."), rest.dropFirst().first?.isNumber == true {
                rest = rest.dropFirst()
                continue
            }
            break
        }
        if rest.isEmpty { return true }
        if rest.hasPrefix(" (") && rest.hasSuffix(")") {
            let build = rest.dropFirst(2).dropLast()
            return !build.isEmpty && build.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") }
        }
        if rest.hasPrefix("+") || rest.hasPrefix("-") {
            let build = rest.dropFirst()
            return !build.isEmpty && build.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") }
        }
        return false
    }

    private static let tokenAliases: Set<String> = [
        "apns_token", "device_token", "deviceToken", "apnsToken", "push_token",
    ]

    private static func uuidSuffix(_ value: String) -> String? {
        guard value.count > 36 else { return nil }
        let tail = String(value.suffix(36))
        return UUID(uuidString: tail) != nil ? tail : nil
    }

    private static func fixForMissing(_ name: String) -> String {
        switch name {
        case "token": "Send the APNs device token as 'token' (lowercase hex)."
        case "build_environment":
            "Send build_environment: \"development\" for Release Testing builds, \"production\" for Release builds (without it the server assumes production)."
        case "app_version": "Send app_version: the app's CFBundleShortVersionString, for example \"1.4.2\"."
        case "hardware_identifier": "Send hardware_identifier: UIDevice.current.identifierForVendor?.uuidString."
        default: "Send '\(name)'."
        }
    }

    static func snakeCase(_ key: String) -> String {
        var out = ""
        for ch in key {
            if ch.isUppercase {
                if !out.isEmpty { out.append("_") }
                out += ch.lowercased()
            } else if ch == "-" {
                out.append("_")
            } else {
                out.append(ch)
            }
        }
        return out
    }

    /// A JSON value's type for messages ("a number", "an array"), shared by the registration checks.
    static func typeName(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
