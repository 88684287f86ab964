package import Foundation
package import KKPushBackend
package import KKPushCore
package import KantineKoning

/// One enrollment as the app keeps it: one tenant, its teams, a role, and its own signed device JWT
/// (README: "Eén enrollment = Eén tenant + Specifieke teams + Eigen JWT token").
package struct AppEnrollment: Sendable, Hashable {
    /// The tenant (club) slug.
    package var tenantSlug: String
    /// The enrollment's device id (unique per tenant, one per enrollment).
    package var deviceID: String
    /// The teams this enrollment follows.
    package var teamCodes: [String]
    /// Manager or member.
    package var role: EnrollmentRole
    /// The signed device JWT the backend issued for this enrollment. Secret: log a prefix only.
    package var signedDeviceToken: String
    /// The APNs token last sent to the backend for this enrollment.
    package var lastSentToken: String?
    /// When it was sent.
    package var lastSentAt: Date?

    /// Creates an enrollment.
    package init(
        tenantSlug: String, deviceID: String, teamCodes: [String], role: EnrollmentRole, signedDeviceToken: String,
        lastSentToken: String? = nil, lastSentAt: Date? = nil
    ) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
        self.teamCodes = teamCodes
        self.role = role
        self.signedDeviceToken = signedDeviceToken
        self.lastSentToken = lastSentToken
        self.lastSentAt = lastSentAt
    }

    /// The key the backend knows it by.
    package var key: EnrollmentKey { EnrollmentKey(tenantSlug: tenantSlug, deviceID: deviceID) }

    /// The state the token-update policy looks at.
    package var policyState: AppEnrollmentState {
        AppEnrollmentState(
            tenantSlug: tenantSlug, deviceID: deviceID, signedDeviceToken: signedDeviceToken,
            lastSentToken: lastSentToken, lastSentAt: lastSentAt)
    }

    /// `vvwilhelmus manager JO11-3, JO11-5`.
    package var label: String { "\(tenantSlug) \(role.rawValue) \(teamCodes.joined(separator: ", "))" }
}

/// What to enroll: a tenant, teams and a role.
package struct EnrollmentSpec: Sendable, Hashable {
    /// The tenant slug.
    package var tenant: String
    /// The teams.
    package var teams: [String]
    /// Manager or member.
    package var role: EnrollmentRole
    /// A test user (the backend pushes to sandbox).
    package var isTestUser: Bool

    /// Creates a spec.
    package init(tenant: String, teams: [String], role: EnrollmentRole, isTestUser: Bool = false) {
        self.tenant = tenant
        self.teams = teams
        self.role = role
        self.isTestUser = isTestUser
    }

    /// The README's example phone: VV Wilhelmus manager for JO11-3 and JO11-5, VV Wilhelmus member
    /// for JO13-1 (a separate enrollment), AGOVV member for JO10-5.
    package static let readmePhone: [EnrollmentSpec] = [
        EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3", "JO11-5"], role: .manager),
        EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO13-1"], role: .member),
        EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member),
    ]
}

/// One token update the app sent, and what came of it.
package struct TokenUpdateAttempt: Sendable {
    /// The enrollment it was for.
    package var enrollment: EnrollmentKey
    /// The first 12 characters of the JWT it was sent with, and `…`.
    package var bearerPrefix: String
    /// The HTTP status (0: no answer).
    package var status: Int
    /// Seconds it took.
    package var seconds: TimeInterval
    /// The environment the backend resolved, on success.
    package var finalEnvironment: APNsEnvironment?
    /// The backend's error, if it refused.
    package var error: KKPushError?
    /// The codes of the problems the backend reported (warnings included).
    package var problemCodes: [String]

    /// True if the backend stored the token.
    package var succeeded: Bool { (200..<300).contains(status) }
}

/// What the app's foreground step did: the tenant info refresh and the enrollment sync.
package struct ForegroundSync: Sendable {
    /// The tenant info the refresh got.
    package var tenants: [TenantInfo] = []
    /// Why no sync was sent (a failed tenant info refresh or team code mapping, the app's throttle).
    package var abortedBecause: String?
    /// The sync's HTTP status (0: not sent).
    package var status = 0
    /// True if the backend answered `"synced": true`.
    package var synced = false
    /// `cleanup_summary.enrollments_revoked`.
    package var enrollmentsRevoked = 0
    /// `cleanup_summary.teams_removed`.
    package var teamsRemoved = 0
    /// The enrollments the backend revoked.
    package var revoked: [EnrollmentKey] = []
    /// The backend's error, if it refused.
    package var error: KKPushError?
}
