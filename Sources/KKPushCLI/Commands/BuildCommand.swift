import ArgumentParser
import Foundation
import KKPushBuild
import KKPushBuildJudgement
import KKPushCLISupport
import KKPushCore
import KKPushSystem
import KantineKoning

/// `kkpush build`: what a signed build says about its pushes.
struct BuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Read a signed iOS/macOS build: the aps-environment it is signed for, its profile, its distribution.",
        subcommands: [BuildInspectCommand.self]
    )
}

/// `kkpush build inspect PATH`.
struct BuildInspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Report which APNs environment accepts a build's tokens, and why.",
        discussion: """
            PATH is an .ipa (read member by member, never unpacked), an .xcarchive, an .app folder, an \
            embedded.mobileprovision / .provisionprofile, a bare executable, an .entitlements (.xcent) file, or an \
            Xcode DistributionSummary.plist (with the ExportOptions.plist beside it, if any). PATH may also be - \
            (standard input), a pipe or a process substitution (<(cat embedded.mobileprovision)): it is copied to \
            a private file first. A named pipe (FIFO) that nothing has open for writing is refused within half a \
            second (file-no-writer, exit 2), and one whose writer sends nothing within 10 s too: never a hang.

            Apple sets the aps-environment entitlement from the provisioning profile the build is signed with, not \
            from its build configuration: development profiles give development (APNs sandbox); ad hoc, enterprise \
            and App Store Connect (TestFlight, App Store) give production. The executable's code-signature \
            entitlements are the truth (the DER form where present), the embedded profile next; a disagreement is \
            reported. The Kantine Koning app reports build_environment from its configuration (#if DEBUG), so \
            the report shows what each configuration of this build would report and where the backend sends it.

            Exit status: 0 the build's pushes route right as far as can be told; 1 a problem: its pushes will be \
            misrouted (--scheme given, or the archive names its scheme), its profile expired or was tampered with, \
            or it has no aps-environment; 2 the build cannot be read. --json: verdict is {code, message, fix, \
            why} as diagnose's (code "ok" when nothing is wrong), verdict_text the one-line text.
            """
    )

    @Argument(help: ArgumentHelp("The build to read (- for standard input).", valueName: "path"))
    var path: String

    /// The most read from standard input or a pipe (copied to a file first): 2 GiB, more than any .ipa.
    static let streamLimit = 2 << 30

    @Option(
        name: .long,
        help:
            "The scheme it was built with (release-testing = Debug, release = Release), to judge what it reports. An .xcarchive names its own."
    )
    var scheme: String?

    @Option(
        name: .customLong("trust-root"),
        help: ArgumentHelp(
            "A root certificate (PEM or DER) a profile's signature may chain to besides Apple Root CA. Repeatable.",
            valueName: "file"))
    var trustRoots: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Judge expiry at this time instead of now: an ISO 8601 date (2024-06-10, midnight UTC) or date-time (2024-06-10T12:00:00Z, or with an offset).",
            valueName: "date"))
    var at: String?

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    func validate() throws {
        if let scheme, AppBuildScheme(name: scheme) == nil {
            if AppDistribution(name: scheme) != nil {
                throw ValidationError(
                    "'\(scheme)' is a distribution, which the build itself tells; --scheme is the configuration: release-testing or release."
                )
            }
            throw ValidationError("Unknown --scheme '\(scheme)': use release-testing, release or release-with-logging.")
        }
        if let at, Self.parseTime(at) == nil {
            throw ValidationError(
                "--at '\(at)' is not an ISO 8601 date or date-time (2026-11-25, 2026-11-25T12:00:00Z, 2026-11-25T13:00:00+01:00)."
            )
        }
    }

    func run() async throws {
        let roots = try await reportingErrors { try loadRoots() }
        let judged = try await reportingErrors {
            try BuildPushJudgement.inspect(
                path: path, scheme: scheme.flatMap(AppBuildScheme.init(name:)), schemeOption: "--scheme",
                extraRoots: roots, now: at.flatMap(Self.parseTime) ?? Date(), streamLimit: Self.streamLimit)
        }
        Output.printReport(judged, json: json)
        if judged.failed { throw ExitCode(ExitStatus.failed) }
    }

    /// `--at`: an ISO 8601 date-time (`Z`, an offset, fractions of a second) or a date alone (its midnight, UTC).
    static func parseTime(_ text: String) -> Date? {
        if let exact = UTCTimestamp.parse(text) { return exact }
        // Foundation's parser stops at what it understands (2024-06-10x would be a date): the whole text must be
        // the form.
        let form = #"^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2}))?$"#
        guard text.range(of: form, options: .regularExpression) != nil else { return nil }
        for format in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
            if let date = try? format.parse(text) { return date }
        }
        return try? Date.ISO8601FormatStyle().year().month().day().parse(text)
    }

    /// The `--trust-root` files, read as every input file is and checked by the profile reader itself.
    func loadRoots() throws -> [Data] {
        try trustRoots.map { file in
            let data = Data(
                try InputFile.read(file, what: "root certificate", label: "--trust-root", maximumSize: 1 << 20))
            try ProvisioningProfile.checkTrustedRoot(data, what: "--trust-root \(file)")
            return data
        }
    }
}
