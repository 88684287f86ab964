/// A stored `device_enrollments` row that cannot be read as an ``Enrollment``: a role or status kkpush does not
/// know (`coach`, `pending`), team codes that are not a list of text, an unreadable `updated_at`. A reader of the
/// whole table (the fleet audit) reports it and goes on; the row is named by what it holds of its keys (an
/// empty string for a key the row lacks).
public struct UnreadableEnrollment: Sendable, Hashable {
    /// The row's tenant_slug.
    public var tenantSlug: String
    /// The row's device_id.
    public var deviceID: String
    /// The row's hardware_identifier.
    public var hardwareIdentifier: String
    /// What is wrong, naming the column and its value ("role 'coach' is not one kkpush knows (manager, member)").
    public var problem: String

    public init(tenantSlug: String, deviceID: String, hardwareIdentifier: String, problem: String) {
        self.tenantSlug = tenantSlug
        self.deviceID = deviceID
        self.hardwareIdentifier = hardwareIdentifier
        self.problem = problem
    }

    /// `tenant/device_id`, for messages.
    public var name: String { "\(tenantSlug.isEmpty ? "?" : tenantSlug)/\(deviceID.isEmpty ? "?" : deviceID)" }
}
