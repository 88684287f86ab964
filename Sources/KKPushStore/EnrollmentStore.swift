public import Foundation
import KKPushCore
public import KantineKoning

/// Where the backend keeps its `device_enrollments`.
///
/// ``SQLiteEnrollmentStore`` (a file on disk) is the default; ``PostgresEnrollmentStore`` keeps them in
/// PostgreSQL (the real backend's database, through a connection pool); ``InMemoryEnrollmentStore`` is for tests
/// and simulations. ``EnrollmentStores/withStore(_:readOnly:mapping:poolSize:logger:_:)`` opens the one a
/// command names. Every store has the same semantics (the tests run against all three).
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
    /// Enrolls (or re-enrolls) `enrollment` as one change: if the tenant already has this device id, it is
    /// replaced only when `replacing` is true (else ``EnrollmentExistsError`` with the stored record, and
    /// nothing changes); the generation then becomes the stored one plus one (older device JWTs are
    /// refused from then on), else the record's; the status is active. `sign` is called with the record
    /// as stored and its result returned; if it throws, nothing is written.
    func enroll(_ enrollment: Enrollment, replacing: Bool, sign: @Sendable (Enrollment) throws -> String) async throws
        -> EnrollOutcome
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
    /// Replaces an enrollment's token, build environment, aps environment and app version (the token update),
    /// and records `at` as the token's registration time. `apsEnvironment` nil (an update without the field)
    /// clears the stored one (see ``Enrollment/apsEnvironment``). Returns the updated record; throws
    /// `enrollment-not-found` if there is none.
    @discardableResult
    func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, apsEnvironment: String?,
        appVersion: String, at: Date
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
    /// When the phone with this vendor UUID (compared without case) last synced its enrollments (the backend's
    /// once-an-hour sync throttle), if it did: kept in the store (`kkpush_sync_throttle`), so a restarted backend
    /// remembers it.
    func lastSync(hardwareIdentifier: String) async throws -> Date?
    /// Records when the phone synced (nil: forgets it, giving back a sync that changed nothing).
    func recordSync(hardwareIdentifier: String, at: Date?) async throws
    /// kkpush's own columns the table lacks (a read-only PostgreSQL store of the real backend's table, see
    /// ``EnrollmentTableMapping/optionalForReading``), read as their defaults; empty for every other store.
    /// ``absentColumnNotes`` says what cannot be known without them.
    var absentColumns: Set<String> { get }
    /// Calls `body` with every stored row, in `order`, `batchSize` at a time, without holding the table in memory:
    /// each an enrollment, or a row that cannot be one (a role or status kkpush does not know), named, so that a
    /// reader of the whole table reports it and goes on. ``forEachEnrollment(orderedBy:tenant:batchSize:_:)``
    /// throws at such a row instead.
    ///
    /// `tenant` nil reads every tenant. PostgreSQL reads through a server-side cursor in a read-only
    /// transaction, SQLite by keyset pagination; the memory store slices ``all()``. Batches are never empty.
    func forEachEnrollmentRow(
        orderedBy order: EnrollmentOrder, tenant: String?, batchSize: Int,
        _ body: @Sendable ([EnrollmentRow]) async throws -> Void
    ) async throws
}

/// The order ``EnrollmentStore/forEachEnrollment(orderedBy:tenant:batchSize:_:)`` reads enrollments in (ties
/// broken by device id, then tenant). Enrollments without the key (no APNs token) come last.
public enum EnrollmentOrder: Sendable {
    /// By device id.
    case deviceID
    /// By APNs token (enrollments holding the same token are adjacent).
    case apnsToken
    /// By vendor UUID, compared without case (a phone's enrollments are adjacent).
    case hardwareIdentifier
    /// By manager e-mail, compared without case (the enrollments one e-mail finds are adjacent).
    case teamManagerEmail
}

/// What ``EnrollmentStore/enroll(_:replacing:sign:)`` did.
public struct EnrollOutcome: Sendable {
    /// The enrollment as stored.
    public var enrollment: Enrollment
    /// Its signed device JWT.
    public var token: String
    /// The enrollment it replaced (same tenant and device id), if any.
    public var replaced: Enrollment?

    /// Creates an outcome.
    public init(enrollment: Enrollment, token: String, replaced: Enrollment?) {
        self.enrollment = enrollment
        self.token = token
        self.replaced = replaced
    }
}

/// An enrollment was asked for a tenant and device id that already has one, without asking to replace it.
public struct EnrollmentExistsError: Error, Sendable {
    /// The stored enrollment (unchanged).
    public var existing: Enrollment

    /// Creates the error.
    public init(existing: Enrollment) { self.existing = existing }

    /// One sentence on what the stored enrollment holds, for messages: role, teams, status, generation,
    /// and the fields a replacement clears (the APNs token shown redacted).
    public var held: String { Self.describe(existing) }

    /// What `e` holds, in one line.
    public static func describe(_ e: Enrollment) -> String {
        var parts = [
            "\(e.role.rawValue) of \(e.teamCodes.joined(separator: ", "))", e.status.rawValue,
            "generation \(e.generation)",
        ]
        parts.append("apns_token \(e.apnsToken.map(DeviceToken.redacted) ?? "none")")
        parts.append("build_environment \(e.buildEnvironment.map { "\"\($0)\"" } ?? "none")")
        if let aps = e.apsEnvironment { parts.append("aps_environment \"\(aps)\"") }
        parts.append("app_version \(e.appVersion ?? "none")")
        parts.append("team_manager_email \(e.teamManagerEmail ?? "none")")
        if e.isTestUser { parts.append("test user") }
        return parts.joined(separator: ", ")
    }
}

extension EnrollmentStore {
    /// None: the store has every column.
    public var absentColumns: Set<String> { [] }

    /// One line per absent column (``absentColumns``): what a command reading this store cannot know, as it says
    /// it ("token age unknown: the table has no token_updated_at").
    public var absentColumnNotes: [String] { EnrollmentTableMapping.notes(absent: absentColumns) }

    /// What a reader of this store should be told before its answers: how an SQLite file is read when not
    /// directly (``SQLiteEnrollmentStore/readNote``), then ``absentColumnNotes``.
    public var readingNotes: [String] {
        ((self as? SQLiteEnrollmentStore)?.readNote.map { [$0] } ?? []) + absentColumnNotes
    }

    /// Calls `body` with every enrollment, in `order`, `batchSize` at a time, without holding the table in memory
    /// (see ``forEachEnrollmentRow(orderedBy:tenant:batchSize:_:)``); a row that cannot be read as an enrollment
    /// throws `store-row-invalid`, naming it.
    public func forEachEnrollment(
        orderedBy order: EnrollmentOrder, tenant: String?, batchSize: Int,
        _ body: @Sendable ([Enrollment]) async throws -> Void
    ) async throws {
        try await forEachEnrollmentRow(orderedBy: order, tenant: tenant, batchSize: batchSize) { rows in
            try await body(try rows.map { try $0.get() })
        }
    }

    /// Reads ``all()`` and slices it (for stores that hold everything in memory anyway: every row is readable).
    public func forEachEnrollmentRow(
        orderedBy order: EnrollmentOrder, tenant: String?, batchSize: Int,
        _ body: @Sendable ([EnrollmentRow]) async throws -> Void
    ) async throws {
        var rows = try await all()
        if let tenant { rows = rows.filter { $0.tenantSlug == tenant } }
        rows.sort { EnrollmentOrder.precedes($0, $1, order) }
        let size = max(1, batchSize)
        var start = 0
        while start < rows.count {
            let end = min(start + size, rows.count)
            try await body(rows[start..<end].map(EnrollmentRow.enrollment))
            start = end
        }
    }
}

extension EnrollmentOrder {
    /// Whether `a` comes before `b` in `order` (the in-memory form of the stores' ORDER BY).
    static func precedes(_ a: Enrollment, _ b: Enrollment, _ order: EnrollmentOrder) -> Bool {
        let ka: String?
        let kb: String?
        switch order {
        case .deviceID: (ka, kb) = (a.deviceID, b.deviceID)
        case .apnsToken: (ka, kb) = (a.apnsToken, b.apnsToken)
        case .hardwareIdentifier: (ka, kb) = (a.hardwareIdentifier.lowercased(), b.hardwareIdentifier.lowercased())
        case .teamManagerEmail: (ka, kb) = (a.teamManagerEmail?.lowercased(), b.teamManagerEmail?.lowercased())
        }
        switch (ka, kb) {
        case (nil, .some): return false
        case (.some, nil): return true
        case (.some(let x), .some(let y)) where x != y: return x < y
        default: break
        }
        if a.deviceID != b.deviceID { return a.deviceID < b.deviceID }
        return a.tenantSlug < b.tenantSlug
    }
}

extension EnrollmentStore {
    /// Enrolls, replacing an enrollment with the same tenant and device id (see ``enroll(_:replacing:sign:)``).
    public func enroll(_ enrollment: Enrollment, sign: @Sendable (Enrollment) throws -> String) async throws -> (
        Enrollment, String
    ) {
        let outcome = try await enroll(enrollment, replacing: true, sign: sign)
        return (outcome.enrollment, outcome.token)
    }

    /// Every enrollment of `enrollments` whose tenant and device id the store already has (what an import
    /// would replace).
    public func existing(among enrollments: [Enrollment]) async throws -> [Enrollment] {
        var found: [Enrollment] = []
        for e in enrollments {
            if let stored = try await get(deviceID: e.deviceID, tenant: e.tenantSlug) { found.append(stored) }
        }
        return found
    }

    /// Every enrollment as a JSON array (sorted keys, pretty printed), the export format.
    public func exportJSON() async throws -> Data {
        try EnrollmentJSON.encode(await all())
    }

    /// Upserts every enrollment of a JSON array (the export format), all or nothing. Returns how many
    /// were read.
    @discardableResult
    public func importJSON(_ data: Data, source: String? = nil) async throws -> Int {
        let enrollments = try EnrollmentJSON.decode(data, source: source)
        try await upsert(contentsOf: enrollments)
        return enrollments.count
    }

    /// A token update without `aps_environment` (the app does not send it): as
    /// ``updateToken(deviceID:tenant:token:buildEnvironment:apsEnvironment:appVersion:at:)`` with nil, so the
    /// stored aps_environment is cleared.
    @discardableResult
    public func updateToken(
        deviceID: String, tenant: String, token: String, buildEnvironment: String, appVersion: String, at: Date
    ) async throws -> Enrollment {
        try await updateToken(
            deviceID: deviceID, tenant: tenant, token: token, buildEnvironment: buildEnvironment, apsEnvironment: nil,
            appVersion: appVersion, at: at)
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
        throw importRowFailed(
            index, e,
            KKPushError(
                code: .enrollmentInvalid,
                message: "\(missing.joined(separator: ", ")) is empty.",
                fix: "Give every entry a device_id, tenant_slug and hardware_identifier."))
    }
    if !Enrollment.generationRange.contains(e.generation) {
        throw importRowFailed(
            index, e,
            KKPushError(
                code: .enrollmentInvalid,
                message: "generation \(e.generation) is not from 1 to \(Int32.max).",
                fix: "Give a generation from 1 to \(Int32.max), or leave it out."))
    }
}

/// `error`, with its message prefixed by the import entry it is about; nothing of the import was written.
func importRowFailed(_ index: Int, _ e: Enrollment, _ error: any Error) -> KKPushError {
    let base = error as? KKPushError
    return KKPushError(
        code: base?.code ?? .storeQueryFailed,
        message:
            "Import entry [\(index)] (\(e.tenantSlug)/\(e.deviceID)): \(base?.message ?? ErrorWords.describe(error)) Nothing was imported.",
        fix: base?.fix ?? "Fix that entry and import again.", underlying: base?.underlying)
}

/// The JSON form of a list of enrollments: an array of ``Enrollment`` objects.
public enum EnrollmentJSON {
    /// Encodes enrollments (pretty printed, sorted keys).
    public static func encode(_ enrollments: [Enrollment]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Foundation on Linux pretty-prints an empty array as "[\n\n]".
        if enrollments.isEmpty { return Data("[]".utf8) }
        return try encoder.encode(enrollments)
    }

    /// The valid values of the enrollment's enum fields, for messages.
    public static let choices: [String: [String]] = [
        "role": EnrollmentRole.allCases.map(\.rawValue), "status": EnrollmentStatus.allCases.map(\.rawValue),
    ]

    /// Decodes enrollments; throws `enrollments-json-invalid` naming the entry and field at fault
    /// (`[3].status`) and what was expected.
    /// `source` names the input in messages ("The import file x.json"; default "The enrollments JSON").
    public static func decode(_ data: Data, source: String? = nil) throws -> [Enrollment] {
        func invalid(_ why: String) -> KKPushError { Self.invalid(why, source: source) }
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            throw invalid("it is empty; expected a JSON array of enrollments ([] for none)")
        }
        if data.starts(with: Array("SQLite format 3".utf8)) {
            throw invalid(
                "it is an SQLite database, not JSON (give it as the enrollment database (db); the backend's export (backendExportCommand) writes it as JSON)"
            )
        }
        if let syntax = JSONInput.syntaxProblem(Array(data)) {
            throw invalid(syntax.hasPrefix("it is ") ? syntax : "it is not valid JSON: \(syntax)")
        }
        do {
            return try JSONDecoder().decode([Enrollment].self, from: data)
        } catch let error as DecodingError {
            if case .typeMismatch(_, let context) = error, context.codingPath.isEmpty {
                throw invalid(
                    "the top level is \(topLevelKind(data)); expected a JSON array of enrollments ([{...}, ...], as the backend's export writes them (backendExportCommand))"
                )
            }
            throw invalid(JSONInput.clause(for: error, choices: choices))
        }
    }

    /// "an object", "a string", ... for the first value of `data`.
    private static func topLevelKind(_ data: Data) -> String {
        switch data.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
        case UInt8(ascii: "{"): "an object"
        case UInt8(ascii: "\""): "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): "true or false"
        case UInt8(ascii: "n"): "null"
        default: "a number"
        }
    }

    private static func invalid(_ why: String, source: String?) -> KKPushError {
        KKPushError(
            code: .enrollmentsJsonInvalid,
            message: "\(source ?? "The enrollments JSON") is unusable: \(why). Nothing was imported.",
            fix:
                "Give a JSON array of enrollments with the fields \(Enrollment.fieldNames.joined(separator: ", ")) (as the backend's export writes them (backendExportCommand))."
        )
    }
}

func enrollmentNotFound(_ deviceID: String, _ tenant: String) -> KKPushError {
    KKPushError(
        code: .enrollmentNotFound, message: "No enrollment '\(deviceID)' in tenant '\(tenant)'.",
        fix: "Enroll the device first (POST /admin/enrollments), or check the device_id and tenant_slug.")
}
