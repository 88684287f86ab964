import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBench
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import Synchronization

/// `kkpush bench`: sends N identical pushes over one connection (one per thread with `--threads`) and
/// prints the rate. Its
/// subcommand `faults` is the fault matrix (``BenchFaultsCommand``); `kkpush bench` with options runs
/// the rate benchmark as before.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract:
            "Send N pushes over one HTTP/2 connection (one per thread with --threads, up to --max-connections) and print what the connections carried and '<rate> req/s' (for a benchmark harness).",
        discussion: """
            Every option falls back to its BENCH_* variable (BENCH_URL BENCH_CA BENCH_TOKEN BENCH_N BENCH_C \
            BENCH_PAYLOAD BENCH_KEY BENCH_KEY_ID BENCH_TEAM_ID BENCH_TOPIC), as a benchmark harness sets them. \
            Exit 1 unless every push was accepted. `kkpush bench faults` runs the fault matrix instead.
            """,
        subcommands: [BenchFaultsCommand.self, BenchSoakCommand.self])

    @Option(help: "Endpoint URL, e.g. https://127.0.0.1:28443 (BENCH_URL).") var url: String?
    @Option(name: .customLong("ca-file"), help: "CA file for the endpoint (BENCH_CA).") var caFile: String?
    @Option(help: "Device token, hex (BENCH_TOKEN).") var token: String?
    @Option(name: .short, parsing: .unconditional, help: "Number of pushes, 1 to 100000000 (BENCH_N).") var n: Int?
    @Option(
        name: .short, parsing: .unconditional,
        help:
            "Most pushes in flight in all, 1 to 100000000 (BENCH_C); with --threads N each thread keeps c / N, rounded down, so it must be at least N. A connection carries as many as the server allows within that, or --max-in-flight; without --max-in-flight only what the round trip needs stays in flight (1.5 x measured rate x round trip + 100; the report says where it ended)."
    )
    var c: Int?
    @Option(help: "Payload JSON file (BENCH_PAYLOAD).") var payload: String?
    @Option(help: "Signing key, .p8 (BENCH_KEY).") var key: String?
    @Option(name: .customLong("key-id"), help: "Key ID (BENCH_KEY_ID).") var keyID: String?
    @Option(name: .customLong("team-id"), help: "Team ID (BENCH_TEAM_ID).") var teamID: String?
    @Option(help: "apns-topic (BENCH_TOPIC).") var topic: String?
    @Option(
        name: .customLong("max-in-flight"), parsing: .unconditional,
        help:
            "Cap on streams in flight per connection, exactly this: per connection min(c / threads rounded down, this). Default: as many as the server allows (its SETTINGS_MAX_CONCURRENT_STREAMS, APNs' 1000), within c / threads."
    )
    var maxInFlight: Int?
    @Option(
        name: .customLong("threads"), parsing: .unconditional,
        help:
            "Loop threads, 1 to 16 (default 1), each with a connection of its own: the pushes are spread over them, -c is shared out over their connections (never more than -c in flight in all), and --max-in-flight is per connection."
    )
    var loopThreads: Int?
    @Option(
        name: .customLong("max-connections"), parsing: .unconditional,
        help:
            "Connections, 1 to 64, at least --threads (default: one per thread). A connection opens only when the open ones carry all the streams they may and pushes wait: -c 2048 --max-connections 2 is the client's defaults."
    )
    var maxConnections: Int?
    @Flag(name: .customLong("no-preflight"), help: "Skip the pre-flight rules.") var noPreflight = false
    @Flag(
        name: .customLong("no-coalesce"),
        help:
            "Send every HTTP/2 frame as libcurl writes it (no TCP_CORK per loop turn), to measure what coalescing gives."
    )
    var noCoalesce = false

    func validate() throws {
        try NumericFlags.integer(n, flag: "-n", in: 1...100_000_000)
        try NumericFlags.integer(c, flag: "-c", in: 1...100_000_000)
        try NumericFlags.integer(maxInFlight, flag: "--max-in-flight", in: 1...10_000)
        try NumericFlags.integer(loopThreads, flag: "--threads", in: 1...16)
        try NumericFlags.integer(maxConnections, flag: "--max-connections", in: 1...64)
        try LoopThreadFlags.check(loopThreads, maxConnections: maxConnections)
    }

    func run() async throws {
        try await reportingErrors {
            let env = CommandIO.current.environment
            func value(_ flag: String?, _ name: String) throws -> String {
                if let flag, !flag.isEmpty { return flag }
                if let v = env[name], !v.isEmpty { return v }
                throw CLIError.usage(
                    .benchMissingSetting, "bench needs \(Self.flags[name] ?? name) (or \(name)).",
                    fix:
                        "Give \(Self.flags[name] ?? "the flag"), or set \(name) (a benchmark harness sets the BENCH_* variables)."
                )
            }
            func number(_ flag: Int?, _ name: String) throws -> Int {
                if let flag { return flag }  // validate() checked the range
                let text = try value(nil, name)
                guard let v = Int(text), (1...100_000_000).contains(v) else {
                    throw CLIError.usage(
                        .benchNumberRange, "\(name)='\(text)' is not a whole number from 1 to 100000000.",
                        fix: "Set \(name) (or give \(Self.flags[name] ?? "its flag")) to for example 20000.")
                }
                return v
            }
            let count = try number(n, "BENCH_N")
            let inFlight = try number(c, "BENCH_C")
            let threads = loopThreads ?? 1
            // -c is the most in flight in all; each thread's one connection carries an equal share of it, rounded
            // down (the client has one cap for every connection), so threads × share never exceeds -c. A -c below
            // the threads would leave a connection nothing: refused, naming both, rather than raised silently.
            if inFlight < threads {
                let cFlag = c != nil ? "-c" : "BENCH_C"
                throw CLIError.usage(
                    .benchThreadsInFlight,
                    "\(cFlag) \(inFlight) is less than --threads \(threads): each thread's connection needs at least one push in flight, and -c is the most in flight in all.",
                    fix: "Give \(cFlag) \(threads) or more, or --threads \(inFlight) or fewer.")
            }
            let caPath = try value(caFile, "BENCH_CA")
            _ = try InputFile.read(
                caPath, what: "CA file", label: caFile != nil ? "--ca-file" : "BENCH_CA", maximumSize: 4 << 20)
            let endpoint: APNsEndpoint
            do {
                endpoint = try APNsEndpoint.parse(url: try value(url, "BENCH_URL"), caFile: caPath)
            } catch let error as KKPushError {
                throw CLIError.usage(
                    .benchUrl, "\(url != nil ? "--url" : "BENCH_URL"): \(error.message)",
                    fix: error.fix ?? "Give an https:// URL.")
            }
            _ = try InputFile.read(
                try value(key, "BENCH_KEY"), what: "signing key", label: key != nil ? "--key" : "BENCH_KEY",
                maximumSize: 1 << 20)
            let deviceToken = try value(token, "BENCH_TOKEN")
            let payloadPath = try value(payload, "BENCH_PAYLOAD")
            let body = try InputFile.read(
                payloadPath, what: "payload file", label: payload != nil ? "--payload" : "BENCH_PAYLOAD",
                maximumSize: 1 << 20,
                allowEmpty: true)
            let signingKey = try ES256PrivateKey(contentsOfFile: try value(key, "BENCH_KEY"))
            let cache = ProviderTokenCache(
                key: signingKey, keyID: try value(keyID, "BENCH_KEY_ID"), teamID: try value(teamID, "BENCH_TEAM_ID"))
            // --max-in-flight is exactly that cap a connection; without it the client follows the server's
            // SETTINGS_MAX_CONCURRENT_STREAMS as a provider's default client does, and -c is its memory budget in
            // streams (shared out over the threads), so never more than -c are in flight in all. The report says what
            // the connections actually carried.
            let perConnection = maxInFlight.map { min(inFlight / threads, $0) }
            let budgetStreams = min(inFlight, 100_000)
            let configuration = APNsClientConfiguration(
                credential: .token(cache), sandboxEndpoint: endpoint, productionEndpoint: endpoint,
                maxInFlightPerConnection: perConnection,
                inFlightMemoryBudget: budgetStreams * APNsClientConfiguration.bytesPerStream,
                maxConnections: maxConnections ?? threads,
                loopThreads: threads, retry: .none, preflight: !noPreflight, coalesceWrites: !noCoalesce)
            let request = NotificationRequest(
                deviceToken: deviceToken, topic: try value(topic, "BENCH_TOPIC"), pushType: .alert, priority: 10,
                expiration: 0, payload: body)
            let item = PushBatchItem(request: request, endpoint: endpoint)
            let report = RateBenchReport(
                try await RateBench.run(item, count: count, configuration: configuration), sent: count,
                requestedInFlight: inFlight, perConnectionCap: perConnection, threads: threads)
            if let problem = report.firstProblem { Output.printError("first failure: \(problem)") }
            Output.printReport(report, json: false)
            if !report.ok { throw ExitCode(1) }
        }
    }
}

extension BenchCommand {
    /// The flag of each BENCH_* variable.
    static let flags = [
        "BENCH_URL": "--url", "BENCH_CA": "--ca-file", "BENCH_TOKEN": "--token", "BENCH_N": "-n", "BENCH_C": "-c",
        "BENCH_PAYLOAD": "--payload", "BENCH_KEY": "--key", "BENCH_KEY_ID": "--key-id", "BENCH_TEAM_ID": "--team-id",
        "BENCH_TOPIC": "--topic",
    ]
}

extension RateBenchReport: CommandReport {}
