public import Foundation
public import KKPushCore

/// Everything `kkpush diagnose` was told or found out, as plain values. Any part may be missing:
/// the rules use what is there and say nothing about what is not.
public struct DiagnosisFacts: Sendable {
    /// Where a value came from, for messages ("the enrollment record", "the command line").
    public enum Source: String, Sendable {
        case enrollment = "the enrollment record"
        case tokenUpdate = "the token-update body"
        case flag = "the command line"
    }

    /// A device token as given, and where it came from.
    public struct GivenToken: Sendable {
        public var value: String
        public var source: Source
        public init(value: String, source: Source) {
            self.value = value
            self.source = source
        }
    }

    /// The provider key (token-based authentication).
    public struct Key: Sendable {
        /// The key id given (`--key-id`).
        public var keyID: String
        /// The team id given (`--team-id`).
        public var teamID: String
        /// The key file's path, if a file was given.
        public var file: String?
        /// Why the key could not be loaded, if it could not.
        public var loadError: String?
        /// Problems found by a key/team swap check (KKPushAuth's `KeyTeamSwapCheck`). The rules judge the ids
        /// against the key file's name (`AuthKey_<KEYID>.p8`) themselves; these codes count only when the name does
        /// not tell: `key-team-swapped`, `key-id-mismatch` (format codes are judged from the ids).
        public var swapProblems: [Problem]
        /// The only environment the key is enabled for, if it is restricted (Apple's newer keys).
        public var environmentRestriction: APNsEnvironment?
        /// The bundle ids a topic-specific key may serve (a bundle id covers its suffixed topics); empty: any.
        public var topics: [String] = []
        public init(
            keyID: String, teamID: String, file: String? = nil, loadError: String? = nil,
            swapProblems: [Problem] = [], environmentRestriction: APNsEnvironment? = nil
        ) {
            self.keyID = keyID
            self.teamID = teamID
            self.file = file
            self.loadError = loadError
            self.swapProblems = swapProblems
            self.environmentRestriction = environmentRestriction
        }
    }

    /// A client certificate (certificate-based authentication).
    public struct Certificate: Sendable {
        public var file: String
        public var loadError: String?
        public var bundleID: String?
        public var topics: [String]
        public var environments: [APNsEnvironment]
        public var notAfter: Date?
        public init(
            file: String, loadError: String? = nil, bundleID: String? = nil, topics: [String] = [],
            environments: [APNsEnvironment] = [], notAfter: Date? = nil
        ) {
            self.file = file
            self.loadError = loadError
            self.bundleID = bundleID
            self.topics = topics
            self.environments = environments
            self.notAfter = notAfter
        }
    }

    /// A provider token captured from the sender (`--provider-token`), decoded.
    public struct ProviderTokenSeen: Sendable {
        public var kid: String?
        public var iss: String?
        /// `iat` when it is an integer.
        public var issuedAt: Date?
        /// True if `iat` is present but not an integer (a string, a float).
        public var iatNotInteger: Bool
        /// Why it could not be decoded, or its signature did not verify against the given key.
        public var invalidReason: String?
        public init(
            kid: String?, iss: String?, issuedAt: Date?, iatNotInteger: Bool = false, invalidReason: String? = nil
        ) {
            self.kid = kid
            self.iss = iss
            self.issuedAt = issuedAt
            self.iatNotInteger = iatNotInteger
            self.invalidReason = invalidReason
        }
    }

    /// What one environment's channel-management host answered when the channel was read.
    public enum ChannelAnswer: Sendable, Equatable {
        /// 200: the channel exists there, with this `message-storage-policy`.
        case exists(storagePolicy: Int)
        /// An APNs error (`400 ChannelNotRegistered` when the channel is not there).
        case rejected(status: Int, reason: APNsReason)
        /// No answer.
        case failed(message: String)
    }

    /// The broadcast channel the sender broadcasts to (`diagnose --channel`), and, with `--probe`, what each
    /// environment's channel-management host said of it.
    public struct Channel: Sendable {
        /// The channel id as given.
        public var id: String
        /// The channel read in each environment, if `--probe` did.
        public var sandbox: ChannelAnswer?
        public var production: ChannelAnswer?
        public init(id: String, sandbox: ChannelAnswer? = nil, production: ChannelAnswer? = nil) {
            self.id = id
            self.sandbox = sandbox
            self.production = production
        }
        /// The answer from `environment`, if it was asked.
        public func answer(_ environment: APNsEnvironment) -> ChannelAnswer? {
            environment == .sandbox ? sandbox : production
        }
    }

    /// What one environment answered to the probe.
    public enum ProbeAnswer: Sendable, Equatable {
        /// 200: the token is known there (the probe payload was delivered).
        case accepted
        /// An APNs error: status, reason, and for 410 the timestamp.
        case rejected(status: Int, reason: APNsReason, timestamp: Date?)
        /// No answer: the failure kind (`timeout`, `connection`, `tls`, `protocol`, `http1`, ...) and message.
        case failed(kind: String, message: String)
    }

    /// What the server trust check found for an endpoint whose probe failed in TLS: whether the trust store the
    /// sender uses accepts the chain served, and, when not, the certificate missing and the fix.
    public struct ServerTrust: Sendable, Equatable {
        /// The trust store checked against, in words ("the system CA bundle /etc/ssl/certs/ca-certificates.crt").
        public var trustStore: String
        /// True when the trust store accepts the chain (then the TLS failure has another cause).
        public var trusted: Bool
        /// Why not, in OpenSSL's words or the check's.
        public var problem: String?
        /// The common name (or subject) of the certificate the chain needs and the store lacks.
        public var missingCertificate: String?
        /// Whether that certificate is the root (else an intermediate the server did not send).
        public var missingIsRoot: Bool
        /// What to install or change.
        public var fix: String?
        /// The check itself could not connect (its message); the other fields are then empty.
        public var checkFailed: String?
        public init(
            trustStore: String, trusted: Bool, problem: String? = nil, missingCertificate: String? = nil,
            missingIsRoot: Bool = false, fix: String? = nil, checkFailed: String? = nil
        ) {
            self.trustStore = trustStore
            self.trusted = trusted
            self.problem = problem
            self.missingCertificate = missingCertificate
            self.missingIsRoot = missingIsRoot
            self.fix = fix
            self.checkFailed = checkFailed
        }
    }

    /// The probe: the same least-intrusive request to both environments.
    public struct Probe: Sendable {
        public var sandbox: ProbeAnswer
        public var production: ProbeAnswer
        /// The endpoints probed, for messages.
        public var sandboxEndpoint: String
        public var productionEndpoint: String
        /// True if the provider token used was signed just now by kkpush (so an
        /// ExpiredProviderToken answer means the clocks disagree).
        public var usedFreshProviderToken: Bool
        /// The server trust check of each environment whose probe failed in TLS (nil: not checked).
        public var sandboxTrust: ServerTrust?
        public var productionTrust: ServerTrust?
        public init(
            sandbox: ProbeAnswer, production: ProbeAnswer, sandboxEndpoint: String, productionEndpoint: String,
            usedFreshProviderToken: Bool, sandboxTrust: ServerTrust? = nil, productionTrust: ServerTrust? = nil
        ) {
            self.sandbox = sandbox
            self.production = production
            self.sandboxEndpoint = sandboxEndpoint
            self.productionEndpoint = productionEndpoint
            self.usedFreshProviderToken = usedFreshProviderToken
            self.sandboxTrust = sandboxTrust
            self.productionTrust = productionTrust
        }
        /// The server trust check of `environment`, if it was made.
        public func trust(_ environment: APNsEnvironment) -> ServerTrust? {
            environment == .sandbox ? sandboxTrust : productionTrust
        }
        /// The answer from `environment`.
        public func answer(_ environment: APNsEnvironment) -> ProbeAnswer {
            environment == .sandbox ? sandbox : production
        }
        /// The endpoint of `environment`.
        public func endpoint(_ environment: APNsEnvironment) -> String {
            environment == .sandbox ? sandboxEndpoint : productionEndpoint
        }
    }

    /// What the build on the phone is signed for: read from the signed build itself (`diagnose --build PATH`), or
    /// told (`--distribution NAME`). Apple sets `aps-environment` from the provisioning profile, so this is evidence
    /// about the token that no report of the app's can contradict.
    public struct SignedBuild: Sendable {
        /// The entitlement's value: `development` or `production`; nil when the build is signed without it (the
        /// app cannot register for remote notifications).
        public var apsEnvironment: String?
        /// The distribution, where known.
        public var distribution: AppDistribution?
        /// Where it came from, for messages: "--build dist/App.ipa (the executable's code signature (DER entitlements))".
        public var source: String
        /// What is wrong with the build itself (an expired profile, a tampered one), as `build inspect` says.
        public var problems: [Problem]
        /// How to name the build in messages: "a TestFlight build (App Store Connect profile)"; from a profile, which
        /// cannot tell TestFlight from the App Store, "an App Store Connect build (TestFlight or the App Store)".
        public var label: String
        /// The build's bundle id: its application-identifier without the team prefix (a wildcard ends in `*`), nil
        /// when the build does not tell.
        public var bundleID: String?
        /// True for an entitlements file (`.entitlements`, `.xcent`): what the project requests, not what a build
        /// was signed with (Xcode replaces aps-environment from the profile). Never evidence of a token.
        public var isRequest: Bool
        public init(
            apsEnvironment: String?, distribution: AppDistribution?, source: String, problems: [Problem] = [],
            label: String? = nil, bundleID: String? = nil, isRequest: Bool = false
        ) {
            self.apsEnvironment = apsEnvironment
            self.distribution = distribution
            self.source = source
            self.problems = problems
            self.label =
                label ?? distribution.map { "a \($0.title) build (\($0.profileKind) profile)" } ?? "this build"
            self.bundleID = bundleID
            self.isRequest = isRequest
        }
        /// The environment whose tokens the build gets.
        public var tokenEnvironment: APNsEnvironment? {
            apsEnvironment.flatMap(EnvironmentResolver.signedEnvironment(for:))
        }
    }

    /// The signed build, if `--build` or `--distribution` was given.
    public var signedBuild: SignedBuild?

    /// The enrollment record, if one was given or looked up.
    public var enrollment: Enrollment?
    /// The captured token-update body, if given.
    public var tokenUpdate: TokenUpdate?
    /// Problems `kkpush token verify` found in the token-update body.
    public var tokenUpdateProblems: [Problem] = []
    /// The server's APNs settings.
    public var settings = ServerAPNsSettings()
    /// A build_environment given by the caller (wins over the enrollment's and the body's).
    public var buildEnvironmentGiven: String?
    /// Whether the caller says the enrollment is a test user (ORed with the enrollment's is_test_user).
    public var testUserGiven = false
    /// An environment the sender is known to push to, if given (`--env`); otherwise the backend's rules decide.
    public var sendEnvironment: APNsEnvironment?
    /// A device token the caller gives.
    public var deviceTokenGiven: String?
    /// The topic (`apns-topic`) the sender uses.
    public var topic: String?
    /// The push type the sender uses; `""` means it sends none.
    public var pushType: String?
    /// The priority the sender uses.
    public var priority: Int?
    /// The apns-expiration the sender uses.
    public var expiration: Int?
    /// The apns-collapse-id the sender uses.
    public var collapseID: String?
    /// The payload the sender uses, if given.
    public var payload: [UInt8]?
    /// The app's `ActivityAttributes` (its fields and their types), if given: a Live Activity payload is judged
    /// against it, as ActivityKit on the device decodes it.
    public var activityAttributes: ActivityAttributesDescription?
    /// The provider key.
    public var key: Key?
    /// The client certificate.
    public var certificate: Certificate?
    /// A provider token the sender used.
    public var providerToken: ProviderTokenSeen?
    /// The teams whose keys the sender uses (from its credentials), when it uses several.
    public var teamsInUse: [String] = []
    /// The reason APNs gave a push the sender made with these credentials, if one was given.
    public var sendAnswer: String?
    /// How often the sender makes a new provider token, if given.
    public var providerTokenRefreshInterval: TimeInterval?
    /// False if the libcurl kkpush runs on has no HTTP/2.
    public var localHTTP2 = true
    /// What is known of the device when the push was sent (its app's state, whether it was offline, how many
    /// background pushes it gets an hour), if told: the after-APNs rules (``Diagnoser``'s rule 7) judge it.
    public var deviceSide: DeviceSide?
    /// The push's delivery record from the mock APNs server's delivery log, if given.
    public var delivery: DeliveryRecord?
    /// The app's push receipts (the backend's), if given: the push's own, matched by apns-id or `kk_push_id`.
    public var receipts: ReceiptEvidence?
    /// The probe's answers, if `--probe` was given.
    public var probe: Probe?
    /// The broadcast channel, when the push diagnosed is a broadcast (`--channel`).
    public var channel: Channel?
    /// The time to judge ages against.
    public var now: Date

    /// Creates empty facts judged at `now`.
    public init(now: Date) { self.now = now }

    /// The device token to judge and where it came from: the flag, else the token update's, else the enrollment's.
    public var deviceToken: GivenToken? {
        if let t = deviceTokenGiven { return GivenToken(value: t, source: .flag) }
        if let t = tokenUpdate?.token { return GivenToken(value: t, source: .tokenUpdate) }
        if let t = enrollment?.apnsToken { return GivenToken(value: t, source: .enrollment) }
        return nil
    }

    /// The build_environment to judge: the flag, else the token update's, else the enrollment's.
    public var buildEnvironment: String? {
        buildEnvironmentGiven ?? tokenUpdate?.buildEnvironment ?? enrollment?.buildEnvironment
    }

    /// The aps_environment the backend routes by (what the app is signed for): the token update's when one is
    /// given (an update without it leaves the enrollment's empty), else the enrollment's.
    public var apsEnvironment: String? {
        if let tokenUpdate { return tokenUpdate.apsEnvironment }
        return enrollment?.apsEnvironment
    }

    /// Whether the backend treats the device as a test user.
    public var isTestUser: Bool { testUserGiven || (enrollment?.isTestUser ?? false) }

    /// True if anything tells where the push goes (a build_environment, settings or `--env`).
    public var knowsRouting: Bool {
        sendEnvironment != nil || buildEnvironment != nil || enrollment != nil || tokenUpdate != nil
            || settings.forceEnv != nil || settings.legacyAPNSEnv != nil || testUserGiven
    }
}
