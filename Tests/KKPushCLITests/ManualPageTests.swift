import Foundation
import KKPushTestSupport
import Testing

/// The man page, `Sources/kkpush/man/kkpush.1`, is what swift-argument-parser's generate-manual makes of the
/// commands now: a help text changed without `.ci/gen-manual` fails here.
@Suite("The man page matches the commands")
struct ManualPageTests {
    static let page = "Sources/kkpush/man/kkpush.1"

    @Test("kkpush.1 is generate-manual's output for the built kkpush, byte for byte")
    func current() async throws {
        let committed = try String(contentsOf: Repository.file(Self.page), encoding: .utf8)
        // The page's date is the one it was generated with; generate it again with that date.
        let dateLine = try #require(committed.split(separator: "\n").first { $0.hasPrefix(".Dd ") })
        let parsed = DateFormatter()
        parsed.locale = Locale(identifier: "en_US_POSIX")
        parsed.timeZone = TimeZone(identifier: "UTC")
        parsed.dateFormat = "MMMM d, yyyy"
        let date = try #require(parsed.date(from: String(dateLine.dropFirst(4))), "\(dateLine)")
        parsed.dateFormat = "yyyy-MM-dd"
        let dir = try makeTemporaryDirectory(prefix: "kkpush-manual")
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = try await runProcess(
            try Repository.builtProduct("generate-manual"),
            [
                try Repository.builtProduct("kkpush").path, "--date", parsed.string(from: date), "--authors",
                "Kantine Koning", "--output-directory", dir.path,
            ],
            timeout: 60)
        #expect(output.status == 0, "\(String(decoding: output.stderr, as: UTF8.self))")
        let generated = try String(contentsOf: dir.appendingPathComponent("kkpush.1"), encoding: .utf8)
        #expect(generated == committed, "the man page is stale: run bash .ci/gen-manual")
    }

    @Test("Every command and option kkpush has is in the man page")
    func everyCommand() async throws {
        let page = try String(contentsOf: Repository.file(Self.page), encoding: .utf8)
        let help = try await CLI.run(["--help"]).stdout
        // The commands are listed in groups (`SEND SUBCOMMANDS:`, `FLEET SUBCOMMANDS:`, …): every group's.
        var commands: [String] = []
        var inGroup = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasSuffix("SUBCOMMANDS:") {
                inGroup = true
            } else if line.isEmpty {
                inGroup = false
            } else if inGroup, line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first
            {
                commands.append(String(name))
            }
        }
        #expect(commands.count >= 15)
        for command in commands { #expect(page.contains("\n.It Em \(command)\n"), "no section for \(command)") }
        for option in ["--json", "--probe", "--resume", "--store", "--strict"] {
            #expect(page.contains("Fl \(option.dropFirst(1))"), "no \(option)")
        }
    }
}
