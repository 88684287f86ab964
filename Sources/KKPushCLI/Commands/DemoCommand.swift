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

    struct ServerSetup {
        var name: String
        var settings: ServerAPNsSettings
        var testUser: Bool
    }

    static let setups: [ServerSetup] = [
        ServerSetup(name: "auto-detection (recommended)", settings: .init(), testUser: false),
        ServerSetup(name: "APNS_ENV=sandbox (legacy)", settings: .init(legacyAPNSEnv: "sandbox"), testUser: false),
        ServerSetup(
            name: "APNS_ENV=production (legacy)", settings: .init(legacyAPNSEnv: "production"), testUser: false),
        ServerSetup(name: "APNS_FORCE_ENV=sandbox", settings: .init(forceEnv: "sandbox"), testUser: false),
        ServerSetup(name: "is_test_user", settings: .init(), testUser: true),
    ]

    static let builds: [AppBuild] = [
        AppBuild(scheme: .releaseTesting), AppBuild(scheme: .release),
        AppBuild(scheme: .releaseWithLogging, loggingVariant: .testing),
        // The mismatch cells Apple's signing makes: a Debug build on TestFlight, a Release build run from Xcode.
        AppBuild(scheme: .releaseTesting, distribution: .testFlight), AppBuild(scheme: .release, distribution: .xcode),
    ]

    /// The setups shown: the fixed ones, plus this process's APNS_FORCE_ENV / APNS_ENV if either is set.
    static func allSetups(environment: [String: String] = CommandIO.current.environment) -> [ServerSetup] {
        let settings = ServerAPNsSettings.from(environment: environment)
        var set: [String] = []
        if let v = settings.forceEnv, !v.isEmpty { set.append("\(ServerAPNsSettings.forceVariable)=\(v)") }
        if let v = settings.legacyAPNSEnv, !v.isEmpty { set.append("\(ServerAPNsSettings.legacyVariable)=\(v)") }
        guard !set.isEmpty else { return setups }
        return setups + [
            ServerSetup(
                name: "this process's environment: \(set.joined(separator: ", "))", settings: settings, testUser: false)
        ]
    }

    /// The fix for a breaking row that works under the row's settings (``OverrideRemedy/fix(build:settings:testUser:resolution:)``).
    static func fix(build: AppBuild, setup: ServerSetup, resolution r: EnvironmentResolution) -> String {
        OverrideRemedy.fix(build: build, settings: setup.settings, testUser: setup.testUser, resolution: r)
    }

    func run() async throws {
        var rows: [JSONValue] = []
        var lines: [String] = []
        var broken = 0
        for setup in Self.allSetups() {
            lines.append("")
            lines.append("Server: \(setup.name)")
            for build in Self.builds {
                let r = EnvironmentResolver.resolve(
                    buildEnvironment: build.buildEnvironment, isTestUser: setup.testUser, settings: setup.settings)
                let tokenEnv = build.tokenEnvironment
                let ok = r.environment == tokenEnv
                if !ok { broken += 1 }
                let problems = build.problems() + r.warnings
                let fix = ok ? nil : Self.fix(build: build, setup: setup, resolution: r)
                rows.append([
                    "server": .string(setup.name), "scheme": .string(build.scheme.rawValue),
                    "distribution": .string(build.distribution.rawValue),
                    "build_environment": .string(build.buildEnvironment),
                    "token_environment": .string(tokenEnv.rawValue),
                    "apns_environment": .string(r.environment.rawValue), "host": .string(r.environment.host),
                    "decided_by": .string(r.decidedBy.rawValue), "delivers": .bool(ok),
                    "expected_apns_answer": ok ? "200" : "400 BadDeviceToken",
                    "problems": Output.json(problems), "fix": JSONValue(fix),
                ])
                let name = build.label.padding(toLength: 38, withPad: " ", startingAt: 0)
                let be = "\"\(build.buildEnvironment)\"".padding(toLength: 14, withPad: " ", startingAt: 0)
                let route = "\(tokenEnv) token → \(r.environment) (\(r.decidedBy.rawValue))".padding(
                    toLength: 48, withPad: " ", startingAt: 0)
                lines.append("  \(ok ? "✓" : "✗") \(name) \(be) \(route) \(ok ? "200" : "400 BadDeviceToken")")
                if let fix { lines.append("      fix: \(fix)") }
            }
        }
        if json {
            Output.printJSON(["rows": .array(rows), "broken": .int(broken), "total": .int(rows.count)])
            return
        }
        print("kkpush demo: where each Kantine Koning build's pushes go, under each server setting")
        print("(✓ the server pushes to the environment the build's tokens belong to; ✗ APNs answers BadDeviceToken)")
        for line in lines { print(line) }
        print("")
        print(
            "\(broken) of \(rows.count) combinations break delivery. Try: kkpush env resolve --build-environment production --apns-env sandbox"
        )
    }
}
