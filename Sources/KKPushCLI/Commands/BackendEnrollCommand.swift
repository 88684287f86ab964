import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushStore
import KantineKoning
import Logging

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
            Output.printReport(BackendEnrollReport(outcome, database: db), json: json)
        }
    }
}

extension BackendEnrollReport: CommandReport {}
