import ArgumentParser
import Foundation
import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem
import KantineKoning

/// `kkpush token`: the app's token update to its backend.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract:
            "Check the Kantine Koning app's token update (its body and bearer JWT); prune the tokens APNs says are dead.",
        subcommands: [TokenVerifyCommand.self, TokenPruneCommand.self]
    )
}

/// `kkpush token verify FILE|-`.
struct TokenVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Check a captured token-update body (and its bearer) and print the APNs environment the backend will resolve.",
        discussion: """
            The body is what the app POSTs to \(TokenUpdate.path): {"token", "build_environment", "app_version", \
            "hardware_identifier", "bundle_id"?, "platform"?, "is_new_token"?, "aps_environment"?}; where sent, \
            aps_environment (what the app is signed for: development or production) decides the environment. \
            The optional live_activity object carries the Live Activity tokens: push_to_start_tokens \
            [{"attributes_type", "token"}], activity_tokens [{"activity_key", "activity_id"?, "attributes_type", \
            "token"}] and activity_states [{"activity_key", "state": "ended"|"dismissed"}]; each token is checked like \
            the device token, attributes_type must be a Swift type name, activity_key 1-200 printable ASCII, and a bad \
            field is named by its JSON path (live_activity.activity_tokens[0].token). A null push-to-start token is \
            legal (iOS may yield a rotation without one): it is reported as push-to-start-token-null, a rotation that \
            will not replace the stored token, not an error. \
            Every problem is reported with a \
            stable code and a fix. With --bearer, the enrollment JWT is checked too: its signature (with --secret-file, \
            KKPUSH_BACKEND_SECRET or --secret), expiry, tenant (--tenant), and whether it matches the enrollment (--enrollment \
            FILE, or looked up by its device_id in --db). Exit status: 0 valid (warnings allowed), 1 invalid, \
            2 when an input cannot be read or is not what it should be (a body that is not a JSON object).
            """
    )

    @Argument(help: "The token-update body: a JSON file, or '-' for standard input.")
    var file: String

    @Option(
        name: .customLong("bearer"),
        help:
            "The Authorization bearer sent with it (the enrollment's device JWT; 'Bearer ' is optional). Default: $KKPUSH_BEARER; prefer it or --bearer-file."
    )
    var bearerOption: String?

    @Option(name: .customLong("bearer-file"), help: "A file holding the bearer ('-' for stdin).")
    var bearerFile: String?

    @Option(
        help:
            "The backend's JWT secret, to check the bearer's signature (default: $KKPUSH_BACKEND_SECRET; prefer it or --secret-file)."
    )
    var secret: String?

    @Option(name: .customLong("secret-file"), help: "A file holding the backend's JWT secret ('-' for stdin).")
    var secretFile: String?

    /// Whether a bearer is given (flag, file or $KKPUSH_BEARER), without reading the file.
    var bearerGiven: Bool {
        bearerOption != nil || bearerFile != nil
            || !(CommandIO.current.environment[Secrets.bearer.environment] ?? "").isEmpty
    }

    @Option(help: "The tenant the update is sent for: a bearer of another tenant is an error.")
    var tenant: String?

    @Option(
        name: .customLong("known-environment"),
        help: "The APNs environment the token is known to work in (sandbox|production).")
    var knownEnvironment: String?

    @Option(help: "The enrollment the update is for: a JSON file with one enrollment record.")
    var enrollment: String?

    @Option(
        help:
            "An enrollment database (an SQLite file or a postgres:// URL, opened read-only): look the enrollment up by the bearer's device_id and tenant."
    )
    var db: String?

    @Flag(
        name: .customLong("test-user"),
        help: "The enrollment is a test user (is_test_user), when no enrollment is given.")
    var testUser = false

    @OptionGroup(title: "Server settings")
    var server: ServerSettingsOptions

    @Option(
        name: .customLong("bundle-id"),
        help: "The bundle id the backend expects in bundle_id ('any' accepts every one).")
    var bundleID: String = TokenUpdate.defaultBundleID

    @Flag(help: "Print a JSON object: valid, resolved_environment, decided_by, problems.")
    var json = false

    func validate() throws {
        // --apns-force-env '' and --apns-env '' model an empty variable on the server.
        try TextFlags.nonEmpty([
            ("<file>", file), ("--bearer", bearerOption), ("--bearer-file", bearerFile), ("--secret", secret),
            ("--secret-file", secretFile), ("--tenant", tenant), ("--known-environment", knownEnvironment),
            ("--enrollment", enrollment), ("--db", db), ("--bundle-id", bundleID),
        ])
        if let knownEnvironment, APNsEnvironment(lenient: knownEnvironment) == nil {
            throw ValidationError("--known-environment '\(knownEnvironment)' is neither sandbox nor production.")
        }
        if enrollment != nil, db != nil {
            throw ValidationError("Give --enrollment or --db, not both.")
        }
        if bearerOption != nil, bearerFile != nil { throw ValidationError("Give --bearer or --bearer-file, not both.") }
        if secret != nil, secretFile != nil { throw ValidationError("Give --secret or --secret-file, not both.") }
        if [file, bearerFile, secretFile, enrollment].filter({ $0 == "-" }).count > 1 {
            throw ValidationError(
                "Only one input can come from stdin ('-'): the body, --bearer-file, --secret-file or --enrollment.")
        }
        if db == "-" {
            throw ValidationError("--db does not read standard input ('-'): give the path of the database file.")
        }
        if tenant != nil, !bearerGiven {
            throw ValidationError(
                "--tenant is checked against the bearer's tenant_slug: give the bearer too (--bearer-file FILE, or $KKPUSH_BEARER)."
            )
        }
        if secret != nil || secretFile != nil, !bearerGiven {
            throw ValidationError(
                "--secret and --secret-file check the bearer's signature: give the bearer too (--bearer-file FILE, or $KKPUSH_BEARER)."
            )
        }
        if db != nil, !bearerGiven {
            throw ValidationError("--db looks the enrollment up by the bearer's device_id: give --bearer too.")
        }
        if testUser, enrollment != nil || db != nil {
            throw ValidationError(
                "--test-user is for when there is no enrollment; the enrollment's is_test_user is used.")
        }
    }

    func run() async throws {
        try await reportingErrors { try await check() }
    }

    private func check() async throws {
        let body = Data(try InputFile.read(file, what: "token-update body", maximumSize: 1 << 20))
        if let error = TokenUpdateRules.fileShapeError(body, label: file == "-" ? "on standard input" : "'\(file)'") {
            throw error
        }
        let bearer = try Secrets.resolve(Secrets.bearer, flag: bearerOption, file: bearerFile)

        let settings = server.settings()

        var record: Enrollment?
        if let enrollment {
            let bytes = try InputFile.read(
                enrollment, what: "enrollment record", label: "--enrollment", maximumSize: 1 << 20)
            let many = try EnrollmentFile.decode(bytes, label: "--enrollment \(enrollment)")
            guard many.count == 1 else {
                throw CLIError.input(
                    .enrollmentMalformed, "--enrollment \(enrollment) holds \(many.count) enrollments; give one.",
                    fix:
                        "Give a file with the one enrollment record the update is for (or --db with the bearer to look it up)."
                )
            }
            record = many[0]
        }
        let secretValue = try Secrets.resolve(Secrets.backendSecret, flag: secret, file: secretFile)
        var jwt: DeviceJWT?
        if let secretValue, bearer != nil {
            do {
                jwt = try DeviceJWT(secret: secretValue)
            } catch let error as KKPushError {
                throw CLIError.input(
                    error.code, error.message, fix: error.fix ?? "Give the backend's secret (16+ bytes).")
            }
        }

        let report: TokenUpdateReport
        let verifier = TokenUpdateVerifier(jwt: jwt)
        let expectedBundle = bundleID == "any" ? nil : bundleID
        let known = knownEnvironment.flatMap { APNsEnvironment(lenient: $0) }
        if let db {
            report = try await EnrollmentStoreReading.with(db, flag: "--db", notes: true) { store in
                await verifier.verify(
                    body: body, bearer: bearer, expectedTenant: tenant, knownEnvironment: known, settings: settings,
                    expectedBundleID: expectedBundle,
                    lookup: { key in try await store.get(deviceID: key.deviceID, tenant: key.tenantSlug) })
            }
        } else {
            report = await verifier.verify(
                body: body, bearer: bearer, expectedTenant: tenant, enrollment: record,
                knownEnvironment: known, settings: settings, expectedBundleID: expectedBundle, isTestUser: testUser)
        }
        Output.printReport(report, json: json)
        if !report.valid { throw ExitCode(1) }
    }
}

// `token verify`'s report is KantineKoning's `TokenUpdateReport` (its JSON and first lines beside the rules, in
// `TokenUpdateReport+Encoding.swift`); the problems are printed here, in this command line's words.

extension TokenUpdateReport: CommandReport {
    var textLines: [String] { summaryLines + Output.lines(problems) }
}
