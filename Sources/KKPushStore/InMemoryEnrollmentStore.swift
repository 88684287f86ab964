public import Foundation
import KKPushCore
public import KantineKoning

/// An ``EnrollmentStore`` in memory, for tests and simulations.
public actor InMemoryEnrollmentStore: EnrollmentStore {
    private var records: [EnrollmentKey: Enrollment] = [:]
    /// When each enrollment's current token was registered (absent: unknown, a 410 clears it).
    private var tokenRegisteredAt: [EnrollmentKey: Date] = [:]
    /// The sync throttle's last sync per lower-cased vendor UUID.
    private var syncs: [String: Date] = [:]

    public func lastSync(hardwareIdentifier: String) -> Date? { syncs[hardwareIdentifier.lowercased()] }

    public func recordSync(hardwareIdentifier: String, at: Date?) { syncs[hardwareIdentifier.lowercased()] = at }

    /// Creates a store holding `enrollments`.
    public init(_ enrollments: [Enrollment] = []) {
        for e in enrollments {
            records[e.id] = e
            tokenRegisteredAt[e.id] = e.apnsToken == nil ? nil : e.updatedAt
        }
    }

    /// Inserts or replaces the enrollment with the same tenant and device id; the generation never goes
    /// down, and the token's registration time is kept if the token is unchanged.
    public func upsert(_ enrollment: Enrollment) { put(enrollment) }

    /// Upserts every enrollment, all or nothing (every record is checked before any is written).
    public func upsert(contentsOf enrollments: [Enrollment]) throws {
        for (i, e) in enrollments.enumerated() { try validateForImport(e, index: i) }
        for e in enrollments { put(e) }
    }

    /// Enrolls or re-enrolls (the generation goes up by one if the device id exists); signs before writing.
    public func enroll(_ enrollment: Enrollment, replacing: Bool, sign: @Sendable (Enrollment) throws -> String) throws
        -> EnrollOutcome
    {
        var e = enrollment
        e.status = .active
        let existing = records[e.id]
        if let existing {
            guard replacing else { throw EnrollmentExistsError(existing: existing) }
            e.generation = min(existing.generation, Int(Int32.max) - 1) + 1
        }
        let token = try sign(e)
        records[e.id] = e
        tokenRegisteredAt[e.id] = e.apnsToken == nil ? nil : e.updatedAt
        return EnrollOutcome(enrollment: e, token: token, replaced: existing)
    }

    private func put(_ enrollment: Enrollment) {
        var e = enrollment
        let existing = records[e.id]
        if let existing { e.generation = max(existing.generation, e.generation) }
        if existing?.apnsToken != e.apnsToken || existing == nil {
            tokenRegisteredAt[e.id] = e.apnsToken == nil ? nil : e.updatedAt
        }
        records[e.id] = e
    }

    /// The enrollment `deviceID` of `tenant`, if any.
    public func get(deviceID: String, tenant: String) -> Enrollment? {
        records[EnrollmentKey(tenantSlug: tenant, deviceID: deviceID)]
    }

    /// Every enrollment of the phone with this vendor UUID (any case).
    public func find(hardwareIdentifier: String) -> [Enrollment] {
        sorted { $0.hardwareIdentifier.lowercased() == hardwareIdentifier.lowercased() }
    }

    /// Every enrollment with this manager e-mail (any case).
    public func find(teamManagerEmail: String) -> [Enrollment] {
        sorted { $0.teamManagerEmail?.lowercased() == teamManagerEmail.lowercased() }
    }

    /// Every enrollment holding this APNs token.
    public func find(apnsToken: String) -> [Enrollment] { sorted { $0.apnsToken == apnsToken } }

    /// The active enrollments of `tenant` that follow `team`.
    public func activeEnrollments(tenant: String, team: String) -> [Enrollment] {
        sorted { $0.status == .active && $0.tenantSlug == tenant && $0.teamCodes.contains(team) }
    }

    /// Replaces the enrollment's token, build environment, aps environment and app version.
    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, apsEnvironment: String?,
        appVersion: String, at: Date
    ) throws -> Enrollment {
        let key = EnrollmentKey(tenantSlug: tenant, deviceID: deviceID)
        guard var e = records[key] else { throw enrollmentNotFound(deviceID, tenant) }
        e.apnsToken = token
        e.buildEnvironment = buildEnvironment
        e.apsEnvironment = apsEnvironment
        e.appVersion = appVersion
        e.updatedAt = Enrollment.wholeSeconds(at)
        records[key] = e
        tokenRegisteredAt[key] = at
        return e
    }

    /// Clears `token` from every enrollment holding it that was registered at or before `unregisteredAt`
    /// (nil: `at`); returns how many changed.
    @discardableResult
    public func clearToken(_ token: String, unregisteredAt: Date?, at: Date) -> Int {
        let cutoff = SQLiteEnrollmentStore.milliseconds(unregisteredAt ?? at)
        var n = 0
        for (key, var e) in records where e.apnsToken == token {
            if let registered = tokenRegisteredAt[key], SQLiteEnrollmentStore.milliseconds(registered) > cutoff {
                continue
            }
            tokenRegisteredAt[key] = nil
            e.apnsToken = nil
            e.updatedAt = Enrollment.wholeSeconds(at)
            records[key] = e
            n += 1
        }
        return n
    }

    /// Marks the enrollment revoked.
    public func revoke(deviceID: String, tenant: String, at: Date) throws {
        let key = EnrollmentKey(tenantSlug: tenant, deviceID: deviceID)
        guard var e = records[key] else { throw enrollmentNotFound(deviceID, tenant) }
        e.status = .revoked
        e.generation = min(e.generation, Int.max - 1) + 1
        e.updatedAt = Enrollment.wholeSeconds(at)
        records[key] = e
    }

    /// Every enrollment, ordered by tenant and device id.
    public func all() -> [Enrollment] { sorted { _ in true } }

    private func sorted(_ include: (Enrollment) -> Bool) -> [Enrollment] {
        records.values.filter(include).sorted {
            ($0.tenantSlug, $0.deviceID) < ($1.tenantSlug, $1.deviceID)
        }
    }
}
