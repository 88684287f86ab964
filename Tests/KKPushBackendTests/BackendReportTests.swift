import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

/// The backend's database reports (KKPushBackend): an import into a real SQLite file says what it replaced; enroll's
/// JSON has `replaced: null` when nothing was; migrate says what it created.
@Suite("The backend's reports")
struct BackendReportTests {
    static func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test("An import upserts all, and its report names the enrollments replaced")
    func importReport() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("db.sqlite").path
        let enrollments = EnrollmentStorageTests.sample()
        let data = try EnrollmentJSON.encode(enrollments)
        let (first, second) = try await SQLiteEnrollmentStore.withStore(path: path) { store in
            (
                try await EnrollmentImportReport.run(data, source: "the export", into: store),
                try await EnrollmentImportReport.run(
                    try EnrollmentJSON.encode([enrollments[0]]), source: "the export", into: store)
            )
        }
        #expect(first.count == enrollments.count && first.replaced.isEmpty)
        #expect(first.summary == "\(enrollments.count) enrollment(s) (\(enrollments.count) new, 0 replaced)")
        #expect(second.summary == "1 enrollment(s) (0 new, 1 replaced: \(enrollments[0].id))")
        let object = try Self.object(second)
        #expect(object["added"] as? Int == 0 && (object["replaced"] as? [String]) == ["\(enrollments[0].id)"])

        // A bad entry is named and nothing is imported.
        let error = try await #require(throws: KKPushError.self) {
            try await SQLiteEnrollmentStore.withStore(path: path) { store in
                try await EnrollmentImportReport.run(Data("[{}]".utf8), source: "the file x.json", into: store)
            }
        }
        #expect(error.message.contains("the file x.json") || error.message.contains("[0]"), "\(error.message)")
    }

    @Test("enroll's report: the enrollment, its JWT, replaced null when nothing was; the JWT alone on the last line")
    func enrollReport() throws {
        let enrollment = EnrollmentStorageTests.sample()[0]
        let report = BackendEnrollReport(
            EnrollOutcome(enrollment: enrollment, token: "jwt.value.sig", replaced: nil), database: "db.sqlite")
        let object = try Self.object(report)
        #expect(object["replaced"] is NSNull && object["signed_device_token"] as? String == "jwt.value.sig")
        #expect((object["enrollment"] as? [String: Any])?["device_id"] as? String == enrollment.deviceID)
        #expect(
            report.textLines.first == "enrolled \(enrollment.id) in db.sqlite (generation \(enrollment.generation))")
        #expect(report.textLines.last == "jwt.value.sig" && report.textLines.count == 2)
    }

    @Test("migrate's report: what it created, or that nothing changed")
    func migrationReport() throws {
        let location = try EnrollmentStoreLocation.parse("kkpush-backend.sqlite", origin: "the default")
        let none = BackendMigrationReport(location: location, created: [])
        let noneObject = try Self.object(none)
        #expect(!none.changed && noneObject["changed"] as? Bool == false)
        #expect(
            none.textLines == [
                "\(location.display) (the default): nothing changed; the table and its indexes are there"
            ])
        let some = BackendMigrationReport(location: location, created: ["created table x"])
        #expect(some.textLines == ["created table x", "\(location.display) (the default): migrated"])
    }
}
