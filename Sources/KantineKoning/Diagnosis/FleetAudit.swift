import Foundation
public import KKPushCore

/// The stable codes of `kkpush audit`: the rules `diagnose` applies to one enrollment (the same codes), and
/// what only the whole fleet shows.
public enum FleetAuditCode {
    /// An active enrollment without an APNs token (diagnose's rule).
    public static let tokenMissing = DiagnosisCode.tokenMissing.rawValue
    /// An active enrollment whose token is not a usable APNs token as stored (diagnose's rule, DeviceToken.judge).
    public static let tokenFormat = DiagnosisCode.tokenFormat.rawValue
    /// An active enrollment whose token has uppercase hex digits: accepted, a warning (DeviceToken.judge).
    public static let tokenUppercase = DeviceToken.uppercaseProblem.code.rawValue
    /// APNS_FORCE_ENV or APNS_ENV sends the enrollment to the other environment than its build (diagnose's rule).
    public static let serverEnvOverride = DiagnosisCode.serverEnvOverride.rawValue
    /// A test user whose build claims production: pushed to sandbox, which rejects a production token.
    public static let testUserProductionBuild = "test-user-production-build"
    /// Any other environment mismatch diagnose reports for the enrollment alone.
    public static let environmentMismatch = DiagnosisCode.environmentMismatch.rawValue
    /// A build_environment outside the contract (diagnose's judgement of the value).
    public static let buildEnvironmentUnknown = DiagnosisCode.buildEnvironmentUnknown.rawValue
    /// build_environment `testing` (the README's logging builds).
    public static let buildEnvironmentTesting = "build-environment-testing"
    /// An active enrollment with a token but no build_environment.
    public static let buildEnvironmentMissing = "build-environment-missing"
    /// `debug`, `release` or `appstore`: understood by the server, not sent by the app.
    public static let buildEnvironmentNonstandard = "build-environment-nonstandard"
    /// A known value but for case or white space.
    public static let buildEnvironmentNotNormalized = "build-environment-not-normalized"
    /// A revoked enrollment still holding an APNs token.
    public static let revokedWithToken = "revoked-with-token"
    /// One APNs token held by active enrollments of several hardware identifiers.
    public static let tokenShared = "token-shared"
    /// Active enrollments of one hardware identifier report different build environments.
    public static let buildEnvironmentDisagree = "build-environment-disagree"
    /// Active enrollments of one hardware identifier follow more than 5 teams in all (the app's limit).
    public static let tooManyTeams = "too-many-teams"
    /// Several rows hold one team_manager_email (compared without case): the backend's troubleshooting lookup
    /// `Repo.get_by(DeviceEnrollment, team_manager_email: …)` raises (several match) or misses (another case).
    public static let emailLookupAmbiguous = "email-lookup-ambiguous"
    /// Several rows of one phone (or revoked ones) hold one APNs token: `Repo.get_by(DeviceEnrollment, apns_token:
    /// …)` raises. (A token on several phones is ``tokenShared``.)
    public static let tokenLookupAmbiguous = "token-lookup-ambiguous"
    /// `audit --probe`: both environments accept the token, which real APNs never does for one token: the probed
    /// endpoints are a stand-in.
    public static let probeBothEnvironments = "probe-both-environments"
    /// A row that cannot be read as an enrollment (a role or status kkpush does not know): no other rule judges it.
    public static let rowUnreadable = "row-unreadable"
}

/// One audit finding about one enrollment. Never holds a whole token: ``tokenPrefix`` is
/// ``DeviceToken/redacted(_:)`` of it.
public struct FleetAuditFinding: Sendable, Hashable {
    public var code: String
    public var severity: Severity
    public var tenant: String
    public var deviceID: String
    public var hardwareIdentifier: String
    /// The token's first 12 characters and `…` (a value too short to be a token as it is), or nil when it has none.
    public var tokenPrefix: String?
    /// What was seen, naming the enrollment (`tenant/device_id`).
    public var message: String
    public var fix: String

    public init(
        code: String, severity: Severity, enrollment e: Enrollment, message: String, fix: String
    ) {
        self.code = code
        self.severity = severity
        self.tenant = e.tenantSlug
        self.deviceID = e.deviceID
        self.hardwareIdentifier = e.hardwareIdentifier
        self.tokenPrefix = e.apnsToken.map { DeviceToken.redacted($0) }
        self.message = message
        self.fix = fix
    }

    /// The finding about a row that cannot be read as an enrollment (``FleetAuditCode/rowUnreadable``).
    public init(unreadable u: UnreadableEnrollment) {
        self.code = FleetAuditCode.rowUnreadable
        self.severity = .error
        self.tenant = u.tenantSlug
        self.deviceID = u.deviceID
        self.hardwareIdentifier = u.hardwareIdentifier
        self.tokenPrefix = nil
        self.message =
            "\(u.name) (hardware \(u.hardwareIdentifier.isEmpty ? "?" : u.hardwareIdentifier)) cannot be read as an enrollment: \(u.problem); no other rule judged it."
        self.fix =
            "kkpush knows the roles manager and member and the statuses active and revoked: correct the row, or, if the backend has added this value, judge its enrollments by hand until kkpush knows it."
    }
}

/// What each audit code means, for the summary table and the README.
public enum FleetAuditCatalog {
    /// One code: its severity and a one-line meaning.
    public struct Entry: Sendable, Hashable {
        public var code: String
        public var severity: Severity
        public var meaning: String
    }

    /// Every code `kkpush audit` reports, in the order the summary lists them.
    public static let entries: [Entry] = [
        Entry(
            code: FleetAuditCode.tokenShared, severity: .error,
            meaning: "one APNs token held by active enrollments of several hardware identifiers"),
        Entry(
            code: FleetAuditCode.serverEnvOverride, severity: .error,
            meaning: "APNS_FORCE_ENV/APNS_ENV sends it to the other environment than its build"),
        Entry(
            code: FleetAuditCode.testUserProductionBuild, severity: .error,
            meaning: "a test user whose build claims production: pushed to sandbox, which rejects a production token"),
        Entry(
            code: FleetAuditCode.environmentMismatch, severity: .error,
            meaning: "the backend resolves another environment than its build's"),
        Entry(
            code: FleetAuditCode.buildEnvironmentUnknown, severity: .error,
            meaning: "build_environment outside the contract (resolves to production)"),
        Entry(
            code: FleetAuditCode.tokenUnregistered, severity: .error,
            meaning: "probed (probe): an environment answered 410 (the app is gone from the device)"),
        Entry(
            code: FleetAuditCode.tokenWrongEnvironment, severity: .error,
            meaning: "probed (probe): only the environment the backend does not send it to knows the token"),
        Entry(
            code: FleetAuditCode.tokenUnknown, severity: .error,
            meaning: "probed (probe): both environments answered BadDeviceToken (a foreign or garbage token)"),
        Entry(
            code: FleetAuditCode.tokenMissing, severity: .error, meaning: "an active enrollment without an APNs token"),
        Entry(
            code: FleetAuditCode.tokenFormat, severity: .error,
            meaning: "an active enrollment's token is not usable as stored (not hex, wrong length, spaces or < >)"),
        Entry(
            code: FleetAuditCode.tokenUppercase, severity: .warning,
            meaning: "an active enrollment's token has uppercase hex digits (accepted; sent lowercased)"),
        Entry(
            code: FleetAuditCode.rowUnreadable, severity: .error,
            meaning: "a row kkpush cannot read as an enrollment (a role or status it does not know)"),
        Entry(
            code: FleetAuditCode.probeInconclusive, severity: .warning,
            meaning: "probed (probe): no conclusive answer (a timeout, 429, 5xx); probed again on a rerun"),
        Entry(
            code: FleetAuditCode.buildEnvironmentDisagree, severity: .warning,
            meaning: "one hardware identifier's active enrollments report different build environments"),
        Entry(
            code: FleetAuditCode.tooManyTeams, severity: .warning,
            meaning: "one hardware identifier's active enrollments follow more than 5 teams"),
        Entry(
            code: FleetAuditCode.emailLookupAmbiguous, severity: .warning,
            meaning: "several rows hold one team_manager_email: a lookup by e-mail raises or misses"),
        Entry(
            code: FleetAuditCode.tokenLookupAmbiguous, severity: .warning,
            meaning: "several rows of one phone hold one APNs token: a lookup by token raises"),
        Entry(
            code: FleetAuditCode.probeBothEnvironments, severity: .warning,
            meaning: "probed (probe): both environments accept the token: the endpoints are a stand-in, not APNs"),
        Entry(
            code: FleetAuditCode.revokedWithToken, severity: .warning,
            meaning: "a revoked enrollment still holds an APNs token"),
        Entry(
            code: FleetAuditCode.buildEnvironmentTesting, severity: .warning,
            meaning: "build_environment \"testing\" (production on the server)"),
        Entry(
            code: FleetAuditCode.buildEnvironmentMissing, severity: .warning,
            meaning: "a token but no build_environment (production on the server)"),
        Entry(
            code: FleetAuditCode.buildEnvironmentNotNormalized, severity: .warning,
            meaning: "build_environment differs from a known value in case or white space"),
        Entry(
            code: FleetAuditCode.buildEnvironmentNonstandard, severity: .warning,
            meaning: "debug, release or appstore: understood by the server, not sent by the app"),
    ]

    /// The entry of `code`, if it is one of the audit's.
    public static func entry(_ code: String) -> Entry? { entries.first { $0.code == code } }

    /// Every code.
    public static var codes: [String] { entries.map(\.code) }
}
