import Foundation
import KKPushCore

/// Where the backend keeps its `device_enrollments`.
///
/// ``SQLiteEnrollmentStore`` (a file on disk) is the default; ``InMemoryEnrollmentStore`` is for tests and
/// simulations. Both are actors, so every call is isolated.
public protocol EnrollmentStore: Sendable {
    /// Inserts or replaces the enrollment with the same tenant and device id (an import of one record).
    ///
    /// The stored generation never goes down: it becomes the larger of the stored one and the record's
    /// (so importing an old export does not bring revoked JWTs back). The token's registration time is
    /// kept if the token is unchanged, else it becomes the record's `updated_at`.
    func upsert(_ enrollment: Enrollment) async throws
    /// Upserts every enrollment (as ``upsert(_:)``) all or nothing: if one fails (`enrollment-invalid`
    /// for a record without device_id, tenant_slug or hardware_identifier), none is written, and the
    /// error names the entry (`[index] tenant/device_id`).
    func upsert(contentsOf enrollments: [Enrollment]) async throws
    /// Enrolls (or re-enrolls) `enrollment` as one change: if the tenant already has this device id, the
    /// generation becomes the stored one plus one (older device JWTs are refused from then on), else the
    /// record's; the status is active. `sign` is called with the record as stored and its result
    /// returned; if it throws, nothing is written.
    func enroll(_ enrollment: Enrollment, sign: @Sendable (Enrollment) throws -> String) async throws -> (Enrollment, String)
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
    /// Replaces an enrollment's token, build environment and app version (the token update), and records
    /// `at` as the token's registration time. Returns the updated record; throws `enrollment-not-found`
    /// if there is none.
    @discardableResult
    func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, appVersion: String, at: Date
    ) async throws -> Enrollment
    /// Clears `token` from every enrollment holding it whose token was registered at or before
    /// `unregisteredAt` (the 410's timestamp; nil: `at`), comparing and clearing in one step: a token
    /// registered again after the 410's timestamp stays. Returns how many enrollments changed.
    @discardableResult
    func clearToken(_ token: String, unregisteredAt: Date?, at: Date) async throws -> Int
    /// Marks an enrollment revoked and bumps its generation (its device JWTs are refused from then on);
    /// throws `enrollment-not-found` if there is none.
    func revoke(deviceID: String, tenant: String, at: Date) async throws
    /// Every enrollment, ordered by tenant and device id.
    func all() async throws -> [Enrollment]
}

extension EnrollmentStore {
    /// Every enrollment as a JSON array (sorted keys, pretty printed), the export format.
    public func exportJSON() async throws -> Data {
        try EnrollmentJSON.encode(await all())
    }

    /// Upserts every enrollment of a JSON array (the export format), all or nothing. Returns how many
    /// were read.
    @discardableResult
    public func importJSON(_ data: Data) async throws -> Int {
        let enrollments = try EnrollmentJSON.decode(data)
        try await upsert(contentsOf: enrollments)
        return enrollments.count
    }

    /// Clears `token` from every enrollment holding it that was registered at or before `at`.
    @discardableResult
    public func clearToken(_ token: String, at: Date) async throws -> Int {
        try await clearToken(token, unregisteredAt: nil, at: at)
    }
}

/// Checks one record of an import: `enrollment-invalid` naming the entry if device_id, tenant_slug or
/// hardware_identifier is empty or the generation is outside ``Enrollment/generationRange``.
func validateForImport(_ e: Enrollment, index: Int) throws {
    var missing: [String] = []
    if e.deviceID.trimmingWhitespace().isEmpty { missing.append("device_id") }
    if e.tenantSlug.trimmingWhitespace().isEmpty { missing.append("tenant_slug") }
    if e.hardwareIdentifier.trimmingWhitespace().isEmpty { missing.append("hardware_identifier") }
    if !missing.isEmpty {
        throw importRowFailed(index, e, KKPushError(code: "enrollment-invalid",
            message: "\(missing.joined(separator: ", ")) is empty.",
            fix: "Give every entry a device_id, tenant_slug and hardware_identifier."))
    }
    if !Enrollment.generationRange.contains(e.generation) {
        throw importRowFailed(index, e, KKPushError(code: "enrollment-invalid",
            message: "generation \(e.generation) is not from 1 to \(Int32.max).", fix: "Give a generation from 1 to \(Int32.max), or leave it out."))
    }
}

/// `error`, with its message prefixed by the import entry it is about; nothing of the import was written.
func importRowFailed(_ index: Int, _ e: Enrollment, _ error: any Error) -> KKPushError {
    let base = error as? KKPushError
    return KKPushError(code: base?.code ?? "store-query-failed",
        message: "Import entry [\(index)] (\(e.tenantSlug)/\(e.deviceID)): \(base?.message ?? "\(error)") Nothing was imported.",
        fix: base?.fix ?? "Fix that entry and import again.", underlying: base?.underlying)
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
