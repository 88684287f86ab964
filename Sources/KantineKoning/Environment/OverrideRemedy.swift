import KKPushCore

/// How to take a server's environment override away, written in one place: the Kantine Koning backend runs on
/// Fly.io as the app `kantine-koning`, and its settings are Fly secrets. Every finding, scenario and demo row
/// that tells an operator to remove `APNS_ENV` or `APNS_FORCE_ENV` takes its words from here.
public enum OverrideRemedy {
    /// The backend's Fly app.
    public static let flyApp = "kantine-koning"

    /// The command that removes `variable` from the backend's settings.
    public static func unset(_ variable: String) -> String { "fly secrets unset \(variable) -a \(flyApp)" }

    /// The fix for a build whose pushes `resolution` sends to the wrong environment, that works under `settings`
    /// and `testUser`: the override that decided (if any) must go, the build must report the right value (if it
    /// does not), or both when either alone would still break.
    public static func fix(
        build: AppBuild, settings: ServerAPNsSettings, testUser: Bool, resolution r: EnvironmentResolution
    ) -> String {
        let tokenEnv = build.tokenEnvironment
        let buildFix = build.problems().first { $0.severity == .error }?.fix
        // The build as it should be: reporting the value auto-detection sends to its token's environment.
        let rightValue = tokenEnv == .sandbox ? BuildEnvironment.development : BuildEnvironment.production
        func delivers(_ buildEnvironment: String, _ settings: ServerAPNsSettings, _ testUser: Bool) -> Bool {
            EnvironmentResolver.resolve(buildEnvironment: buildEnvironment, isTestUser: testUser, settings: settings)
                .environment == tokenEnv
        }
        var overrideFixes: [String] = []
        var cleared = settings
        var clearedTestUser = testUser
        // Every override that would decide for this build once the ones before it are gone.
        var current = r
        while [.forceEnv, .legacyAPNSEnv, .testUser].contains(current.decidedBy) {
            switch current.decidedBy {
            case .forceEnv:
                overrideFixes.append(unset(ServerAPNsSettings.forceVariable))
                cleared.forceEnv = nil
            case .legacyAPNSEnv:
                overrideFixes.append(unset(ServerAPNsSettings.legacyVariable))
                cleared.legacyAPNSEnv = nil
            default:
                overrideFixes.append("Clear is_test_user for this enrollment")
                clearedTestUser = false
            }
            current = EnvironmentResolver.resolve(
                buildEnvironment: build.buildEnvironment, isTestUser: clearedTestUser, settings: cleared)
        }
        let serverOnly = !overrideFixes.isEmpty && delivers(build.buildEnvironment, cleared, clearedTestUser)
        let buildOnly = buildFix != nil && delivers(rightValue, settings, testUser)
        let serverText = overrideFixes.joined(separator: " and ")
        if serverOnly, buildOnly, let buildFix { return "\(serverText) (auto-detection then decides), or: \(buildFix)" }
        if serverOnly { return "\(serverText) (auto-detection then sends this device to \(tokenEnv))" }
        if buildOnly, let buildFix { return buildFix }
        if !overrideFixes.isEmpty, let buildFix {
            return
                "both: \(serverText), and \(buildFix.prefix(1).lowercased() + buildFix.dropFirst()) Either alone still sends this build's pushes to \(r.environment)."
        }
        if !overrideFixes.isEmpty, clearedTestUser == testUser {
            // An override pins the wrong environment even for a correct build: set it to the build's.
            return "\(serverText), or set it to \(tokenEnv) if every device is a \(tokenEnv) build"
        }
        return buildFix ?? "Make the build report \"\(rightValue)\" as build_environment."
    }
}
