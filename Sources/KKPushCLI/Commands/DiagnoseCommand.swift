import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushBuild
import KKPushClient
import KKPushCore
import KantineKoning

/// `kkpush diagnose`: why a push does not arrive, the most likely cause first, and the fix.
struct DiagnoseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose",
        abstract: "Find why a push does not arrive: a verdict (the most likely cause), the findings and their fixes.",
        discussion: """
            Give any combination of inputs: an enrollment (--enrollment FILE, or --store DB with --device-id, \
            --hardware-identifier, --email, --apns-token, or --team with --tenant), a captured token update (--token-update FILE), the \
            server's APNS_ENV/APNS_FORCE_ENV (read from this process's environment unless --ignore-process-env; \
            flags win), credentials (--key/--key-id/--team-id, or --cert), the topic, push type, payload and \
            device token the sender uses (the request is judged by the same rules as `kkpush send`'s pre-flight). --probe sends an empty-payload background request to BOTH environments \
            (nothing is delivered) and reads which one knows the token; --sandbox-url/--production-url/--ca-file \
            point it at stand-ins such as `kkpush mock serve`.
            The verdict comes only from evidence: when the probe gets no conclusive answer (a timeout, a \
            connection failure, 429 or 5xx, in one environment or both) the verdict is probe-inconclusive-network \
            or probe-inconclusive-apns ("the path could not be checked"), and findings inferred from the \
            configuration are marked unconfirmed.
            With --email (a manager) or --team/--tenant, active enrollments on several hardware identifiers \
            (a new identifierForVendor after a TestFlight ↔ App Store switch, or a second device) are reported \
            as several-hardware-identifiers, with what enrollment reconciliation will do with them (a warning: \
            it does not change the exit status).
            Exit status: 0 when nothing found blocks delivery, 1 when something does or the probe could not \
            check the path, 2 when an input cannot be read or has the wrong shape, 64 for bad flags (no input \
            at all, and --probe without a token or a credential, too).
            """
    )

    @Option(name: .long, help: "An enrollment record: JSON with the enrollment store's field names.")
    var enrollment: String?

    @Option(
        name: .long,
        help:
            "The enrollment store to look the enrollment up in: an SQLite file or a postgres:// URL, opened read-only (default with a lookup flag: $DATABASE_URL)."
    )
    var store: String?

    @Option(
        name: .customLong("schema-map"),
        help: "With a postgres:// --store: a JSON file naming the table and mapping kkpush's column names to its own.")
    var schemaMap: String?

    /// --store, else $DATABASE_URL when a lookup flag asks for a store; and which of the two it is.
    var storeSource: (value: String, flag: String)? {
        if let store { return (store, "--store") }
        guard [deviceId, hardwareIdentifier, email, apnsToken].contains(where: { $0 != nil }),
            let url = ProcessInfo.processInfo.environment[EnrollmentStoreLocation.environmentVariable],
            !url.trimmingWhitespace().isEmpty
        else { return nil }
        return (url, EnrollmentStoreLocation.environmentVariable)
    }

    @Option(name: .long, help: "With --store: the enrollment's device_id.")
    var deviceId: String?

    @Option(
        name: .long,
        help:
            "With --store and --device-id: the tenant slug (if the device id is in several tenants); with --team: the team's tenant."
    )
    var tenant: String?

    @Option(
        name: .long,
        help: "With --store and --tenant: look up the active enrollments following this team code (e.g. JO11-3).")
    var team: String?

    @Option(name: .long, help: "With --store: look up by hardware_identifier (all its enrollments are diagnosed).")
    var hardwareIdentifier: String?

    @Option(name: .long, help: "With --store: look up by team_manager_email.")
    var email: String?

    @Option(name: .long, help: "With --store: look up by apns_token.")
    var apnsToken: String?

    @Option(name: .long, help: "A captured token-update body (JSON), or - for stdin.")
    var tokenUpdate: String?

    @Option(name: .long, help: "The build_environment to judge (wins over the enrollment's and the token update's).")
    var buildEnvironment: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The signed build on the phone (.ipa, .xcarchive, .app, profile or executable): what it is signed for joins the evidence.",
            valueName: "path"))
    var build: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How the build reached the phone, if --build is not at hand: \(AppDistribution.acceptedNames) (decides its aps-environment).",
            valueName: "distribution"))
    var distribution: String?

    @Flag(name: .long, help: "The enrollment is a test user.")
    var testUser = false

    @OptionGroup(title: "Server settings")
    var server: ServerSettingsOptions

    @Option(name: .long, help: "The environment the sender pushes to, if not the backend's rules (sandbox|production).")
    var env: String?

    @Option(name: .long, help: "The device token (hex).")
    var token: String?

    @Option(
        name: .long,
        help:
            "The apns-topic the sender uses (default: $APNS_TOPIC; for --probe then the token update's bundle id, else nl.kantinekoning.app)."
    )
    var topic: String?

    @Option(name: .long, help: "The apns-push-type the sender uses; 'none' if it sends none.")
    var pushType: String?

    @Option(name: .long, parsing: .unconditional, help: "The apns-priority the sender uses.")
    var priority: Int?

    @Option(name: .long, parsing: .unconditional, help: "The apns-expiration the sender uses (UNIX time, or 0).")
    var expiration: Int?

    @Option(name: .long, help: "The apns-collapse-id the sender uses.")
    var collapseId: String?

    @Option(name: .long, help: "The payload the sender uses (JSON file).")
    var payload: String?

    @OptionGroup var providerKey: ProviderKeyOptions
    var key: String? { providerKey.keyFile }
    var keyId: String? { providerKey.keyIDFlag }
    var teamId: String? { providerKey.teamIDFlag }

    @Option(name: .long, help: "The only environment the key is enabled for, if it is restricted (sandbox|production).")
    var keyEnvironment: String?

    @OptionGroup var certificate: ProbeCertificateOptions
    var cert: String? { certificate.cert }
    var certPassword: String? { certificate.certPassword }
    var certPasswordFile: String? { certificate.certPasswordFile }
    var certKey: String? { certificate.certKey }

    @Option(
        name: .long,
        help:
            "A provider token (JWT) the sender used, to check its age, clock and ids; prefer --provider-token-file or $APNS_PROVIDER_TOKEN."
    )
    var providerToken: String?

    @Option(name: .long, help: "A file holding the provider token ('-' for stdin).")
    var providerTokenFile: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: "How often the sender makes a new provider token, in minutes (0.1 to 10080).")
    var tokenRefreshMinutes: Double?

    @Flag(
        name: .long, help: "Send the least intrusive request to both environments and read which one knows the token.")
    var probe = false

    @OptionGroup var endpoints: ProbeEndpointOptions
    var sandboxUrl: String? { endpoints.sandboxUrl }
    var productionUrl: String? { endpoints.productionUrl }
    var caFile: String? { endpoints.caFile }
    var proxy: String? { endpoints.proxy }

    @Option(
        name: .long, parsing: .unconditional, help: "Judge ages as of this UNIX time (default: now; 0 to 253402300799)."
    )
    var now: Int?

    /// The minutes `--token-refresh-minutes` accepts: 6 seconds to a week.
    static let refreshMinutesRange: ClosedRange<Double> = 0.1...10_080

    @Flag(name: .long, help: "Print a JSON object: verdict ({code, message, fix} or null) and findings.")
    var json = false

    func validate() throws {
        try NumericFlags.unixTime(expiration.map { max($0, 0) }, flag: "--expiration")
        try NumericFlags.seconds(
            tokenRefreshMinutes, flag: "--token-refresh-minutes", in: Self.refreshMinutesRange, unit: "minutes")
        try NumericFlags.unixTime(now, flag: "--now")
        // --build-environment '' and --apns-env '' model an empty value; --push-type '' means none is sent;
        // a .p12 password may be empty. Every other text flag needs a value.
        try TextFlags.nonEmpty([
            ("--enrollment", enrollment), ("--store", store), ("--device-id", deviceId), ("--tenant", tenant),
            ("--hardware-identifier", hardwareIdentifier), ("--email", email), ("--apns-token", apnsToken),
            ("--team", team), ("--token-update", tokenUpdate), ("--env", env), ("--token", token), ("--topic", topic),
            ("--collapse-id", collapseId), ("--payload", payload), ("--key", key), ("--key-id", keyId),
            ("--team-id", teamId), ("--key-environment", keyEnvironment), ("--cert", cert),
            ("--cert-password-file", certPasswordFile), ("--cert-key", certKey), ("--provider-token", providerToken),
            ("--provider-token-file", providerTokenFile), ("--sandbox-url", sandboxUrl),
            ("--production-url", productionUrl),
            ("--ca-file", caFile), ("--proxy", proxy), ("--build", build), ("--distribution", distribution),
        ])
        if build != nil, distribution != nil {
            throw ValidationError(
                "Give --build or --distribution, not both: the signed build tells its own distribution.")
        }
        if let distribution, AppDistribution(name: distribution) == nil {
            throw ValidationError(
                "Unknown --distribution '\(distribution)': use \(AppDistribution.acceptedNames).")
        }
        try endpoints.check()
        if tenant != nil, deviceId == nil, team == nil {
            throw ValidationError(
                "--tenant narrows a --device-id lookup or names --team's tenant: give --device-id or --team too (or leave --tenant out)."
            )
        }
        if team != nil, tenant == nil {
            throw ValidationError("--team needs the team's tenant: give --tenant SLUG too.")
        }
        try certificate.check()
        if let env, APNsEnvironment(lenient: env) == nil {
            throw ValidationError("--env must be sandbox or production, not '\(env)'.")
        }
        if let keyEnvironment, APNsEnvironment(lenient: keyEnvironment) == nil {
            throw ValidationError("--key-environment must be sandbox or production, not '\(keyEnvironment)'.")
        }
        if storeSource == nil, [deviceId, hardwareIdentifier, email, apnsToken, team].contains(where: { $0 != nil }) {
            throw ValidationError(
                "--device-id, --hardware-identifier, --email, --apns-token and --team look up in --store DB: give --store (or set DATABASE_URL)."
            )
        }
        if store != nil, [deviceId, hardwareIdentifier, email, apnsToken, team].allSatisfy({ $0 == nil }) {
            throw ValidationError(
                "--store needs one of --device-id, --hardware-identifier, --email, --apns-token, --team (with --tenant)."
            )
        }
        let lookups = [
            ("--device-id", deviceId), ("--hardware-identifier", hardwareIdentifier), ("--email", email),
            ("--apns-token", apnsToken), ("--team", team),
        ].filter { $0.1 != nil }.map(\.0)
        if lookups.count > 1 {
            throw ValidationError(
                "Look the enrollment up one way: \(lookups.joined(separator: ", ")) were given; keep one.")
        }
        if store != nil, enrollment != nil {
            throw ValidationError("Give --enrollment FILE or --store DB, not both.")
        }
        let given = endpoints.given
        if !probe, !given.isEmpty {
            throw ValidationError(
                "\(given.joined(separator: ", ")) \(given.count == 1 ? "is" : "are") for --probe only: add --probe (it sends to both environments), or leave \(given.count == 1 ? "it" : "them") out."
            )
        }
        if providerToken != nil, providerTokenFile != nil {
            throw ValidationError("Give --provider-token or --provider-token-file, not both.")
        }
        let stdinInputs = [
            ("--cert-password-file", certPasswordFile), ("--provider-token-file", providerTokenFile),
            ("--token-update", tokenUpdate), ("--enrollment", enrollment), ("--payload", payload),
        ]
        .filter { $0.1 == "-" }.map(\.0)
        if stdinInputs.count > 1 {
            throw ValidationError(
                "Only one input can come from stdin ('-'), not \(stdinInputs.joined(separator: " and ")).")
        }
        let noStdin = [
            ("--store", store), ("--key", key), ("--cert", cert), ("--cert-key", certKey), ("--ca-file", caFile),
        ]
        .filter { $0.1 == "-" }.map(\.0)
        if let flag = noStdin.first {
            throw ValidationError("\(flag) does not read standard input ('-'): give the path of the file.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            if !hasInput { throw Self.noInput }
            let enrollments = try await loadEnrollments()
            // Read once, whatever the number of enrollments: standard input can be read only once.
            let inputs = try readInputs()
            var diagnoses: [(label: String?, diagnosis: Diagnosis)] = []
            for e in enrollments.isEmpty ? [nil] : enrollments.map(Optional.some) {
                let facts = try await gatherFacts(enrollment: e, inputs: inputs)
                let label = e.map { "\($0.tenantSlug)/\($0.deviceID) (\($0.role.rawValue))" }
                diagnoses.append((enrollments.count > 1 ? label : nil, Diagnoser.diagnose(facts)))
            }
            var reconciliation: [Finding] = []
            if store != nil, let email {
                reconciliation = ReconciliationFindings.findings(enrollments, scope: .email(email))
            } else if store != nil, let team, let tenant {
                reconciliation = ReconciliationFindings.findings(enrollments, scope: .team(tenant: tenant, team: team))
            }
            print(diagnoses, reconciliation: reconciliation)
            if diagnoses.contains(where: { $0.diagnosis.hasVerdict }) { throw ExitCode(ExitStatus.failed) }
        }
    }

    // MARK: Inputs

    /// Whether anything was given to judge: a flag, or a credential, provider token or server setting from
    /// the environment. (`$APNS_TOPIC` alone is not enough: a topic says nothing about delivery by itself.)
    var hasInput: Bool {
        let process = ProcessInfo.processInfo.environment
        let flags: [Any?] = [
            enrollment, storeSource?.value, tokenUpdate, buildEnvironment, env, token, topic, pushType, priority,
            expiration, collapseId, payload, key, keyId, teamId, keyEnvironment, cert, providerToken, providerTokenFile,
            tokenRefreshMinutes, build, distribution,
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
                path, what: "enrollment record", flag: "--enrollment", maximumSize: Self.maximumJSONSize)
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
                    path, what: "token-update body", flag: "--token-update", maximumSize: Self.maximumJSONSize))
            if let error = TokenUpdateRules.fileShapeError(body, label: "--token-update \(path)") { throw error }
            inputs.tokenUpdateBody = body
        }
        if let path = payload {
            // Read as `kkpush send` reads it: an Xcode .apns file's Simulator Target Bundle is the topic, not payload.
            let bytes = try InputFile.read(
                path, what: "payload file", flag: "--payload", maximumSize: Self.maximumJSONSize)
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
            report = try BuildInspector.inspect(path: path)
        } catch let e as KKPushError {
            // An unreadable build is an unusable input (exit 2), whatever the reason.
            throw CLIError.input(e.code, "--build: \(e.message)", fix: e.fix ?? "Pass a readable build.")
        }
        guard let aps = report.apsEnvironment else {
            throw CLIError.input(
                "build-aps-missing",
                "--build \(path) is signed without aps-environment: the app gets no device token at all, so no push can reach it.",
                fix: "Enable the Push Notifications capability for the App ID and the target, and re-sign.")
        }
        let problems = report.problems.filter { $0.code != "build-aps-missing" }
        let distribution = report.distribution.flatMap(BuildPushJudgement.appDistribution)
        return DiagnosisFacts.SignedBuild(
            apsEnvironment: aps, distribution: distribution,
            source: "--build \(path): \(report.apsEnvironmentSource ?? "signed")", problems: problems,
            label: report.distribution == .appStore ? "an App Store Connect build (TestFlight or the App Store)" : nil)
    }

    func gatherFacts(enrollment: Enrollment?, inputs: Inputs) async throws -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now.flatMap(InputNumbers.date(unixSeconds:)) ?? Date())
        f.enrollment = enrollment
        let process = ProcessInfo.processInfo.environment
        f.settings = server.settings(environment: process)
        f.buildEnvironmentFlag = buildEnvironment
        f.signedBuild = inputs.signedBuild
        f.testUserFlag = testUser
        f.sendEnvironment = env.flatMap(APNsEnvironment.init(lenient:))
        f.deviceTokenFlag = token
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
            if f.topic == nil { f.topic = file.topic }
        }

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
                        path, what: "signing key", flag: key == nil ? "APNS_KEY_PATH" : "--key", maximumSize: 1 << 20)
                }
                do { signingKey = try signing.load() } catch let e as KKPushError { k.loadError = e.message }
            }
            f.key = k
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
            _ = try InputFile.read(cert, what: "certificate", flag: "--cert", maximumSize: 1 << 20)
            if let certKey {
                _ = try InputFile.read(
                    certKey, what: "certificate's private key", flag: "--cert-key", maximumSize: 1 << 20)
            }
            var c = DiagnosisFacts.Certificate(file: cert)
            do {
                let loaded =
                    try certKey.map {
                        try ClientCredential.loadPEM(certificatePath: cert, keyPath: $0, password: certPassword)
                    }
                    ?? ClientCredential.loadPKCS12(path: cert, password: certPassword)
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
            f.providerToken = decodeProviderToken(providerToken, key: signingKey, now: f.now)
        }
        if let m = tokenRefreshMinutes { f.providerTokenRefreshInterval = m * 60 }

        if probe {
            f.probe = try await runProbe(facts: f, signingKey: signingKey, clientCredential: clientCredential)
        }
        return f
    }

    func decodeProviderToken(_ token: String, key: ES256PrivateKey?, now: Date) -> DiagnosisFacts.ProviderTokenSeen {
        let decoded: DecodedProviderToken
        do {
            decoded = try ProviderToken.decode(token)
        } catch {
            return DiagnosisFacts.ProviderTokenSeen(kid: nil, iss: nil, issuedAt: nil, invalidReason: error.message)
        }
        let iatPresent = decoded.claims["iat"] != nil
        var seen = DiagnosisFacts.ProviderTokenSeen(
            kid: decoded.kid, iss: decoded.iss, issuedAt: decoded.issuedAt,
            iatNotInteger: iatPresent && decoded.iat == nil)
        if let iat = decoded.iat, decoded.issuedAt == nil {
            seen.invalidReason = "The iat claim \(iat) is not a UNIX time between 1970 and 9999."
        }
        // What APNs checks without the key: ES256, a kid and an iss, an iat.
        if decoded.alg != "ES256" {
            seen.invalidReason =
                "Its alg is \(decoded.alg.map { "'\($0)'" } ?? "missing"), not ES256 (is it another JWT, such as a device JWT?)."
        } else if decoded.kid == nil {
            seen.invalidReason = "Its header has no kid (the key id)."
        } else if decoded.iss == nil {
            seen.invalidReason = "Its claims have no iss (the team id)."
        } else if !iatPresent {
            seen.invalidReason = "Its claims have no iat (when it was issued)."
        }
        if let key {
            // Judge the signature only: age and clock are judged against `now` by the rules.
            if case .invalid(let failure) = ProviderToken.verify(
                token, key: key.publicKey, now: decoded.issuedAt ?? now),
                failure.code == "bad-signature" || failure.code == "wrong-alg"
            {
                seen.invalidReason = failure.message
            }
        }
        return seen
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
        let credential: APNsCredential
        if let signingKey, let k = f.key {
            credential = .token(ProviderTokenCache(key: signingKey, keyID: k.keyID, teamID: k.teamID))
        } else if let clientCredential {
            credential = try .certificate(clientCredential)
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

    // MARK: Output

    func print(_ diagnoses: [(label: String?, diagnosis: Diagnosis)], reconciliation: [Finding] = []) {
        func findingValue(_ f: Finding) -> JSONValue {
            [
                "severity": .string(f.severity.rawValue), "code": .string(f.code), "message": .string(f.message),
                "fix": .string(f.fix), "why": .string(f.why), "confirmed": .bool(f.confirmed),
            ]
        }
        if json {
            func object(_ d: Diagnosis) -> [String: JSONValue] {
                [
                    "verdict": d.verdict.map {
                        [
                            "code": .string($0.code), "message": .string($0.message), "fix": .string($0.fix),
                            "why": .string($0.why),
                        ]
                    } ?? .null,
                    "findings": .array(
                        d.findings.map {
                            [
                                "severity": .string($0.severity.rawValue), "code": .string($0.code),
                                "message": .string($0.message), "fix": .string($0.fix), "why": .string($0.why),
                                "confirmed": .bool($0.confirmed),
                            ]
                        }),
                    "push_environment": JSONValue(d.pushEnvironment?.rawValue),
                    "token_environment": JSONValue(d.tokenEnvironment?.rawValue),
                    "blocks_delivery": .bool(d.blocksDelivery),
                    "inconclusive": .bool(d.inconclusive),
                ]
            }
            if diagnoses.count == 1 {
                var top = object(diagnoses[0].diagnosis)
                if !reconciliation.isEmpty { top["reconciliation"] = .array(reconciliation.map(findingValue)) }
                Output.printJSON(.object(top))
            } else {
                // Several enrollments: the first blocking verdict on top, then one entry per enrollment.
                let first = diagnoses.first { $0.diagnosis.hasVerdict }?.diagnosis ?? diagnoses[0].diagnosis
                var top = object(first)
                top["enrollments"] = .array(
                    diagnoses.map { entry in
                        var o = object(entry.diagnosis)
                        o["enrollment"] = .string(entry.label ?? "")
                        return .object(o)
                    })
                if !reconciliation.isEmpty { top["reconciliation"] = .array(reconciliation.map(findingValue)) }
                Output.printJSON(.object(top))
            }
            return
        }
        for (label, d) in diagnoses {
            if let label { Swift.print("== \(label)") }
            if let v = d.verdict, d.inconclusive {
                Swift.print("Verdict: the path could not be checked (\(v.code)): \(v.message)")
                Swift.print("  why: \(v.why)")
                Swift.print("  fix: \(v.fix)")
            } else if let v = d.verdict {
                Swift.print("Verdict: \(v.code): \(v.message)")
                Swift.print("  why: \(v.why)")
                Swift.print("  fix: \(v.fix)")
            } else {
                Swift.print("Verdict: nothing found that blocks delivery.")
            }
            let env = [
                d.pushEnvironment.map { "pushes go to \($0)" }, d.tokenEnvironment.map { "the token is a \($0) token" },
            ]
            .compactMap { $0 }
            if !env.isEmpty {
                Swift.print(
                    "Routing: \(env.joined(separator: "; "))\(d.inconclusive ? " (unconfirmed: from the configuration)" : "")"
                )
            }
            let rest = d.findings.filter { $0 != d.verdict }
            if !rest.isEmpty {
                Swift.print("Findings:")
                for f in rest {
                    let mark = f.confirmed ? " (probe)" : d.inconclusive ? " (unconfirmed: from the configuration)" : ""
                    Swift.print("  \(f.severity.rawValue) \(f.code)\(mark): \(f.message)")
                    Swift.print("    fix: \(f.fix)")
                }
            }
        }
        for f in reconciliation {
            Swift.print("== Enrollment reconciliation")
            Swift.print("  \(f.severity.rawValue) \(f.code): \(f.message)")
            Swift.print("    why: \(f.why)")
            Swift.print("    fix: \(f.fix)")
        }
    }
}
