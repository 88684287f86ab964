public import Foundation
public import KKPushCore

/// The claims of an enrollment's signed device token (the JWT the backend issues at enrollment and the
/// app sends as `Authorization: Bearer` on every call for that enrollment's tenant).
///
/// JSON (HS256, see `DeviceJWT` in KKPushBackend for signing):
///
/// ```json
/// {"device_id": "dev-…", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "manager",
///  "hardware_identifier": "8C1E0B7A-…", "gen": 1, "iat": 1800000000, "exp": 1831536000}
/// ```
///
/// `iat`, `exp` and `gen` are integers (seconds since 1970; the enrollment's generation), never strings.
/// A token without `gen` (issued before generations existed) counts as generation 1.
public struct DeviceClaims: Sendable, Hashable, Codable {
    /// The enrollment's device id (unique per tenant).
    public var deviceID: String
    /// The tenant this token is for: the backend refuses it for any other tenant.
    public var tenantSlug: String
    /// The teams whose data this token may read.
    public var teamCodes: [String]
    /// Manager or member.
    public var role: EnrollmentRole
    /// The phone's vendor UUID at enrollment, if the backend recorded it.
    public var hardwareIdentifier: String?
    /// Issued at, seconds since 1970.
    public var issuedAt: Int
    /// Expires at, seconds since 1970.
    public var expiresAt: Int
    /// The enrollment's generation when the token was issued (``Enrollment/generation``); nil in tokens
    /// issued before generations existed, which count as generation 1.
    public var generation: Int?

    /// The generation this token is of: ``generation``, or 1 if the token has none.
    public var effectiveGeneration: Int { generation ?? 1 }

    /// Creates claims.
    public init(
        deviceID: String, tenantSlug: String, teamCodes: [String], role: EnrollmentRole,
        hardwareIdentifier: String? = nil, issuedAt: Int, expiresAt: Int, generation: Int? = nil
    ) {
        self.deviceID = deviceID
        self.tenantSlug = tenantSlug
        self.teamCodes = teamCodes
        self.role = role
        self.hardwareIdentifier = hardwareIdentifier
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.generation = generation
    }

    /// The longest lifetime a device token gets: 100 years (36,500 days).
    public static let maximumLifetime: TimeInterval = 36_500 * 86_400

    /// Claims for `enrollment`, issued at `now`, valid for `lifetime` seconds.
    ///
    /// `now` is clamped to UNIX times from 1970 to 9999 and `lifetime` to 0 ...
    /// ``maximumLifetime`` (NaN counts as 0), so the integer claims never overflow; `DeviceJWT` refuses
    /// such lifetimes before they get here.
    public init(enrollment: Enrollment, issuedAt now: Date, lifetime: TimeInterval) {
        let range = InputNumbers.unixSeconds
        let t = now.timeIntervalSince1970.rounded(.down)
        let iat =
            t.isFinite ? Int(min(max(t, Double(range.lowerBound)), Double(range.upperBound))) : Int(range.lowerBound)
        let life = lifetime.isFinite ? Int(min(max(lifetime.rounded(.down), 0), Self.maximumLifetime)) : 0
        self.init(
            deviceID: enrollment.deviceID, tenantSlug: enrollment.tenantSlug, teamCodes: enrollment.teamCodes,
            role: enrollment.role, hardwareIdentifier: enrollment.hardwareIdentifier, issuedAt: iat,
            expiresAt: iat + life, generation: enrollment.generation)
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case tenantSlug = "tenant_slug"
        case teamCodes = "team_codes"
        case role
        case hardwareIdentifier = "hardware_identifier"
        case issuedAt = "iat"
        case expiresAt = "exp"
        case generation = "gen"
    }

    /// `jwt-superseded` if these claims are of another generation of `enrollment` (it was revoked or
    /// re-enrolled after the token was issued); nil if the generations match.
    public func supersededProblem(against enrollment: Enrollment) -> Problem? {
        guard effectiveGeneration != enrollment.generation else { return nil }
        return Problem(
            .error, code: .jwtSuperseded,
            message:
                "The device JWT is of generation \(effectiveGeneration) of enrollment \(enrollment.id), which is now at generation \(enrollment.generation) (revoked or re-enrolled since).",
            fix: "Use the signed_device_token of the latest enrollment; re-enroll the device if it has none.")
    }

    /// The enrollment key these claims name.
    public var enrollmentKey: EnrollmentKey { EnrollmentKey(tenantSlug: tenantSlug, deviceID: deviceID) }

    /// The problems of using these claims for `enrollment`: another device id, another tenant, another
    /// phone, teams the enrollment no longer has, a revoked enrollment, an older generation of the enrollment.
    /// Codes: `jwt-device-mismatch`, `jwt-wrong-tenant`, `jwt-hardware-mismatch`, `jwt-teams-mismatch`
    /// (warning), `enrollment-revoked`, `jwt-superseded`.
    public func problems(against enrollment: Enrollment) -> [Problem] {
        var problems: [Problem] = []
        if tenantSlug != enrollment.tenantSlug {
            problems.append(
                Problem(
                    .error, code: .jwtWrongTenant,
                    message:
                        "The bearer token is for tenant '\(tenantSlug)', the enrollment is in '\(enrollment.tenantSlug)'.",
                    fix:
                        "Send each enrollment's own signedDeviceToken (tenant.signedDeviceToken), never one primary token for every tenant."
                ))
        }
        if deviceID != enrollment.deviceID {
            problems.append(
                Problem(
                    .error, code: .jwtDeviceMismatch,
                    message:
                        "The bearer token names device_id '\(deviceID)', the enrollment is '\(enrollment.deviceID)'.",
                    fix: "Send the token update of each enrollment with that enrollment's own JWT."))
        }
        if let hw = hardwareIdentifier, hw.lowercased() != enrollment.hardwareIdentifier.lowercased() {
            problems.append(
                Problem(
                    .error, code: .jwtHardwareMismatch,
                    message:
                        "The bearer token was issued to hardware_identifier \(hw), the enrollment belongs to \(enrollment.hardwareIdentifier).",
                    fix:
                        "identifierForVendor changed (reinstall, TestFlight/App Store switch): re-enroll the device to get a new JWT."
                ))
        }
        if Set(teamCodes) != Set(enrollment.teamCodes) {
            problems.append(
                Problem(
                    .warning, code: .jwtTeamsMismatch,
                    message:
                        "The bearer token's team_codes \(teamCodes) differ from the enrollment's \(enrollment.teamCodes).",
                    fix:
                        "Issue a fresh JWT after changing the enrollment's teams (the backend filters on the JWT's team_codes)."
                ))
        }
        if enrollment.status == .revoked {
            problems.append(
                Problem(
                    .error, code: .enrollmentRevoked,
                    message: "Enrollment \(enrollment.id) is revoked.",
                    fix: "Enroll the device again (scan the club's QR code)."))
        } else if let superseded = supersededProblem(against: enrollment) {
            problems.append(superseded)
        }
        return problems
    }
}
