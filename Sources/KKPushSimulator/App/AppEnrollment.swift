public import Foundation
public import KKPushBackend
public import KKPushCore
public import KantineKoning

/// One enrollment as the app keeps it: one tenant, its teams, a role, and its own signed device JWT
/// (README: "Eén enrollment = Eén tenant + Specifieke teams + Eigen JWT token").
public struct AppEnrollment: Sendable, Hashable {
    /// The tenant (club) slug.
    public var tenantSlug: String
    /// The enrollment's device id (unique per tenant, one per enrollment).
    public var deviceID: String
    /// The teams this enrollment follows.
    public var teamCodes: [String]
    /// Manager or member.
    public var role: EnrollmentRole
    /// The signed device JWT the backend issued for this enrollment. Secret: log a prefix only.
    public var signedDeviceToken: String
    /// The APNs token last sent to the backend for this enrollment.
    public var lastSentToken: String?
    /// When it was sent.
    public var lastSentAt: Date?

    /// Creates an enrollment.
    public init(
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
    public var key: EnrollmentKey { EnrollmentKey(tenantSlug: tenantSlug, deviceID: deviceID) }

    /// The state the token-update policy looks at.
    public var policyState: AppEnrollmentState {
        AppEnrollmentState(
            tenantSlug: tenantSlug, deviceID: deviceID, signedDeviceToken: signedDeviceToken,
            lastSentToken: lastSentToken, lastSentAt: lastSentAt)
    }

    /// `vvwilhelmus manager JO11-3, JO11-5`.
    public var label: String { "\(tenantSlug) \(role.rawValue) \(teamCodes.joined(separator: ", "))" }
}

/// What to enroll: a tenant, teams and a role.
public struct EnrollmentSpec: Sendable, Hashable {
    /// The tenant slug.
    public var tenant: String
    /// The teams.
    public var teams: [String]
    /// Manager or member.
    public var role: EnrollmentRole
    /// A test user (the backend pushes to sandbox).
    public var isTestUser: Bool

    /// Creates a spec.
    public init(tenant: String, teams: [String], role: EnrollmentRole, isTestUser: Bool = false) {
        self.tenant = tenant
        self.teams = teams
        self.role = role
        self.isTestUser = isTestUser
    }

    /// The README's example phone: VV Wilhelmus manager for JO11-3 and JO11-5, VV Wilhelmus member
    /// for JO13-1 (a separate enrollment), AGOVV member for JO10-5.
    public static let readmePhone: [EnrollmentSpec] = [
        EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3", "JO11-5"], role: .manager),
        EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO13-1"], role: .member),
        EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member),
    ]
}

/// One token update the app sent, and what came of it.
public struct TokenUpdateAttempt: Sendable {
    /// The enrollment it was for.
    public var enrollment: EnrollmentKey
    /// The first 12 characters of the JWT it was sent with, and `…`.
    public var bearerPrefix: String
    /// The HTTP status (0: no answer).
    public var status: Int
    /// Seconds it took.
    public var seconds: TimeInterval
    /// The environment the backend resolved, on success.
    public var finalEnvironment: APNsEnvironment?
    /// The backend's error, if it refused.
    public var error: KKPushError?
    /// The codes of the problems the backend reported (warnings included).
    public var problemCodes: [String]

    /// True if the backend stored the token.
    public var succeeded: Bool { (200..<300).contains(status) }
}

/// What the app's foreground step did: the tenant info refresh and the enrollment sync.
public struct ForegroundSync: Sendable {
    /// The tenant info the refresh got.
    public var tenants: [TenantInfo] = []
    /// Why no sync was sent (a failed tenant info refresh or team code mapping, the app's throttle).
    public var abortedBecause: String?
    /// The sync's HTTP status (0: not sent).
    public var status = 0
    /// True if the backend answered `"synced": true`.
    public var synced = false
    /// `cleanup_summary.enrollments_revoked`.
    public var enrollmentsRevoked = 0
    /// `cleanup_summary.teams_removed`.
    public var teamsRemoved = 0
    /// The enrollments the backend revoked.
    public var revoked: [EnrollmentKey] = []
    /// The backend's error, if it refused.
    public var error: KKPushError?
}
