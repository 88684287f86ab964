import ArgumentParser
import Foundation
import KKPushCore

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
            Exits 0 (the breaking rows are the point of the demo).
            """
    )

    @Flag(name: .long, help: "Print a JSON object.")
    var json = false

    struct ServerSetup {
        var name: String
        var settings: ServerAPNsSettings
        var testUser: Bool
    }

    static let setups: [ServerSetup] = [
        ServerSetup(name: "auto-detection (recommended)", settings: .init(), testUser: false),
        ServerSetup(name: "APNS_ENV=sandbox (legacy)", settings: .init(legacyAPNSEnv: "sandbox"), testUser: false),
        ServerSetup(name: "APNS_ENV=production (legacy)", settings: .init(legacyAPNSEnv: "production"), testUser: false),
        ServerSetup(name: "APNS_FORCE_ENV=sandbox", settings: .init(forceEnv: "sandbox"), testUser: false),
        ServerSetup(name: "is_test_user", settings: .init(), testUser: true),
    ]

    static let builds: [AppBuild] = [
        AppBuild(scheme: .releaseTesting), AppBuild(scheme: .release),
        AppBuild(scheme: .releaseWithLogging, loggingVariant: .testing),
    ]

    func run() async throws {
        var rows: [[String: Any]] = []
        var lines: [String] = []
        var broken = 0
        for setup in Self.setups {
            lines.append("")
            lines.append("Server: \(setup.name)")
            for build in Self.builds {
                let r = EnvironmentResolver.resolve(
                    buildEnvironment: build.buildEnvironment, isTestUser: setup.testUser, settings: setup.settings)
                let tokenEnv = build.scheme.tokenEnvironment
                let ok = r.environment == tokenEnv
                if !ok { broken += 1 }
                let problems = build.problems() + r.warnings
                rows.append([
                    "server": setup.name, "scheme": build.scheme.rawValue, "build_environment": build.buildEnvironment,
                    "token_environment": tokenEnv.rawValue, "apns_environment": r.environment.rawValue,
                    "host": r.environment.host, "decided_by": r.decidedBy.rawValue, "delivers": ok,
                    "expected_apns_answer": ok ? "200" : "400 BadDeviceToken",
                    "problems": problems.map(Output.json),
                ])
                let name = build.scheme.rawValue.padding(toLength: 21, withPad: " ", startingAt: 0)
                let be = "\"\(build.buildEnvironment)\"".padding(toLength: 14, withPad: " ", startingAt: 0)
                let route = "\(tokenEnv) token → \(r.environment) (\(r.decidedBy.rawValue))".padding(
                    toLength: 48, withPad: " ", startingAt: 0)
                lines.append("  \(ok ? "✓" : "✗") \(name) \(be) \(route) \(ok ? "200" : "400 BadDeviceToken")")
                if !ok, let first = problems.first(where: { $0.severity == .error }) ?? problems.first {
                    lines.append("      fix: \(first.fix)")
                }
            }
        }
        if json {
            Output.printJSON(["rows": rows, "broken": broken, "total": rows.count])
            return
        }
        print("kkpush demo: where each Kantine Koning build's pushes go, under each server setting")
        print("(✓ the server pushes to the environment the build's tokens belong to; ✗ APNs answers BadDeviceToken)")
        lines.forEach { print($0) }
        print("")
        print("\(broken) of \(rows.count) combinations break delivery. Try: kkpush env resolve --build-environment production --server-apns-env sandbox")
    }
}
