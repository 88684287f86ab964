import ArgumentParser
import Foundation
import KKPushCore
import KKPushHTTP
import KKPushMock
import Synchronization

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
            \(faultCycle.map(\.name).joined(separator: ", ")). Every --sample-every seconds both processes are \
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

    /// One fault of the cycle: its name and the admin call that injects it.
    struct Fault: Sendable {
        var name: String
        var method = "POST"
        var path = "/faults"
        var body: String?
    }

    static let faultCycle: [Fault] = [
        Fault(name: "close", body: #"{"kind":"close","count":1}"#),
        Fault(name: "reset", body: #"{"kind":"reset","count":1}"#),
        Fault(name: "goaway", body: #"{"kind":"goaway","after_streams":1,"reason":"Shutdown","count":1}"#),
        Fault(name: "503", body: #"{"kind":"respond","status":503,"count":10}"#),
        Fault(name: "delay", body: #"{"kind":"delay","delay_ms":300,"count":50}"#),
        Fault(name: "stall", body: #"{"kind":"stall","count":1}"#),
        Fault(name: "restart", path: "/restart"),
        Fault(name: "expired-token", path: "/tokens/expire"),
    ]

    func run() async throws {
        try await reportingErrors {
            let soak = try SoakRun(
                duration: duration, rate: rate, faultEvery: faultEvery, sampleEvery: sampleEvery,
                requestTimeout: requestTimeout, quiet: json)
            let report = try await soak.run()
            if json {
                Output.printJSON(report.json)
            } else {
                print(report.text)
            }
            if !report.ok { throw ExitCode(1) }
        }
    }
}

/// What /proc says of a process.
struct ProcessSample: Sendable {
    var residentKiB: Int
    var descriptors: Int
    var sockets: Int

    /// Reads `/proc/<pid>/status` (VmRSS) and `/proc/<pid>/fd`; nil once the process is gone.
    static func read(pid: Int32) -> ProcessSample? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") } ?? 0
        let directory = "/proc/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        var sockets = 0
        for entry in entries {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + entry),
                target.hasPrefix("socket:")
            {
                sockets += 1
            }
        }
        return ProcessSample(residentKiB: rss, descriptors: entries.count, sockets: sockets)
    }
}

/// One soak run: the two processes, the writer, the reader, the faults and the samples.
final class SoakRun: Sendable {
    let duration: Double
    let rate: Double
    let faultEvery: Double
    let sampleEvery: Double
    let requestTimeout: Double
    let quiet: Bool
    let directory: URL

    /// Results seen per push (send-batch's `index` - 1), lines that were not results, and pushes written.
    private let counts = Mutex<(perIndex: [UInt8], extra: Int, written: Int)>(([], 0, 0))

    struct Sample: Sendable {
        var seconds: Double
        var mock: ProcessSample
        var client: ProcessSample
        var written: Int
        var results: Int
    }

    struct Report {
        var samples: [Sample]
        var written: Int
        var results: Int
        var withoutOneResult: Int
        var faults: [String]
        var growth: [String]
        var judgedGrowth: Bool
        var clientExit: Int32
        var note: String?

        var ok: Bool { withoutOneResult == 0 && growth.isEmpty && note == nil && written > 0 }

        var json: JSONValue {
            [
                "ok": .bool(ok), "pushes": .int(written), "results": .int(results),
                "without_one_result": .int(withoutOneResult), "faults": .array(faults.map(JSONValue.string)),
                "growth_judged": .bool(judgedGrowth), "growth": .array(growth.map(JSONValue.string)),
                "send_batch_exit": .int(Int(clientExit)), "note": JSONValue(note),
                "samples": .array(
                    samples.map { s in
                        [
                            "seconds": .double((s.seconds * 10).rounded() / 10), "pushes": .int(s.written),
                            "results": .int(s.results), "mock_rss_kib": .int(s.mock.residentKiB),
                            "mock_fds": .int(s.mock.descriptors), "mock_sockets": .int(s.mock.sockets),
                            "client_rss_kib": .int(s.client.residentKiB), "client_fds": .int(s.client.descriptors),
                            "client_sockets": .int(s.client.sockets),
                        ]
                    }),
            ]
        }

        var text: String {
            var lines: [String] = []
            lines.append(
                "pushes \(written), results \(results), without exactly one result \(withoutOneResult); faults: \(faults.joined(separator: ", "))"
            )
            if !judgedGrowth { lines.append("growth: not judged (runs under 120 s only check the results)") }
            for g in growth { lines.append("GROWTH: \(g)") }
            if let note { lines.append("note: \(note)") }
            lines.append(ok ? "ok" : "FAILED")
            return lines.joined(separator: "\n")
        }
    }

    static let header =
        "     s   pushes  results  mock MiB  fds  sockets  client MiB  fds  sockets"

    static func line(_ s: Sample) -> String {
        func pad(_ value: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - value.count)) + value
        }
        func mib(_ kib: Int) -> String { String(format: "%.1f", Double(kib) / 1024) }
        return [
            pad(String(format: "%.0f", s.seconds), 6), pad("\(s.written)", 8), pad("\(s.results)", 8),
            pad(mib(s.mock.residentKiB), 9), pad("\(s.mock.descriptors)", 4), pad("\(s.mock.sockets)", 8),
            pad(mib(s.client.residentKiB), 11), pad("\(s.client.descriptors)", 4), pad("\(s.client.sockets)", 8),
        ].joined(separator: " ")
    }

    init(
        duration: Double, rate: Double, faultEvery: Double, sampleEvery: Double, requestTimeout: Double, quiet: Bool
    ) throws {
        self.duration = duration
        self.rate = rate
        self.faultEvery = faultEvery
        self.sampleEvery = sampleEvery
        self.requestTimeout = requestTimeout
        self.quiet = quiet
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-soak-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw KKPushError(
                code: .benchFaultsTemp, message: "Cannot make a folder in \(directory.path).",
                fix: "Check the temporary directory ($TMPDIR) is writable.", underlying: error)
        }
    }

    private func progress(_ text: String) {
        if !quiet { StandardError.line(text) }
    }

    func run() async throws -> SoakRun.Report {
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = FaultMatrix.ownExecutable()
        guard let certificates = MockServerConfiguration.findCertificatesDirectory() else {
            throw KKPushError(
                code: .benchFaultsCertificates, message: "No Certificates folder was found.",
                fix: "Run from the kkpush checkout (it has Certificates/), or set KKPUSH_CERTIFICATES.")
        }
        let key = try FaultMatrix.findKey(in: certificates)

        // The mock: its first stdout line is where it listens.
        let mock = Process()
        mock.executableURL = URL(fileURLWithPath: executable)
        mock.arguments = [
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json",
            "--certificates", certificates, "--log-capacity", "100000",
            // As bench faults' mock: the soak measures the faults it injects, not the mock's guards against
            // silent clients, which on a loaded machine could close a connection opened and not yet used.
            "--handshake-timeout", "120", "--first-request-timeout", "120",
        ]
        let mockOut = Pipe()
        mock.standardOutput = mockOut
        mock.standardError = FileHandle(forWritingAtPath: "/dev/null")
        mock.standardInput = FileHandle.nullDevice
        try spawn(mock, what: "mock serve")
        defer { if mock.isRunning { mock.terminate() } }
        let announced = await Self.firstLine(mockOut.fileHandleForReading, timeout: 60)
        guard let announced, let info = try? JSONValue.parse(Array(announced.utf8)),
            let sandbox = info["sandbox_url"]?.stringValue, let admin = info["admin_url"]?.stringValue,
            let adminPort = URL(string: admin)?.port
        else {
            throw KKPushError(
                code: .benchFaultsSpawn, message: "mock serve did not say where it listens.",
                fix: "Run kkpush mock serve --json by hand to see why it does not start.")
        }
        let caFile = info["ca_file"]?.stringValue ?? certificates + "/ca.crt"
        // Drains the mock's later output (nothing, normally) so it never blocks on a full pipe.
        Thread.detachNewThread { _ = mockOut.fileHandleForReading.readDataToEndOfFile() }

        // The client: send-batch reading tokens from its stdin, results on stdout.
        let client = Process()
        client.executableURL = URL(fileURLWithPath: executable)
        client.arguments = [
            "send-batch", "--tokens", "-", "--topic", FaultMatrix.topic, "--url", sandbox, "--ca-file", caFile,
            "--key", key.file, "--key-id", key.keyID, "--team-id", key.teamID, "--title", "Soak",
            "--body", "kkpush bench soak", "--request-timeout", String(requestTimeout), "--connect-timeout", "5",
        ]
        var environment = CommandIO.current.environment
        for name in environment.keys where name.hasPrefix("APNS_") { environment[name] = nil }
        client.environment = environment
        let clientIn = Pipe()
        let clientOut = Pipe()
        client.standardInput = clientIn
        client.standardOutput = clientOut
        client.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try spawn(client, what: "send-batch")
        defer { if client.isRunning { client.terminate() } }
        let reader = startReader(clientOut.fileHandleForReading)

        let started = ContinuousClock.now
        let writer = startWriter(clientIn.fileHandleForWriting, started: started)
        let adminClient = HTTP1ClientBox(port: adminPort)
        var samples: [Sample] = []
        var injected: [String] = []
        var nextSample = sampleEvery
        var nextFault = faultEvery > 0 ? faultEvery : .infinity
        var faultIndex = 0
        progress(Self.header)
        while true {
            let now = (ContinuousClock.now - started).seconds
            if now >= nextFault && now < duration {
                let fault = BenchSoakCommand.faultCycle[faultIndex % BenchSoakCommand.faultCycle.count]
                faultIndex += 1
                let status = await adminClient.call(fault.method, fault.path, body: fault.body)
                let ok = status.map { (200..<300).contains($0) } ?? false
                injected.append("\(fault.name)@\(Int(now))s" + (ok ? "" : " (not injected: \(status ?? 0))"))
                nextFault += faultEvery
            }
            if now >= nextSample || now >= duration {
                if let m = ProcessSample.read(pid: mock.processIdentifier),
                    let c = ProcessSample.read(pid: client.processIdentifier)
                {
                    let (written, results) = counts.withLock { ($0.written, $0.perIndex.reduce(0) { $0 + Int($1) }) }
                    let sample = Sample(seconds: now, mock: m, client: c, written: written, results: results)
                    samples.append(sample)
                    progress(Self.line(sample))
                }
                nextSample += sampleEvery
            }
            if now >= duration { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        writer.stop()
        try? clientIn.fileHandleForWriting.close()
        // send-batch ends once every push written has its result (bounded: its retries end within minutes).
        let limit = ContinuousClock.now + .seconds(120 + requestTimeout * 8)
        while client.isRunning, ContinuousClock.now < limit { try await Task.sleep(for: .milliseconds(50)) }
        var note: String? = nil
        if client.isRunning {
            note = "send-batch did not end after its input closed"
            client.terminate()
        }
        await reader.value
        mock.terminate()
        adminClient.shutdown()

        let (perIndex, extra, written) = counts.withLock { ($0.perIndex, $0.extra, $0.written) }
        let results = perIndex.reduce(0) { $0 + Int($1) }
        let withoutOne = perIndex.prefix(written).filter { $0 != 1 }.count + max(0, perIndex.count - written) + extra
        let judged = duration >= 120 && samples.count >= 6
        return Report(
            samples: samples, written: written, results: results, withoutOneResult: withoutOne, faults: injected,
            growth: judged ? Self.growth(samples) : [], judgedGrowth: judged,
            clientExit: client.isRunning ? -1 : client.terminationStatus, note: note)
    }

    /// What kept growing: the largest sample of the last third against the largest of the first third after
    /// the first tenth.
    static func growth(_ samples: [Sample]) -> [String] {
        let warm = Array(samples.dropFirst(max(1, samples.count / 10)))
        guard warm.count >= 3 else { return [] }
        let third = max(1, warm.count / 3)
        let early = warm.prefix(third)
        let late = warm.suffix(third)
        var found: [String] = []
        func check(_ name: String, _ value: (Sample) -> Int, allowed: (Int) -> Int, unit: String) {
            let before = early.map(value).max() ?? 0
            let after = late.map(value).max() ?? 0
            if after > before + allowed(before) {
                found.append("\(name): \(before) → \(after) \(unit)")
            }
        }
        check("mock resident memory", { $0.mock.residentKiB }, allowed: { max($0 / 4, 16 * 1024) }, unit: "KiB")
        check("send-batch resident memory", { $0.client.residentKiB }, allowed: { max($0 / 4, 16 * 1024) }, unit: "KiB")
        check("mock descriptors", { $0.mock.descriptors }, allowed: { _ in 32 }, unit: "")
        check("send-batch descriptors", { $0.client.descriptors }, allowed: { _ in 32 }, unit: "")
        check("mock sockets", { $0.mock.sockets }, allowed: { _ in 32 }, unit: "")
        check("send-batch sockets", { $0.client.sockets }, allowed: { _ in 32 }, unit: "")
        return found
    }

    private func spawn(_ process: Process, what: String) throws {
        do {
            try process.run()
        } catch {
            throw KKPushError(
                code: .benchFaultsSpawn, message: "Cannot run \(process.executableURL?.path ?? "kkpush") \(what).",
                fix: "Run the built kkpush binary (swift build), not through another program.", underlying: error)
        }
    }

    /// The first line `handle` gives, or nil after `timeout` seconds or at its end (read on a thread of its own).
    static func firstLine(_ handle: FileHandle, timeout: Double) async -> String? {
        let found = Mutex<String?>(nil)
        let done = Atomic<Bool>(false)
        Thread.detachNewThread {
            var bytes: [UInt8] = []
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                bytes += chunk
                if let end = bytes.firstIndex(of: UInt8(ascii: "\n")) {
                    found.withLock { $0 = String(decoding: bytes[..<end], as: UTF8.self) }
                    break
                }
            }
            done.store(true, ordering: .sequentiallyConsistent)
        }
        let deadline = ContinuousClock.now + .seconds(timeout)
        while !done.load(ordering: .sequentiallyConsistent), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return found.withLock { $0 }
    }

    /// Reads send-batch's result lines on a thread of its own, counting results per index.
    private func startReader(_ handle: FileHandle) -> Task<Void, Never> {
        let finished = Atomic<Bool>(false)
        Thread.detachNewThread { [self] in
            var pending: [UInt8] = []
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending += chunk
                var start = pending.startIndex
                while let end = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    record(Array(pending[start..<end]))
                    start = end + 1
                }
                pending.removeSubrange(..<start)
            }
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        return Task {
            while !finished.load(ordering: .sequentiallyConsistent) { try? await Task.sleep(for: .milliseconds(20)) }
        }
    }

    private func record(_ line: [UInt8]) {
        // send-batch's index is the input line number, from 1.
        let index = (try? JSONValue.parse(line))?["index"]?.intValue.map { $0 - 1 }
        counts.withLock { counts in
            guard let index, index >= 0, index < 100_000_000 else {
                counts.extra += 1
                return
            }
            if index >= counts.perIndex.count {
                counts.perIndex += [UInt8](repeating: 0, count: index - counts.perIndex.count + 1)
            }
            counts.perIndex[index] &+= 1
        }
    }

    /// Writes a new device token per push to send-batch's stdin at ``rate``, on a thread of its own (a full pipe
    /// blocks it, not the cooperative pool).
    private func startWriter(_ handle: FileHandle, started: ContinuousClock.Instant) -> SoakWriter {
        let writer = SoakWriter()
        Thread.detachNewThread { [self] in
            var rng = SystemRandomNumberGenerator()
            var sent = 0
            while !writer.stopped {
                let elapsed = (ContinuousClock.now - started).seconds
                if elapsed >= duration { break }
                let due = Int(elapsed * rate) - sent
                if due > 0 {
                    var text = ""
                    for _ in 0..<due {
                        text +=
                            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }
                            .joined() + "\n"
                    }
                    do {
                        try handle.write(contentsOf: Data(text.utf8))
                    } catch {
                        break
                    }
                    sent += due
                    counts.withLock { $0.written = sent }
                }
                usleep(10_000)
            }
        }
        return writer
    }
}

/// The mock's admin API, for the faults (its own keep-alive connection).
final class HTTP1ClientBox: Sendable {
    private let client: HTTP1Client

    init(port: Int) { client = HTTP1Client(host: "127.0.0.1", port: port, maximumConnections: 1, timeout: 30) }

    /// The status of `method path` with `body`; nil if the call failed.
    func call(_ method: String, _ path: String, body: String?) async -> Int? {
        try? await client.send(
            method: method, target: path, headers: [("Content-Type", "application/json")],
            body: body.map { Array($0.utf8) }
        ).status
    }

    func shutdown() { client.shutdown() }
}

/// Stops the writer thread.
final class SoakWriter: Sendable {
    private let flag = Atomic<Bool>(false)
    var stopped: Bool { flag.load(ordering: .sequentiallyConsistent) }
    func stop() { flag.store(true, ordering: .sequentiallyConsistent) }
}
