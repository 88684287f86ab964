import Foundation
public import KKPushCore
import KantineKoning
import Synchronization

/// What the backend knows of one tenant (club): its name, its teams, and whether the app may enroll there.
///
/// JSON (the app's tenant info refresh, `GET /api/mobile/v1/tenant?tenant=<slug>`):
/// `{"slug", "name", "teams": [codes], "enrollment_open", "season_ended"}`.
public struct TenantInfo: Sendable, Hashable {
    /// The slug.
    public var slug: String
    /// The club's name.
    public var name: String
    /// The team codes.
    public var teams: [String]
    /// False: the club accepts no new enrollments (the app cannot enroll there again).
    public var enrollmentOpen: Bool
    /// True: the club's season has ended (the app cannot enroll there again until the next).
    public var seasonEnded: Bool

    /// Creates tenant info; enrollment open, season running by default.
    public init(slug: String, name: String, teams: [String], enrollmentOpen: Bool = true, seasonEnded: Bool = false) {
        self.slug = slug
        self.name = name
        self.teams = teams
        self.enrollmentOpen = enrollmentOpen
        self.seasonEnded = seasonEnded
    }

    /// True if enrollment reconciliation may revoke or trim this tenant's enrollments: only while the app
    /// could enroll there again (enrollment open, season not ended).
    public var reconcilable: Bool { enrollmentOpen && !seasonEnded }

    /// Why reconciliation leaves this tenant's enrollments alone, or nil.
    public var protectedBecause: String? {
        switch (enrollmentOpen, seasonEnded) {
        case (_, true): "season_ended is true for \(slug)"
        case (false, _): "enrollment_open is false for \(slug)"
        default: nil
        }
    }

    /// The JSON form.
    public var jsonValue: JSONValue {
        .object([
            "slug": .string(slug), "name": .string(name), "teams": .array(teams.map(JSONValue.string)),
            "enrollment_open": .bool(enrollmentOpen), "season_ended": .bool(seasonEnded),
        ])
    }
}

/// The simulated backend's tenants: the seed (``SeedTenant/all``, open, season running) plus what the admin
/// API sets (`POST /admin/tenants/<slug>`). A tenant it does not know counts as open with its season
/// running (an enrollment imported for it can be reconciled).
public final class TenantDirectory: Sendable {
    private let tenants: Mutex<[String: TenantInfo]>

    /// Creates a directory holding `tenants` (the seed by default).
    public init(
        _ tenants: [TenantInfo] = SeedTenant.all.map { TenantInfo(slug: $0.slug, name: $0.name, teams: $0.teamCodes) }
    ) {
        self.tenants = Mutex(Dictionary(tenants.map { ($0.slug, $0) }, uniquingKeysWith: { _, last in last }))
    }

    /// The tenant `slug`, if the directory has it.
    public func get(_ slug: String) -> TenantInfo? { tenants.withLock { $0[slug] } }

    /// The tenant `slug`, or an open tenant with its season running and no known teams.
    public func info(_ slug: String) -> TenantInfo {
        get(slug) ?? TenantInfo(slug: slug, name: slug, teams: [])
    }

    /// Adds or replaces a tenant.
    public func put(_ tenant: TenantInfo) { tenants.withLock { $0[tenant.slug] = tenant } }

    /// Every tenant, by slug.
    public func all() -> [TenantInfo] { tenants.withLock { $0.values.sorted { $0.slug < $1.slug } } }
}
