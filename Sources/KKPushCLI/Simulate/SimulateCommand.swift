package import ArgumentParser
import Foundation
import KKPushBackend
package import KKPushCLISupport
import KKPushCore
import KKPushSimulator
import KKPushSystem
import KantineKoning
import Logging

/// `kkpush simulate`: the whole push path on one machine: the mock APNs server, the simulated
/// backend and simulated Kantine Koning apps, a dienst change, and each app's refreshed diensten.
package struct SimulateCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run the whole push path on this machine: mock APNs, simulated backend and apps, a dienst change.",
        discussion: """
            With no options: starts the mock APNs server (sandbox and production, TLS on 127.0.0.1), the \
            simulated backend and five simulated apps (Release Testing and Release builds, two tenants, one \
            phone with the README's three enrollments), changes a dienst of VV Wilhelmus JO11-3 and of AGOVV \
            JO10-5, shows each app receiving its push and refreshing its diensten, and prints a summary. \
            Exits 0 if every push was accepted and every app refreshed, 1 otherwise: that is what "ok" means \
            in --json. The latency goal (p99 push → refreshed list ≤ \(Int(SimulationReport.latencyGoalMilliseconds)) ms) is \
            reported apart, as met or not met (--json: latency_goal_ms, latency_goal_met); it is a benchmark \
            figure that depends on the machine and its load, so it does not change the exit status.

            --scenario reproduces a failure from the app README (\(SimulationScenario.allCases.map(\.rawValue).joined(separator: ", ")), \
            or all): it prints what failed and why, and exits 0 if the failure reproduced as expected, 1 if not. \
            The scenarios after the 200 (silent-push-throttled, alert-refresh-on-open, offline-coalescing, \
            expiration-zero-offline, collapse-id-update, force-quit-app) set the phone's connectivity and app state \
            on the mock's device and show per push its delivery state, what ran the refresh (or why nothing did), \
            the receipts the backend got from the app (it posts one only when its code ran) and what the backend \
            should have sent instead. The Live Activity scenarios through the activity registry \
            (live-activity-killed-app, live-activity-retried-start, live-activity-stale-push-to-start, \
            live-activity-start-budget) print the registry's state per activity after each step.
            """
    )

    @Option(
        name: .long,
        help: "Reproduce a failure: \(SimulationScenario.allCases.map(\.rawValue).joined(separator: ", ")), or all.")
    package var scenario: String?

    @Option(
        name: .long, parsing: .unconditional,
        help:
            "How many simulated phones, 1 to \(SimulateCommand.maximumDevices) (default 5; 1000 for the latency benchmark)."
    )
    package var devices: Int?

    /// The most phones a run simulates.
    package static let maximumDevices = 10_000

    @Flag(name: .long, help: "Print a JSON summary.")
    package var json = false

    @Flag(name: .long, help: "Print every app's log (token updates, pushes, refreshes).")
    package var verbose = false

    @Option(name: .long, help: "The folder with the mock's TLS certificate (default: Certificates/ of the checkout).")
    package var certificates: String?

    package init() {}

    package func validate() throws {
        try NumericFlags.integer(devices, flag: "--devices", in: 1...Self.maximumDevices, unit: "phones")
        if let scenario, scenario != "all", SimulationScenario(rawValue: scenario) == nil {
            throw ValidationError(
                "Unknown scenario '\(scenario)'. Use one of: \(SimulationScenario.allCases.map(\.rawValue).joined(separator: ", ")), all."
            )
        }
        if scenario != nil, devices != nil {
            throw ValidationError("--devices applies to the main run, not to --scenario.")
        }
    }

    /// `--certificates` must be a folder holding the mock's server.crt and server.key.
    package static func checkCertificates(_ path: String) throws {
        if path.trimmingWhitespace().isEmpty {
            throw CLIError.usage(
                .simulateCertificatesEmpty, "--certificates is empty.",
                fix:
                    "Give the folder holding server.crt and server.key (the checkout's Certificates/), or leave it out."
            )
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIError.input(
                .fileMissing, "The certificates folder --certificates \(path) does not exist.",
                fix:
                    "Give the folder holding server.crt and server.key (the checkout's Certificates/), or leave it out."
            )
        }
        guard isDirectory.boolValue else {
            throw CLIError.input(
                .fileNotFolder,
                "--certificates \(path) is a file; it takes the folder holding server.crt and server.key.",
                fix:
                    "Give the folder, for example --certificates \(URL(fileURLWithPath: path).deletingLastPathComponent().path)."
            )
        }
        let folder = URL(fileURLWithPath: path)
        for name in ["server.crt", "server.key"] {
            let file = folder.appendingPathComponent(name).path
            if !FileManager.default.fileExists(atPath: file) {
                throw CLIError.input(
                    .fileMissing, "--certificates \(path) has no \(name).",
                    fix:
                        "Give the folder holding the mock's server.crt and server.key (the checkout's Certificates/), or leave it out."
                )
            }
            let text = try InputFile.readText(
                file, what: "mock TLS \(name == "server.crt" ? "certificate" : "key") (in --certificates)",
                maximumSize: 1 << 20)
            if !text.contains("-----BEGIN") {
                throw CLIError.input(
                    .fileNotPem, "\(file) (in --certificates) is not PEM.",
                    fix: "Give the folder holding the PEM server.crt and server.key (the checkout's Certificates/).")
            }
        }
    }

    package func run() async throws {
        if let certificates { try await reportingErrors { try Self.checkCertificates(certificates) } }
        let configuration = SimulationConfiguration(certificatesDirectory: certificates)
        if let scenario {
            let list = scenario == "all" ? SimulationScenario.allCases : [SimulationScenario(rawValue: scenario)!]
            var outcomes: [ScenarioOutcome] = []
            for s in list {
                let outcome = try await reportingErrors { try await Scenarios.run(s, configuration: configuration) }
                outcomes.append(outcome)
                // The text follows each scenario as it ends; the JSON is one document once all have.
                if !json { for line in ScenarioReport(outcome: outcome).textLines { print(line) } }
            }
            let report = ScenariosReport(outcomes: outcomes)
            if json {
                Output.printJSON(encoding: report)
            } else {
                for line in report.summaryLines { print(line) }
            }
            if !outcomes.allSatisfy(\.reproduced) { throw ExitCode(1) }
            return
        }
        let count = devices ?? 5
        let report = try await reportingErrors {
            try await Simulation.run(deviceCount: count, configuration: configuration)
        }
        Output.printReport(SimulateReport(report: report, verbose: verbose), json: json)
        if !report.succeeded { throw ExitCode(1) }
    }
}

/// What `simulate` says of the main run: the push path set up, each change's fan-out, each app's pushes and refreshed
/// diensten, and the latency from a push's acceptance to the refreshed list.
///
/// JSON: `ok` (the exit status) and `ok_means`, `latency_goal_ms`, `latency_goal_met` (null when nothing was
/// measured), `mock` {sandbox_port, production_port}, `backend_url`, `devices` [{device, build, build_environment,
/// environment, token_prefix, enrollments, pushes_sent, pushes_accepted, push_problems, refreshed, latency_ms,
/// upcoming}], `changes` [{dienst_id, tenant, team_code, pushes, accepted}], `expected_pushes_handled`,
/// `pushes_handled`, `latency_ms` {count, p50, p90, p99, max, min, mean}, `setup_seconds`, `push_seconds`,
/// `total_seconds`.
struct SimulateReport: CommandReport, Sendable {
    var report: SimulationReport
    /// `--verbose`: every app's whole log and every row in the text.
    var verbose: Bool

    enum CodingKeys: String, CodingKey {
        case ok, mock, devices, changes
        case okMeans = "ok_means"
        case latencyGoalMS = "latency_goal_ms"
        case latencyGoalMet = "latency_goal_met"
        case backendURL = "backend_url"
        case expectedPushesHandled = "expected_pushes_handled"
        case pushesHandled = "pushes_handled"
        case latencyMS = "latency_ms"
        case setupSeconds = "setup_seconds"
        case pushSeconds = "push_seconds"
        case totalSeconds = "total_seconds"
    }

    struct Mock: Encodable {
        var sandbox_port: Int
        var production_port: Int
    }

    struct Device: Encodable {
        var device: String
        var build: String
        var build_environment: String
        var environment: String
        var token_prefix: String
        var enrollments: [String]
        var pushes_sent: Int
        var pushes_accepted: Int
        var push_problems: [String]
        var refreshed: Int
        var latency_ms: [Double]
        var upcoming: Int
    }

    struct Change: Encodable {
        var dienst_id: String
        var tenant: String
        var team_code: String
        var pushes: Int
        var accepted: Int
    }

    struct Latency: Encodable {
        var count: Int
        var p50: Double
        var p90: Double
        var p99: Double
        var max: Double
        var min: Double
        var mean: Double
    }

    func encode(to encoder: any Encoder) throws {
        let r = report
        let l = r.latency
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(r.succeeded, forKey: .ok)
        try c.encode(
            "every push was accepted and every app refreshed its diensten (the exit status); the latency goal is reported apart in latency_goal_met",
            forKey: .okMeans)
        try c.encode(SimulationReport.latencyGoalMilliseconds, forKey: .latencyGoalMS)
        try c.encode(r.latencyGoalMet, forKey: .latencyGoalMet)
        try c.encode(Mock(sandbox_port: r.sandboxPort, production_port: r.productionPort), forKey: .mock)
        try c.encode(r.backendURL, forKey: .backendURL)
        try c.encode(
            r.devices.map { d in
                Device(
                    device: d.name, build: d.scheme.rawValue, build_environment: d.buildEnvironment,
                    environment: d.tokenEnvironment.rawValue, token_prefix: d.tokenPrefix, enrollments: d.enrollments,
                    pushes_sent: d.pushesSent, pushes_accepted: d.pushesAccepted, push_problems: d.pushProblems,
                    refreshed: d.refreshed, latency_ms: d.latencies.map { ($0 * 10000).rounded() / 10 },
                    upcoming: d.upcoming.count)
            }, forKey: .devices)
        try c.encode(
            r.changes.map { ch in
                Change(
                    dienst_id: ch.dienst.id, tenant: ch.tenant, team_code: ch.team, pushes: ch.deliveries.count,
                    accepted: ch.accepted)
            }, forKey: .changes)
        try c.encode(r.expectedHandled, forKey: .expectedPushesHandled)
        try c.encode(r.handled, forKey: .pushesHandled)
        try c.encode(
            Latency(count: l.count, p50: l.p50, p90: l.p90, p99: l.p99, max: l.max, min: l.min, mean: l.mean),
            forKey: .latencyMS)
        try c.encode(r.setupSeconds, forKey: .setupSeconds)
        try c.encode(r.pushSeconds, forKey: .pushSeconds)
        try c.encode(r.totalSeconds, forKey: .totalSeconds)
    }

    private func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    var textLines: [String] {
        let r = report
        var lines: [String] = []
        lines.append("kkpush simulate: the Kantine Koning push path on this machine")
        lines.append(
            "  mock APNs  sandbox 127.0.0.1:\(r.sandboxPort), production 127.0.0.1:\(r.productionPort) (HTTP/2, TLS)")
        lines.append("  backend    \(r.backendURL) (auto-detection: no APNS_ENV)")
        let enrollments = r.devices.reduce(0) { $0 + $1.enrollments.count }
        lines.append(
            "  apps       \(r.devices.count), \(enrollments) enrollments, set up in \(String(format: "%.2f", r.setupSeconds)) s"
        )
        let shown = verbose ? r.devices : Array(r.devices.prefix(r.devices.count <= 10 ? r.devices.count : 3))
        if let first = r.devices.first {
            lines.append("")
            lines.append("\(first.name): token updates (one per enrollment, each with its own JWT)")
            for line in first.log where !line.hasPrefix("🔔") && !line.hasPrefix("🔄 diensten") {
                lines.append("  " + line)
            }
        }
        lines.append("")
        lines.append("Dienst changes (backend admin API → fan-out through the APNs client):")
        for c in r.changes {
            let when = Enrollment.formatDate(c.dienst.startTime)
            lines.append(
                "  \(c.dienst.id) (\(c.tenant) \(c.team), \(when)) volunteers → \(c.dienst.volunteers): \(c.deliveries.count) push(es), \(c.accepted) accepted"
            )
        }
        lines.append("")
        for d in shown {
            lines.append("\(d.name) [\(d.scheme.rawValue), \(d.tokenEnvironment) token \(d.tokenPrefix)]")
            if verbose {
                for line in d.log { lines.append("  " + line) }
            } else {
                for line in d.log
                where line.hasPrefix("🔔") || line.hasPrefix("🔄 diensten") || line.hasPrefix("🔄 primary") {
                    lines.append("  " + line)
                }
            }
            for p in d.pushProblems { lines.append("  ✗ push \(p)") }
            let now = Date()
            let future = d.upcoming.filter { $0.startTime >= now }
            lines.append("  upcoming: \(d.upcoming.count) diensten (\(future.count) ahead); next:")
            for dienst in future.prefix(3) {
                let names = dienst.volunteers.isEmpty ? "no volunteers" : dienst.volunteers.joined(separator: ", ")
                lines.append(
                    "    \(Enrollment.formatDate(dienst.startTime))  \(dienst.tenantSlug) \(dienst.teamCode)  \(dienst.id)  (\(names))"
                )
            }
        }
        if shown.count < r.devices.count {
            lines.append("… \(r.devices.count - shown.count) more apps (--verbose shows all)")
        }
        lines.append("")
        let rows = r.devices.count <= 20 || verbose ? r.devices : Array(r.devices.prefix(10))
        lines.append(
            pad("DEVICE", 22) + pad("BUILD", 17) + pad("ENVIRONMENT", 13) + pad("PUSH ACCEPTED", 15)
                + pad("REFRESHED", 11) + "LATENCY")
        for d in rows {
            let latency = d.latencies.isEmpty ? "-" : d.latencies.map { ms($0) }.joined(separator: ", ")
            lines.append(
                pad(d.name, 22) + pad(d.scheme.rawValue, 17) + pad(d.tokenEnvironment.rawValue, 13)
                    + pad("\(d.pushesAccepted)/\(d.pushesSent)", 15) + pad("\(d.refreshed)/\(d.pushesAccepted)", 11)
                    + latency)
        }
        if rows.count < r.devices.count {
            lines.append("… \(r.devices.count - rows.count) more rows (--json or --verbose for all)")
        }
        lines.append("")
        let l = r.latency
        lines.append("Push → refreshed list (acceptance at the mock to published `upcoming`), \(l.count) refreshes:")
        lines.append(
            String(format: "  p50 %.1f ms   p90 %.1f ms   p99 %.1f ms   max %.1f ms", l.p50, l.p90, l.p99, l.max))
        lines.append(
            String(format: "  pushes and refreshes done in %.2f s; whole run %.2f s", r.pushSeconds, r.totalSeconds))
        if r.succeeded {
            lines.append("✓ every push accepted, every app refreshed its diensten")
        } else {
            lines.append("✗ \(r.handled) of \(r.expectedHandled) pushes handled; see the rows above")
        }
        lines.append(latencyGoalLine)
        return lines
    }

    /// The latency goal's verdict, one line (not part of the exit status).
    private var latencyGoalLine: String {
        let r = report
        let goal = "latency goal p99 ≤ \(Int(SimulationReport.latencyGoalMilliseconds)) ms"
        switch r.latencyGoalMet {
        case nil: return "– \(goal): not measured (no refresh completed)"
        case true?: return "✓ \(goal): met (p99 \(String(format: "%.1f", r.latency.p99)) ms)"
        case false?:
            return
                "✗ \(goal): NOT met (p99 \(String(format: "%.1f", r.latency.p99)) ms); a benchmark figure for this machine and its load, so the exit status does not count it (build with -c release for the figure)"
        }
    }
}

/// What `simulate --scenario` says of one scenario: what was expected and observed, why and the fix.
///
/// JSON: `scenario`, `title`, `reproduced`, `expected`, `observed`, `why`, `fix`, `details`, and `facts` when the
/// scenario has any.
struct ScenarioReport: CommandReport, Sendable {
    var outcome: ScenarioOutcome

    enum CodingKeys: String, CodingKey {
        case scenario, title, reproduced, expected, observed, why, fix, details, facts
    }

    func encode(to encoder: any Encoder) throws {
        let o = outcome
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(o.scenario.rawValue, forKey: .scenario)
        try c.encode(o.scenario.title, forKey: .title)
        try c.encode(o.reproduced, forKey: .reproduced)
        try c.encode(o.expected, forKey: .expected)
        try c.encode(o.observed, forKey: .observed)
        try c.encode(o.why, forKey: .why)
        try c.encode(o.fix, forKey: .fix)
        try c.encode(o.details, forKey: .details)
        if !o.facts.isEmpty { try c.encode(o.facts, forKey: .facts) }
    }

    var textLines: [String] {
        let o = outcome
        return [
            "", "Scenario \(o.scenario.rawValue): \(o.scenario.title)",
        ] + o.details.map { "  " + $0 } + [
            "  expected: \(o.expected)",
            "  observed: \(o.observed)",
            "  why:      \(FlagWords.common.apply(o.why))",
            "  fix:      \(FlagWords.common.apply(o.fix))",
            o.reproduced ? "  ✓ reproduced as expected" : "  ✗ NOT reproduced",
        ]
    }
}

/// The scenarios run: one scenario's report as it is, several as `{"scenarios": [...], "all_reproduced"}`.
struct ScenariosReport: CommandReport, Sendable {
    var outcomes: [ScenarioOutcome]

    enum CodingKeys: String, CodingKey {
        case scenarios
        case allReproduced = "all_reproduced"
    }

    func encode(to encoder: any Encoder) throws {
        let reports = outcomes.map(ScenarioReport.init)
        if reports.count == 1 {
            try reports[0].encode(to: encoder)
            return
        }
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(reports, forKey: .scenarios)
        try c.encode(outcomes.allSatisfy(\.reproduced), forKey: .allReproduced)
    }

    /// The line after several scenarios.
    var summaryLines: [String] {
        outcomes.count > 1
            ? ["", "\(outcomes.filter(\.reproduced).count) of \(outcomes.count) scenarios reproduced as expected."] : []
    }

    var textLines: [String] { outcomes.flatMap { ScenarioReport(outcome: $0).textLines } + summaryLines }
}
