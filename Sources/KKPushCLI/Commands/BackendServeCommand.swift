import ArgumentParser
import Foundation
import KKPushActivities
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushQueue
import KKPushStore
import KKPushSystem
import KantineKoning
import Logging

/// `kkpush backend serve`.
struct BackendServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the simulated backend over plain HTTP/1.1 on 127.0.0.1 until interrupted.",
        discussion: """
            App API (Bearer: the enrollment's device JWT): POST \(TokenUpdate.path) (the token update), \
            GET /api/mobile/v1/diensten?tenant=<slug>[&past_days=365&future_days=60], GET \
            /api/mobile/v1/tenant?tenant=<slug> (tenant info: teams, enrollment_open, season_ended), POST \
            /api/mobile/v1/enrollments/sync (enrollment reconciliation within the caller's hardware identifier, once an \
            hour per phone), POST /api/mobile/v1/push-receipts (a push receipt: apns_id or push_id, received_at, \
            handled; recorded per push, and with --receipts-db on the push queue row). A token update's live_activity \
            tokens (push-to-start tokens, activity update tokens, activity states) are recorded in the activity \
            registry of --activity-registry under the enrollment's <tenant>/<device_id>, and the answer's \
            live_activity says what became of each; without it they are checked and the answer says they were not \
            recorded. Admin API: GET /admin/receipts, POST /admin/enrollments \
            (returns the signed JWT), GET /admin/enrollments, POST /admin/enrollments/import, \
            POST /admin/enrollments/<tenant>/<device_id>/revoke, GET /admin/diensten, POST /admin/diensten/<id> (changes a \
            dienst and pushes the dienst update to its team's devices), GET /admin/tenants, POST /admin/tenants/<slug> \
            (sets enrollment_open, season_ended, name, teams); admin requests with an Origin header (from a \
            browser) are refused with 403, and with --admin-token (or KKPUSH_ADMIN_TOKEN) need Authorization: Bearer \
            <token>. Seed: vvwilhelmus (JO11-3, JO11-5, JO13-1), \
            agovv (JO10-5). Pushes need --key/--key-id/--team-id; without them dienst changes push nothing. Each \
            enrollment's APNs environment is resolved with APNS_FORCE_ENV/APNS_ENV (read from the environment; \
            --apns-force-env/--apns-env win, --ignore-process-env stops reading it). \
            POST /admin/enrollments with the device_id of an existing enrollment is refused (409 enrollment-exists) \
            unless the body has "replace": true. Bad requests get a 4xx JSON error naming the field. \
            Stops on SIGINT (Ctrl-C) or SIGTERM: closes the connections and the database, exit status 0.
            """
    )

    @Option(parsing: .unconditional, help: "TCP port, 0 to 65535 (0 picks a free one).") var port: Int = 4000
    @Option(help: "Address to listen on: 127.0.0.1 (loopback only).") var host: String = "127.0.0.1"
    @OptionGroup var database: BackendDatabaseOptions
    @OptionGroup var secretOptions: BackendSecretOptions
    @Option(
        name: .customLong("import"),
        help:
            "Upsert the enrollments of this JSON file (an export) before serving: new ones are added, ones with the same tenant and device id replaced (the output says which)."
    )
    var importFile: String?
    @Option(
        name: .customLong("admin-token"),
        help:
            "Require 'Authorization: Bearer <token>' on the admin API (default: $KKPUSH_ADMIN_TOKEN; prefer it or --admin-token-file)."
    )
    var adminToken: String?
    @Option(name: .customLong("admin-token-file"), help: "A file holding the admin token ('-' for stdin).")
    var adminTokenFile: String?
    @Option(
        name: .customLong("receipts-db"),
        help:
            "The push queue's PostgreSQL database: each push receipt the app posts is recorded on its push's queue row too (kkpush receipts reads them; schema version 3)."
    )
    var receiptsDB: String?
    @Option(
        name: .customLong("activity-registry"),
        help:
            "The Live Activity registry (an SQLite file or a postgres:// URL, migrated on open): the token updates' live_activity tokens are recorded in it."
    )
    var activityRegistry: String?
    @Option(name: .customLong("bundle-id"), help: "The app's bundle id (push topic).") var bundleID: String =
        TokenUpdate.defaultBundleID
    @OptionGroup(title: "Server settings") var server: ServerSettingsOptions
    @Option(help: "Signing key (.p8) for pushes.") var key: String?
    @Option(name: .customLong("key-id"), help: "The key's Key ID.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "The Team ID.") var teamID: String?
    @Option(
        name: .customLong("sandbox-url"),
        help: "Sandbox endpoint, e.g. the mock's https://127.0.0.1:2197 (default Apple's).")
    var sandboxURL: String?
    @Option(name: .customLong("production-url"), help: "Production endpoint (default Apple's).") var productionURL:
        String?
    @Option(name: .customLong("ca-file"), help: "CA file to trust for --sandbox-url/--production-url.") var caFile:
        String?
    @Flag(name: .shortAndLong, help: "Log requests and pushes to stderr.") var verbose = false

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port \(port) is out of range: give 0 to 65535 (0 picks a free one).")
        }
        guard ["127.0.0.1", "localhost", "::1"].contains(host) else {
            throw ValidationError(
                "--host must be a loopback address (127.0.0.1, ::1): the simulated backend is not for networks.")
        }
        if key != nil, keyID == nil || teamID == nil { throw ValidationError("--key needs --key-id and --team-id.") }
        if adminToken != nil, adminTokenFile != nil {
            throw ValidationError("Give --admin-token or --admin-token-file, not both.")
        }
        if secretOptions.secretFile == "-", adminTokenFile == "-" {
            throw ValidationError("Only one of --secret-file and --admin-token-file can be - (stdin).")
        }
        if importFile == "-", secretOptions.secretFile == "-" || adminTokenFile == "-" {
            throw ValidationError("Only one of --import, --secret-file and --admin-token-file can be - (stdin).")
        }
        if key == nil, keyID != nil || teamID != nil || sandboxURL != nil || productionURL != nil || caFile != nil {
            throw ValidationError("--key-id, --team-id, --sandbox-url, --production-url and --ca-file go with --key.")
        }
        if bundleID.trimmingWhitespace().isEmpty {
            throw ValidationError(
                "--bundle-id is empty: give the app's bundle id, for example \(TokenUpdate.defaultBundleID).")
        }
        try secretOptions.check()
    }

    /// The shortest admin token accepted.
    static let minimumAdminTokenLength = 16

    func run() async throws {
        var logger = Logger(label: "kkpush.backend")
        logger.logLevel = verbose ? .debug : .warning
        try await reportingErrors {
            let settings = server.settings()
            for warning in EnvironmentResolver.resolve(
                buildEnvironment: BuildEnvironment.production, settings: settings
            ).warnings
            where TokenUpdateRules.serverSettingCodes.contains(warning.code) {
                let warning = FlagWords.common.apply(warning)
                Output.printError("warning \(warning.code): \(warning.message)\n  fix: \(warning.fix)")
            }
            let admin = try Secrets.resolve(Secrets.adminToken, flag: adminToken, file: adminTokenFile)
            if let admin {
                try Self.checkAdminToken(
                    admin,
                    origin: adminToken != nil
                        ? "--admin-token" : adminTokenFile.map { "--admin-token-file \($0)" } ?? "KKPUSH_ADMIN_TOKEN")
            }
            let configuration = SimulatedBackendConfiguration(
                host: host, port: port, secret: try secretOptions.resolved(), settings: settings, bundleID: bundleID,
                adminToken: admin, logger: logger)
            let importData = try importFile.map {
                Data(try InputFile.read($0, what: "enrollments file", label: "--import"))
            }
            if let caFile {
                _ = try InputFile.readText(caFile, what: "CA file", label: "--ca-file", maximumSize: 1 << 20)
            }
            let location = try database.location()
            let mapping = try database.mapping()
            // Signals are caught from here on (after reading standard input, which may wait): a SIGINT or
            // SIGTERM while starting stops the server as soon as it runs.
            let signals = TerminationSignals()
            defer { signals.cancel() }
            let client = try makeClient(logger: logger)
            let db = location.display
            let stopped: Int32
            do {
                // withStore closes the store once, also when the import or the server fails. On PostgreSQL it holds
                // a pool of connections, which reconnects by itself after the database restarts.
                stopped = try await EnrollmentStores.withStore(
                    location, mapping: mapping, poolSize: PostgresEnrollmentStore.defaultPoolSize, logger: logger
                ) { store in
                    if let importData, let importFile {
                        let result = try await EnrollmentImportReport.run(
                            importData, source: "The --import file \(importFile)", into: store)
                        Output.printError("imported \(result.summary) from \(importFile)")
                    }
                    let count = try await store.all().count
                    let diensten = DienstStore(DienstStore.seed(now: Date()))
                    let sender: (any PushSender)? = client.map { APNsClientPushSender(client: $0) }
                    // The push queue of --receipts-db, checked before the backend listens; closed when it stops.
                    var receipts: PushQueueStore?
                    if let receiptsDB { receipts = try await ReceiptsCommand.queueStore(receiptsDB) }
                    let queue = receipts
                    // The activity registry of --activity-registry, opened (and migrated) before the backend listens.
                    var registry: (any ActivityRegistry)?
                    do {
                        if let activityRegistry {
                            registry = try await ActivityRegistries.open(
                                activityRegistry, origin: "(activityRegistry)")
                        }
                    } catch {
                        await queue?.close()
                        throw error
                    }
                    let activities = registry
                    do {
                        let stopped = try await withSimulatedBackend(
                            configuration: configuration, store: store, diensten: diensten, sender: sender,
                            activities: activities
                        ) { backend in
                            if let queue { await backend.router.receipts.setSink(ReceiptsCommand.queueSink(queue)) }
                            let line =
                                "kkpush backend listening on \(backend.baseURL) (database \(db) from \(location.origin), \(count) enrollment(s); pushes \(sender == nil ? "off: no --key" : "on")\(queue == nil ? "" : "; receipts recorded on the push queue")); stop with Ctrl-C or SIGTERM\n"
                            CommandIO.current.write(bytes: Array(line.utf8))
                            return await signals.wait()
                        }
                        await queue?.close()
                        await activities?.close()
                        return stopped
                    } catch {
                        await queue?.close()
                        await activities?.close()
                        throw error
                    }
                }
            } catch {
                await client?.shutdown()
                throw error
            }
            await client?.shutdown()
            Output.printError(
                "kkpush backend stopped (\(stopped == SIGTERM ? "SIGTERM" : "SIGINT")); database \(db) closed")
        }
    }

    /// An admin token must be long enough not to be guessed, and sendable in a header.
    static func checkAdminToken(_ token: String, origin: String) throws {
        if token.contains(where: {
            $0.isWhitespace || !$0.isASCII || $0.asciiValue.map { $0 < 0x21 || $0 > 0x7E } == true
        }) {
            throw CLIError.usage(
                .adminTokenInvalidCharacters,
                "The admin token (\(origin)) has spaces or characters other than printable ASCII; it could not be sent as 'Authorization: Bearer <token>'.",
                fix: "Make one: openssl rand -hex 16")
        }
        if token.count < minimumAdminTokenLength {
            throw CLIError.usage(
                .adminTokenShort,
                "The admin token (\(origin)) is \(token.count) characters; it needs at least \(minimumAdminTokenLength).",
                fix:
                    "Make one: openssl rand -hex 16 > admin.token; chmod 600 admin.token; then --admin-token-file admin.token."
            )
        }
    }

    private func makeClient(logger: Logger) throws -> APNsClient? {
        guard let key, let keyID, let teamID else { return nil }
        let signingKey = try ES256PrivateKey(contentsOfFile: key)
        let cache = ProviderTokenCache(key: signingKey, keyID: keyID, teamID: teamID)
        let sandbox =
            try sandboxURL.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .sandbox) } ?? .sandbox
        let production =
            try productionURL.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .production) }
            ?? .production
        return try APNsClient(
            configuration: APNsClientConfiguration(
                credential: .token(cache), sandboxEndpoint: sandbox, productionEndpoint: production, logger: logger))
    }
}
