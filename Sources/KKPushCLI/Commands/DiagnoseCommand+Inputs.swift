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

/// `kkpush diagnose`'s inputs: the enrollments, and the flags, files and environment as the request
/// ``DiagnosisGathering`` gathers the facts of.
extension DiagnoseCommand {
    /// Whether anything was given to judge: a flag, or a credential, provider token or server setting from
    /// the environment. (`$APNS_TOPIC` alone is not enough: a topic says nothing about delivery by itself.)
    var hasInput: Bool {
        let process = CommandIO.current.environment
        let flags: [Any?] = [
            enrollment, storeSource?.value, tokenUpdate, buildEnvironment, env, token, topic, pushType, priority,
            expiration, collapseId, payload, activityAttributes, key, keyId, teamId, keyEnvironment, cert,
            providerToken, providerTokenFile,
            tokenRefreshMinutes, build, distribution, channel, credentials, appState, backgroundPushesPerHour,
            delivery, receipts,
        ]
        if testUser || probe || deviceOffline || flags.contains(where: { $0 != nil })
            || server.isGiven(environment: process)
        {
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

    /// The request the flags make: the files and standard input read (once, for every enrollment diagnosed), the
    /// secrets and the environment's defaults resolved.
    func makeRequest() throws -> DiagnosisRequest {
        let process = CommandIO.current.environment
        var r = DiagnosisRequest(now: now.flatMap(InputNumbers.date(unixSeconds:)) ?? Date())
        if let path = tokenUpdate {
            let body = Data(
                try InputFile.read(
                    path, what: "token-update body", label: "--token-update", maximumSize: Self.maximumJSONSize))
            if let error = TokenUpdateRules.fileShapeError(body, label: "--token-update \(path)") { throw error }
            r.tokenUpdateBody = body
        }
        if let path = payload {
            // Read as `kkpush send` reads it: an Xcode .apns file's Simulator Target Bundle is the topic, not payload.
            let bytes = try InputFile.read(
                path, what: "payload file", label: "--payload", maximumSize: Self.maximumJSONSize)
            r.payload = PayloadFile.read(bytes, fileName: path == "-" ? nil : path)
        }
        let certPassword =
            cert == nil ? nil : try Secrets.resolve(Secrets.certPassword, flag: certPassword, file: certPasswordFile)
        r.providerToken = try Secrets.resolve(Secrets.providerToken, flag: providerToken, file: providerTokenFile)
        r.signedBuild = try signedBuild()
        r.settings = server.settings(environment: process)
        r.buildEnvironment = buildEnvironment
        r.testUser = testUser
        r.sendEnvironment = env.flatMap(APNsEnvironment.init(lenient:))
        r.deviceToken = token
        r.topic = Secrets.topic(topic)
        r.pushType = pushType
        r.priority = priority
        r.expiration = expiration
        r.collapseID = collapseId
        if appState != nil || deviceOffline || backgroundPushesPerHour != nil {
            r.deviceSide = DiagnosisFacts.DeviceSide(
                appState: appState.flatMap(DiagnosisFacts.AppState.init(rawValue:)),
                offline: deviceOffline ? true : nil,
                backgroundPushesPerHour: backgroundPushesPerHour)
        }
        if let path = delivery {
            let bytes = try InputFile.read(
                path, what: "delivery record", label: "--delivery", maximumSize: Self.maximumJSONSize)
            r.delivery = try DeliveryRecordReading.read(bytes, label: "--delivery \(path)")
        }
        if let path = receipts {
            let bytes = try InputFile.read(
                path, what: "push receipts", label: "--receipts", maximumSize: Self.maximumJSONSize)
            r.receipts = try ReceiptReading.read(bytes, label: "--receipts \(path)", apnsID: apnsId)
        }
        r.activityAttributes = try activityAttributes.map(PayloadActivityAttributesCommand.load)
        let signing = try Secrets.signingKey(flag: key)
        let keyID = keyId ?? process["APNS_KEY_ID"]
        let teamID = teamId ?? process["APNS_TEAM_ID"]
        if signing != nil || keyID != nil || teamID != nil {
            r.key = DiagnosisRequest.Key(
                file: signing?.path.map { .init(path: $0, label: key == nil ? "APNS_KEY_PATH" : "--key") },
                pem: signing?.pem, origin: signing?.origin, keyID: keyID, teamID: teamID)
        }
        r.keyEnvironment = keyEnvironment.flatMap(APNsEnvironment.init(lenient:))
        r.credentials = credentials.map {
            DiagnosisRequest.Credentials(path: $0, credential: credential, sendAnswer: sendAnswer)
        }
        if let cert {
            Secrets.warnIfCredentialExposed(path: cert)
            r.certificate = DiagnosisRequest.Certificate(
                file: .init(path: cert, label: "--cert"), key: certKey.map { .init(path: $0, label: "--cert-key") },
                password: certPassword, passwordHint: Secrets.certificatePasswordHint)
        }
        r.providerTokenRefreshInterval = tokenRefreshMinutes.map { $0 * 60 }
        r.channel = channel
        if probe { r.probe = try probeRequest() }
        return r
    }

    /// Where `--probe` asks: the endpoints (and channel-management endpoints) the flags name, else Apple's.
    func probeRequest() throws -> DiagnosisRequest.Probe {
        let (sandbox, production) = try endpoints.parsedEndpoints()
        func channels(_ url: String?, _ e: APNsEnvironment) throws -> APNsEndpoint {
            try url.map { try APNsEndpoint.parse(url: $0, caFile: endpoints.caFile, environment: e) }
                ?? .channelManagement(e)
        }
        return DiagnosisRequest.Probe(
            sandbox: sandbox, production: production,
            sandboxChannels: try channels(sandboxChannelsUrl, .sandbox),
            productionChannels: try channels(productionChannelsUrl, .production),
            caFile: endpoints.caFile.map { .init(path: $0, label: "--ca-file") }, proxy: proxy,
            timeout: try endpoints.wait())
    }

    /// Runs `body`, with the gathering's refusals in this command line's words (its flags and environment variables).
    static func inCommandWords<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let refusal as DiagnosisGathering.Refusal {
            throw words(refusal)
        } catch let e as KKPushError where e.code == .clientProxyUrl {
            // A bad --proxy value is a bad flag (64), found when the client is configured.
            throw CLIError.usage(
                .proxyUrl, "--proxy: \(e.message)", fix: e.fix ?? "Use http://host:port or socks5h://host:port.")
        }
    }

    /// A refusal of the gathering as this command says it.
    static func words(_ refusal: DiagnosisGathering.Refusal) -> any Error {
        switch refusal {
        case .keyIncomplete:
            KKPushError(
                code: .keyIncomplete,
                message: "A provider key needs --key-id and --team-id (or APNS_KEY_ID, APNS_TEAM_ID).",
                fix: "Give all three: --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID.")
        case .keyEnvironmentWithoutKey:
            CLIError.usage(
                .keyEnvironmentWithoutKey,
                "--key-environment says which environment the provider key is enabled for, but no key is given.",
                fix:
                    "Give --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID with it, or leave --key-environment out."
            )
        case .credentialIsCertificate(let name):
            CLIError.usage(
                .unknownCredential, "--credential \(name) is a certificate; diagnose judges its --cert.",
                fix: "Give the certificate with --cert, or name a provider-key entry.")
        case .probeNoToken:
            KKPushError(
                code: .probeNoToken, message: "--probe needs a well-formed device token.",
                fix: "Give --token HEX, or an enrollment / token update that has one.")
        case .probeNoCredential:
            KKPushError(
                code: .probeNoCredential, message: "--probe needs a credential to send with.",
                fix:
                    "Give --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID, or --cert FILE.p12 --cert-password-file FILE."
            )
        case .probeCredentialUnusable(let reason):
            CLIError.input(
                .credentialUnreadable, "--probe cannot send: the credential cannot be used: \(reason)",
                fix:
                    "Give a readable .p8 key (or .p12 certificate and its password); `kkpush jwt sign` or `kkpush cert inspect` shows what is wrong."
            )
        }
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

    /// The largest JSON input read (a payload is at most 5 KB, a token update or enrollment far less).
    static let maximumJSONSize = 1 << 20
}
