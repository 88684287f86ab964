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

    func run() async throws {
        try await reportingErrors {
            let data = Data(try InputFile.read(file, what: "enrollments file", maximumSize: Self.maximumSize))
            let location = try database.location()
            let mapping = try database.mapping()
            let source = file == "-" ? "The enrollments on standard input" : "The enrollments file '\(file)'"
            let result = try await EnrollmentStores.withStore(location, mapping: mapping) {
                try await EnrollmentImportReport.run(data, source: source, into: $0)
            }
            print("imported \(result.summary) into \(location.display)")
        }
    }
}
