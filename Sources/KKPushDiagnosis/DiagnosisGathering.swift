package import Foundation
import KKPushAuth
package import KKPushClient
package import KKPushCore
import KKPushSystem
package import KantineKoning

/// What a diagnosis is asked about, as plain values: what the caller was told (an enrollment, the request the sender
/// makes, the server's settings), the inputs already read (a token-update body, a payload file, a provider token, the
/// signed build) and where the credentials are. ``DiagnosisGathering/gather(_:)`` turns it into ``DiagnosisFacts``.
///
/// Secrets and defaults (the environment's `APNS_KEY_ID`, a password file) are resolved by the caller: the request
/// holds their values, never where a command line would look for them.
package struct DiagnosisRequest: Sendable {
    /// A file the gathering reads, and the name of the input that gave it (as ``InputFile`` names it in messages).
    package struct InputPath: Sendable, Hashable {
        package var path: String
        package var label: String
        package init(path: String, label: String) {
            self.path = path
            self.label = label
        }
    }

    /// The provider key: its file (or PEM text), and its ids. Give it when any of the three is known: a key without
    /// both ids is ``DiagnosisGathering/Refusal/keyIncomplete``.
    package struct Key: Sendable {
        /// The `.p8` file, when the key is a file.
        package var file: InputPath?
        /// The key's PEM text, when it is not a file.
        package var pem: String?
        /// Where the key came from, in words, when it is not a file (the key's `file` in the facts).
        package var origin: String?
        package var keyID: String?
        package var teamID: String?
        package init(
            file: InputPath? = nil, pem: String? = nil, origin: String? = nil, keyID: String?, teamID: String?
        ) {
            self.file = file
            self.pem = pem
            self.origin = origin
            self.keyID = keyID
            self.teamID = teamID
        }
        /// Whether a key itself (not only ids) is given.
        var hasKey: Bool { file != nil || pem != nil }
    }

    /// A credentials file: its teams are the ones the sender uses, and `credential` names the entry judged.
    package struct Credentials: Sendable {
        package var path: String
        package var credential: String?
        /// The reason APNs gave a push made with these credentials.
        package var sendAnswer: String?
        package init(path: String, credential: String? = nil, sendAnswer: String? = nil) {
            self.path = path
            self.credential = credential
            self.sendAnswer = sendAnswer
        }
    }

    /// A client certificate: a `.p12`, or a PEM certificate with its key.
    package struct Certificate: Sendable {
        package var file: InputPath
        package var key: InputPath?
        package var password: String?
        /// Where the password is given, for the fix of a wrong or missing one.
        package var passwordHint: String
        package init(file: InputPath, key: InputPath? = nil, password: String? = nil, passwordHint: String) {
            self.file = file
            self.key = key
            self.password = password
            self.passwordHint = passwordHint
        }
    }

    /// Where the probe asks (both environments), and how long it waits.
    package struct Probe: Sendable {
        package var sandbox: APNsEndpoint
        package var production: APNsEndpoint
        /// The channel-management endpoints a broadcast channel is read at.
        package var sandboxChannels: APNsEndpoint
        package var productionChannels: APNsEndpoint
        /// The CA file of a stand-in, read before anything is sent (an unreadable one is an input error).
        package var caFile: InputPath?
        package var proxy: String?
        package var timeout: Duration
        package init(
            sandbox: APNsEndpoint, production: APNsEndpoint,
            sandboxChannels: APNsEndpoint = .channelManagement(.sandbox),
            productionChannels: APNsEndpoint = .channelManagement(.production), caFile: InputPath? = nil,
            proxy: String? = nil, timeout: Duration = .seconds(10)
        ) {
            self.sandbox = sandbox
            self.production = production
            self.sandboxChannels = sandboxChannels
            self.productionChannels = productionChannels
            self.caFile = caFile
            self.proxy = proxy
            self.timeout = timeout
        }
    }

    /// The time ages are judged at.
    package var now: Date
    /// The enrollment judged (one per gathering; ``DiagnosisGathering/run(_:enrollments:reconciliation:)`` judges
    /// each).
    package var enrollment: Enrollment?
    package var settings = ServerAPNsSettings()
    /// A build_environment given (wins over the enrollment's and the token update's).
    package var buildEnvironment: String?
    package var signedBuild: DiagnosisFacts.SignedBuild?
    package var testUser = false
    /// The environment the sender pushes to, if not the backend's rules.
    package var sendEnvironment: APNsEnvironment?
    package var deviceToken: String?
    package var topic: String?
    /// The apns-push-type the sender uses; `none` or empty when it sends none.
    package var pushType: String?
    package var priority: Int?
    package var expiration: Int?
    package var collapseID: String?
    /// A captured token-update body, already checked to be a JSON object.
    package var tokenUpdateBody: Data?
    package var payload: PayloadFile?
    package var activityAttributes: ActivityAttributesDescription?
    package var key: Key?
    /// The only environment the key is enabled for; needs a ``key`` or a ``Credentials/credential``.
    package var keyEnvironment: APNsEnvironment?
    package var credentials: Credentials?
    package var certificate: Certificate?
    /// A provider token the sender used.
    package var providerToken: String?
    /// How often the sender makes a new provider token.
    package var providerTokenRefreshInterval: TimeInterval?
    /// The broadcast channel the sender broadcasts to.
    package var channel: String?
    /// Ask APNs: the token in both environments, and the channel with ``channel``.
    package var probe: Probe?
    /// What is known of the device when the push was sent (app state, connectivity, background pushes an hour).
    package var deviceSide: DiagnosisFacts.DeviceSide?
    /// The push's record in the mock's delivery log (``DeliveryRecordReading``); its headers and payload stand in for
    /// the ones not given.
    package var delivery: DeliveryRecordReading.Read?
    /// The app's push receipts (``ReceiptReading``), matched to the push by apns-id or `kk_push_id`.
    package var receipts: DiagnosisFacts.ReceiptEvidence?

    package init(now: Date) { self.now = now }
}

/// `diagnose`'s fact gathering: loads the credentials (a key that does not load is a finding, not an error), checks
/// the key and team ids for a swap, reads the token update and payload as the backend and APNs would, decodes the
/// provider token, and with a probe asks APNs; the rules (``Diagnoser``) then judge the facts.
package enum DiagnosisGathering {
    /// Why a request cannot be judged, for the caller to say in its own words (naming its flags or fields).
    package enum Refusal: Error, Sendable, Equatable {
        /// A provider key, key id or team id was given without the other two ids.
        case keyIncomplete
        /// ``DiagnosisRequest/keyEnvironment`` without a key to restrict.
        case keyEnvironmentWithoutKey
        /// The credentials file's entry named is a certificate, which is judged as ``DiagnosisRequest/certificate``.
        case credentialIsCertificate(name: String)
        /// The probe needs a device token and none (well-formed) was given.
        case probeNoToken
        /// The probe needs a credential to send with and none was given.
        case probeNoCredential
        /// The probe's credential cannot be used: `reason` is why it did not load.
        case probeCredentialUnusable(reason: String)
    }

    /// The facts of `request` (its ``DiagnosisRequest/enrollment``). Throws a ``Refusal``, or the error of an input
    /// that cannot be read (a missing key file: an unusable input), never for a credential that reads but does not
    /// load (a finding).
    package static func gather(_ request: DiagnosisRequest) async throws -> DiagnosisFacts {
        var f = DiagnosisFacts(now: request.now)
        f.enrollment = request.enrollment
        f.settings = request.settings
        f.buildEnvironmentGiven = request.buildEnvironment
        f.signedBuild = request.signedBuild
        f.testUserGiven = request.testUser
        f.sendEnvironment = request.sendEnvironment
        f.deviceTokenGiven = request.deviceToken
        f.topic = request.topic
        if let pushType = request.pushType {
            f.pushType = ["none", ""].contains(pushType.lowercased()) ? "" : pushType
        }
        f.priority = request.priority
        f.expiration = request.expiration
        f.collapseID = request.collapseID
        f.localHTTP2 = LibcurlInfo.current.hasHTTP2
        f.deviceSide = request.deviceSide
        f.receipts = request.receipts
        if let read = request.delivery {
            f.delivery = read.record
            if request.pushType == nil { f.pushType = read.pushType }
            f.priority = f.priority ?? read.priority
            f.expiration = f.expiration ?? read.expiration
            f.collapseID = f.collapseID ?? read.collapseID
        }

        if let body = request.tokenUpdateBody {
            let report = TokenUpdateRules.check(
                body: body, context: TokenUpdateContext(enrollment: request.enrollment, settings: f.settings))
            f.tokenUpdate = report.update
            f.tokenUpdateProblems = report.problems
        }
        if request.payload == nil, let bytes = request.delivery?.payload { f.payload = bytes }
        if let file = request.payload {
            f.payload = file.payload
            if f.topic == nil {
                // An .apns file names the app's bundle id: the push type's suffix makes it the topic.
                let type = f.pushType.flatMap { $0.isEmpty ? nil : PushType($0) } ?? file.parsed?.suggestedPushType
                f.topic = file.topic(for: type ?? .alert)
            }
        }
        f.activityAttributes = request.activityAttributes

        var signingKey: ES256PrivateKey?
        if let given = request.key {
            guard let keyID = given.keyID, let teamID = given.teamID else { throw Refusal.keyIncomplete }
            var k = DiagnosisFacts.Key(keyID: keyID, teamID: teamID, file: given.file?.path ?? given.origin)
            k.environmentRestriction = request.keyEnvironment
            k.swapProblems = KeyTeamSwapCheck.check(keyFile: given.file?.path, keyID: keyID, teamID: teamID)
            if given.hasKey {
                // A file that cannot be read is an input error; one that is not a usable key is a finding.
                if let file = given.file {
                    _ = try InputFile.read(file.path, what: "signing key", label: file.label, maximumSize: 1 << 20)
                }
                do {
                    signingKey =
                        try given.pem.map { try ES256PrivateKey(pem: $0) }
                        ?? ES256PrivateKey(contentsOfFile: given.file?.path ?? "")
                } catch let e as KKPushError {
                    k.loadError = e.message
                }
            }
            f.key = k
        }
        if let credentials = request.credentials {
            let set = try ProviderCredentialSet.load(path: credentials.path)
            f.teamsInUse = set.credentials.compactMap(\.teamID)
            f.sendAnswer = credentials.sendAnswer
            if let name = credentials.credential {
                guard let entry = set.credential(named: name) else {
                    throw set.scopeProblem(credential: name, topic: nil, environment: .sandbox)!.error
                }
                guard case .token(let team, let keyID, let path) = entry.kind else {
                    throw Refusal.credentialIsCertificate(name: name)
                }
                var k = DiagnosisFacts.Key(keyID: keyID, teamID: team, file: path)
                k.environmentRestriction = entry.environments.count == 1 ? entry.environments.first : nil
                k.topics = entry.topics.sorted()
                k.swapProblems = KeyTeamSwapCheck.check(keyFile: path, keyID: keyID, teamID: team)
                do { signingKey = try ES256PrivateKey(contentsOfFile: path) } catch let e as KKPushError {
                    k.loadError = e.message
                }
                f.key = k
            }
        }
        if request.keyEnvironment != nil, f.key == nil { throw Refusal.keyEnvironmentWithoutKey }

        var clientCredential: ClientCredential?
        if let given = request.certificate {
            let cert = given.file.path
            _ = try InputFile.read(cert, what: "certificate", label: given.file.label, maximumSize: 1 << 20)
            if let key = given.key {
                _ = try InputFile.read(
                    key.path, what: "certificate's private key", label: key.label, maximumSize: 1 << 20)
            }
            var c = DiagnosisFacts.Certificate(file: cert)
            do {
                let loaded =
                    try given.key.map {
                        try ClientCredential.loadPEM(
                            certificatePath: cert, keyPath: $0.path, password: given.password)
                    }
                    ?? ClientCredential.loadPKCS12(
                        path: cert, password: given.password, passwordHint: given.passwordHint)
                clientCredential = loaded
                c.bundleID = loaded.info.bundleID
                c.topics = loaded.info.topics
                c.environments = loaded.info.environments
                c.notAfter = loaded.info.notAfter
            } catch let e as KKPushError {
                c.loadError = e.message
            }
            f.certificate = c
        }
        if let providerToken = request.providerToken {
            f.providerToken = ProviderTokenInspection.seen(providerToken, key: signingKey, now: f.now)
        }
        f.providerTokenRefreshInterval = request.providerTokenRefreshInterval

        if let channel = request.channel { f.channel = DiagnosisFacts.Channel(id: channel) }
        if let probe = request.probe {
            let sender = Sender(signingKey: signingKey, certificate: clientCredential)
            // A broadcast has no device token: the channel is read instead (and the token probed if one came from
            // an enrollment or token update).
            if f.deviceToken != nil || request.channel == nil {
                f.probe = try await probeToken(facts: f, probe: probe, sender: sender)
            }
            if let channel = request.channel {
                f.channel = try await readChannel(channel, facts: f, probe: probe, sender: sender)
            }
        }
        return f
    }

    /// The whole diagnosis of `request`: the facts of each enrollment (one diagnosis without any), judged by the
    /// rules, with `reconciliation`'s findings over all of them (an e-mail's or a team's active enrollments).
    package static func run(
        _ request: DiagnosisRequest, enrollments: [Enrollment], reconciliation: ReconciliationFindings.Scope? = nil
    ) async throws -> DiagnoseReport {
        var entries: [DiagnoseReport.Entry] = []
        for enrollment in enrollments.isEmpty ? [nil] : enrollments.map(Optional.some) {
            var one = request
            one.enrollment = enrollment
            let diagnosis = Diagnoser.diagnose(try await gather(one))
            // Several enrollments are labelled; one is the diagnosis itself.
            let label = enrollments.count > 1 ? enrollment.map(DiagnoseReport.label(of:)) : nil
            entries.append(DiagnoseReport.Entry(label: label, diagnosis: diagnosis))
        }
        return DiagnoseReport(
            entries: entries,
            reconciliation: reconciliation.map { ReconciliationFindings.findings(enrollments, scope: $0) } ?? [])
    }

    /// What the probe sends with.
    private struct Sender {
        var signingKey: ES256PrivateKey?
        var certificate: ClientCredential?
    }

    /// The credential the probe sends with: the key, else the certificate.
    private static func credential(facts f: DiagnosisFacts, sender: Sender) throws -> APNsCredential {
        if let signingKey = sender.signingKey, let k = f.key {
            return .token(ProviderTokenCache(key: signingKey, keyID: k.keyID, teamID: k.teamID))
        } else if let certificate = sender.certificate {
            return try .certificate(certificate)
        } else if let reason = f.key?.loadError ?? f.certificate?.loadError {
            throw Refusal.probeCredentialUnusable(reason: reason)
        }
        throw Refusal.probeNoCredential
    }

    /// The topic the probe uses: the sender's, else the token update's bundle id, the certificate's, the app's.
    private static func topic(facts f: DiagnosisFacts, sender: Sender) -> String {
        f.topic ?? f.tokenUpdate?.bundleID ?? sender.certificate?.info.bundleID ?? TokenUpdate.defaultBundleID
    }

    private static func readCAFile(_ probe: DiagnosisRequest.Probe) throws {
        if let ca = probe.caFile {
            _ = try InputFile.read(ca.path, what: "CA file", label: ca.label, maximumSize: 1 << 20)
        }
    }

    /// The device token in both environments (``DiagnosisProbe``).
    private static func probeToken(facts f: DiagnosisFacts, probe: DiagnosisRequest.Probe, sender: Sender)
        async throws -> DiagnosisFacts.Probe
    {
        guard let given = f.deviceToken, let normalized = DeviceToken.normalize(given.value).token else {
            throw Refusal.probeNoToken
        }
        let credential = try credential(facts: f, sender: sender)
        try readCAFile(probe)
        return try await DiagnosisProbe.run(
            .init(
                token: normalized, topic: topic(facts: f, sender: sender), credential: credential,
                sandbox: probe.sandbox, production: probe.production, proxy: probe.proxy, timeout: probe.timeout))
    }

    /// The broadcast channel read (GET /1/apps/<bundle id>/channels) in both environments at once (``ChannelRead``).
    private static func readChannel(
        _ id: String, facts f: DiagnosisFacts, probe: DiagnosisRequest.Probe, sender: Sender
    ) async throws -> DiagnosisFacts.Channel {
        let credential = try credential(facts: f, sender: sender)
        try readCAFile(probe)
        return try await ChannelRead.run(
            channelID: id, bundleID: ChannelRead.bundleID(forTopic: topic(facts: f, sender: sender)),
            credential: credential, sandbox: probe.sandboxChannels, production: probe.productionChannels,
            proxy: probe.proxy, timeout: probe.timeout)
    }
}
