package import Foundation
package import KKPushStore
package import KantineKoning

// What the backend's database commands report, as values: `backend enroll`, `backend import` (and `backend serve
// --import`), `backend migrate`. Each is `Encodable` with explicit coding keys (the JSON field names scripts read)
// and says its text lines.

/// What `backend enroll` did: the enrollment as stored, its signed device JWT, and the enrollment it replaced.
package struct BackendEnrollReport: Encodable, Sendable {
    package var enrollment: Enrollment
    package var signedDeviceToken: String
    package var replaced: Enrollment?
    /// The database, as the text names it.
    package var database: String

    package init(_ outcome: EnrollOutcome, database: String) {
        enrollment = outcome.enrollment
        signedDeviceToken = outcome.token
        replaced = outcome.replaced
        self.database = database
    }

    enum CodingKeys: String, CodingKey {
        case enrollment, replaced
        case signedDeviceToken = "signed_device_token"
    }

    /// `{enrollment, signed_device_token, replaced}`, `replaced` `null` when nothing was.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(enrollment, forKey: .enrollment)
        try c.encode(signedDeviceToken, forKey: .signedDeviceToken)
        try c.encode(replaced, forKey: .replaced)
    }

    /// What was enrolled, what it replaced, and the JWT alone on the last line (for `$(…)`).
    package var textLines: [String] {
        var lines = ["enrolled \(enrollment.id) in \(database) (generation \(enrollment.generation))"]
        if let replaced {
            lines.append(
                "replaced the enrollment it had: \(EnrollmentExistsError.describe(replaced)); its older JWTs are refused from now on"
            )
        }
        lines.append(signedDeviceToken)
        return lines
    }
}

/// What an import of enrollments did: how many, and the ones it replaced (same tenant and device id).
package struct EnrollmentImportReport: Encodable, Sendable {
    package var count: Int
    package var replaced: [Enrollment]

    /// Decodes `data` (an export: a JSON array; `source` names it in errors) and upserts it into `store`, all or
    /// nothing, saying which enrollments it replaced.
    package static func run(_ data: Data, source: String, into store: any EnrollmentStore) async throws -> Self {
        let incoming = try EnrollmentJSON.decode(data, source: source)
        let replaced = try await store.existing(among: incoming)
        try await store.upsert(contentsOf: incoming)
        return EnrollmentImportReport(count: incoming.count, replaced: replaced)
    }

    enum CodingKeys: String, CodingKey { case count, added, replaced }

    /// `{count, added, replaced}`: `replaced` the ids of the enrollments replaced.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(count, forKey: .count)
        try c.encode(count - replaced.count, forKey: .added)
        try c.encode(replaced.map(\.id.description), forKey: .replaced)
    }

    /// `3 enrollment(s) (2 new, 1 replaced: vvwilhelmus/dev-x)`: at most ten replaced named.
    package var summary: String {
        let names = replaced.prefix(10).map(\.id.description).joined(separator: ", ")
        let more = replaced.count > 10 ? ", and \(replaced.count - 10) more" : ""
        return
            "\(count) enrollment(s) (\(count - replaced.count) new, \(replaced.count) replaced\(replaced.isEmpty ? "" : ": \(names)\(more)"))"
    }
}

/// What `backend migrate` did: what it created (nothing on a second run) in which database.
package struct BackendMigrationReport: Encodable, Sendable {
    /// The database as shown (a PostgreSQL URL with its password masked, or the SQLite path), and where it came
    /// from (`--db`, `DATABASE_URL`, the default).
    package var database: String
    package var origin: String
    package var created: [String]

    package init(location: EnrollmentStoreLocation, created: [String]) {
        database = location.display
        origin = location.origin
        self.created = created
    }

    /// Whether anything was created.
    package var changed: Bool { !created.isEmpty }

    enum CodingKeys: String, CodingKey { case database, created, changed }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(database, forKey: .database)
        try c.encode(created, forKey: .created)
        try c.encode(changed, forKey: .changed)
    }

    package var textLines: [String] {
        if created.isEmpty { return ["\(database) (\(origin)): nothing changed; the table and its indexes are there"] }
        return created + ["\(database) (\(origin)): migrated"]
    }
}
