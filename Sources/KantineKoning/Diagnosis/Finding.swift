public import KKPushCore

/// One finding of a diagnosis or a fleet audit: what was seen (with where it came from), why it breaks delivery,
/// and the fix; its code ranks it for the verdict.
///
/// Three types say that something is wrong, each for one purpose: ``KKPushError`` is *thrown* when an operation
/// cannot go on (an input unusable, a server unreachable); `Problem` is a *rule's result* about one request or
/// payload, which the operation reports and goes on (the client's pre-flight, the mock's checks, `payload lint`);
/// `Finding` is a *diagnosis's conclusion* about delivery, drawn from evidence, several of which make a verdict.
public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `error`: it blocks delivery; `warning`: delivery may work but something is off; `info`: context.
    public var severity: Severity
    /// A stable code (see ``DiagnosisCode``).
    public var code: DiagnosisCode
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
        _ severity: Severity, _ code: DiagnosisCode, message: String, why: String, fix: String, confirmed: Bool = false
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

/// The stable codes of ``Finding``. When several errors are found, the verdict is the root cause: the first of
/// them in ``precedence``, where every code comes before the ones its fix makes irrelevant or that follow from it.
///
/// Typed as ``Problem/Code`` is, for the same reason: each code is a static member below, and the type is not
/// `ExpressibleByStringLiteral`, so a misspelt code is a compile error; it prints and encodes as its string alone.
public struct DiagnosisCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The code as printed and in JSON.
    public let rawValue: String
    /// A code from its string: a code read back (a diagnosis's JSON), or a declaration below.
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }
    /// The code of a finding that reports a rule's ``Problem`` as it is: the problem's code, unchanged (the
    /// diagnosis passes on what the request, token, build and environment rules say, in their words).
    public init(_ problem: Problem.Code) { self.rawValue = problem.rawValue }

    /// No connection, no HTTP/2, a port blocked, a proxy in the way.
    public static let connectivity = Self(rawValue: "connectivity")
    /// The APNs host's certificate chain does not end in a root the sender's trust store holds (since 2025: USERTrust
    /// RSA Certification Authority), or lacks an intermediate: the TLS handshake fails.
    public static let serverTrust = Self(rawValue: "server-trust")
    /// The device token is not a hex string of the right length (angle brackets, spaces, odd length).
    public static let tokenFormat = Self(rawValue: "token-format")
    /// No credential was given, or APNs saw none (MissingProviderToken).
    public static let credentialsMissing = Self(rawValue: "credentials-missing")
    /// The provider key or token does not verify (InvalidProviderToken), or the key cannot be loaded, or the
    /// key id or team id is not of Apple's form (or both are the same value).
    public static let keyInvalid = Self(rawValue: "key-invalid")
    /// The key id does not belong to the key: it is not the id in the key file's name (`AuthKey_<KEYID>.p8`),
    /// or a provider token's kid is not the key's id. APNs looks the key up by key id: InvalidProviderToken.
    public static let keyIDMismatch = Self(rawValue: "key-id-mismatch")
    /// The key id and the team id were given the other way round: the team id is the key file's key id
    /// (`AuthKey_<KEYID>.p8`) and the key id is something else (the team id); in a provider token, kid is the
    /// team id and iss the key id.
    public static let keyTeamSwapped = Self(rawValue: "key-team-swapped")
    /// The client certificate has expired.
    public static let certificateExpired = Self(rawValue: "certificate-expired")
    /// The client certificate is invalid (BadCertificate) or cannot be loaded.
    public static let certificateInvalid = Self(rawValue: "certificate-invalid")
    /// The client certificate is not valid for the environment pushed to.
    public static let certificateEnvironment = Self(rawValue: "certificate-environment")
    /// The provider key is restricted to the other environment.
    public static let keyEnvironment = Self(rawValue: "key-environment")
    /// The provider key is a topic-specific key for other topics than the one pushed to.
    public static let keyTopic = Self(rawValue: "key-topic")
    /// APNs refused a token of a second team on a connection that carried another team's (InvalidProviderToken while
    /// the sender uses keys of several teams).
    public static let teamsOnOneConnection = Self(rawValue: "teams-on-one-connection")
    /// The provider token's `iat` disagrees with APNs's clock.
    public static let providerTokenClockSkew = Self(rawValue: "provider-token-clock-skew")
    /// The provider token is older than one hour (not refreshed).
    public static let providerTokenExpired = Self(rawValue: "provider-token-expired")
    /// The provider token changes more often than every 20 minutes (TooManyProviderTokenUpdates).
    public static let providerTokenChurn = Self(rawValue: "provider-token-churn")
    /// The server's APNS_ENV / APNS_FORCE_ENV sends the device to the other environment.
    public static let serverEnvOverride = Self(rawValue: "server-env-override")
    /// The build_environment is not one the backend knows, so it defaults to production.
    public static let buildEnvironmentUnknown = Self(rawValue: "build-environment-unknown")
    /// The push goes to the other environment than the one the token belongs to.
    public static let environmentMismatch = Self(rawValue: "environment-mismatch")
    /// The build is signed for one environment (its provisioning profile's aps-environment) and reports the other.
    public static let signedBuildMismatch = Self(rawValue: "signed-build-mismatch")
    /// Neither environment knows the token.
    public static let tokenInvalid = Self(rawValue: "token-invalid")
    /// The enrollment has no APNs token.
    public static let tokenMissing = Self(rawValue: "token-missing")
    /// The signed build given is another app's: its bundle id is not the topic's.
    public static let buildOtherApp = Self(rawValue: "build-other-app")
    /// The signed build has no aps-environment: the app cannot register for remote notifications, no token exists.
    public static let buildAPSMissing = Self(rawValue: "build-aps-missing")
    /// The enrollment is revoked: the backend sends it nothing.
    public static let enrollmentRevoked = Self(rawValue: "enrollment-revoked")
    /// APNs answered 410: the token is no longer registered.
    public static let tokenUnregistered = Self(rawValue: "token-unregistered")
    /// The token belongs to another app than the topic.
    public static let tokenNotForTopic = Self(rawValue: "token-not-for-topic")
    /// The certificate does not cover the topic.
    public static let certificateTopic = Self(rawValue: "certificate-topic")
    /// The topic lacks (or has the wrong) suffix for the push type.
    public static let topicSuffix = Self(rawValue: "topic-suffix")
    /// The request has no apns-push-type.
    public static let pushTypeMissing = Self(rawValue: "push-type-missing")
    /// The push type needs token-based authentication.
    public static let pushTypeAuth = Self(rawValue: "push-type-auth")
    /// The payload would be rejected.
    public static let payloadInvalid = Self(rawValue: "payload-invalid")
    /// A header value of the request APNs refuses (`InvalidPushType`, `BadPriority`, `BadExpirationDate`,
    /// `BadCollapseId`): the same pre-flight rules `kkpush send` applies.
    public static let requestInvalid = Self(rawValue: "request-invalid")
    /// A broadcast to a suffixed bundle id (`.push-type.liveactivity`): `400 TopicDisallowed`.
    public static let channelTopicSuffixed = Self(rawValue: "channel-topic-suffixed")
    /// A channel id that is not base64: `400 BadChannelId`.
    public static let channelIDInvalid = Self(rawValue: "channel-id-invalid")
    /// The channel exists in neither environment (deleted, or another app's): `400 ChannelNotRegistered`.
    public static let channelNotRegistered = Self(rawValue: "channel-not-registered")
    /// The channel exists in the other environment than the one broadcast to: `400 ChannelNotRegistered`.
    public static let channelOtherEnvironment = Self(rawValue: "channel-other-environment")
    /// A nonzero `apns-expiration` on a channel with storage policy 0: `400 BadExpirationDate`.
    public static let channelExpirationNoStorage = Self(rawValue: "channel-expiration-no-storage")
    /// The channel-management host refused the read for another reason (the credential, the app).
    public static let channelRejected = Self(rawValue: "channel-rejected")
    /// APNs is throttling or unavailable (429, 5xx). Kept for compatibility: the probe now reports
    /// ``probeInconclusiveAPNs``.
    public static let apnsUnavailable = Self(rawValue: "apns-unavailable")
    /// The probe got no answer (a timeout, a refused or dropped connection): the path could not be checked.
    public static let probeInconclusiveNetwork = Self(rawValue: "probe-inconclusive-network")
    /// APNs answered 429 or 5xx to the probe: the path could not be checked.
    public static let probeInconclusiveAPNs = Self(rawValue: "probe-inconclusive-apns")
    /// The probe's push was accepted (200): the path works as far as APNs is concerned (info).
    public static let probeAccepted = Self(rawValue: "probe-accepted")
    /// The probe's request was rejected for a reason that does not say where the token belongs (a warning).
    public static let probeRejected = Self(rawValue: "probe-rejected")
    /// Both environments accepted the token (a stand-in that accepts unknown tokens): the probe cannot tell which
    /// environment it belongs to (info).
    public static let probeInconclusive = Self(rawValue: "probe-inconclusive")
    /// The build given is an entitlements file: what the project requests, not what a build was signed with.
    public static let buildEntitlementsRequest = Self(rawValue: "build-entitlements-request")
    /// The entitlements file requests no aps-environment.
    public static let buildAPSNotRequested = Self(rawValue: "build-aps-not-requested")
    /// The client certificate expires soon.
    public static let certificateExpiring = Self(rawValue: "certificate-expiring")
    /// The provider token's `iat` is not of the form APNs expects.
    public static let providerTokenIATFormat = Self(rawValue: "provider-token-iat-format")
    /// The signed build given is signed for another environment than the one APNs knows the token in: another build
    /// made the token (a warning).
    public static let signedBuildNotThisToken = Self(rawValue: "signed-build-not-this-token")
    /// The codes that say the probe could not check the path (a verdict without evidence either way).
    public static let inconclusive: Set<DiagnosisCode> = [probeInconclusiveNetwork, probeInconclusiveAPNs]

    /// The precedence of root causes: when several errors are found, the verdict is the one listed first, with
    /// why it comes before the codes after it. The order follows the push's path (this machine, whether the
    /// backend sends at all, the credential, the token, where the push is routed, the request), and within it
    /// every code comes before the ones that follow from it or that its fix makes irrelevant.
    public static let precedence: [(code: DiagnosisCode, reason: String)] = [
        (
            serverTrust,
            "The TLS handshake fails because this machine does not trust the chain APNs serves: the cause of the connectivity failure, named by the root to install."
        ),
        (connectivity, "No request reaches APNs from here: nothing behind it can be tried."),
        (
            probeInconclusiveNetwork,
            "The probe got no answer: what the rest says comes from the configuration only, unconfirmed."
        ),
        (probeInconclusiveAPNs, "APNs answered 429 or 5xx to the probe: as above, the path is unchecked."),
        (
            enrollmentRevoked,
            "The backend sends a revoked enrollment nothing: its token, routing and request never come into play. Re-enrolling also brings a current token."
        ),
        (
            buildOtherApp,
            "The build given is another app's: nothing it is signed for says anything about this app's tokens, so it is set aside until the right build is given."
        ),
        (
            buildAPSMissing,
            "The build is signed without aps-environment: the app cannot register for remote notifications, so no token ever exists to route or push to."
        ),
        (tokenMissing, "No token: there is nowhere to push, whatever the credential or routing."),
        (tokenFormat, "The token is not a token: APNs answers BadDeviceToken in every environment."),
        (credentialsMissing, "No credential reached APNs: every push is rejected before anything else is judged."),
        (
            pushTypeAuth,
            "The push type needs token authentication: no certificate can send it, so the certificate's own problems (loading, expiry, environment, topics) and its topic rules do not matter; a .p8 key does."
        ),
        (
            keyInvalid,
            "A key that cannot be loaded (or ids not of Apple's form, or a key APNs cannot verify) signs no valid token: everything that needs the key comes after it."
        ),
        (
            keyIDMismatch,
            "The key id is not the key's: APNs looks the key up by it, so every token fails (InvalidProviderToken) until the key id and the key file belong together."
        ),
        (
            keyTeamSwapped,
            "Key id and team id given the other way round: every token fails (InvalidProviderToken) until they are swapped back."
        ),
        (
            teamsOnOneConnection,
            "Tokens of several teams on one connection: every token after the first team's fails (InvalidProviderToken) until each team has connections of its own."
        ),
        (
            certificateExpired,
            "An expired certificate fails every push; its replacement can be made right in every other respect."
        ),
        (certificateInvalid, "A certificate APNs does not accept (or that cannot be loaded) fails every push."),
        (
            providerTokenClockSkew,
            "A clock that is off makes every token look expired or from the future: the cause of the expiry."
        ),
        (providerTokenExpired, "A token older than an hour is rejected, whatever it is sent for."),
        (providerTokenChurn, "Tokens changed too often are throttled (TooManyProviderTokenUpdates)."),
        (
            channelTopicSuffixed,
            "A broadcast to a suffixed bundle id is refused (TopicDisallowed) before its channel is looked at: the channel's own state cannot be judged until the plain bundle id is used."
        ),
        (channelIDInvalid, "An id that is not base64 names no channel: nothing about the channel can matter."),
        (
            channelRejected,
            "The channel-management host refused the credential or the app: nothing else about the channel is known."
        ),
        (
            channelOtherEnvironment,
            "The channel lives in the other environment: broadcasting there (or creating it here) comes before anything the channel's policy says."
        ),
        (
            channelNotRegistered,
            "No environment has the channel: it must be created (and the devices subscribed) before any broadcast."
        ),
        (
            channelExpirationNoStorage,
            "The channel exists where the broadcast goes, but keeps no messages: a nonzero expiration is refused."
        ),
        (
            tokenInvalid,
            "Neither environment knows the token: routing the push elsewhere cannot help; what the configuration says about the token's environment is contradicted."
        ),
        (tokenUnregistered, "The token is no longer registered (410): no routing or request makes it deliverable."),
        (serverEnvOverride, "The server sends every push to one environment: the routing cause, fixed on the server."),
        (
            signedBuildMismatch,
            "The build reports the other environment than it is signed for: the routing cause, fixed in the app."
        ),
        (buildEnvironmentUnknown, "A build_environment the backend does not know routes to production by default."),
        (environmentMismatch, "The push goes to the other environment than the token's."),
        (
            certificateEnvironment,
            "After routing: when both are found, the certificate is good for the token's environment, so routing the push there fixes this too."
        ),
        (keyEnvironment, "After routing, for the same reason: the key is enabled for the token's environment."),
        (
            tokenNotForTopic,
            "The token is another app's: pushing with that app's topic also settles whether the certificate covers it."
        ),
        (certificateTopic, "The certificate does not cover the topic."),
        (keyTopic, "The topic-specific key does not cover the topic."),
        (topicSuffix, "The topic lacks the push type's suffix."),
        (pushTypeMissing, "No apns-push-type."),
        (requestInvalid, "A header value APNs refuses."),
        (payloadInvalid, "A payload APNs refuses."),
        (
            expirationZeroOffline,
            "After APNs accepts it: apns-expiration 0 to an offline device is never stored, so nothing the device would do matters."
        ),
        (pushExpired, "APNs discarded it when its expiration passed: it never reached the device."),
        (
            replacedWhileOffline,
            "APNs kept only the newest push for the offline device: this one never reached it."
        ),
        (
            appForceQuit,
            "The device does not launch a force-quit app: budget and content-available do not come into play."
        ),
        (
            backgroundNoContentAvailable,
            "Without content-available nothing wakes the app: the background budget never counts it."
        ),
        (backgroundBudget, "The device throttled a background push over its budget."),
        (
            alertNoBackgroundRefresh,
            "An alert in the background runs no app code until opened: what the app expected to refresh did not run."
        ),
        (
            collapseIDReplaced,
            "Delivered and shown, then replaced on the device by a newer notification with its collapse id."
        ),
        (
            receiptDropped,
            "The app's own receipt: it received the push and its handler dropped it; last, as the app's decision."
        ),
        (apnsUnavailable, "APNs throttling or unavailable (kept for compatibility; a warning)."),
    ]

    /// Every code in ``precedence`` order, root cause first.
    public static let ranking: [DiagnosisCode] = precedence.map(\.code)

    /// The position of `code` in ``ranking`` (unknown codes last).
    public static func rank(of code: DiagnosisCode) -> Int { ranking.firstIndex(of: code) ?? ranking.count }

    /// The root cause among `findings`: the error-level finding whose code comes first in ``precedence``
    /// (unknown codes last, then the order found). Its code, message, why and fix are one finding's: the verdict
    /// never mixes the why of one cause with the fix of another.
    public static func rootCause(of findings: [Finding]) -> Finding? {
        findings.enumerated().filter { $0.element.severity == .error }
            .min { a, b in
                let ra = rank(of: a.element.code)
                let rb = rank(of: b.element.code)
                return ra != rb ? ra < rb : a.offset < b.offset
            }?.element
    }
}

/// The result of a diagnosis: the verdict (the most likely cause), then every finding.
public struct Diagnosis: Sendable, Hashable, Codable {
    /// The root cause: the error that comes first in ``DiagnosisCode/precedence`` (``DiagnosisCode/rootCause(of:)``),
    /// or that the probe could not check the path. Nil when nothing found blocks delivery.
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
        self.verdict = DiagnosisCode.rootCause(of: sorted)
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
