import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushBuild
import KKPushBuildJudgement
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem
import KantineKoning

/// `kkpush diagnose`'s inputs: the enrollments, the token update, the signed build, the facts gathered from them and
/// from the environment, and the probe.
extension DiagnoseCommand {
    /// Whether anything was given to judge: a flag, or a credential, provider token or server setting from
    /// the environment. (`$APNS_TOPIC` alone is not enough: a topic says nothing about delivery by itself.)
    var hasInput: Bool {
        let process = CommandIO.current.environment
        let flags: [Any?] = [
            enrollment, storeSource?.value, tokenUpdate, buildEnvironment, env, token, topic, pushType, priority,
            expiration, collapseId, payload, activityAttributes, key, keyId, teamId, keyEnvironment, cert,
            providerToken, providerTokenFile,
            tokenRefreshMinutes, build, distribution, channel, credentials,
        ]
        if testUser || probe || flags.contains(where: { $0 != nil }) || server.isGiven(environment: process) {
            return true
        }
        let variables = ["APNS_KEY_PATH", "APNS_KEY", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_PROVIDER_TOKEN"]
        return variables.contains { !(process[$0] ?? "").isEmpty }
    }

    static let noInput = CLIError.usage(
        .diagnoseNoInput,
        "diagnose has nothing to judge: no input was given.",
        fix:
            "Give at least one: an enrollment (--enrollment FILE, or --store DB with --device-id, --hardware-identifier, --email or --apns-token), a token update (--token-update FILE), a device token (--token HEX; add --probe and a credential to ask APNs), --build-environment, the server's --apns-env/--apns-force-env, a credential (--key with --key-id and --team-id, or --cert), a provider token, or the request the sender makes (--topic, --push-type, --priority, --payload)."
    )

    func loadEnrollments() async throws -> [Enrollment] {
        if let path = enrollment {
            let bytes = try InputFile.read(
                path, what: "enrollment record", label: "--enrollment", maximumSize: Self.maximumJSONSize)
            return try EnrollmentFile.decode(bytes, label: "--enrollment \(path)")
        }
        guard let (store, storeFlag) = storeSource else { return [] }
        // One open, one close, awaited here: the store's connection is closed exactly once, before
        // anything else runs (an extra close from a detached task once crashed release builds). A PostgreSQL
        // store is opened read-only: diagnose never writes.
        let found: [Enrollment] = try await EnrollmentStoreReading.with(
            store, flag: storeFlag, schemaMap: schemaMap, notes: true
        ) {
            db in
            if let deviceId {
                if let tenant { return try await db.get(deviceID: deviceId, tenant: tenant).map { [$0] } ?? [] }
                return try await db.all().filter { $0.deviceID == deviceId }
            } else if let hardwareIdentifier {
                return try await db.find(hardwareIdentifier: hardwareIdentifier)
            } else if let email {
                return try await db.find(teamManagerEmail: email)
            } else if let apnsToken {
                return try await db.find(apnsToken: DeviceToken.normalize(apnsToken).token ?? apnsToken)
            } else if let team, let tenant {
                return try await db.activeEnrollments(tenant: tenant, team: team)
            }
            return []
        }
        if found.isEmpty {
            var lookup = ""
            if let deviceId {
                lookup = "--device-id \(deviceId)" + (tenant.map { " in tenant \($0)" } ?? "")
            } else if let hardwareIdentifier {
                lookup = "--hardware-identifier \(hardwareIdentifier)"
            } else if let email {
                lookup = "--email \(email)"
            } else if let apnsToken {
                lookup = "--apns-token \(DeviceToken.redacted(DeviceToken.normalize(apnsToken).token ?? apnsToken))"
            } else if let team {
                lookup = "--team \(team) in tenant \(tenant ?? "")"
            }
            let shown = (try? EnrollmentStoreLocation.parse(store, origin: storeFlag).display) ?? store
            throw KKPushError(
                code: .enrollmentNotFound, message: "No enrollment in \(storeFlag) \(shown) matches \(lookup).",
                fix: "Check the value; `kkpush backend export --db '\(shown)'` lists the enrollments.")
        }
        return found
    }

    /// The inputs read from files or standard input, read once for every enrollment diagnosed.
    struct Inputs {
        var tokenUpdateBody: Data?
        var payload: PayloadFile?
        var certPassword: String?
        var providerToken: String?
        var signedBuild: DiagnosisFacts.SignedBuild?
    }

    func readInputs() throws -> Inputs {
        var inputs = Inputs()
        if let path = tokenUpdate {
            let body = Data(
                try InputFile.read(
                    path, what: "token-update body", label: "--token-update", maximumSize: Self.maximumJSONSize))
            if let error = TokenUpdateRules.fileShapeError(body, label: "--token-update \(path)") { throw error }
            inputs.tokenUpdateBody = body
        }
        if let path = payload {
            // Read as `kkpush send` reads it: an Xcode .apns file's Simulator Target Bundle is the topic, not payload.
            let bytes = try InputFile.read(
                path, what: "payload file", label: "--payload", maximumSize: Self.maximumJSONSize)
            inputs.payload = PayloadFile.read(bytes, fileName: path == "-" ? nil : path)
        }
        if cert != nil {
            inputs.certPassword = try Secrets.resolve(Secrets.certPassword, flag: certPassword, file: certPasswordFile)
        }
        inputs.providerToken = try Secrets.resolve(Secrets.providerToken, flag: providerToken, file: providerTokenFile)
        inputs.signedBuild = try signedBuild()
        return inputs
    }

    /// What `--build` or `--distribution` says the phone's build is signed for.
    func signedBuild() throws -> DiagnosisFacts.SignedBuild? {
        if let name = distribution, let d = AppDistribution(name: name) {
            return DiagnosisFacts.SignedBuild(
                apsEnvironment: d.tokenEnvironment.entitlementValue, distribution: d,
                source: "--distribution \(d.rawValue): \(d.profileKind) profile")
        }
        guard let path = build else { return nil }
        let report: BuildReport
        do {
            // Expiry is judged at --now, as every other age diagnose judges.
            let at = now.flatMap(InputNumbers.date(unixSeconds:)) ?? Date()
            report = try BuildInspector.inspect(path: path, now: at)
        } catch let e as KKPushError {
            // An unreadable build is an unusable input (exit 2), whatever the reason.
            throw CLIError.input(e.code, "--build: \(e.message)", fix: e.fix ?? "Pass a readable build.")
        }
        return DiagnosisFacts.SignedBuild(report: report, source: "--build \(path)")
    }

    func gatherFacts(enrollment: Enrollment?, inputs: Inputs) async throws -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now.flatMap(InputNumbers.date(unixSeconds:)) ?? Date())
        f.enrollment = enrollment
        let process = CommandIO.current.environment
        f.settings = server.settings(environment: process)
        f.buildEnvironmentGiven = buildEnvironment
        f.signedBuild = inputs.signedBuild
        f.testUserGiven = testUser
        f.sendEnvironment = env.flatMap(APNsEnvironment.init(lenient:))
        f.deviceTokenGiven = token
        f.topic = Secrets.topic(topic)
        if let pushType { f.pushType = ["none", ""].contains(pushType.lowercased()) ? "" : pushType }
        f.priority = priority
        f.expiration = expiration
        f.collapseID = collapseId
        f.localHTTP2 = LibcurlInfo.current.hasHTTP2

        if let body = inputs.tokenUpdateBody {
            let context = TokenUpdateContext(enrollment: enrollment, settings: f.settings)
            let report = TokenUpdateRules.check(body: body, context: context)
            f.tokenUpdate = report.update
            f.tokenUpdateProblems = report.problems
        }
        if let file = inputs.payload {
            f.payload = file.payload
            if f.topic == nil {
                // An .apns file names the app's bundle id: the push type's suffix makes it the topic.
                let type = f.pushType.flatMap { $0.isEmpty ? nil : PushType($0) } ?? file.parsed?.suggestedPushType
                f.topic = file.topic(for: type ?? .alert)
            }
        }
        f.activityAttributes = try activityAttributes.map(PayloadActivityAttributesCommand.load)

        // Credentials
        let signing = try Secrets.signingKey(flag: key)
        let keyPath = signing?.path
        let kid = keyId ?? process["APNS_KEY_ID"]
        let team = teamId ?? process["APNS_TEAM_ID"]
        var signingKey: ES256PrivateKey?
        if signing != nil || kid != nil || team != nil {
            guard let kid, let team else {
                throw KKPushError(
                    code: .keyIncomplete,
                    message: "A provider key needs --key-id and --team-id (or APNS_KEY_ID, APNS_TEAM_ID).",
                    fix: "Give all three: --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID.")
            }
            var k = DiagnosisFacts.Key(keyID: kid, teamID: team, file: keyPath ?? signing?.origin)
            k.environmentRestriction = keyEnvironment.flatMap(APNsEnvironment.init(lenient:))
            k.swapProblems = KeyTeamSwapCheck.check(keyFile: keyPath, keyID: kid, teamID: team)
            if let signing {
                // A file that cannot be read is an input error (exit 2); one that is not a usable key is a finding.
                if let path = signing.path {
                    _ = try InputFile.read(
                        path, what: "signing key", label: key == nil ? "APNS_KEY_PATH" : "--key", maximumSize: 1 << 20)
                }
                do { signingKey = try signing.load() } catch let e as KKPushError { k.loadError = e.message }
            }
            f.key = k
        }
        if let credentials {
            let set = try ProviderCredentialSet.load(path: credentials)
            f.teamsInUse = set.credentials.compactMap(\.teamID)
            f.sendAnswer = sendAnswer
            if let credential {
                guard let entry = set.credential(named: credential) else {
                    throw set.scopeProblem(credential: credential, topic: nil, environment: .sandbox)!.error
                }
                guard case .token(let team, let keyID, let path) = entry.kind else {
                    throw CLIError.usage(
                        .unknownCredential, "--credential \(credential) is a certificate; diagnose judges its --cert.",
                        fix: "Give the certificate with --cert, or name a provider-key entry.")
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
        if keyEnvironment != nil, f.key == nil {
            throw CLIError.usage(
                .keyEnvironmentWithoutKey,
                "--key-environment says which environment the provider key is enabled for, but no key is given.",
                fix:
                    "Give --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID with it, or leave --key-environment out."
            )
        }
        var clientCredential: ClientCredential?
        if let cert {
            Secrets.warnIfCredentialExposed(path: cert)
            let certPassword = inputs.certPassword
            _ = try InputFile.read(cert, what: "certificate", label: "--cert", maximumSize: 1 << 20)
            if let certKey {
                _ = try InputFile.read(
                    certKey, what: "certificate's private key", label: "--cert-key", maximumSize: 1 << 20)
            }
            var c = DiagnosisFacts.Certificate(file: cert)
            do {
                let loaded =
                    try certKey.map {
                        try ClientCredential.loadPEM(certificatePath: cert, keyPath: $0, password: certPassword)
                    }
                    ?? ClientCredential.loadPKCS12(
                        path: cert, password: certPassword, passwordHint: Secrets.certificatePasswordHint)
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
        if let providerToken = inputs.providerToken {
            f.providerToken = ProviderTokenInspection.seen(providerToken, key: signingKey, now: f.now)
        }
        if let m = tokenRefreshMinutes { f.providerTokenRefreshInterval = m * 60 }

        if let channel { f.channel = DiagnosisFacts.Channel(id: channel) }
        if probe {
            // A broadcast has no device token: the channel is read instead (and the token probed if one came
            // from an enrollment or token update).
            if f.deviceToken != nil || channel == nil {
                f.probe = try await runProbe(facts: f, signingKey: signingKey, clientCredential: clientCredential)
            }
            if let channel {
                f.channel = try await readChannel(
                    channel, facts: f, signingKey: signingKey, clientCredential: clientCredential)
            }
        }
        return f
    }

    /// The credential `--probe` sends with: the key, else the certificate.
    func probeCredential(facts f: DiagnosisFacts, signingKey: ES256PrivateKey?, clientCredential: ClientCredential?)
        throws -> APNsCredential
    {
        if let signingKey, let k = f.key {
            return .token(ProviderTokenCache(key: signingKey, keyID: k.keyID, teamID: k.teamID))
        } else if let clientCredential {
            return try .certificate(clientCredential)
        } else if let error = f.key?.loadError ?? f.certificate?.loadError {
            throw CLIError.input(
                .credentialUnreadable, "--probe cannot send: the credential cannot be used: \(error)",
                fix:
                    "Give a readable .p8 key (or .p12 certificate and its password); `kkpush jwt make` or `kkpush cert inspect` shows what is wrong."
            )
        } else {
            throw KKPushError(
                code: .probeNoCredential, message: "--probe needs a credential to send with.",
                fix:
                    "Give --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID, or --cert FILE.p12 --cert-password-file FILE."
            )
        }
    }

    /// `--probe --channel`: the channel read (GET /1/apps/<bundle id>/channels) in both environments at once.
    func readChannel(
        _ id: String, facts f: DiagnosisFacts, signingKey: ES256PrivateKey?, clientCredential: ClientCredential?
    ) async throws -> DiagnosisFacts.Channel {
        let credential = try probeCredential(facts: f, signingKey: signingKey, clientCredential: clientCredential)
        let topic = f.topic ?? f.tokenUpdate?.bundleID ?? clientCredential?.info.bundleID ?? TokenUpdate.defaultBundleID
        let wait = try endpoints.wait()
        if let caFile = endpoints.caFile {
            _ = try InputFile.read(caFile, what: "CA file", label: "--ca-file", maximumSize: 1 << 20)
        }
        func endpoint(_ url: String?, _ e: APNsEnvironment) throws -> APNsEndpoint {
            try url.map { try APNsEndpoint.parse(url: $0, caFile: endpoints.caFile, environment: e) }
                ?? .channelManagement(e)
        }
        return try await ChannelRead.run(
            channelID: id, bundleID: ChannelRead.bundleID(forTopic: topic), credential: credential,
            sandbox: try endpoint(sandboxChannelsUrl, .sandbox),
            production: try endpoint(productionChannelsUrl, .production), proxy: proxy, timeout: wait)
    }

    func runProbe(facts f: DiagnosisFacts, signingKey: ES256PrivateKey?, clientCredential: ClientCredential?)
        async throws
        -> DiagnosisFacts.Probe
    {
        guard let given = f.deviceToken, let normalized = DeviceToken.normalize(given.value).token else {
            throw KKPushError(
                code: .probeNoToken, message: "--probe needs a well-formed device token.",
                fix: "Give --token HEX, or an enrollment / token update that has one.")
        }
        let credential = try probeCredential(facts: f, signingKey: signingKey, clientCredential: clientCredential)
        let (sandbox, production) = try endpoints.endpoints()
        let topic = f.topic ?? f.tokenUpdate?.bundleID ?? clientCredential?.info.bundleID ?? TokenUpdate.defaultBundleID
        let wait = try endpoints.wait()
        do {
            return try await DiagnosisProbe.run(
                .init(
                    token: normalized, topic: topic, credential: credential, sandbox: sandbox, production: production,
                    proxy: proxy, timeout: wait))
        } catch let e as KKPushError where e.code == "client-proxy-url" {
            // A bad --proxy value is a bad flag (64), found when the client is configured.
            throw CLIError.usage(
                .proxyUrl, "--proxy: \(e.message)", fix: e.fix ?? "Use http://host:port or socks5h://host:port.")
        }
    }

    /// The largest JSON input read (a payload is at most 5 KB, a token update or enrollment far less).
    static let maximumJSONSize = 1 << 20
}
