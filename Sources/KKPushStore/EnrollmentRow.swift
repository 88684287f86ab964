import KKPushCore
public import KantineKoning

/// One stored row as ``EnrollmentStore/forEachEnrollmentRow(orderedBy:tenant:batchSize:_:)`` reads it: an
/// enrollment, or a row that cannot be one (named, with what is wrong), so that one bad row does not stop a reader
/// of the whole table.
public enum EnrollmentRow: Sendable, Hashable {
    case enrollment(Enrollment)
    case unreadable(UnreadableEnrollment)

    /// The enrollment, or the error a reader that needs every row throws (`store-row-invalid`, naming the row).
    public func get(table: String = "device_enrollments") throws -> Enrollment {
        switch self {
        case .enrollment(let e): return e
        case .unreadable(let u): throw StoredRow.error(u, table: table)
        }
    }
}

/// Reading one stored row as an enrollment, the same way in every store.
enum StoredRow {
    /// What is wrong with a row, found while reading it (``UnreadableEnrollment/problem``).
    struct Problem: Error {
        var text: String
    }

    /// The row's role and status, or the ``Problem`` naming the one kkpush does not know.
    static func roleAndStatus(_ role: String?, _ status: String?) throws -> (EnrollmentRole, EnrollmentStatus) {
        func known<T: RawRepresentable & CaseIterable>(_ type: T.Type, _ column: String, _ value: String?) throws -> T
        where T.RawValue == String {
            if let value, let known = T(rawValue: value) { return known }
            let choices = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw Problem(
                text: value.map { "\(column) '\($0)' is not one kkpush knows (\(choices))" }
                    ?? "\(column) is NULL (one of \(choices) expected)")
        }
        return (try known(EnrollmentRole.self, "role", role), try known(EnrollmentStatus.self, "status", status))
    }

    /// A stored value for a message: quoted, at most 40 characters.
    static func shown(_ value: String) -> String {
        "'\(value.prefix(40))\(value.count > 40 ? "…" : "")'"
    }

    /// `decode` of one row, or the row as unreadable: its keys as stored and what `decode` found wrong.
    static func read(
        tenant: String?, deviceID: String?, hardwareIdentifier: String?, _ decode: () throws -> Enrollment
    ) -> EnrollmentRow {
        do {
            return .enrollment(try decode())
        } catch {
            let problem =
                (error as? Problem)?.text ?? (error as? KKPushError).map { $0.message } ?? String(describing: error)
            return .unreadable(
                UnreadableEnrollment(
                    tenantSlug: tenant ?? "", deviceID: deviceID ?? "", hardwareIdentifier: hardwareIdentifier ?? "",
                    problem: problem))
        }
    }

    /// `store-row-invalid` for an unreadable row of `table`, naming it.
    static func error(_ u: UnreadableEnrollment, table: String) -> KKPushError {
        KKPushError(
            code: .storeRowInvalid,
            message:
                "The \(table) row \(u.name) (hardware_identifier \(u.hardwareIdentifier.isEmpty ? "?" : u.hardwareIdentifier)) cannot be read as an enrollment: \(u.problem).",
            fix:
                "Correct that row (role is manager or member, status active or revoked, team_codes a list of text, updated_at a time), or leave it out of the store kkpush reads."
        )
    }
}
