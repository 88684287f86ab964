public import Foundation
public import KKPushCore

/// One enrollment as the app keeps it: its tenant, device id, own JWT, and what it last sent.
public struct AppEnrollmentState: Sendable, Hashable, Codable {
    /// The tenant slug.
    public var tenantSlug: String
    /// The enrollment's device id.
    public var deviceID: String
    /// The enrollment's own signed device token (`tenant.signedDeviceToken`).
    public var signedDeviceToken: String
    /// The APNs token last sent for this enrollment, if any.
    public var lastSentToken: String?
    /// When it was last sent successfully, if ever.
    public var lastSentAt: Date?

    /// Creates the app-side state of one enrollment.
    public init(
        tenantSlug: String, deviceID: String, signedDeviceToken: String, lastSentToken: String? = nil,
        lastSentAt: Date? = nil
    ) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
        self.signedDeviceToken = signedDeviceToken
        self.lastSentToken = lastSentToken
        self.lastSentAt = lastSentAt
    }
}

/// One token update the app should send: to which enrollment, with which bearer, and why.
public struct PlannedTokenUpdate: Sendable, Hashable {
    /// The enrollment it is for.
    public var enrollment: EnrollmentKey
    /// The bearer to send: that enrollment's own JWT.
    public var bearer: String
    /// True if the token differs from the one last sent for this enrollment (`is_new_token`).
    public var isNewToken: Bool
    /// Why it is sent: `new-token`, `never-sent` or `stale`.
    public var reason: String
}

/// When the app sends its token update, and with which JWT (the app side of the rules).
///
/// - It sends when the token differs from the last one sent for that enrollment, when it never sent
///   one, or when the last update is older than ``threshold`` (24 hours): the backend's copy may have
///   been cleared by a 410 or a reset, and a daily refresh repairs that.
/// - It sends **to every enrollment, each with its own JWT**. One phone with three enrollments sends
///   three updates. Sending once with a "primary" token (the README's most common mistake) leaves the
///   other enrollments without a token, or, with the primary JWT, updates only the first tenant.
public struct TokenUpdatePolicy: Sendable, Hashable {
    /// How old the last update may be before the app sends again: 24 hours by default.
    public var threshold: TimeInterval

    /// The default threshold: 24 hours.
    public static let defaultThreshold: TimeInterval = 24 * 60 * 60

    /// Creates a policy.
    public init(threshold: TimeInterval = TokenUpdatePolicy.defaultThreshold) {
        self.threshold = threshold
    }

    /// Whether one enrollment needs an update for `token` at `now`, and why (nil if not).
    public func reason(token: String, enrollment: AppEnrollmentState, now: Date) -> String? {
        guard let last = enrollment.lastSentToken, let at = enrollment.lastSentAt else { return "never-sent" }
        if last != token { return "new-token" }
        if now.timeIntervalSince(at) >= threshold { return "stale" }
        return nil
    }

    /// The updates to send for `token`: one per enrollment that needs one, each with that enrollment's JWT.
    public func updates(token: String, enrollments: [AppEnrollmentState], now: Date) -> [PlannedTokenUpdate] {
        enrollments.compactMap { e in
            guard let why = reason(token: token, enrollment: e, now: now) else { return nil }
            return PlannedTokenUpdate(
                enrollment: EnrollmentKey(tenantSlug: e.tenantSlug, deviceID: e.deviceID),
                bearer: e.signedDeviceToken, isNewToken: e.lastSentToken != token, reason: why)
        }
    }

    /// Audits a batch of updates the app actually sent (bearer claims per update) against its enrollments:
    /// `primary-token-reused` when one JWT was used for several enrollments or another tenant, and
    /// `enrollment-not-updated` for enrollments that got no update of their own.
    public static func audit(sentWith claims: [DeviceClaims], enrollments: [EnrollmentKey]) -> [Problem] {
        var problems: [Problem] = []
        let used = Set(claims.map(\.enrollmentKey))
        if claims.count > used.count {
            problems.append(
                Problem(
                    .error, code: .primaryTokenReused,
                    message:
                        "\(claims.count) token updates were sent with only \(used.count) distinct enrollment JWT(s).",
                    fix:
                        "Send each enrollment's update with tenant.signedDeviceToken of that enrollment, not primaryAuthToken."
                ))
        }
        for key in enrollments where !used.contains(key) {
            problems.append(
                Problem(
                    .error, code: .enrollmentNotUpdated,
                    message:
                        "Enrollment \(key) got no token update with its own JWT, so the backend keeps its old token (or none).",
                    fix: "Loop over every enrollment (model.tenants) and send the update with that enrollment's JWT."))
        }
        return problems
    }
}
