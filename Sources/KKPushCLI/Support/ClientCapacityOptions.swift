import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushClient

/// How much the APNs client carries at once: the flags `send-batch` and `worker` share (declared once, so the two
/// commands spell, range and check them alike). `bench` has flags of the same names with a benchmark's meaning
/// (`--max-in-flight` a cap under `-c`, `--threads` a connection each), so it declares its own.
struct ClientCapacityOptions: ParsableArguments {
    @Option(
        name: .customLong("max-in-flight"), parsing: .unconditional,
        help:
            "Streams in flight per connection, 1 to 10000, exactly this cap. Default: as many as the server allows (its SETTINGS_MAX_CONCURRENT_STREAMS, APNs' 1000, followed when it changes), at most 2048 in flight in all (the client's 64 MiB memory budget), and of those only what the round trip needs (1.5 x measured rate x round trip + 100)."
    )
    var maxInFlight: Int?
    @Option(name: .customLong("max-connections"), parsing: .unconditional, help: "Connections per endpoint, 1 to 64.")
    var maxConnections: Int?
    @Option(
        name: .customLong("threads"), parsing: .unconditional,
        help:
            "Threads that drive the APNs connections, 1 to 16 (default 2 on a machine with two cores or more, never more than --max-connections; else 1): each has its own share of --max-connections (raised to one per thread when not given), so a large run can use that many cores."
    )
    var loopThreads: Int?

    /// The loop threads: `--threads`, or two where the machine has two cores or more and `--max-connections`
    /// allows a connection each. Why: one thread drives libcurl at up to one core, and at a round trip of 20 ms
    /// or on loopback that core was the limit (a second thread sent 17 to 20 % more pushes a second there, and as
    /// many at 50 and 100 ms); the two connections are the default `--max-connections` anyway. A choice for the
    /// commands that send many pushes; the library's default stays one thread.
    var threads: Int {
        loopThreads ?? max(1, min(2, ProcessInfo.processInfo.activeProcessorCount, maxConnections ?? 2))
    }

    func validate() throws {
        try NumericFlags.integer(maxInFlight, flag: "--max-in-flight", in: 1...10_000)
        try NumericFlags.integer(maxConnections, flag: "--max-connections", in: 1...64)
        try LoopThreadFlags.check(loopThreads, maxConnections: maxConnections)
    }
}

extension ConnectionOptions {
    /// The client's configuration from the connection flags and the capacity flags.
    func clientConfiguration(_ capacity: ClientCapacityOptions) throws -> APNsClientConfiguration {
        try clientConfiguration(
            maxInFlight: capacity.maxInFlight, maxConnections: capacity.maxConnections,
            loopThreads: capacity.threads)
    }
}
