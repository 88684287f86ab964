public import Foundation
public import KKPushCore
import KantineKoning

/// A canteen shift ("dienst") of one team, as the diensten endpoint serves it.
///
/// JSON: `{"id", "tenant_slug", "team_code", "title", "location", "start_time", "end_time",
/// "volunteers": [names], "min_volunteers"}`, times ISO 8601 UTC.
public struct Dienst: Sendable, Hashable, Codable, Identifiable {
    /// Unique id.
    public var id: String
    /// The tenant.
    public var tenantSlug: String
    /// The team that staffs it.
    public var teamCode: String
    /// What it is, for example "Kantinedienst".
    public var title: String
    /// Where.
    public var location: String
    /// Start.
    public var startTime: Date
    /// End.
    public var endTime: Date
    /// The volunteers' names (each at most 15 characters, no duplicates).
    public var volunteers: [String]
    /// How many volunteers it needs.
    public var minimumVolunteers: Int

    /// Creates a dienst (times truncated to whole seconds).
    public init(
        id: String, tenantSlug: String, teamCode: String, title: String = "Kantinedienst", location: String = "Kantine",
        startTime: Date, endTime: Date, volunteers: [String] = [], minimumVolunteers: Int = 2
    ) {
        self.id = id
        self.tenantSlug = tenantSlug
        self.teamCode = teamCode
        self.title = title
        self.location = location
        self.startTime = Enrollment.wholeSeconds(startTime)
        self.endTime = Enrollment.wholeSeconds(endTime)
        self.volunteers = volunteers
        self.minimumVolunteers = minimumVolunteers
    }

    enum CodingKeys: String, CodingKey {
        case id
        case tenantSlug = "tenant_slug"
        case teamCode = "team_code"
        case title, location
        case startTime = "start_time"
        case endTime = "end_time"
        case volunteers
        case minimumVolunteers = "min_volunteers"
    }

    /// Decodes the JSON form (snake_case keys, ISO 8601 dates).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        tenantSlug = try c.decode(String.self, forKey: .tenantSlug)
        teamCode = try c.decode(String.self, forKey: .teamCode)
        title = try c.decode(String.self, forKey: .title)
        location = try c.decode(String.self, forKey: .location)
        func date(_ key: CodingKeys) throws -> Date {
            let text = try c.decode(String.self, forKey: key)
            guard let d = Enrollment.parseDate(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: c, debugDescription: "'\(text)' is not ISO 8601.")
            }
            return d
        }
        startTime = try date(.startTime)
        endTime = try date(.endTime)
        volunteers = try c.decode([String].self, forKey: .volunteers)
        minimumVolunteers = try c.decode(Int.self, forKey: .minimumVolunteers)
    }

    /// Encodes the JSON form (snake_case keys, ISO 8601 dates).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(tenantSlug, forKey: .tenantSlug)
        try c.encode(teamCode, forKey: .teamCode)
        try c.encode(title, forKey: .title)
        try c.encode(location, forKey: .location)
        try c.encode(Enrollment.formatDate(startTime), forKey: .startTime)
        try c.encode(Enrollment.formatDate(endTime), forKey: .endTime)
        try c.encode(volunteers, forKey: .volunteers)
        try c.encode(minimumVolunteers, forKey: .minimumVolunteers)
    }

    /// Reads the JSON form from an already parsed value (the same fields and rules as `init(from:)`),
    /// without `JSONDecoder`: the app reads every refresh's diensten, and with `Codable` the decoding
    /// was the larger part of its refresh. Returns nil if a field is missing or of the wrong type.
    public init?(json: JSONValue) {
        guard let id = json["id"]?.stringValue, let tenantSlug = json["tenant_slug"]?.stringValue,
            let teamCode = json["team_code"]?.stringValue, let title = json["title"]?.stringValue,
            let location = json["location"]?.stringValue,
            let start = json["start_time"]?.stringValue.flatMap(Enrollment.parseDate),
            let end = json["end_time"]?.stringValue.flatMap(Enrollment.parseDate),
            let names = json["volunteers"]?.arrayValue, let minimum = json["min_volunteers"]?.intValue
        else { return nil }
        var volunteers: [String] = []
        volunteers.reserveCapacity(names.count)
        for name in names {
            guard let text = name.stringValue else { return nil }
            volunteers.append(text)
        }
        self.init(
            id: id, tenantSlug: tenantSlug, teamCode: teamCode, title: title, location: location, startTime: start,
            endTime: end, volunteers: volunteers, minimumVolunteers: minimum)
    }

    /// The JSON form as the router writes it (the same fields and values as `encode(to:)`), built
    /// without `JSONEncoder`: the diensten endpoint answers every refresh of every app.
    var jsonValue: JSONValue {
        .object([
            "id": .string(id), "tenant_slug": .string(tenantSlug), "team_code": .string(teamCode),
            "title": .string(title),
            "location": .string(location), "start_time": .string(Enrollment.formatDate(startTime)),
            "end_time": .string(Enrollment.formatDate(endTime)), "volunteers": .array(volunteers.map(JSONValue.string)),
            "min_volunteers": .int(minimumVolunteers),
        ])
    }

    /// The longest volunteer name the app accepts.
    public static let maximumVolunteerNameLength = 15

    /// The problems of a volunteer list (the app's rules): `volunteer-name-empty`, `volunteer-name-too-long`,
    /// `volunteer-duplicate`.
    public static func volunteerProblems(_ names: [String]) -> [Problem] {
        var problems: [Problem] = []
        var seen = Set<String>()
        for name in names {
            let trimmed = name.trimmingWhitespace()
            if trimmed.isEmpty {
                problems.append(
                    Problem(
                        .error, code: .volunteerNameEmpty, message: "A volunteer name is empty.",
                        fix: "Give every volunteer a name."))
            } else if trimmed.count > maximumVolunteerNameLength {
                problems.append(
                    Problem(
                        .error, code: .volunteerNameTooLong,
                        message:
                            "Volunteer name '\(trimmed)' is \(trimmed.count) characters; at most \(maximumVolunteerNameLength).",
                        fix: "Shorten the name to \(maximumVolunteerNameLength) characters."))
            }
            if !seen.insert(trimmed.lowercased()).inserted {
                problems.append(
                    Problem(
                        .error, code: .volunteerDuplicate, message: "Volunteer '\(trimmed)' is listed twice.",
                        fix: "List each volunteer once."))
            }
        }
        return problems
    }
}

/// The simulated backend's tenants and their teams.
public struct SeedTenant: Sendable, Hashable {
    /// The slug.
    public var slug: String
    /// The club's name.
    public var name: String
    /// The team codes.
    public var teamCodes: [String]

    /// The seed tenants: `vvwilhelmus` (JO11-3, JO11-5, JO13-1) and `agovv` (JO10-5).
    public static let all: [SeedTenant] = [
        SeedTenant(slug: "vvwilhelmus", name: "VV Wilhelmus", teamCodes: ["JO11-3", "JO11-5", "JO13-1"]),
        SeedTenant(slug: "agovv", name: "AGOVV", teamCodes: ["JO10-5"]),
    ]
}

/// The diensten of the simulated backend: an actor holding every dienst, queried by tenant, teams and window.
public actor DienstStore {
    private var diensten: [String: Dienst] = [:]
    /// Each dienst's JSON tree, built when it is stored: the diensten endpoint answers every refresh of
    /// every app, and encoding the same diensten again for each was most of its work.
    private var encoded: [String: JSONValue] = [:]

    /// Creates a store holding `diensten`.
    public init(_ diensten: [Dienst] = []) {
        for d in diensten {
            self.diensten[d.id] = d
            encoded[d.id] = d.jsonValue
        }
    }

    /// The seed: for every team of ``SeedTenant/all``, diensten at -400, -200, -30 and -1 days and at +3, +14,
    /// +45 and +90 days from `now`'s day (so the default windows of 365 days back and 60 ahead leave out the
    /// first and the last), starting at 09:00 UTC and lasting 3 hours; past ones have volunteers. Ids: `<tenant>-<team>-<n>`, lowercase.
    public static func seed(now: Date) -> [Dienst] {
        let offsets = [-400, -200, -30, -1, 3, 14, 45, 90]
        var result: [Dienst] = []
        for tenant in SeedTenant.all {
            for team in tenant.teamCodes {
                for (n, days) in offsets.enumerated() {
                    let start = startOfDayUTC(now).addingTimeInterval(TimeInterval(days) * 86_400 + 9 * 3600)
                    result.append(
                        Dienst(
                            id: "\(tenant.slug)-\(team.lowercased())-\(n + 1)", tenantSlug: tenant.slug, teamCode: team,
                            startTime: start, endTime: start.addingTimeInterval(3 * 3600),
                            volunteers: days < 0 ? ["Jan", "Fatima"] : [], minimumVolunteers: 2))
                }
            }
        }
        return result
    }

    private static func startOfDayUTC(_ date: Date) -> Date {
        let t = date.timeIntervalSince1970
        return Date(timeIntervalSince1970: t - t.truncatingRemainder(dividingBy: 86_400))
    }

    /// The diensten of `tenant` for `teams` starting in `from...to`, ordered by start time.
    public func diensten(tenant: String, teams: Set<String>, from: Date, to: Date) -> [Dienst] {
        diensten.values
            .filter {
                $0.tenantSlug == tenant && teams.contains($0.teamCode) && $0.startTime >= from && $0.startTime <= to
            }
            .sorted { ($0.startTime, $0.id) < ($1.startTime, $1.id) }
    }

    /// The same diensten as ``diensten(tenant:teams:from:to:)``, in the same order, as their JSON.
    func dienstenJSON(tenant: String, teams: Set<String>, from: Date, to: Date) -> [JSONValue] {
        diensten(tenant: tenant, teams: teams, from: from, to: to).map { encoded[$0.id]! }
    }

    /// The dienst with this id.
    public func dienst(id: String) -> Dienst? { diensten[id] }

    /// Every dienst, ordered by tenant, team and start.
    public func all() -> [Dienst] {
        diensten.values.sorted {
            ($0.tenantSlug, $0.teamCode, $0.startTime) < ($1.tenantSlug, $1.teamCode, $1.startTime)
        }
    }

    /// Replaces a dienst (same id).
    public func put(_ dienst: Dienst) {
        diensten[dienst.id] = dienst
        encoded[dienst.id] = dienst.jsonValue
    }
}
