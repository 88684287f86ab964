import Foundation
import KKPushCore

/// Where the backend keeps its `device_enrollments`.
///
/// ``SQLiteEnrollmentStore`` (a file on disk) is the default; ``InMemoryEnrollmentStore`` is for tests and
/// simulations. Both are actors, so every call is isolated.
public protocol EnrollmentStore: Sendable {
    /// Inserts or replaces the enrollment with the same tenant and device id.
    func upsert(_ enrollment: Enrollment) async throws
    /// The enrollment `deviceID` of `tenant`, if any.
    func get(deviceID: String, tenant: String) async throws -> Enrollment?
    /// Every enrollment (any status) of the phone with this vendor UUID, compared without case.
    func find(hardwareIdentifier: String) async throws -> [Enrollment]
    /// Every enrollment with this manager e-mail, compared without case.
    func find(teamManagerEmail: String) async throws -> [Enrollment]
    /// Every enrollment holding this APNs token.
    func find(apnsToken: String) async throws -> [Enrollment]
    /// The active enrollments of `tenant` that follow `team`.
    func activeEnrollments(tenant: String, team: String) async throws -> [Enrollment]
    /// Replaces an enrollment's token, build environment and app version (the token update). Returns the
    /// updated record; throws `enrollment-not-found` if there is none.
    @discardableResult
    func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, appVersion: String, at: Date
    ) async throws -> Enrollment
    /// Clears `token` from every enrollment holding it (after APNs answered 410). Returns how many changed.
    @discardableResult
    func clearToken(_ token: String, at: Date) async throws -> Int
    /// Marks an enrollment revoked; throws `enrollment-not-found` if there is none.
    func revoke(deviceID: String, tenant: String, at: Date) async throws
    /// Every enrollment, ordered by tenant and device id.
    func all() async throws -> [Enrollment]
}

extension EnrollmentStore {
    /// Every enrollment as a JSON array (sorted keys, pretty printed), the export format.
    public func exportJSON() async throws -> Data {
        try EnrollmentJSON.encode(await all())
    }

    /// Upserts every enrollment of a JSON array (the export format). Returns how many were read.
    @discardableResult
    public func importJSON(_ data: Data) async throws -> Int {
        let enrollments = try EnrollmentJSON.decode(data)
        for e in enrollments { try await upsert(e) }
        return enrollments.count
    }
}

/// The JSON form of a list of enrollments: an array of ``Enrollment`` objects.
public enum EnrollmentJSON {
    /// Encodes enrollments (pretty printed, sorted keys).
    public static func encode(_ enrollments: [Enrollment]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(enrollments)
    }

    /// Decodes enrollments; throws `enrollments-json-invalid` naming the entry and field at fault.
    public static func decode(_ data: Data) throws -> [Enrollment] {
        do {
            return try JSONDecoder().decode([Enrollment].self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw invalid("entry \(path(context.codingPath)) lacks '\(key.stringValue)'")
        } catch let DecodingError.typeMismatch(_, context) {
            throw invalid("\(path(context.codingPath)) has the wrong type (\(context.debugDescription))")
        } catch let DecodingError.valueNotFound(_, context) {
            throw invalid("\(path(context.codingPath)) is null")
        } catch let DecodingError.dataCorrupted(context) {
            throw invalid("\(path(context.codingPath)): \(context.debugDescription)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }

    private static func invalid(_ why: String) -> KKPushError {
        KKPushError(code: "enrollments-json-invalid", message: "The enrollments JSON is invalid: \(why).",
            fix: "Give a JSON array of enrollments with the fields \(Enrollment.fieldNames.joined(separator: ", ")) (as `kkpush backend export` writes).")
    }
}

func enrollmentNotFound(_ deviceID: String, _ tenant: String) -> KKPushError {
    KKPushError(code: "enrollment-not-found", message: "No enrollment '\(deviceID)' in tenant '\(tenant)'.",
        fix: "Enroll the device first (POST /admin/enrollments), or check the device_id and tenant_slug.")
}
