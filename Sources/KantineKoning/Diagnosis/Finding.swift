import KKPushCore

/// One finding of `kkpush diagnose`: what was seen, why it breaks delivery, and the fix.
public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `error`: it blocks delivery; `warning`: delivery may work but something is off; `info`: context.
    public var severity: Severity
    /// A stable code (see ``DiagnosisCode``).
    public var code: String
    /// What was seen, naming the input it came from.
    public var message: String
    /// Why it breaks (or may break) delivery.
    public var why: String
    /// The fix: a command or a config change.
    public var fix: String
    /// True if a live answer (the probe) showed it; false if inferred from configuration.
    public var confirmed: Bool

    /// Creates a finding.
    public init(
        _ severity: Severity, _ code: String, message: String, why: String, fix: String, confirmed: Bool = false
    ) {
        self.severity = severity
        self.code = code
        self.message = message
        self.why = why
        self.fix = fix
        self.confirmed = confirmed
    }

    /// `error CODE: message`.
    public var description: String { "\(severity.rawValue) \(code): \(message)" }
}

/// The stable codes of ``Finding``, most likely cause first: when several errors are found, the
/// verdict is the first of them in this order (a connection that cannot be made hides everything
/// behind it; a bad credential fails every push; an environment mismatch fails this device's).
public enum DiagnosisCode {
    /// No connection, no HTTP/2, a port blocked, a proxy in the way.
    public static let connectivity = "connectivity"
    /// The device token is not a hex string of the right length (angle brackets, spaces, odd length).
    public static let tokenFormat = "token-format"
    /// No credential was given, or APNs saw none (MissingProviderToken).
    public static let credentialsMissing = "credentials-missing"
    /// The provider key or token does not verify (InvalidProviderToken), or the key cannot be loaded.
    public static let keyInvalid = "key-invalid"
    /// The key id and team id look swapped.
    public static let keyTeamSwapped = "key-team-swapped"
    /// The client certificate has expired.
    public static let certificateExpired = "certificate-expired"
    /// The client certificate is invalid (BadCertificate) or cannot be loaded.
    public static let certificateInvalid = "certificate-invalid"
    /// The client certificate is not valid for the environment pushed to.
    public static let certificateEnvironment = "certificate-environment"
    /// The provider key is restricted to the other environment.
    public static let keyEnvironment = "key-environment"
    /// The provider token's `iat` disagrees with APNs's clock.
    public static let providerTokenClockSkew = "provider-token-clock-skew"
    /// The provider token is older than one hour (not refreshed).
    public static let providerTokenExpired = "provider-token-expired"
    /// The provider token changes more often than every 20 minutes (TooManyProviderTokenUpdates).
    public static let providerTokenChurn = "provider-token-churn"
    /// The server's APNS_ENV / APNS_FORCE_ENV sends the device to the other environment.
    public static let serverEnvOverride = "server-env-override"
    /// The build_environment is not one the backend knows, so it defaults to production.
    public static let buildEnvironmentUnknown = "build-environment-unknown"
    /// The push goes to the other environment than the one the token belongs to.
    public static let environmentMismatch = "environment-mismatch"
    /// The build is signed for one environment (its provisioning profile's aps-environment) and reports the other.
    public static let signedBuildMismatch = "signed-build-mismatch"
    /// Neither environment knows the token.
    public static let tokenInvalid = "token-invalid"
    /// The enrollment has no APNs token.
    public static let tokenMissing = "token-missing"
    /// The enrollment is revoked: the backend sends it nothing.
    public static let enrollmentRevoked = "enrollment-revoked"
    /// APNs answered 410: the token is no longer registered.
    public static let tokenUnregistered = "token-unregistered"
    /// The token belongs to another app than the topic.
    public static let tokenNotForTopic = "token-not-for-topic"
    /// The certificate does not cover the topic.
    public static let certificateTopic = "certificate-topic"
    /// The topic lacks (or has the wrong) suffix for the push type.
    public static let topicSuffix = "topic-suffix"
    /// The request has no apns-push-type.
    public static let pushTypeMissing = "push-type-missing"
    /// The push type needs token-based authentication.
    public static let pushTypeAuth = "push-type-auth"
    /// The payload would be rejected.
    public static let payloadInvalid = "payload-invalid"
    /// A header value of the request APNs refuses (`InvalidPushType`, `BadPriority`, `BadExpirationDate`,
    /// `BadCollapseId`): the same pre-flight rules `kkpush send` applies.
    public static let requestInvalid = "request-invalid"
    /// APNs is throttling or unavailable (429, 5xx). Kept for compatibility: the probe now reports
    /// ``probeInconclusiveAPNs``.
    public static let apnsUnavailable = "apns-unavailable"
    /// The probe got no answer (a timeout, a refused or dropped connection): the path could not be checked.
    public static let probeInconclusiveNetwork = "probe-inconclusive-network"
    /// APNs answered 429 or 5xx to the probe: the path could not be checked.
    public static let probeInconclusiveAPNs = "probe-inconclusive-apns"
    /// The codes that say the probe could not check the path (a verdict without evidence either way).
    public static let inconclusive: Set<String> = [probeInconclusiveNetwork, probeInconclusiveAPNs]

    /// Every code, most likely cause first.
    public static let ranking: [String] = [
        connectivity, probeInconclusiveNetwork, probeInconclusiveAPNs, tokenFormat, credentialsMissing, keyInvalid,
        keyTeamSwapped, certificateExpired,
        certificateInvalid, certificateEnvironment, keyEnvironment, providerTokenClockSkew, providerTokenExpired,
        providerTokenChurn, serverEnvOverride, signedBuildMismatch, buildEnvironmentUnknown, environmentMismatch,
        tokenInvalid,
        tokenMissing, enrollmentRevoked, tokenUnregistered, tokenNotForTopic, certificateTopic, topicSuffix,
        pushTypeMissing, pushTypeAuth, requestInvalid, payloadInvalid, apnsUnavailable,
    ]

    /// The position of `code` in ``ranking`` (unknown codes last).
    public static func rank(of code: String) -> Int { ranking.firstIndex(of: code) ?? ranking.count }
}

/// The result of a diagnosis: the verdict (the most likely cause), then every finding.
public struct Diagnosis: Sendable, Hashable, Codable {
    /// The most likely cause: the highest-ranked error (``DiagnosisCode/ranking``), or that the probe could
    /// not check the path. Nil when nothing found blocks delivery.
    public var verdict: Finding?
    /// Every finding: errors first (by rank), then warnings, then info.
    public var findings: [Finding]
    /// The environment the push goes to, as far as the inputs tell.
    public var pushEnvironment: APNsEnvironment?
    /// The environment the device token belongs to, as far as the inputs tell.
    public var tokenEnvironment: APNsEnvironment?

    /// Orders findings and picks the verdict.
    public init(findings: [Finding], pushEnvironment: APNsEnvironment?, tokenEnvironment: APNsEnvironment?) {
        var unique: [Finding] = []
        for f in findings where !unique.contains(where: { $0.code == f.code && $0.message == f.message }) {
            unique.append(f)
        }
        let sorted = unique.enumerated().sorted { a, b in
            if a.element.severity != b.element.severity { return a.element.severity > b.element.severity }
            let ra = DiagnosisCode.rank(of: a.element.code)
            let rb = DiagnosisCode.rank(of: b.element.code)
            if ra != rb { return ra < rb }
            return a.offset < b.offset
        }.map(\.element)
        self.findings = sorted
        self.verdict = sorted.first { $0.severity == .error }
        self.pushEnvironment = pushEnvironment
        self.tokenEnvironment = tokenEnvironment
    }

    /// True if the verdict is that the probe could not check the path (``DiagnosisCode/inconclusive``):
    /// nothing is known to block delivery, and nothing is known not to.
    public var inconclusive: Bool { verdict.map { DiagnosisCode.inconclusive.contains($0.code) } ?? false }

    /// True if any finding (other than an inconclusive probe) blocks delivery.
    public var blocksDelivery: Bool {
        findings.contains { $0.severity == .error && !DiagnosisCode.inconclusive.contains($0.code) }
    }

    /// True if kkpush cannot say delivery works: something blocks it, or the probe could not check the path.
    public var hasVerdict: Bool { verdict != nil }
}
