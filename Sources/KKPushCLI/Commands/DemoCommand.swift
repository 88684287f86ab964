import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KantineKoning

/// `kkpush demo`: the environment-resolution walk-through: every app build against every server
/// setting the README discusses, and which combinations break delivery.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show how each app build's pushes are routed under each server setting, and which break.",
        discussion: """
            Runs the backend's environment rules for the Kantine Koning builds (Release Testing, Release, \
            and the ENABLE_LOGGING variant) against the server settings the README discusses (auto-detection, \
            the legacy APNS_ENV, APNS_FORCE_ENV, a test user). A row breaks when the server pushes to the \
            other environment than the one the build's tokens belong to: APNs answers BadDeviceToken. \
            Each breaking row shows the fix that works under that row's settings: removing the override in \
            force, changing the build, or both when either alone would still break. If this process has \
            APNS_FORCE_ENV or APNS_ENV set, one more setup shows their effect. \
            Exits 0 (the breaking rows are the point of the demo).
            """
    )

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    func run() async throws {
        let report = EnvironmentDemoReport.run(
            processSettings: ServerAPNsSettings.from(environment: CommandIO.current.environment))
        Output.printReport(report, json: json)
    }
}

extension EnvironmentDemoReport: CommandReport {
    var textLines: [String] {
        var lines = [
            "kkpush demo: where each Kantine Koning build's pushes go, under each server setting",
            "(✓ the server pushes to the environment the build's tokens belong to; ✗ APNs answers BadDeviceToken)",
        ]
        for group in groups {
            lines.append("")
            lines.append("Server: \(group.setup.name)")
            for row in group.rows {
                let r = row.resolution
                let name = row.build.label.padding(toLength: 38, withPad: " ", startingAt: 0)
                let be = "\"\(row.build.buildEnvironment)\"".padding(toLength: 14, withPad: " ", startingAt: 0)
                let route = "\(row.build.tokenEnvironment) token → \(r.environment) (\(r.decidedBy.rawValue))".padding(
                    toLength: 48, withPad: " ", startingAt: 0)
                lines.append("  \(row.delivers ? "✓" : "✗") \(name) \(be) \(route) \(row.expectedAPNsAnswer)")
                if let fix = row.fix { lines.append("      fix: \(fix)") }
            }
        }
        let rows = rows
        lines.append("")
        lines.append(
            "\(rows.count { !$0.delivers }) of \(rows.count) combinations break delivery. Try: kkpush env resolve --build-environment production --apns-env sandbox"
        )
        return lines
    }
}
