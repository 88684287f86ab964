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

/// `kkpush backend export`.
struct BackendExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every enrollment of the database as a JSON array (stdout or --output).",
        discussion: "The database must exist (export never creates one). --output is written whole or not at all.")

    @OptionGroup var database: BackendExistingDatabaseOptions
    @Option(
        name: .shortAndLong,
        help: "Write to this file instead of standard output (its folder must exist; an existing file is replaced).")
    var output: String?

    func run() async throws {
        try await reportingErrors {
            let location = try database.location()
            let mapping = try database.mapping()
            if let output { try InputFile.checkWritable(output, what: "export file", label: "--output") }
            // Export only reads: a PostgreSQL database is opened read-only.
            let (data, count) = try await EnrollmentStores.withStore(location, readOnly: true, mapping: mapping) {
                store in
                for note in store.readingNotes { Output.printError("note: \(note)") }
                let all = try await store.all()
                return (try EnrollmentJSON.encode(all), all.count)
            }
            if let output, output != "-" {
                do {
                    try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: output), options: .atomic)
                } catch {
                    throw CLIError(
                        exitCode: ExitStatus.outputFailed, code: .outputWriteFailed,
                        message:
                            "Cannot write the export file --output \(output)\(posixReason(error).map { ": \($0)" } ?? "").",
                        fix: "Check the free space and the permissions of its folder, or give another --output.")
                }
                Output.printError("exported \(count) enrollment(s) to \(output)")
            } else {
                CommandIO.current.write(bytes: [UInt8](data) + [0x0A])
            }
        }
    }
}

/// The system's reason for a failed file write ("no space left on device"), without Foundation's wording.
private func posixReason(_ error: any Error) -> String? {
    var current: NSError? = error as NSError
    while let e = current {
        if e.domain == NSPOSIXErrorDomain { return ErrorWords.systemText(errno: Int32(e.code)).lowercased() }
        current = e.userInfo[NSUnderlyingErrorKey] as? NSError
    }
    return nil
}
