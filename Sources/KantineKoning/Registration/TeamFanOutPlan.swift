import Foundation
public import KKPushCore

/// One push of a team fan-out: one device token, the environment to send it to, and the enrollments
/// that share the token.
public struct FanOutTarget: Sendable, Hashable {
    /// The device token (lowercase hex).
    public var token: String
    /// The APNs environment the server resolves for it.
    public var environment: APNsEnvironment
    /// The enrollments of the team that hold this token (one phone may hold several).
    public var enrollments: [EnrollmentKey]
    /// The resolution's warnings and any disagreement between the enrollments.
    public var problems: [Problem]
}

/// The server side of a team fan-out: which tokens to push, once each, in which environment.
///
/// - Only `active` enrollments of the tenant that follow the team and hold a token.
/// - **One push per distinct device token**, not per enrollment: a phone with a manager and a member
///   enrollment for the same team (or two enrollments covering it) gets one push.
/// - Each enrollment's environment is resolved with ``EnvironmentResolver`` (its `aps_environment`,
///   `is_test_user` and `build_environment`) and the server's `APNS_FORCE_ENV`/`APNS_ENV`. When enrollments sharing a token disagree (one is a test user), the most
///   recently updated enrollment decides, and the target carries a `fanout-environment-conflict` warning.
public enum TeamFanOutPlan {
    /// The targets for `team` in `tenant`, in order of first appearance.
    public static func targets(
        enrollments: [Enrollment], tenant: String, team: String, settings: ServerAPNsSettings
    ) -> [FanOutTarget] {
        var order: [String] = []
        var groups: [String: [Enrollment]] = [:]
        for e in enrollments where e.status == .active && e.tenantSlug == tenant && e.teamCodes.contains(team) {
            guard let token = e.apnsToken, !token.isEmpty else { continue }
            if groups[token] == nil { order.append(token) }
            groups[token, default: []].append(e)
        }
        return order.map { token in
            let members = groups[token]!
            let resolved = members.map {
                (
                    $0,
                    EnvironmentResolver.resolve(
                        buildEnvironment: $0.buildEnvironment, apsEnvironment: $0.apsEnvironment,
                        isTestUser: $0.isTestUser, settings: settings)
                )
            }
            let decider = resolved.max { $0.0.updatedAt < $1.0.updatedAt }!
            var problems = decider.1.warnings
            if Set(resolved.map(\.1.environment)).count > 1 {
                problems.append(
                    Problem(
                        .warning, code: .fanoutEnvironmentConflict,
                        message:
                            "Enrollments sharing token \(DeviceToken.redacted(token)) resolve to different environments; the most recently updated one (\(decider.0.id)) decides: \(decider.1.environment).",
                        fix:
                            "Make the enrollments of one phone agree (same aps_environment, build_environment and is_test_user)."
                    ))
            }
            return FanOutTarget(
                token: token, environment: decider.1.environment, enrollments: members.map(\.id), problems: problems)
        }
    }
}
