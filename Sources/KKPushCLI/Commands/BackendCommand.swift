import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushClient
import KKPushCore
import Logging

/// `kkpush backend`: the simulated Kantine Koning backend and its enrollment database.
struct BackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend",
        abstract: "Run the simulated Kantine Koning backend, and export/import/enroll into its enrollment database.",
        subcommands: [BackendServeCommand.self, BackendExportCommand.self, BackendImportCommand.self, BackendEnrollCommand.self]
    )
}

/// The enrollment-database option shared by the backend commands.
struct BackendDatabaseOptions: ParsableArguments {
    @Option(help: "The enrollment database (SQLite file; created if missing).")
    var db: String = "kkpush-backend.sqlite"
}

/// The JWT secret option shared by the backend commands.
struct BackendSecretOptions: ParsableArguments {
    @Option(help: "The device-JWT secret, 16+ bytes (default: $KKPUSH_BACKEND_SECRET; prefer it or --secret-file). Make one: openssl rand -hex 32")
    var secret: String?
    @Option(name: .customLong("secret-file"), help: "A file holding the device-JWT secret ('-' for stdin).")
    var secretFile: String?

    /// Checks that a secret is given once (without reading a file: stdin is read once, in run()).
    func check() throws {
        if secret != nil, secretFile != nil { throw ValidationError("Give --secret or --secret-file, not both.") }
        if secret == nil, secretFile == nil, (ProcessInfo.processInfo.environment["KKPUSH_BACKEND_SECRET"] ?? "").isEmpty {
            throw ValidationError("Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32)).")
        }
    }

    func resolved() throws -> String {
        guard let value = try Secrets.resolve(Secrets.backendSecret, flag: secret, file: secretFile), !value.isEmpty else {
            throw ValidationError("Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32)).")
        }
        return value
    }
}

/// `kkpush backend serve`.
struct BackendServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the simulated backend over plain HTTP/1.1 on 127.0.0.1 until interrupted.",
        discussion: """
            App API (Bearer: the enrollment's device JWT): POST \(TokenUpdate.path) (the token update), \
            GET /api/mobile/v1/diensten?tenant=<slug>[&past_days=365&future_days=60]. Admin API: POST /admin/enrollments \
            (returns the signed JWT), GET /admin/enrollments, POST /admin/enrollments/import, \
            POST /admin/enrollments/<tenant>/<device_id>/revoke, GET /admin/diensten, POST /admin/diensten/<id> (changes a \
            dienst and pushes the dienst update to its team's devices); admin requests with an Origin header (from a \
            browser) are refused with 403, and with --admin-token (or KKPUSH_ADMIN_TOKEN) need Authorization: Bearer \
            <token>. Seed: vvwilhelmus (JO11-3, JO11-5, JO13-1), \
            agovv (JO10-5). Pushes need --key/--key-id/--team-id; without them dienst changes push nothing. Each \
            enrollment's APNs environment is resolved with APNS_FORCE_ENV/APNS_ENV (flags or --from-process-env).
            """
    )

    @Option(help: "TCP port (0 picks a free one).") var port: Int = 4000
    @Option(help: "Address to listen on: 127.0.0.1 (loopback only).") var host: String = "127.0.0.1"
    @OptionGroup var database: BackendDatabaseOptions
    @OptionGroup var secretOptions: BackendSecretOptions
    @Option(name: .customLong("import"), help: "Upsert the enrollments of this JSON file (an export) before serving.")
    var importFile: String?
    @Option(name: .customLong("admin-token"), help: "Require 'Authorization: Bearer <token>' on the admin API (default: $KKPUSH_ADMIN_TOKEN; prefer it or --admin-token-file).")
    var adminToken: String?
    @Option(name: .customLong("admin-token-file"), help: "A file holding the admin token ('-' for stdin).")
    var adminTokenFile: String?
    @Option(name: .customLong("bundle-id"), help: "The app's bundle id (push topic).") var bundleID: String = TokenUpdate.defaultBundleID
    @Option(name: .customLong("force-env"), help: "The server's APNS_FORCE_ENV.") var forceEnv: String?
    @Option(name: .customLong("server-apns-env"), help: "The server's legacy APNS_ENV.") var serverApnsEnv: String?
    @Flag(name: .customLong("from-process-env"), help: "Read APNS_FORCE_ENV and APNS_ENV from the environment (flags win).")
    var fromProcessEnv = false
    @Option(help: "Signing key (.p8) for pushes.") var key: String?
    @Option(name: .customLong("key-id"), help: "The key's Key ID.") var keyID: String?
    @Option(name: .customLong("team-id"), help: "The Team ID.") var teamID: String?
    @Option(name: .customLong("sandbox-url"), help: "Sandbox endpoint, e.g. the mock's https://127.0.0.1:2197 (default Apple's).")
    var sandboxURL: String?
    @Option(name: .customLong("production-url"), help: "Production endpoint (default Apple's).") var productionURL: String?
    @Option(name: .customLong("ca-file"), help: "CA file to trust for --sandbox-url/--production-url.") var caFile: String?
    @Flag(name: .shortAndLong, help: "Log requests and pushes to stderr.") var verbose = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535.") }
        guard ["127.0.0.1", "localhost", "::1"].contains(host) else {
            throw ValidationError("--host must be a loopback address (127.0.0.1, ::1): the simulated backend is not for networks.")
        }
        if key != nil, keyID == nil || teamID == nil { throw ValidationError("--key needs --key-id and --team-id.") }
        if adminToken != nil, adminTokenFile != nil { throw ValidationError("Give --admin-token or --admin-token-file, not both.") }
        if secretOptions.secretFile == "-", adminTokenFile == "-" { throw ValidationError("Only one of --secret-file and --admin-token-file can be - (stdin).") }
        if key == nil, keyID != nil || teamID != nil || sandboxURL != nil || productionURL != nil {
            throw ValidationError("--key-id, --team-id and the endpoint URLs go with --key.")
        }
        try secretOptions.check()
    }

    func run() async throws {
        var logger = Logger(label: "kkpush.backend")
        logger.logLevel = verbose ? .debug : .warning
        var settings = fromProcessEnv ? ServerAPNsSettings.from(environment: ProcessInfo.processInfo.environment) : ServerAPNsSettings()
        if let forceEnv { settings.forceEnv = forceEnv }
        if let serverApnsEnv { settings.legacyAPNSEnv = serverApnsEnv }
        for warning in EnvironmentResolver.resolve(buildEnvironment: BuildEnvironment.production, settings: settings).warnings
        where warning.code.hasPrefix("force") || warning.code.hasPrefix("server") {
            Output.printError("warning \(warning.code): \(warning.message)\n  fix: \(warning.fix)")
        }
        let configuration = SimulatedBackendConfiguration(
            host: host, port: port, secret: try secretOptions.resolved(), settings: settings, bundleID: bundleID,
            adminToken: try Secrets.resolve(Secrets.adminToken, flag: adminToken, file: adminTokenFile), logger: logger)

        try await reportingErrors {
            // withStore closes the store once, also when the import or the server fails.
            try await SQLiteEnrollmentStore.withStore(path: database.db, logger: logger) { store in
                if let importFile {
                    let data = try readFile(importFile)
                    let n = try await store.importJSON(data)
                    Output.printError("imported \(n) enrollment(s) from \(importFile)")
                }
                let count = try await store.all().count
                let diensten = DienstStore(DienstStore.seed(now: Date()))
                let client = try makeClient(logger: logger)
                let sender: (any PushSender)? = client.map { APNsClientPushSender(client: $0) }
                let db = database.db
                try await runSimulatedBackend(configuration: configuration, store: store, diensten: diensten, sender: sender) { backend in
                    let line = "kkpush backend listening on \(backend.baseURL) (database \(db), \(count) enrollment(s); pushes \(sender == nil ? "off: no --key" : "on"))\n"
                    FileHandle.standardOutput.write(Data(line.utf8))
                }
                await client?.shutdown()
            }
        }
    }

    private func makeClient(logger: Logger) throws -> APNsClient? {
        guard let key, let keyID, let teamID else { return nil }
        let signingKey = try ES256PrivateKey(contentsOfFile: key)
        let cache = ProviderTokenCache(key: signingKey, keyID: keyID, teamID: teamID)
        let sandbox = try sandboxURL.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .sandbox) } ?? .sandbox
        let production = try productionURL.map { try APNsEndpoint.parse(url: $0, caFile: caFile, environment: .production) } ?? .production
        return try APNsClient(configuration: APNsClientConfiguration(
            credential: .token(cache), sandboxEndpoint: sandbox, productionEndpoint: production, logger: logger))
    }
}

/// `kkpush backend export`.
struct BackendExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write every enrollment of the database as a JSON array (stdout or --output).")

    @OptionGroup var database: BackendDatabaseOptions
    @Option(name: .shortAndLong, help: "Write to this file instead of standard output.") var output: String?

    func run() async throws {
        guard FileManager.default.fileExists(atPath: database.db) else {
            throw CLIError.input("store-missing", "the enrollment database '\(database.db)' does not exist.",
                fix: "Give the database the backend writes (kkpush backend serve --db FILE).")
        }
        try await reportingErrors {
            let data = try await SQLiteEnrollmentStore.withStore(path: database.db) { try await $0.exportJSON() }
            if let output {
                try data.write(to: URL(fileURLWithPath: output))
            } else {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        }
    }
}

/// `kkpush backend import`.
struct BackendImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Upsert the enrollments of a JSON array (an export) into the database, all or nothing.")

    @Argument(help: "The JSON file ('-' for standard input).") var file: String
    @OptionGroup var database: BackendDatabaseOptions

    func run() async throws {
        try await reportingErrors {
            let data = try readFile(file)
            let n = try await SQLiteEnrollmentStore.withStore(path: database.db) { try await $0.importJSON(data) }
            print("imported \(n) enrollment(s) into \(database.db)")
        }
    }
}

/// `kkpush backend enroll`.
struct BackendEnrollCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract: "Add an enrollment to the database and print its signed device JWT (for token verify and the app API).")

    @OptionGroup var database: BackendDatabaseOptions
    @OptionGroup var secretOptions: BackendSecretOptions
    @Option(help: "Tenant slug, e.g. vvwilhelmus.") var tenant: String
    @Option(help: "Team codes, comma-separated, e.g. JO11-3,JO11-5.") var teams: String
    @Option(help: "manager or member.") var role: String = "member"
    @Option(name: .customLong("hardware-identifier"), help: "The phone's identifierForVendor UUID.") var hardwareIdentifier: String
    @Option(name: .customLong("device-id"), help: "The enrollment's device id (default: a new one; an existing one is re-enrolled and its older JWTs refused).")
    var deviceID: String?
    @Option(help: "The manager's e-mail.") var email: String?
    @Flag(name: .customLong("test-user"), help: "Mark the enrollment as a test user.") var testUser = false
    @Option(help: "JWT lifetime in days (1 to 36500).") var days: Int = 365
    @Flag(help: "Print a JSON object: enrollment, signed_device_token.") var json = false

    func validate() throws {
        if UUID(uuidString: hardwareIdentifier) == nil {
            throw ValidationError("--hardware-identifier '\(hardwareIdentifier)' is not a UUID (identifierForVendor, nothing concatenated).")
        }
        if teamCodes.isEmpty { throw ValidationError("--teams needs at least one team code.") }
        if EnrollmentRole(rawValue: role) == nil { throw ValidationError("--role must be manager or member, not '\(role)'.") }
        try NumericFlags.integer(days, flag: "--days", in: Self.daysRange, unit: "days")
        try secretOptions.check()
    }

    /// The lifetimes `--days` accepts: a day to a hundred years.
    static let daysRange: ClosedRange<Int> = 1...36_500

    var teamCodes: [String] { teams.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty } }

    func run() async throws {
        try await reportingErrors {
            let jwt = try DeviceJWT(secret: try secretOptions.resolved(), lifetime: TimeInterval(days) * 86_400)
            let requested = Enrollment(
                deviceID: deviceID ?? "dev-" + UUID().uuidString.lowercased().prefix(12), tenantSlug: tenant, teamCodes: teamCodes,
                role: EnrollmentRole(rawValue: role) ?? .member, hardwareIdentifier: hardwareIdentifier, isTestUser: testUser,
                teamManagerEmail: role == "manager" ? email : nil, updatedAt: Date())
            // One transaction: a re-enrollment of an existing device id bumps its generation (its older JWTs
            // are refused from then on); the JWT is signed with it before the write, and nothing is
            // written unless the enrollment gets its token.
            let (enrollment, token) = try await SQLiteEnrollmentStore.withStore(path: database.db) {
                try await $0.enroll(requested) { try jwt.issue(for: $0) }
            }
            if json {
                let data = try JSONEncoder().encode(enrollment)
                Output.printJSON(["enrollment": try JSONSerialization.jsonObject(with: data), "signed_device_token": token] as [String: Any])
            } else {
                print("enrolled \(enrollment.id) in \(database.db)")
                print(token)
            }
        }
    }
}

private func readFile(_ path: String) throws -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    do {
        return try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw KKPushError(code: "file-unreadable", message: "Cannot read '\(path)': \(error.localizedDescription)",
            fix: "Check the path.")
    }
}
