import ArgumentParser
import Foundation
import KKPushBench
import KKPushCLISupport
import KKPushCore

/// `kkpush bench soak`: this binary's `send-batch` against this binary's `mock serve`, two processes, for a
/// given time at a given rate, with a fault injected through the mock's admin API on a schedule. Both
/// processes' memory, descriptors and sockets are sampled; the run fails if one of them keeps growing, or if
/// a push does not get exactly one result.
struct BenchSoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract:
            "Run send-batch against mock serve for a while, with faults on a schedule; sample both processes' memory, descriptors and sockets.",
        discussion: """
            Two child processes of this binary: `mock serve` (free ports, its admin API on 127.0.0.1) and \
            `send-batch --tokens -`, fed new device tokens at --rate per second for --duration seconds. Every \
            --fault-every seconds the next fault of the cycle is added through the admin API: \
            \(SoakRun.faultCycle.map(\.name).joined(separator: ", ")). Every --sample-every seconds both processes are \
            sampled: resident memory (VmRSS), open descriptors, and sockets among them (listeners and \
            connections); a line goes to stderr.

            Verdicts: every push written must get exactly one result line from send-batch (by its index); and, for \
            runs of at least 120 s, no process may keep growing: the largest sample of the last third is compared \
            with the largest of the first third after a warm-up (the first tenth): resident memory may grow by at \
            most 25 % or 16 MiB, descriptors and sockets by at most 32. Exit 0 when both hold, 1 otherwise.
            """)

    @Option(parsing: .unconditional, help: "Seconds to send for (5 to 86400).") var duration: Double = 60
    @Option(parsing: .unconditional, help: "Pushes per second (1 to 20000).") var rate: Double = 200
    @Option(
        name: .customLong("fault-every"), parsing: .unconditional,
        help: "Seconds between faults (1 to 3600; 0: none).")
    var faultEvery: Double = 30
    @Option(
        name: .customLong("sample-every"), parsing: .unconditional,
        help: "Seconds between samples (0.5 to 600).")
    var sampleEvery: Double = 10
    @Option(
        name: .customLong("request-timeout"), parsing: .unconditional,
        help: "send-batch's --request-timeout in seconds (the stall fault costs one).")
    var requestTimeout: Double = 5
    @Flag(help: "Print the figures as one JSON object.") var json = false

    func validate() throws {
        try NumericFlags.seconds(duration, flag: "--duration", in: 5...86_400)
        try NumericFlags.seconds(rate, flag: "--rate", in: 1...20_000)
        if faultEvery != 0 { try NumericFlags.seconds(faultEvery, flag: "--fault-every", in: 1...3600) }
        try NumericFlags.seconds(sampleEvery, flag: "--sample-every", in: 0.5...600)
        try NumericFlags.seconds(requestTimeout, flag: "--request-timeout", in: 0.5...300)
    }

    func run() async throws {
        try await reportingErrors {
            let soak = try SoakRun(
                duration: duration, rate: rate, faultEvery: faultEvery, sampleEvery: sampleEvery,
                requestTimeout: requestTimeout, quiet: json, executable: CommandIO.current.kkpushExecutable,
                environment: CommandIO.current.environment, pushBody: "kkpush bench soak",
                mockArguments: { BenchHarnessArguments.mock(certificates: $0) },
                sendBatchArguments: { BenchHarnessArguments.sendBatch($0) }, say: { StandardError.line($0) })
            let report: SoakRun.Report
            do {
                report = try await soak.run()
            } catch is SoakRun.MockSilent {
                throw KKPushError(
                    code: .benchFaultsSpawn, message: "mock serve did not say where it listens.",
                    fix: "Run kkpush mock serve --json by hand to see why it does not start.")
            }
            Output.printReport(report, json: json)
            if !report.ok { throw ExitCode(1) }
        }
    }
}

extension SoakRun.Report: CommandReport {}
