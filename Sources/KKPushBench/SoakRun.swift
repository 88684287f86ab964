package import Foundation
package import KKPushCore
import KKPushHTTP
import KKPushMock
import KKPushSystem
import Synchronization

/// What /proc says of a process.
package struct ProcessSample: Sendable {
    package var residentKiB: Int
    package var descriptors: Int
    package var sockets: Int

    /// Reads `/proc/<pid>/status` (VmRSS) and `/proc/<pid>/fd`; nil once the process is gone.
    package static func read(pid: Int32) -> ProcessSample? {
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
package final class SoakRun: Sendable {
    package let duration: Double
    package let rate: Double
    package let faultEvery: Double
    package let sampleEvery: Double
    package let requestTimeout: Double
    package let quiet: Bool
    package let directory: URL
    /// The kkpush whose `mock serve` and `send-batch` run, and the environment send-batch gets (less APNS_*).
    package let executable: String
    package let environment: [String: String]
    /// The command lines (after the executable) of the mock, given the Certificates folder, and of send-batch.
    package let mockArguments: @Sendable (String) -> [String]
    package let sendBatchArguments: @Sendable (SendBatchInvocation) -> [String]
    /// The pushes' alert body.
    package let pushBody: String
    /// Where the sample lines go (stderr), unless `quiet`.
    package let say: @Sendable (String) -> Void

    /// One fault of the cycle: its name and the admin call that injects it.
    package struct Fault: Sendable {
        package var name: String
        package var method = "POST"
        package var path = "/faults"
        package var body: String?
    }

    package static let faultCycle: [Fault] = [
        Fault(name: "close", body: #"{"kind":"close","count":1}"#),
        Fault(name: "reset", body: #"{"kind":"reset","count":1}"#),
        Fault(name: "goaway", body: #"{"kind":"goaway","after_streams":1,"reason":"Shutdown","count":1}"#),
        Fault(name: "503", body: #"{"kind":"respond","status":503,"count":10}"#),
        Fault(name: "delay", body: #"{"kind":"delay","delay_ms":300,"count":50}"#),
        Fault(name: "stall", body: #"{"kind":"stall","count":1}"#),
        Fault(name: "restart", path: "/restart"),
        Fault(name: "expired-token", path: "/tokens/expire"),
    ]

    /// The mock did not say where it listens (its first line on stdout, JSON) within a minute.
    package struct MockSilent: Error {}

    /// Results seen per push (send-batch's `index` - 1), lines that were not results, and pushes written.
    private let counts = Mutex<(perIndex: [UInt8], extra: Int, written: Int)>(([], 0, 0))

    package struct Sample: Sendable {
        package var seconds: Double
        package var mock: ProcessSample
        package var client: ProcessSample
        package var written: Int
        package var results: Int
    }

    /// The soak's figures and verdicts: `bench soak`'s report.
    package struct Report: Encodable, Sendable {
        package var samples: [Sample]
        package var written: Int
        package var results: Int
        package var withoutOneResult: Int
        package var faults: [String]
        package var growth: [String]
        package var judgedGrowth: Bool
        package var clientExit: Int32
        package var note: String?

        package var ok: Bool { withoutOneResult == 0 && growth.isEmpty && note == nil && written > 0 }

        enum CodingKeys: String, CodingKey {
            case ok, results, faults, growth, note, samples
            case written = "pushes"
            case withoutOneResult = "without_one_result"
            case judgedGrowth = "growth_judged"
            case clientExit = "send_batch_exit"
        }

        /// One sample as `--json` lists it: seconds to the tenth, each process's memory, descriptors and sockets.
        private struct SampleFields: Encodable {
            var sample: Sample

            enum CodingKeys: String, CodingKey {
                case seconds, pushes, results
                case mockRSS = "mock_rss_kib"
                case mockFDs = "mock_fds"
                case mockSockets = "mock_sockets"
                case clientRSS = "client_rss_kib"
                case clientFDs = "client_fds"
                case clientSockets = "client_sockets"
            }

            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode((sample.seconds * 10).rounded() / 10, forKey: .seconds)
                try c.encode(sample.written, forKey: .pushes)
                try c.encode(sample.results, forKey: .results)
                try c.encode(sample.mock.residentKiB, forKey: .mockRSS)
                try c.encode(sample.mock.descriptors, forKey: .mockFDs)
                try c.encode(sample.mock.sockets, forKey: .mockSockets)
                try c.encode(sample.client.residentKiB, forKey: .clientRSS)
                try c.encode(sample.client.descriptors, forKey: .clientFDs)
                try c.encode(sample.client.sockets, forKey: .clientSockets)
            }
        }

        /// `--json`'s object: every field, `note` as `null` when there is none.
        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(ok, forKey: .ok)
            try c.encode(written, forKey: .written)
            try c.encode(results, forKey: .results)
            try c.encode(withoutOneResult, forKey: .withoutOneResult)
            try c.encode(faults, forKey: .faults)
            try c.encode(judgedGrowth, forKey: .judgedGrowth)
            try c.encode(growth, forKey: .growth)
            try c.encode(Int(clientExit), forKey: .clientExit)
            try c.encode(note, forKey: .note)
            try c.encode(samples.map(SampleFields.init(sample:)), forKey: .samples)
        }

        /// The text a person reads (the samples went to stderr as they were taken).
        package var textLines: [String] {
            var lines: [String] = []
            lines.append(
                "pushes \(written), results \(results), without exactly one result \(withoutOneResult); faults: \(faults.joined(separator: ", "))"
            )
            if !judgedGrowth { lines.append("growth: not judged (runs under 120 s only check the results)") }
            for g in growth { lines.append("GROWTH: \(g)") }
            if let note { lines.append("note: \(note)") }
            lines.append(ok ? "ok" : "FAILED")
            return lines
        }
    }

    package static let header =
        "     s   pushes  results  mock MiB  fds  sockets  client MiB  fds  sockets"

    package static func line(_ s: Sample) -> String {
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

    package init(
        duration: Double, rate: Double, faultEvery: Double, sampleEvery: Double, requestTimeout: Double, quiet: Bool,
        executable: String, environment: [String: String], pushBody: String,
        mockArguments: @escaping @Sendable (String) -> [String],
        sendBatchArguments: @escaping @Sendable (SendBatchInvocation) -> [String],
        say: @escaping @Sendable (String) -> Void
    ) throws {
        self.executable = executable
        self.environment = environment
        self.pushBody = pushBody
        self.mockArguments = mockArguments
        self.sendBatchArguments = sendBatchArguments
        self.say = say
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
        if !quiet { say(text) }
    }

    package func run() async throws -> SoakRun.Report {
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let certificates = MockServerConfiguration.findCertificatesDirectory() else {
            throw KKPushError(
                code: .benchFaultsCertificates, message: "No Certificates folder was found.",
                fix: "Run from the kkpush checkout (it has Certificates/), or set KKPUSH_CERTIFICATES.")
        }
        let key = try FaultMatrix.findKey(in: certificates)

        // The mock: its first stdout line is where it listens.
        // It runs with this process's own environment.
        let mock = try spawn(
            mockArguments(certificates), environment: ProcessInfo.processInfo.environment, input: .null,
            what: "mock serve")
        let mockOut = mock.output!
        defer { if mock.isRunning { mock.send(SIGTERM) } }
        let announced = await Self.firstLine(mockOut, timeout: 60)
        guard let announced, let info = try? JSONValue.parse(Array(announced.utf8)),
            let sandbox = info["sandbox_url"]?.stringValue, let admin = info["admin_url"]?.stringValue,
            let adminPort = URL(string: admin)?.port
        else {
            throw MockSilent()
        }
        let caFile = info["ca_file"]?.stringValue ?? certificates + "/ca.crt"
        // Drains the mock's later output (nothing, normally) so it never blocks on a full pipe.
        Thread.detachNewThread { _ = mockOut.readDataToEndOfFile() }

        // The client: send-batch reading tokens from its stdin, results on stdout.
        var environment = environment
        for name in environment.keys where name.hasPrefix("APNS_") { environment[name] = nil }
        let client = try spawn(
            sendBatchArguments(
                SendBatchInvocation(
                    tokens: "-", topic: FaultMatrix.topic, url: sandbox, caFile: caFile, key: key, title: "Soak",
                    body: pushBody, requestTimeout: requestTimeout)), environment: environment, input: .pipe,
            what: "send-batch")
        let clientIn = client.input!
        defer { if client.isRunning { client.send(SIGTERM) } }
        let reader = startReader(client.output!)

        let started = ContinuousClock.now
        let writer = startWriter(clientIn, started: started)
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
                let fault = Self.faultCycle[faultIndex % Self.faultCycle.count]
                faultIndex += 1
                let status = await adminClient.call(fault.method, fault.path, body: fault.body)
                let ok = status.map { (200..<300).contains($0) } ?? false
                injected.append("\(fault.name)@\(Int(now))s" + (ok ? "" : " (not injected: \(status ?? 0))"))
                nextFault += faultEvery
            }
            if now >= nextSample || now >= duration {
                if let m = ProcessSample.read(pid: mock.pid),
                    let c = ProcessSample.read(pid: client.pid)
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
        try? clientIn.close()
        // send-batch ends once every push written has its result (bounded: its retries end within minutes).
        let limit = ContinuousClock.now + .seconds(120 + requestTimeout * 8)
        while client.isRunning, ContinuousClock.now < limit { try await Task.sleep(for: .milliseconds(50)) }
        var note: String? = nil
        if client.isRunning {
            note = "send-batch did not end after its input closed"
            client.send(SIGTERM)
        }
        await reader.value
        mock.send(SIGTERM)
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
    package static func growth(_ samples: [Sample]) -> [String] {
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

    /// Starts this kkpush (``executable``) with `arguments`; its output comes through a pipe, its errors go to
    /// /dev/null.
    private func spawn(
        _ arguments: [String], environment: [String: String], input: SpawnedCommand.Stream, what: String
    ) throws -> SpawnedCommand.Child {
        do {
            return try SpawnedCommand.start(
                executable, arguments, environment: environment, input: input, output: .pipe, error: .null)
        } catch {
            throw KKPushError(
                code: .benchFaultsSpawn, message: "Cannot run \(executable) \(what).",
                fix: "Run the built kkpush binary (swift build), not through another program.", underlying: error)
        }
    }

    /// The first line `handle` gives, or nil after `timeout` seconds or at its end (read on a thread of its own).
    package static func firstLine(_ handle: FileHandle, timeout: Double) async -> String? {
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
package final class HTTP1ClientBox: Sendable {
    private let client: HTTP1Client

    package init(port: Int) { client = HTTP1Client(host: "127.0.0.1", port: port, maximumConnections: 1, timeout: 30) }

    /// The status of `method path` with `body`; nil if the call failed.
    package func call(_ method: String, _ path: String, body: String?) async -> Int? {
        try? await client.send(
            method: method, target: path, headers: [("Content-Type", "application/json")],
            body: body.map { Array($0.utf8) }
        ).status
    }

    package func shutdown() { client.shutdown() }
}

/// Stops the writer thread.
package final class SoakWriter: Sendable {
    private let flag = Atomic<Bool>(false)
    package var stopped: Bool { flag.load(ordering: .sequentiallyConsistent) }
    package func stop() { flag.store(true, ordering: .sequentiallyConsistent) }
}
