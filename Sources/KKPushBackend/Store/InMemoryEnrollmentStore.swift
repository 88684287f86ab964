import Foundation
import KKPushCore

/// An ``EnrollmentStore`` in memory, for tests and simulations.
public actor InMemoryEnrollmentStore: EnrollmentStore {
    private var records: [EnrollmentKey: Enrollment] = [:]

    /// Creates a store holding `enrollments`.
    public init(_ enrollments: [Enrollment] = []) {
        for e in enrollments { records[e.id] = e }
    }

    /// Inserts or replaces the enrollment with the same tenant and device id.
    public func upsert(_ enrollment: Enrollment) { records[enrollment.id] = enrollment }

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

    /// Replaces the enrollment's token, build environment and app version.
    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, appVersion: String, at: Date
    ) throws -> Enrollment {
        let key = EnrollmentKey(tenantSlug: tenant, deviceID: deviceID)
        guard var e = records[key] else { throw enrollmentNotFound(deviceID, tenant) }
        e.apnsToken = token
        e.buildEnvironment = buildEnvironment
        e.appVersion = appVersion
        e.updatedAt = Enrollment.wholeSeconds(at)
        records[key] = e
        return e
    }

    /// Clears `token` from every enrollment holding it; returns how many changed.
    @discardableResult
    public func clearToken(_ token: String, at: Date) -> Int {
        var n = 0
        for (key, var e) in records where e.apnsToken == token {
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
