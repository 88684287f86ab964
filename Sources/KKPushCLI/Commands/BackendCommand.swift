import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushClient
import KKPushCore
import KantineKoning
import Logging

/// `kkpush backend`: the simulated Kantine Koning backend and its enrollment database.
struct BackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend",
        abstract: "Run the simulated Kantine Koning backend, and export/import/enroll into its enrollment database.",
        subcommands: [
            BackendServeCommand.self, BackendExportCommand.self, BackendImportCommand.self, BackendEnrollCommand.self,
            BackendMigrateCommand.self,
        ]
    )
}

/// The enrollment-database options of the backend commands that write (serve, import, enroll, migrate).
struct BackendDatabaseOptions: ParsableArguments {
    @Option(
        help:
            "The enrollment database: an SQLite file (created if missing, its folder must exist) or a PostgreSQL connection string as libpq reads it: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...&sslrootcert=...] or key=value pairs (host=... dbname=...), with the PG* variables and ~/.pgpass (default: $DATABASE_URL, else kkpush-backend.sqlite)."
    )
    var db: String?
    @Option(
        name: .customLong("schema-map"),
        help:
            "With a postgres:// database: a JSON file naming the table and mapping kkpush's column names to its own ({\"table\": \"public.enrollments\", \"columns\": {\"device_id\": \"id\"}})."
    )
    var schemaMap: String?

    /// The database: --db, else DATABASE_URL, else kkpush-backend.sqlite; an SQLite path is checked for writing.
    func location() throws -> EnrollmentStoreLocation {
        try BackendStoreOptions.location(db, mustExist: false)
    }

    /// The --schema-map file, read.
    func mapping() throws -> EnrollmentTableMapping? { try BackendStoreOptions.mapping(schemaMap) }
}

/// The enrollment-database options of `backend export`, which only reads.
struct BackendExistingDatabaseOptions: ParsableArguments {
    @Option(
        help:
            "The enrollment database to read: an SQLite file that backend serve, enroll or import wrote (it must exist: export does not create one), or a postgres:// URL (default: $DATABASE_URL, else kkpush-backend.sqlite)."
    )
    var db: String?
    @Option(
        name: .customLong("schema-map"),
        help: "With a postgres:// database: a JSON file naming the table and mapping kkpush's column names to its own."
    )
    var schemaMap: String?

    func location() throws -> EnrollmentStoreLocation {
        try BackendStoreOptions.location(db, mustExist: true)
    }

    func mapping() throws -> EnrollmentTableMapping? { try BackendStoreOptions.mapping(schemaMap) }
}

/// How the backend commands resolve `--db` (or DATABASE_URL) and `--schema-map`.
enum BackendStoreOptions {
    /// The default SQLite file.
    static let defaultPath = "kkpush-backend.sqlite"

    /// `value` (a flag's) as a store location; a bad postgres:// URL is a usage error naming the part at fault.
    static func parse(_ value: String, origin: String) throws -> EnrollmentStoreLocation {
        try EnrollmentStoreLocation.parse(value, origin: origin)
    }

    /// --db, else $DATABASE_URL, else the default file; an SQLite path is checked (BackendDatabasePath).
    static func location(_ db: String?, mustExist: Bool) throws -> EnrollmentStoreLocation {
        let location = try EnrollmentStoreLocation.resolve(flagValue: db, flag: "--db", defaultPath: defaultPath)!
        if let path = location.sqlitePath { try BackendDatabasePath.check(path, mustExist: mustExist) }
        return location
    }

    static func mapping(_ schemaMap: String?) throws -> EnrollmentTableMapping? {
        try schemaMap.map { try EnrollmentTableMapping.load(path: $0) }
    }
}

/// Checks a `--db` path before SQLite opens it, so that a wrong path gets an error naming `--db`: a folder,
/// a file that is not an SQLite database (a JSON export given by mistake), a missing file for `export`,
/// a missing folder or a read-only file for the commands that write.
enum BackendDatabasePath {
    /// The 16 bytes every SQLite database file starts with.
    static let sqliteHeader = Array("SQLite format 3\u{0}".utf8)

    static func check(_ path: String, mustExist: Bool) throws {
        if path.trimmingWhitespace().isEmpty {
            throw CLIError.usage(
                .backendDbEmpty, "--db is empty.",
                fix: "Give the database file, for example --db kkpush-backend.sqlite.")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            if mustExist {
                throw CLIError.input(
                    .storeMissing,
                    "The enrollment database --db \(path) does not exist (export reads a database; it does not create one).",
                    fix: "Give the file that backend serve, enroll or import wrote (they create it), or check the path."
                )
            }
            try InputFile.checkWritable(path, what: "enrollment database", flag: "--db")
            return
        }
        if isDirectory.boolValue {
            throw CLIError.input(
                .fileIsDirectory, "The enrollment database --db \(path) is a folder, not an SQLite file.",
                fix:
                    "Give a file path, for example --db \(path.hasSuffix("/") ? path : path + "/")kkpush-backend.sqlite."
            )
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError.input(
                .fileUnreadable, "The enrollment database --db \(path) cannot be read.",
                fix: "Make it readable by this user (ls -l \(path)).")
        }
        let head = [UInt8]((try? handle.read(upToCount: sqliteHeader.count)) ?? Data())
        try? handle.close()
        if mustExist, head.isEmpty {
            // SQLite would take an empty file as an empty database and write its tables into it: a read never
            // changes the user's file.
            throw CLIError.input(
                .fileEmpty, "The enrollment database --db \(path) is empty (0 bytes), not a database.",
                fix: "Give the file that backend serve, enroll or import wrote, or check the path.")
        }
        if !head.isEmpty, head != sqliteHeader {
            let looksLike =
                head.first.map { [UInt8(ascii: "["), UInt8(ascii: "{")].contains($0) } == true
                ? " (it looks like JSON: an export? load that with kkpush backend import FILE --db DB)" : ""
            throw CLIError.input(
                .fileNotSqlite, "--db \(path) is not an SQLite database\(looksLike).",
                fix:
                    "Give the enrollment database that kkpush backend serve, enroll or import wrote\(mustExist ? "" : ", or a new file name to create one")."
            )
        }
        if !mustExist, !FileAccess.isWritable(path) {
            throw CLIError.input(
                .fileNotWritable, "The enrollment database --db \(path) is read-only for this user.",
                fix: "Make it writable (chmod u+w \(path)), or give another --db.")
        }
    }
}

/// The JWT secret option shared by the backend commands.
struct BackendSecretOptions: ParsableArguments {
    @Option(
        help:
            "The device-JWT secret, 16+ bytes (default: $KKPUSH_BACKEND_SECRET; prefer it or --secret-file). Make one: openssl rand -hex 32"
    )
    var secret: String?
    @Option(name: .customLong("secret-file"), help: "A file holding the device-JWT secret ('-' for stdin).")
    var secretFile: String?

    /// Checks that a secret is given once (without reading a file: stdin is read once, in run()).
    func check() throws {
        if secret != nil, secretFile != nil { throw ValidationError("Give --secret or --secret-file, not both.") }
        if secret == nil, secretFile == nil,
            (ProcessInfo.processInfo.environment["KKPUSH_BACKEND_SECRET"] ?? "").isEmpty
        {
            throw ValidationError(
                "Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32))."
            )
        }
    }

    func resolved() throws -> String {
        guard let value = try Secrets.resolve(Secrets.backendSecret, flag: secret, file: secretFile), !value.isEmpty
        else {
            throw ValidationError(
                "Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32))."
            )
        }
        if value.utf8.count < DeviceJWT.minimumSecretLength {
            let origin =
                secret != nil ? "--secret" : secretFile.map { "--secret-file \($0)" } ?? "KKPUSH_BACKEND_SECRET"
            throw CLIError.usage(
                .backendSecretShort,
                "The device-JWT secret (\(origin)) is \(value.utf8.count) bytes; it needs at least \(DeviceJWT.minimumSecretLength).",
                fix:
                    "Make one: openssl rand -hex 32 > backend.secret; chmod 600 backend.secret; then --secret-file backend.secret."
            )
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
            GET /api/mobile/v1/diensten?tenant=<slug>[&past_days=365&future_days=60], GET \
            /api/mobile/v1/tenant?tenant=<slug> (tenant info: teams, enrollment_open, season_ended), POST \
            /api/mobile/v1/enrollments/sync (enrollment reconciliation within the caller's hardware identifier, once an \
            hour per phone). Admin API: POST /admin/enrollments \
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
            where warning.code.hasPrefix("force") || warning.code.hasPrefix("server") {
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
                Data(try InputFile.read($0, what: "enrollments file", flag: "--import"))
            }
            if let caFile {
                _ = try InputFile.readText(caFile, what: "CA file", flag: "--ca-file", maximumSize: 1 << 20)
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
                        let result = try await BackendImportCommand.importEnrollments(
                            importData, source: "The --import file \(importFile)", into: store)
                        Output.printError("imported \(result.summary) from \(importFile)")
                    }
                    let count = try await store.all().count
                    let diensten = DienstStore(DienstStore.seed(now: Date()))
                    let sender: (any PushSender)? = client.map { APNsClientPushSender(client: $0) }
                    return try await withSimulatedBackend(
                        configuration: configuration, store: store, diensten: diensten, sender: sender
                    ) { backend in
                        let line =
                            "kkpush backend listening on \(backend.baseURL) (database \(db) from \(location.origin), \(count) enrollment(s); pushes \(sender == nil ? "off: no --key" : "on")); stop with Ctrl-C or SIGTERM\n"
                        FileHandle.standardOutput.write(Data(line.utf8))
                        return await signals.wait()
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

/// `kkpush backend export`.
struct BackendExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every enrollment of the database as a JSON array (stdout or --output).",
        discussion: "The database must exist (export never creates one). --output is written whole or not at all.")

    @OptionGroup var database: BackendExistingDatabaseOptions
    @Option(
        name: .shortAndLong,
        help: "Write to this file instead of standard output (its folder must exist; an existing file is replaced).")
    var output: String?

    func run() async throws {
        try await reportingErrors {
            let location = try database.location()
            let mapping = try database.mapping()
            if let output { try InputFile.checkWritable(output, what: "export file", flag: "--output") }
            // Export only reads: a PostgreSQL database is opened read-only.
            let (data, count) = try await EnrollmentStores.withStore(location, readOnly: true, mapping: mapping) {
                store in
                for note in store.absentColumnNotes { Output.printError("note: \(note)") }
                let all = try await store.all()
                return (try EnrollmentJSON.encode(all), all.count)
            }
            if let output, output != "-" {
                do {
                    try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: output), options: .atomic)
                } catch {
                    throw CLIError(
                        exitCode: ExitStatus.outputFailed, code: .outputWriteFailed,
                        message:
                            "Cannot write the export file --output \(output)\(posixReason(error).map { ": \($0)" } ?? "").",
                        fix: "Check the free space and the permissions of its folder, or give another --output.")
                }
                Output.printError("exported \(count) enrollment(s) to \(output)")
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
        abstract: "Upsert the enrollments of a JSON array (an export) into the database, all or nothing.",
        discussion: """
            Each entry is added, or replaces the enrollment with the same tenant_slug and device_id (its token, \
            build environment, app version and e-mail become the entry's; its generation never goes down). The \
            output says how many were new and names the ones replaced. A bad entry is named ([3].status) and \
            nothing is imported.
            """)

    @Argument(help: "The JSON file ('-' for standard input).") var file: String
    @OptionGroup var database: BackendDatabaseOptions

    /// The largest import file read: 256 MB.
    static let maximumSize = 256 << 20

    struct Result {
        var count: Int
        var replaced: [Enrollment]

        var summary: String {
            let names = replaced.prefix(10).map(\.id.description).joined(separator: ", ")
            let more = replaced.count > 10 ? ", and \(replaced.count - 10) more" : ""
            return
                "\(count) enrollment(s) (\(count - replaced.count) new, \(replaced.count) replaced\(replaced.isEmpty ? "" : ": \(names)\(more)"))"
        }
    }

    /// Decodes `data` and upserts it into `store`, all or nothing, saying which enrollments it replaced.
    static func importEnrollments(_ data: Data, source: String, into store: any EnrollmentStore) async throws -> Result
    {
        let incoming = try EnrollmentJSON.decode(data, source: source)
        let replaced = try await store.existing(among: incoming)
        try await store.upsert(contentsOf: incoming)
        return Result(count: incoming.count, replaced: replaced)
    }

    func run() async throws {
        try await reportingErrors {
            let data = Data(try InputFile.read(file, what: "enrollments file", maximumSize: Self.maximumSize))
            let location = try database.location()
            let mapping = try database.mapping()
            let source = file == "-" ? "The enrollments on standard input" : "The enrollments file '\(file)'"
            let result = try await EnrollmentStores.withStore(location, mapping: mapping) {
                try await Self.importEnrollments(data, source: source, into: $0)
            }
            print("imported \(result.summary) into \(location.display)")
        }
    }
}

/// `kkpush backend enroll`.
struct BackendEnrollCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract:
            "Add an enrollment to the database and print its signed device JWT (for token verify and the app API).",
        discussion: """
            An existing --device-id is refused (exit 1, naming what it holds) unless --replace is given: \
            replacing clears its apns_token, build_environment and app_version (until the app's next token \
            update) and refuses its older JWTs; the output says what was replaced. --email is the team \
            manager's (members enroll without one, as in the app) and needs --role manager.
            """)

    @OptionGroup var database: BackendDatabaseOptions
    @OptionGroup var secretOptions: BackendSecretOptions
    @Option(help: "Tenant slug, e.g. vvwilhelmus.") var tenant: String
    @Option(help: "Team codes, comma-separated, e.g. JO11-3,JO11-5.") var teams: String
    @Option(help: "manager or member.") var role: String = "member"
    @Option(name: .customLong("hardware-identifier"), help: "The phone's identifierForVendor UUID.")
    var hardwareIdentifier: String
    @Option(
        name: .customLong("device-id"),
        help: "The enrollment's device id (default: a new one; an existing one needs --replace).")
    var deviceID: String?
    @Flag(
        help:
            "With --device-id: replace the enrollment with that id if there is one (its token fields are cleared and its older JWTs refused)."
    )
    var replace = false
    @Option(help: "The team manager's e-mail (with --role manager).") var email: String?
    @Flag(name: .customLong("test-user"), help: "Mark the enrollment as a test user.") var testUser = false
    @Option(parsing: .unconditional, help: "JWT lifetime in days (1 to 36500).") var days: Int = 365
    @Flag(help: "Print a JSON object: enrollment, signed_device_token, replaced (the enrollment replaced, or null).")
    var json = false

    func validate() throws {
        if tenant.trimmingWhitespace().isEmpty {
            throw ValidationError("--tenant is empty: give the tenant slug, for example vvwilhelmus.")
        }
        if let problem = EnrollmentIdentifiers.problem(tenant, field: "--tenant") {
            throw ValidationError("\(problem.message) \(problem.fix)")
        }
        if let deviceID, let problem = EnrollmentIdentifiers.problem(deviceID, field: "--device-id") {
            throw ValidationError("\(problem.message) \(problem.fix)")
        }
        if UUID(uuidString: hardwareIdentifier) == nil {
            throw ValidationError(
                "--hardware-identifier '\(hardwareIdentifier)' is not a UUID (identifierForVendor, nothing concatenated)."
            )
        }
        if teamCodes.isEmpty {
            throw ValidationError("--teams needs at least one team code, for example --teams JO11-3,JO11-5.")
        }
        if let problem = EnrollmentIdentifiers.teamCodesProblem(teamCodes, field: "--teams") {
            throw ValidationError("\(problem.message) \(problem.fix)")
        }
        guard let parsedRole = EnrollmentRole(rawValue: role) else {
            throw ValidationError("--role must be manager or member, not '\(role)'.")
        }
        if let deviceID, deviceID.trimmingWhitespace().isEmpty {
            throw ValidationError(
                "--device-id is empty: give the enrollment's device id, or leave it out for a new one.")
        }
        if replace, deviceID == nil {
            throw ValidationError("--replace goes with --device-id (a new enrollment replaces nothing).")
        }
        if let email,
            let problem = EnrollmentEmail.problem(
                email, role: parsedRole, field: "--email", roleField: "--role manager")
        {
            throw ValidationError("\(problem.message) \(problem.fix)")
        }
        try NumericFlags.integer(days, flag: "--days", in: Self.daysRange, unit: "days")
        try secretOptions.check()
    }

    /// The lifetimes `--days` accepts: a day to a hundred years.
    static let daysRange: ClosedRange<Int> = 1...36_500

    var teamCodes: [String] { teams.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty } }

    func run() async throws {
        try await reportingErrors {
            let jwt = try DeviceJWT(secret: try secretOptions.resolved(), lifetime: TimeInterval(days) * 86_400)
            let location = try database.location()
            let mapping = try database.mapping()
            let parsedRole = EnrollmentRole(rawValue: role) ?? .member
            if parsedRole == .manager, email == nil {
                Output.printError(
                    "warning manager-without-email: a manager enrollment without --email (the app verifies every manager's e-mail)."
                )
            }
            let requested = Enrollment(
                deviceID: deviceID ?? "dev-" + UUID().uuidString.lowercased().prefix(12), tenantSlug: tenant,
                teamCodes: teamCodes,
                role: parsedRole, hardwareIdentifier: hardwareIdentifier, isTestUser: testUser,
                teamManagerEmail: email, updatedAt: Date())
            // One transaction: an existing device id is replaced only with --replace (its generation goes up,
            // so its older JWTs are refused from then on); the JWT is signed before the write, and nothing is
            // written unless the enrollment gets its token.
            let db = location.display
            let outcome: EnrollOutcome
            do {
                outcome = try await EnrollmentStores.withStore(location, mapping: mapping) { [replace] in
                    try await $0.enroll(requested, replacing: replace) { try jwt.issue(for: $0) }
                }
            } catch let exists as EnrollmentExistsError {
                throw KKPushError(
                    code: .enrollmentExists,
                    message:
                        "Enrollment \(exists.existing.id) already exists in \(db) (\(exists.held)); nothing was changed.",
                    fix:
                        "Add --replace to replace it (its apns_token, build_environment and app_version are cleared until the app's next token update, and its older JWTs are refused), or leave out --device-id to enroll a new one."
                )
            }
            let enrollment = outcome.enrollment
            if json {
                Output.printJSON([
                    "enrollment": try JSONValue(encoding: enrollment), "signed_device_token": .string(outcome.token),
                    "replaced": try outcome.replaced.map { try JSONValue(encoding: $0) } ?? .null,
                ])
            } else {
                print("enrolled \(enrollment.id) in \(db) (generation \(enrollment.generation))")
                if let replaced = outcome.replaced {
                    print(
                        "replaced the enrollment it had: \(EnrollmentExistsError.describe(replaced)); its older JWTs are refused from now on"
                    )
                }
                print(outcome.token)
            }
        }
    }
}

/// The system's reason for a failed file write ("no space left on device"), without Foundation's wording.
private func posixReason(_ error: any Error) -> String? {
    var current: NSError? = error as NSError
    while let e = current {
        if e.domain == NSPOSIXErrorDomain { return SystemErrorText.text(errno: Int32(e.code)).lowercased() }
        current = e.userInfo[NSUnderlyingErrorKey] as? NSError
    }
    return nil
}
