import ArgumentParser
import Foundation
import KKPushBench
import KKPushCLISupport
import KKPushCore
import KKPushMock

/// `kkpush bench faults`: the fault matrix. The real `kkpush send-batch` against the in-process
/// mock, once per fault; checks that every push has exactly one result and that every push the
/// mock delivered twice was flagged `possibly_duplicated`.
struct BenchFaultsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faults",
        abstract:
            "Run kkpush send-batch against the mock under each fault; check one result per push and no unflagged duplicate.",
        discussion: """
            Starts the mock APNs server in this process (127.0.0.1, free ports, Certificates/), then for each \
            fault runs this kkpush binary's send-batch as a subprocess over --count new device tokens, with the \
            first key of Certificates/keys.json valid in both environments. A fault lets the first count/2 requests \
            pass (delay and wrong-environment apply from the start; restart and expired-token come after count/3 \
            pushes were accepted, with every answer delayed 20 ms so that pushes are still to be sent), and the \
            delivery log is cleared between faults. Faults: clean (none); delay (50 ms on every answer); 429, 500, \
            503 (the next count/20 requests \
            get that status); goaway (GOAWAY after the next answered stream on one connection); close (one \
            connection closed without answering); reset (one connection reset, TCP RST, with streams in flight); \
            stall (one connection stops reading: its pushes wait for --request-timeout); restart (every connection \
            ended and both listeners restarted on the same ports); expired-token (every provider token in use \
            answered ExpiredProviderToken from then on: send-batch must sign a new one); wrong-environment (the \
            tokens belong to production, sent to sandbox: BadDeviceToken, never retried).

            One row per fault: pushes; results (JSON lines of send-batch); pushes without exactly one result; \
            accepted, rejected, failed; flagged possibly_duplicated; delivered twice or more (by the mock's log); \
            of those, not flagged; retried (attempts > 1); connections the mock accepted; wall seconds.

            Exit status: 0 if every push of every fault had exactly one result and every push delivered twice \
            was flagged; 1 otherwise (or if the mock or send-batch could not run).
            """)

    /// The faults, in the order they run.
    static let allFaults = [
        "clean", "delay", "429", "500", "503", "goaway", "close", "reset", "stall", "restart", "expired-token",
        "wrong-environment",
    ]

    @Option(parsing: .unconditional, help: "Pushes per fault (new device tokens), 2 to 1000000.") var count = 2000
    @Option(help: "Faults to run, comma-separated (default: all): \(allFaults.joined(separator: ", ")).")
    var faults: String?
    @Option(
        name: .customLong("request-timeout"), parsing: .unconditional,
        help: "send-batch's --request-timeout in seconds (how long the stalled connection's pushes wait).")
    var requestTimeout: Double = 5
    @Option(parsing: .unconditional, help: "Run the matrix this many times (1 to 1000), a row per fault and run.")
    var runs = 1
    @Option(
        name: .customLong("payload-bytes"), parsing: .unconditional,
        help: "Pad each push's payload to about this many bytes (0: a short one; at most 4000).")
    var payloadBytes = 0
    @Option(
        name: .customLong("threads"), parsing: .unconditional,
        help: "send-batch's --threads: loop threads of the client under test, 1 to 16 (default 1).")
    var loopThreads = 1
    /// `bench` itself: it has a `--threads` too, and the parser gives `--threads` after `faults` to it, leaving this
    /// command's at 1 (send-batch then ran with one thread whatever was asked); the value is read from both.
    @ParentCommand var bench: BenchCommand
    /// The loop threads asked for, wherever the parser put `--threads`.
    var threads: Int { bench.loopThreads ?? loopThreads }
    @Flag(help: "Print the matrix as one JSON object.") var json = false
    @Flag(
        name: .customLong("keep-files"),
        help: "Keep the token file and each fault's send-batch output (<fault>.jsonl, <fault>.stderr); print where.")
    var keepFiles = false

    func validate() throws {
        try NumericFlags.integer(count, flag: "--count", in: 2...1_000_000)
        try NumericFlags.integer(runs, flag: "--runs", in: 1...1000)
        try NumericFlags.integer(payloadBytes, flag: "--payload-bytes", in: 0...4000)
        try NumericFlags.integer(loopThreads, flag: "--threads", in: 1...16)
        try NumericFlags.seconds(requestTimeout, flag: "--request-timeout", in: 0.001...300)
        for name in selectedFaults where !Self.allFaults.contains(name) {
            let near = JSONInput.nearest(name, among: Self.allFaults).map { " (did you mean '\($0)'?)" } ?? ""
            throw ValidationError(
                "--faults: unknown fault '\(name)'\(near); choose from \(Self.allFaults.joined(separator: ", ")).")
        }
        if selectedFaults.isEmpty {
            throw ValidationError("--faults names no fault: give a comma-separated list, e.g. --faults close,reset.")
        }
    }

    var selectedFaults: [String] {
        guard let faults else { return Self.allFaults }
        return faults.split(separator: ",").map { $0.trimmingWhitespace().lowercased() }.filter { !$0.isEmpty }
    }

    func run() async throws {
        try await reportingErrors {
            let matrix = try FaultMatrix(
                count: count, requestTimeout: requestTimeout, payloadBytes: payloadBytes,
                executable: CommandIO.current.kkpushExecutable, environment: CommandIO.current.environment,
                sendBatchArguments: { [threads] in
                    BenchHarnessArguments.sendBatch($0) + (threads > 1 ? ["--threads", String(threads)] : [])
                })
            var rows: [FaultMatrix.Row] = []
            let server = try await matrix.startMock()
            do {
                for run in 1...runs {
                    for fault in selectedFaults {
                        if !json {
                            let of = runs > 1 ? " (run \(run) of \(runs))" : ""
                            StandardError.line("fault \(fault): \(count) pushes\(of)...")
                        }
                        var row = try await matrix.run(fault: fault, on: server)
                        row.run = run
                        rows.append(row)
                    }
                }
            } catch {
                try? await server.shutdown()
                if !keepFiles { matrix.cleanUp() }
                throw error
            }
            try? await server.shutdown()
            if keepFiles {
                Output.printError("send-batch's output is in \(matrix.directory.path)")
            } else {
                matrix.cleanUp()
            }
            let report = FaultMatrixReport(count: count, runs: runs, payloadBytes: payloadBytes, rows: rows)
            Output.printReport(report, json: json)
            if !report.ok { throw ExitCode(1) }
        }
    }
}

extension FaultMatrixReport: CommandReport {}
