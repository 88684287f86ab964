public import Foundation
public import KKPushCore
public import KantineKoning
import Synchronization

/// One enrollment as the app lists it in `POST /api/mobile/v1/enrollments/sync`.
public struct SyncEntry: Sendable, Hashable {
    /// The tenant.
    public var tenantSlug: String
    /// Manager or member.
    public var role: EnrollmentRole
    /// The teams the app still follows in this enrollment.
    public var teamCodes: [String]
    /// The app's identifierForVendor.
    public var hardwareIdentifier: String

    /// Creates an entry.
    public init(tenantSlug: String, role: EnrollmentRole, teamCodes: [String], hardwareIdentifier: String) {
        self.tenantSlug = tenantSlug
        self.role = role
        self.teamCodes = teamCodes
        self.hardwareIdentifier = hardwareIdentifier
    }

    /// The JSON form the app sends.
    public var jsonValue: JSONValue {
        .object([
            "tenant_slug": .string(tenantSlug), "role": .string(role.rawValue),
            "team_codes": .array(teamCodes.map(JSONValue.string)), "hardware_identifier": .string(hardwareIdentifier),
        ])
    }
}

/// A refused sync body: the field at fault (`enrollments[2].team_codes`), what is wrong, and the fix.
public struct SyncBodyError: Error, Sendable, Hashable {
    /// A stable code (`wrong-type`, `missing-field`, `invalid-role`, ...).
    public var code: String
    /// The field, as a path into the body (`enrollments`, `enrollments[2].role`); empty for the body itself.
    public var field: String
    /// What is wrong.
    public var message: String
    /// What to send instead.
    public var fix: String
}

/// The parsed sync body.
public struct SyncBody: Sendable {
    /// The enrollments the app has.
    public var entries: [SyncEntry]
    /// `superseded_device_tokens`: JWTs of the app's enrollments on an earlier identifierForVendor.
    public var supersededTokens: [String]
    /// Warnings (unknown fields, ignored, never silently).
    public var warnings: [Problem]
}

/// Reads and checks a sync body (`{"enrollments": [{"tenant_slug", "role", "team_codes", "hardware_identifier"}]}`)
/// completely before anything is changed: every malformed body is refused naming the field.
public enum SyncBodyParser {
    /// The most entries a sync may list. The app allows five teams in all (across tenants) and every
    /// enrollment has at least one team, so a real app lists at most five; 20 leaves room for old data.
    public static let maximumEntries = 20
    /// The most superseded device JWTs a sync may carry.
    public static let maximumSupersededTokens = 20
    /// The longest string accepted in an entry (a team code or hardware identifier).
    public static let maximumStringLength = 128

    static let example =
        "{\"enrollments\": [{\"tenant_slug\": \"vvwilhelmus\", \"role\": \"manager\", \"team_codes\": [\"JO11-3\"], \"hardware_identifier\": \"<identifierForVendor UUID>\"}]}"

    /// Parses `data`; `callerHardware` is the hardware identifier of the caller's enrollment (the scope):
    /// an entry naming another one is refused.
    public static func parse(_ data: Data, callerHardware: String) -> Result<SyncBody, SyncBodyError> {
        do {
            return .success(try read(data, callerHardware: callerHardware))
        } catch let error as SyncBodyError {
            return .failure(error)
        } catch {
            return .failure(
                SyncBodyError(
                    code: "body-not-json", field: "", message: ErrorWords.describe(error), fix: "Send \(example)."))
        }
    }

    private static func fail(_ code: String, _ field: String, _ message: String, _ fix: String) -> SyncBodyError {
        SyncBodyError(code: code, field: field, message: message, fix: fix)
    }

    private static func kind(_ value: JSONValue) -> String { value == .null ? "null" : "a JSON \(value.typeName)" }

    private static func read(_ data: Data, callerHardware: String) throws -> SyncBody {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            throw fail("body-empty", "", "The sync body is empty; a JSON object was expected.", "Send \(example).")
        }
        if let syntax = JSONInput.syntaxProblem(Array(data)) {
            throw fail(
                "body-not-json", "",
                syntax.hasPrefix("it is ")
                    ? "The sync body is \(syntax.dropFirst(6))." : "The sync body is not valid JSON: \(syntax).",
                "Send \(example).")
        }
        guard let value = try? JSONValue.parse(Array(data)) else {
            throw fail("body-not-json", "", "The sync body is not valid JSON.", "Send \(example).")
        }
        guard let object = value.objectValue else {
            throw fail(
                "body-not-object", "", "The sync body is \(kind(value)); a JSON object was expected.",
                "Send \(example).")
        }
        var warnings: [Problem] = []
        let known: Set<String> = ["enrollments", "superseded_device_tokens"]
        let unknown = object.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty {
            warnings.append(
                Problem(
                    .warning, code: .unknownField,
                    message:
                        "Ignored unknown field\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")).",
                    fix: "Send only enrollments (and superseded_device_tokens)."))
        }
        guard let listValue = object["enrollments"] else {
            throw fail(
                "missing-field", "enrollments",
                "The field 'enrollments' is missing (an array of the app's enrollments).",
                "Send \(example).")
        }
        guard let list = listValue.arrayValue else {
            throw fail(
                "wrong-type", "enrollments", "enrollments is \(kind(listValue)); expected an array of objects.",
                "Send \(example).")
        }
        if list.isEmpty {
            throw fail(
                "enrollments-empty", "enrollments",
                "enrollments is an empty array: that would revoke every enrollment of this phone, the caller's own too (its JWT proves the app still has it). An empty list is refused, because an app that lost its data (or has not refreshed its tenant info yet) would otherwise wipe its enrollments.",
                "List every enrollment the app has, the caller's own included; to remove the last one, use the deletion API (or let it be, the app then has no JWT to sync with)."
            )
        }
        if list.count > maximumEntries {
            throw fail(
                "too-many-enrollments", "enrollments",
                "enrollments has \(list.count) entries; at most \(maximumEntries) are accepted (the app allows 5 teams in all, so it has at most 5 enrollments).",
                "Send one entry per enrollment the app has, each once.")
        }
        var entries: [SyncEntry] = []
        var firstIndex: [String: Int] = [:]
        for (i, element) in list.enumerated() {
            let at = "enrollments[\(i)]"
            guard let entry = element.objectValue else {
                throw fail(
                    "wrong-type", at, "\(at) is \(kind(element)); expected an object.",
                    "Send each entry as {\"tenant_slug\", \"role\", \"team_codes\", \"hardware_identifier\"}.")
            }
            let extra = entry.keys.filter {
                !["tenant_slug", "role", "team_codes", "hardware_identifier"].contains($0)
            }.sorted()
            if !extra.isEmpty {
                warnings.append(
                    Problem(
                        .warning, code: .unknownField,
                        message:
                            "Ignored unknown field\(extra.count == 1 ? "" : "s") of \(at): \(extra.joined(separator: ", ")).",
                        fix: "Send only tenant_slug, role, team_codes and hardware_identifier."))
            }
            let tenant = try string(entry, "tenant_slug", at: at, example: "\"vvwilhelmus\"")
            if let problem = EnrollmentIdentifiers.problem(tenant, field: "\(at).tenant_slug") {
                throw fail(problem.code.rawValue, "\(at).tenant_slug", problem.message, problem.fix)
            }
            let roleText = try string(entry, "role", at: at, example: "\"manager\" or \"member\"")
            guard let role = EnrollmentRole(rawValue: roleText) else {
                throw fail(
                    "invalid-role", "\(at).role", "\(at).role \"\(roleText)\" is not one of: manager, member.",
                    "Send role \"manager\" or \"member\" (lowercase).")
            }
            let teams = try teamCodes(entry, at: at)
            let hardware = try string(
                entry, "hardware_identifier", at: at, example: "identifierForVendor's UUID string")
            guard hardware.lowercased() == callerHardware.lowercased() else {
                throw fail(
                    "hardware-identifier-out-of-scope", "\(at).hardware_identifier",
                    "\(at).hardware_identifier \"\(hardware.prefix(maximumStringLength))\" is not the caller's: the JWT's enrollment is on \(callerHardware). A sync reconciles one phone's enrollments only, so the whole body was refused and nothing changed.",
                    "Send the app's current identifierForVendor (\(callerHardware)) in every entry, with a JWT of an enrollment of that phone."
                )
            }
            let key = "\(tenant)\u{0}\(role.rawValue)"
            if let first = firstIndex[key] {
                throw fail(
                    "duplicate-enrollment", at,
                    "\(at) repeats enrollments[\(first)] (\(tenant) \(role.rawValue)): the app has one enrollment per tenant and role.",
                    "Send each tenant and role once, with all of that enrollment's team codes.")
            }
            firstIndex[key] = i
            entries.append(SyncEntry(tenantSlug: tenant, role: role, teamCodes: teams, hardwareIdentifier: hardware))
        }
        var superseded: [String] = []
        if let tokensValue = object["superseded_device_tokens"], tokensValue != .null {
            guard let tokens = tokensValue.arrayValue else {
                throw fail(
                    "wrong-type", "superseded_device_tokens",
                    "superseded_device_tokens is \(kind(tokensValue)); expected an array of device JWTs.",
                    "Send the signedDeviceTokens the app still holds from its previous identifierForVendor, or leave it out."
                )
            }
            if tokens.count > maximumSupersededTokens {
                throw fail(
                    "too-many-superseded-tokens", "superseded_device_tokens",
                    "superseded_device_tokens has \(tokens.count) entries; at most \(maximumSupersededTokens) are accepted.",
                    "Send each earlier enrollment's JWT once.")
            }
            for (i, token) in tokens.enumerated() {
                guard let text = token.stringValue, !text.trimmingWhitespace().isEmpty else {
                    throw fail(
                        "wrong-type", "superseded_device_tokens[\(i)]",
                        "superseded_device_tokens[\(i)] is \(token.stringValue != nil ? "an empty string" : kind(token)); expected a device JWT.",
                        "Send the signedDeviceToken strings, or leave the field out.")
                }
                superseded.append(text.trimmingWhitespace())
            }
        }
        return SyncBody(entries: entries, supersededTokens: superseded, warnings: warnings)
    }

    private static func string(_ entry: [String: JSONValue], _ name: String, at: String, example: String) throws
        -> String
    {
        let field = "\(at).\(name)"
        guard let value = entry[name] else {
            throw fail(
                "missing-field", field, "The field '\(name)' of \(at) is missing (a string).",
                "Send \(name), for example \(example).")
        }
        guard let text = value.stringValue else {
            throw fail(
                "wrong-type", field, "\(field) is \(kind(value)); expected a string.", "Send \(name) as \(example).")
        }
        let trimmed = text.trimmingWhitespace()
        if trimmed.isEmpty {
            throw fail("missing-field", field, "\(field) is an empty string.", "Send \(name), for example \(example).")
        }
        if trimmed.count > maximumStringLength {
            throw fail(
                "field-too-long", field, "\(field) is \(trimmed.count) characters; at most \(maximumStringLength).",
                "Send \(name) as \(example).")
        }
        return trimmed
    }

    private static func teamCodes(_ entry: [String: JSONValue], at: String) throws -> [String] {
        let field = "\(at).team_codes"
        let example = "[\"JO11-3\", \"JO11-5\"]"
        guard let value = entry["team_codes"] else {
            throw fail(
                "missing-field", field, "The field 'team_codes' of \(at) is missing (an array of team codes).",
                "Send team_codes, for example \(example).")
        }
        guard let array = value.arrayValue else {
            throw fail(
                "wrong-type", field, "\(field) is \(kind(value)); expected an array of strings.",
                "Send team_codes as \(example).")
        }
        if array.isEmpty {
            throw fail(
                "missing-field", field,
                "\(field) is an empty array: every enrollment follows at least one team (an enrollment the app no longer has is left out of the list, not sent without teams).",
                "Send the enrollment's team codes, for example \(example), or leave the entry out.")
        }
        if array.count > EnrollmentIdentifiers.maximumTeams {
            throw fail(
                "too-many-teams", field,
                "\(field) has \(array.count) team codes; the app allows at most \(EnrollmentIdentifiers.maximumTeams) teams.",
                "Send at most \(EnrollmentIdentifiers.maximumTeams) team codes.")
        }
        var codes: [String] = []
        for (j, element) in array.enumerated() {
            guard let text = element.stringValue, !text.trimmingWhitespace().isEmpty else {
                throw fail(
                    "wrong-type", "\(field)[\(j)]",
                    "\(field)[\(j)] is \(element.stringValue != nil ? "an empty string" : kind(element)); expected a non-empty string.",
                    "Send team_codes as \(example).")
            }
            let code = text.trimmingWhitespace()
            if code.count > maximumStringLength {
                throw fail(
                    "field-too-long", "\(field)[\(j)]",
                    "\(field)[\(j)] is \(code.count) characters; at most \(maximumStringLength).",
                    "Send team codes such as JO11-3.")
            }
            if codes.contains(code) {
                throw fail(
                    "team-code-repeated", "\(field)[\(j)]", "\(field) has \(code) twice.", "Give each team code once.")
            }
            codes.append(code)
        }
        return codes
    }
}

/// The once-an-hour limit of enrollment syncs, per hardware identifier, on the backend's clock.
public final class SyncThrottle: Sendable {
    /// The least time between two syncs of one phone.
    public static let interval: TimeInterval = 3600
    private let last = Mutex<[String: Date]>([:])

    /// Creates an empty throttle.
    public init() {}

    /// Claims the sync of `hardware` at `now`: nil if it may run (the time is recorded), else when it may.
    func claim(_ hardware: String, now: Date) -> Date? {
        last.withLock { last in
            let key = hardware.lowercased()
            if let previous = last[key], now < previous.addingTimeInterval(Self.interval) {
                return previous.addingTimeInterval(Self.interval)
            }
            last[key] = now
            return nil
        }
    }

    /// Gives back a claim whose sync failed before it changed anything (`previous`: the time before it).
    func release(_ hardware: String, to previous: Date?) {
        last.withLock { $0[hardware.lowercased()] = previous }
    }

    /// When `hardware` last synced.
    public func lastSync(_ hardware: String) -> Date? { last.withLock { $0[hardware.lowercased()] } }
}

/// What a sync does to one stored enrollment.
public enum ReconcileAction: Sendable, Hashable {
    /// Listed with all its teams: unchanged.
    case keep
    /// Not listed (or none of its teams listed): revoked.
    case revoke
    /// Listed with fewer teams: these teams are removed, the rest stays.
    case removeTeams([String])
    /// Its tenant is closed for enrollment or its season ended: left alone (the app could not enroll again).
    case protected(String)
}

/// The plan of one sync: for every active enrollment in scope, what happens to it.
public struct ReconcilePlan: Sendable {
    /// Each active enrollment in scope and its action, ordered by tenant and device id.
    public var items: [(enrollment: Enrollment, action: ReconcileAction)]
    /// Entries that match no active enrollment in scope (the backend cannot enroll from a sync).
    public var unmatched: [SyncEntry]

    /// Plans a sync: `active` are the active enrollments in scope, `entries` what the app listed,
    /// `tenant` the tenant info.
    public static func make(active: [Enrollment], entries: [SyncEntry], tenant: (String) -> TenantInfo) -> ReconcilePlan
    {
        var items: [(Enrollment, ReconcileAction)] = []
        var matched = Set<Int>()
        for e in active.sorted(by: { ($0.tenantSlug, $0.deviceID) < ($1.tenantSlug, $1.deviceID) }) {
            let index = entries.firstIndex {
                $0.tenantSlug == e.tenantSlug && $0.role == e.role
                    && $0.hardwareIdentifier.lowercased() == e.hardwareIdentifier.lowercased()
            }
            if let index { matched.insert(index) }
            if let reason = tenant(e.tenantSlug).protectedBecause {
                items.append((e, .protected(reason)))
                continue
            }
            guard let index else {
                items.append((e, .revoke))
                continue
            }
            let listed = Set(entries[index].teamCodes)
            let removed = e.teamCodes.filter { !listed.contains($0) }
            if removed.isEmpty {
                items.append((e, .keep))
            } else if removed.count == e.teamCodes.count {
                items.append((e, .revoke))
            } else {
                items.append((e, .removeTeams(removed)))
            }
        }
        let unmatched = entries.enumerated().filter { !matched.contains($0.offset) }.map(\.element)
        return ReconcilePlan(items: items, unmatched: unmatched)
    }
}
