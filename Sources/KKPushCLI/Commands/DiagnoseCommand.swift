import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushBuild
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushStore
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
            Accepted but never arrived: with the device's state (--app-state, --device-offline, \
            --background-pushes-per-hour) or the push's record in the mock's delivery log (--delivery FILE), the \
            push as sent (--push-type, --priority, --expiration, --collapse-id, --payload) is judged by what the \
            device does after APNs accepts it (Apple's documented rules: expiration 0 to an offline phone, one \
            stored push per app, the background budget, force-quit apps, alerts that run code only when opened, \
            collapse ids); a push that was delivered and ran the app's code gets no verdict of this kind.
            The app's receipts (--receipts FILE, matched by --apns-id, --delivery's apns-id or the payload's \
            kk_push_id) outrank those rules: a receipt that the push was received and handled means no "never \
            arrived" verdict (receipt-received, info); a receipt 'dropped' is receipt-dropped, naming the app's \
            handler; no receipt for a push the delivery record says ran code that posts one is receipt-missing (a \
            warning: the receipt path may be broken), never an APNs or environment verdict.
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
            let url = CommandIO.current.environment[EnrollmentStoreLocation.environmentVariable],
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

    @Option(
        name: .long,
        help:
            "The broadcast channel id the sender broadcasts to: diagnose a broadcast (--topic the plain bundle id) instead of a device push; with --probe, the channel is read in both environments."
    )
    var channel: String?

    @Option(
        name: .long,
        help: "For --probe --channel: the sandbox channel-management endpoint (default Apple's, port 2195).")
    var sandboxChannelsUrl: String?

    @Option(
        name: .long,
        help: "For --probe --channel: the production channel-management endpoint (default Apple's, port 2196).")
    var productionChannelsUrl: String?

    @Option(name: .long, parsing: .unconditional, help: "The apns-priority the sender uses.")
    var priority: Int?

    @Option(name: .long, parsing: .unconditional, help: "The apns-expiration the sender uses (UNIX time, or 0).")
    var expiration: Int?

    @Option(name: .long, help: "The apns-collapse-id the sender uses.")
    var collapseId: String?

    @Option(name: .long, help: "The payload the sender uses (JSON file).")
    var payload: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The app's state on the device when the push came (\(DiagnosisFacts.AppState.acceptedNames)): what the device did after APNs accepted the push joins the evidence.",
            valueName: "state"))
    var appState: String?

    @Flag(name: .long, help: "The device was offline when the push was sent.")
    var deviceOffline = false

    @Option(
        name: .long, parsing: .unconditional,
        help: "How many background (content-available) pushes the sender sends this device an hour.")
    var backgroundPushesPerHour: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The push's record in the mock's delivery log: the JSON of its admin API's GET /log?apns_id=ID (or one entry), or - for stdin; its headers and payload stand in for the flags not given.",
            valueName: "file"))
    var delivery: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The app's push receipts: the JSON of the backend's GET /admin/receipts, or JSON lines of receipts, or - for stdin; matched to the push by its apns-id (--apns-id, or --delivery's) or its payload's kk_push_id.",
            valueName: "file"))
    var receipts: String?

    @Option(name: .customLong("apns-id"), help: "The push's apns-id, to find its receipts (--receipts).")
    var apnsId: String?

    @Option(
        name: .customLong("activity-attributes"),
        help: ArgumentHelp(
            "The app's ActivityAttributes description (payload activity-attributes): a Live Activity --payload is judged as the device decodes it.",
            valueName: "file"))
    var activityAttributes: String?

    @OptionGroup var providerKey: ProviderKeyOptions
    var key: String? { providerKey.keyFile }
    var keyId: String? { providerKey.keyIDFlag }
    var teamId: String? { providerKey.teamIDFlag }

    @Option(name: .long, help: "The only environment the key is enabled for, if it is restricted (sandbox|production).")
    var keyEnvironment: String?

    @Option(
        name: .long,
        help:
            "A credentials file (JSON): its --credential entry is the key judged (environments, topics), and its teams are the ones the sender uses."
    )
    var credentials: String?

    @Option(name: .long, help: "With --credentials: the entry (a provider key) the sender uses.")
    var credential: String?

    @Option(
        name: .customLong("send-answer"),
        help: "The reason APNs gave a push made with these credentials (e.g. InvalidProviderToken).")
    var sendAnswer: String?

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
            ("--collapse-id", collapseId), ("--payload", payload), ("--channel", channel), ("--key", key),
            ("--key-id", keyId),
            ("--team-id", teamId), ("--key-environment", keyEnvironment), ("--cert", cert),
            ("--credentials", credentials), ("--credential", credential), ("--send-answer", sendAnswer),
            ("--cert-password-file", certPasswordFile), ("--cert-key", certKey), ("--provider-token", providerToken),
            ("--provider-token-file", providerTokenFile), ("--sandbox-url", sandboxUrl),
            ("--production-url", productionUrl),
            ("--ca-file", caFile), ("--proxy", proxy), ("--build", build), ("--distribution", distribution),
        ])
        try TextFlags.nonEmpty([("--delivery", delivery), ("--receipts", receipts), ("--apns-id", apnsId)])
        if let apnsId, UUID(uuidString: apnsId) == nil {
            throw ValidationError("--apns-id '\(apnsId)' is not an apns-id (a UUID, 8-4-4-4-12 hex digits).")
        }
        if apnsId != nil, receipts == nil {
            throw ValidationError("--apns-id finds the push's receipts: add --receipts FILE, or leave it out.")
        }
        if receipts != nil, apnsId == nil, delivery == nil, payload == nil {
            throw ValidationError(
                "--receipts needs the push to match: add --apns-id ID, --delivery FILE (its apns-id), or --payload FILE with the push's kk_push_id."
            )
        }
        if let appState, DiagnosisFacts.AppState(rawValue: appState) == nil {
            throw ValidationError("Unknown --app-state '\(appState)': use \(DiagnosisFacts.AppState.acceptedNames).")
        }
        try NumericFlags.integer(
            backgroundPushesPerHour, flag: "--background-pushes-per-hour", in: 0...1_000_000, unit: "pushes an hour")
        if build != nil, distribution != nil {
            throw ValidationError(
                "Give --build or --distribution, not both: the signed build tells its own distribution.")
        }
        if let distribution, AppDistribution(name: distribution) == nil {
            throw ValidationError(
                "Unknown --distribution '\(distribution)': use \(AppDistribution.acceptedNames).")
        }
        try endpoints.check(standInGiven: sandboxChannelsUrl != nil || productionChannelsUrl != nil)
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
        if credential != nil || sendAnswer != nil, credentials == nil {
            throw ValidationError("--credential and --send-answer go with --credentials FILE.")
        }
        if credential != nil, key != nil || keyId != nil || teamId != nil {
            throw ValidationError(
                "Give --credential (an entry of --credentials) or --key/--key-id/--team-id, not both.")
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
        let lookupFlags: [(String, String?)] = [
            ("--device-id", deviceId), ("--hardware-identifier", hardwareIdentifier), ("--email", email),
            ("--apns-token", apnsToken), ("--team", team),
        ]
        let lookups = lookupFlags.filter { $0.1 != nil }.map(\.0)
        if lookups.count > 1 {
            throw ValidationError(
                "Look the enrollment up one way: \(lookups.joined(separator: ", ")) were given; keep one.")
        }
        if store != nil, enrollment != nil {
            throw ValidationError("Give --enrollment FILE or --store DB, not both.")
        }
        if channel != nil, token != nil {
            throw ValidationError(
                "Give --token (a device push) or --channel (a broadcast), not both: they are different requests.")
        }
        if channel != nil, collapseId != nil {
            throw ValidationError("--collapse-id does not go with --channel: a broadcast has no collapse id.")
        }
        let channelURLs: [(String, String?)] = [
            ("--sandbox-channels-url", sandboxChannelsUrl), ("--production-channels-url", productionChannelsUrl),
        ]
        for (flag, url) in channelURLs {
            guard let url else { continue }
            if channel == nil || !probe {
                throw ValidationError("\(flag) is for --probe --channel only: add both, or leave it out.")
            }
            do { _ = try APNsEndpoint.parse(url: url) } catch let e as KKPushError {
                throw ValidationError("\(flag): \(e.message)\(e.fix.map { " \($0)" } ?? "")")
            }
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
        let stdinFlags: [(String, String?)] = [
            ("--cert-password-file", certPasswordFile), ("--provider-token-file", providerTokenFile),
            ("--token-update", tokenUpdate), ("--enrollment", enrollment), ("--payload", payload),
            ("--delivery", delivery), ("--receipts", receipts),
        ]
        let stdinInputs = stdinFlags.filter { $0.1 == "-" }.map(\.0)
        if stdinInputs.count > 1 {
            throw ValidationError(
                "Only one input can come from stdin ('-'), not \(stdinInputs.joined(separator: " and ")).")
        }
        let fileFlags: [(String, String?)] = [
            ("--store", store), ("--key", key), ("--cert", cert), ("--cert-key", certKey), ("--ca-file", caFile),
        ]
        let noStdin = fileFlags.filter { $0.1 == "-" }.map(\.0)
        if let flag = noStdin.first {
            throw ValidationError("\(flag) does not read standard input ('-'): give the path of the file.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            if !hasInput { throw Self.noInput }
            let enrollments = try await loadEnrollments()
            // Read once, whatever the number of enrollments: standard input can be read only once.
            let request = try makeRequest()
            var scope: ReconciliationFindings.Scope?
            if store != nil, let email {
                scope = .email(email)
            } else if store != nil, let team, let tenant {
                scope = .team(tenant: tenant, team: team)
            }
            let report = try await Self.inCommandWords {
                try await DiagnosisGathering.run(request, enrollments: enrollments, reconciliation: scope)
            }
            Output.printReport(report.mapping(FlagWords.common.apply), json: json)
            if report.hasVerdict { throw ExitCode(ExitStatus.failed) }
        }
    }
}
