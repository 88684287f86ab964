import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushStore
import KKPushSystem
import KantineKoning
import Logging

/// `kkpush backend import`.
struct BackendImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Upsert the enrollments of a JSON array (an export) into the database, all or nothing.",
        discussion: """
            Each entry is added, or replaces the enrollment with the same tenant_slug and device_id (its token, \
            build environment, app version and e-mail become the entry's; its generation never goes down). The \
            output says how many were new and names the ones replaced. A bad entry is named ([3].status) and \
            nothing is imported.
            """)

    @Argument(help: "The JSON file ('-' for standard input).") var file: String
    @OptionGroup var database: BackendDatabaseOptions

    /// The largest import file read: 256 MB.
    static let maximumSize = 256 << 20

    struct Result {
        var count: Int
        var replaced: [Enrollment]

        var summary: String {
            let names = replaced.prefix(10).map(\.id.description).joined(separator: ", ")
            let more = replaced.count > 10 ? ", and \(replaced.count - 10) more" : ""
            return
                "\(count) enrollment(s) (\(count - replaced.count) new, \(replaced.count) replaced\(replaced.isEmpty ? "" : ": \(names)\(more)"))"
        }
    }

    /// Decodes `data` and upserts it into `store`, all or nothing, saying which enrollments it replaced.
    static func importEnrollments(_ data: Data, source: String, into store: any EnrollmentStore) async throws -> Result
    {
        let incoming = try EnrollmentJSON.decode(data, source: source)
        let replaced = try await store.existing(among: incoming)
        try await store.upsert(contentsOf: incoming)
        return Result(count: incoming.count, replaced: replaced)
    }

    func run() async throws {
        try await reportingErrors {
            let data = Data(try InputFile.read(file, what: "enrollments file", maximumSize: Self.maximumSize))
            let location = try database.location()
            let mapping = try database.mapping()
            let source = file == "-" ? "The enrollments on standard input" : "The enrollments file '\(file)'"
            let result = try await EnrollmentStores.withStore(location, mapping: mapping) {
                try await Self.importEnrollments(data, source: source, into: $0)
            }
            print("imported \(result.summary) into \(location.display)")
        }
    }
}
