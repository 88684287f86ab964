public import Foundation
import KKPushCore

/// The role of an enrollment: a team manager (may edit volunteers) or a club member (read only).
public enum EnrollmentRole: String, Sendable, Codable, CaseIterable {
    /// A team manager, enrolled through e-mail verification and a magic link.
    case manager
    /// A club member ("verenigingslid"), enrolled directly.
    case member
}

/// Whether an enrollment still receives pushes and may call the API.
public enum EnrollmentStatus: String, Sendable, Codable, CaseIterable {
    /// In use.
    case active
    /// Revoked (reconciliation, reset, or by an administrator): no pushes, its JWT is refused.
    case revoked
}

/// One row of the backend's `device_enrollments` table: one tenant, some of its teams, one role,
/// and its own signed device JWT.
///
/// One phone may hold several enrollments (a manager enrollment and a member enrollment in the same
/// tenant, plus enrollments in other tenants); its `hardware_identifier` (the vendor UUID from
/// `identifierForVendor`, nothing concatenated) links them. `device_id` is unique per tenant and
/// identifies the enrollment, not the phone.
///
/// JSON field names, exactly:
///
/// ```json
/// {
///   "device_id": "dev-6f1c...",            // unique per tenant
///   "tenant_slug": "vvwilhelmus",
///   "team_codes": ["JO11-3", "JO11-5"],
///   "role": "manager",                      // "manager" | "member"
///   "hardware_identifier": "8C1E0B7A-...",  // UUID from identifierForVendor
///   "apns_token": "a1b2...",                // null until the first token update
///   "build_environment": "development",     // null until the first token update
///   "aps_environment": "development",       // what the app is signed for; null until a token update sends it
///   "app_version": "1.4.2",                 // null until the first token update
///   "is_test_user": false,
///   "status": "active",                     // "active" | "revoked"
///   "team_manager_email": "jan@example.nl", // managers only, else null
///   "updated_at": "2027-01-15T09:30:00Z",   // ISO 8601, whole seconds, UTC
///   "generation": 1                         // 1 at first enrollment, +1 at each revoke and re-enrollment
/// }
/// ```
public struct Enrollment: Sendable, Hashable, Codable, Identifiable {
    /// The enrollment's id: unique within its tenant.
    public var deviceID: String
    /// The tenant (club) slug, for example `vvwilhelmus`.
    public var tenantSlug: String
    /// The team codes this enrollment follows, for example `["JO11-3", "JO11-5"]`.
    public var teamCodes: [String]
    /// Manager or member.
    public var role: EnrollmentRole
    /// The phone's vendor UUID (`identifierForVendor`), shared by all enrollments of one phone.
    public var hardwareIdentifier: String
    /// The APNs device token (lowercase hex), nil until the app sent one (or after a 410 cleared it).
    public var apnsToken: String?
    /// The `build_environment` the app last reported.
    public var buildEnvironment: String?
    /// The `aps_environment` the app last reported: the `aps-environment` entitlement it is signed with
    /// (`development` or `production`), which the backend prefers to ``buildEnvironment`` where it is valid.
    ///
    /// Replaced by every token update, as `build_environment` is: an update without the field leaves it nil.
    /// An app that sends it once always sends it, so nil means an app (or an app version) that does not; keeping
    /// an earlier value would let a token of another build (an older version installed over the fixed one, a
    /// TestFlight build replaced by one run from Xcode) be routed by a signature that is not its own. Absent
    /// from older exports and from tables without the column: nil.
    public var apsEnvironment: String?
    /// The app version the app last reported.
    public var appVersion: String?
    /// A test user: the server pushes to sandbox whatever the build says.
    public var isTestUser: Bool
    /// Active or revoked.
    public var status: EnrollmentStatus
    /// The manager's e-mail (managers only).
    public var teamManagerEmail: String?
    /// When the record last changed (whole seconds).
    public var updatedAt: Date
    /// The enrollment's generation: 1 when first enrolled, one more at every revoke and re-enrollment.
    /// Device JWTs carry it (claim `gen`); the backend refuses a JWT of an older generation
    /// (`jwt-superseded`), so re-enrolling a revoked `device_id` does not bring its old JWTs back.
    /// Absent from older exports: decoded as 1.
    public var generation: Int

    /// The identity of an enrollment: tenant and device id.
    public var id: EnrollmentKey { EnrollmentKey(tenantSlug: tenantSlug, deviceID: deviceID) }

    /// Creates an enrollment record. `updatedAt` is truncated to whole seconds (what ISO 8601 keeps).
    public init(
        deviceID: String, tenantSlug: String, teamCodes: [String], role: EnrollmentRole,
        hardwareIdentifier: String, apnsToken: String? = nil, buildEnvironment: String? = nil,
        apsEnvironment: String? = nil, appVersion: String? = nil, isTestUser: Bool = false,
        status: EnrollmentStatus = .active, teamManagerEmail: String? = nil, updatedAt: Date, generation: Int = 1
    ) {
        self.deviceID = deviceID
        self.tenantSlug = tenantSlug
        self.teamCodes = teamCodes
        self.role = role
        self.hardwareIdentifier = hardwareIdentifier
        self.apnsToken = apnsToken
        self.buildEnvironment = buildEnvironment
        self.apsEnvironment = apsEnvironment
        self.appVersion = appVersion
        self.isTestUser = isTestUser
        self.status = status
        self.teamManagerEmail = teamManagerEmail
        self.updatedAt = Enrollment.wholeSeconds(updatedAt)
        self.generation = generation
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case deviceID = "device_id"
        case tenantSlug = "tenant_slug"
        case teamCodes = "team_codes"
        case role
        case hardwareIdentifier = "hardware_identifier"
        case apnsToken = "apns_token"
        case buildEnvironment = "build_environment"
        case apsEnvironment = "aps_environment"
        case appVersion = "app_version"
        case isTestUser = "is_test_user"
        case status
        case teamManagerEmail = "team_manager_email"
        case updatedAt = "updated_at"
        case generation
    }

    /// The generations a record may be read with: 1 to 2^31 - 1 (so counting up never overflows).
    public static let generationRange: ClosedRange<Int> = 1...Int(Int32.max)

    /// The JSON field names, in the documented order.
    public static let fieldNames: [String] = CodingKeys.allCases.map(\.rawValue)

    /// Decodes the JSON form (snake_case keys, ISO 8601 dates).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        deviceID = try c.decode(String.self, forKey: .deviceID)
        tenantSlug = try c.decode(String.self, forKey: .tenantSlug)
        teamCodes = try c.decode([String].self, forKey: .teamCodes)
        role = try c.decode(EnrollmentRole.self, forKey: .role)
        hardwareIdentifier = try c.decode(String.self, forKey: .hardwareIdentifier)
        apnsToken = try c.decodeIfPresent(String.self, forKey: .apnsToken)
        buildEnvironment = try c.decodeIfPresent(String.self, forKey: .buildEnvironment)
        apsEnvironment = try c.decodeIfPresent(String.self, forKey: .apsEnvironment)
        appVersion = try c.decodeIfPresent(String.self, forKey: .appVersion)
        isTestUser = try c.decodeIfPresent(Bool.self, forKey: .isTestUser) ?? false
        status = try c.decodeIfPresent(EnrollmentStatus.self, forKey: .status) ?? .active
        teamManagerEmail = try c.decodeIfPresent(String.self, forKey: .teamManagerEmail)
        let text = try c.decode(String.self, forKey: .updatedAt)
        guard let date = Enrollment.parseDate(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: .updatedAt, in: c,
                debugDescription: "updated_at '\(text)' is not an ISO 8601 date such as 2027-01-15T09:30:00Z.")
        }
        updatedAt = date
        let generation = try c.decodeIfPresent(Int.self, forKey: .generation) ?? 1
        guard Enrollment.generationRange.contains(generation) else {
            throw DecodingError.dataCorruptedError(
                forKey: .generation, in: c, debugDescription: "generation \(generation) is not from 1 to \(Int32.max).")
        }
        self.generation = generation
    }

    /// Encodes the JSON form (snake_case keys, ISO 8601 dates).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(tenantSlug, forKey: .tenantSlug)
        try c.encode(teamCodes, forKey: .teamCodes)
        try c.encode(role, forKey: .role)
        try c.encode(hardwareIdentifier, forKey: .hardwareIdentifier)
        try c.encode(apnsToken, forKey: .apnsToken)
        try c.encode(buildEnvironment, forKey: .buildEnvironment)
        try c.encode(apsEnvironment, forKey: .apsEnvironment)
        try c.encode(appVersion, forKey: .appVersion)
        try c.encode(isTestUser, forKey: .isTestUser)
        try c.encode(status, forKey: .status)
        try c.encode(teamManagerEmail, forKey: .teamManagerEmail)
        try c.encode(Enrollment.formatDate(updatedAt), forKey: .updatedAt)
        try c.encode(generation, forKey: .generation)
    }

    /// `date` as ISO 8601 in UTC with whole seconds: `2027-01-15T09:30:00Z`.
    /// Dates beyond ±1e12 s (about ±31,700 years), NaN and infinities are not handed to Foundation's
    /// calendar: they come out as the number of seconds.
    public static func formatDate(_ date: Date) -> String {
        if let text = UTCTimestamp.format(date) { return text }
        let t = date.timeIntervalSince1970
        guard t.isFinite, abs(t) < 1e12 else { return "\(t) s since 1970" }
        return date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }

    /// Parses ISO 8601 with or without fractional seconds, truncated to whole seconds; nil if it is not one.
    public static func parseDate(_ text: String) -> Date? {
        // The backend's own form (every date it writes) without a formatter; anything else through Foundation's.
        if let d = UTCTimestamp.parse(text) { return d }
        if let d = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return wholeSeconds(d) }
        if let d = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return wholeSeconds(d)
        }
        return nil
    }

    /// `date` truncated to whole seconds.
    public static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }
}

/// The identity of an enrollment: `device_id` is unique per tenant.
public struct EnrollmentKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The tenant slug.
    public var tenantSlug: String
    /// The device id within the tenant.
    public var deviceID: String

    /// Creates a key.
    public init(tenantSlug: String, deviceID: String) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
    }

    /// `tenant/device_id`.
    public var description: String { "\(tenantSlug)/\(deviceID)" }
}

/// An enrollment file a user names (`diagnose --enrollment`, `token verify --enrollment`): one record, or
/// an array of them, with the store's field names. Every error names the file, the entry and the field.
public enum EnrollmentFile {
    /// Decodes one record or an array of records; throws `enrollment-malformed` (exit 2) naming what is wrong.
    ///
    /// - Parameter label: the flag and path for messages, e.g. `--enrollment e.json`.
    public static func decode(_ bytes: [UInt8], label: String) throws -> [Enrollment] {
        let data = Data(bytes)
        guard let top = try? JSONValue.parse(bytes) else {
            let start = String(decoding: bytes.prefix(24), as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
            let why = JSONInput.syntaxProblem(bytes).map { ": \($0)" } ?? ""
            throw malformed("\(label) is not JSON\(why) (it starts with '\(start)').")
        }
        let entries: [JSONValue]
        let single: Bool
        if case .object = top {
            entries = [top]
            single = true
        } else if let array = top.arrayValue {
            guard !array.isEmpty else { throw malformed("\(label) is an empty array: it holds no enrollment.") }
            entries = array
            single = false
        } else {
            throw malformed("\(label) is \(jsonTypeName(top)), not an enrollment object (or an array of them).")
        }
        for (index, entry) in entries.enumerated() where entry.objectValue == nil {
            throw malformed("\(label) entry [\(index)] is \(jsonTypeName(entry)), not an enrollment object.")
        }
        // JSONDecoder reports a fractional number for an Int without a path on Linux: name it here.
        for (index, entry) in entries.enumerated() {
            if case .double(let g) = entry["generation"], g != g.rounded() {
                throw malformed(
                    "\(single ? label : "\(label) entry [\(index)]"): the field 'generation' must be a whole number from 1 to \(Int32.max)."
                )
            }
        }
        func at(_ context: DecodingError.Context) -> String {
            guard !single, let index = context.codingPath.first(where: { $0.intValue != nil })?.intValue else {
                return label
            }
            return "\(label) entry [\(index)]"
        }
        do {
            return single
                ? [try JSONDecoder().decode(Enrollment.self, from: data)]
                : try JSONDecoder().decode([Enrollment].self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw malformed("\(at(context)) lacks the required field '\(key.stringValue)'.")
        } catch let DecodingError.valueNotFound(_, context) {
            throw malformed("\(at(context)): the field '\(field(context))' is null.")
        } catch let DecodingError.typeMismatch(type, context) {
            throw malformed(
                "\(at(context)): the field '\(field(context))' is not \(expected(type, field: field(context))).")
        } catch let DecodingError.dataCorrupted(context) {
            let name = field(context)
            switch name {
            case "role": throw malformed("\(at(context)): the field 'role' must be \"manager\" or \"member\".")
            case "status": throw malformed("\(at(context)): the field 'status' must be \"active\" or \"revoked\".")
            case "generation":
                throw malformed("\(at(context)): the field 'generation' must be a whole number from 1 to \(Int32.max).")
            case "?": throw malformed("\(label) is not an enrollment record (or an array of them).")
            default: throw malformed("\(at(context)): the field '\(name)': \(context.debugDescription)")
            }
        } catch {
            throw malformed("\(label) is not an enrollment record (or an array of them).")
        }
    }

    static func field(_ context: DecodingError.Context) -> String {
        context.codingPath.first { $0.intValue == nil }?.stringValue ?? "?"
    }

    /// What `field` must be, in ``JSONInput/words(for:)``'s words.
    static func expected(_ type: Any.Type, field: String) -> String {
        if field == "team_codes" { return "an array of strings" }  // the decoder names [String] as Array<Any>
        if type == EnrollmentRole.self || type == EnrollmentStatus.self { return "a string" }
        return JSONInput.words(for: type)
    }

    static func jsonTypeName(_ value: JSONValue) -> String { TokenUpdateRules.typeName(value) }

    static func malformed(_ message: String) -> KKPushError {
        KKPushError(
            code: .enrollmentMalformed, message: message,
            fix:
                "Give one enrollment record (or an array of them) with the store's field names: \(Enrollment.fieldNames.joined(separator: ", ")) (as the backend's export writes them (backendExportCommand))."
        )
    }
}
