import Dispatch
package import Foundation
import KKPushAuth
package import KKPushCore
package import KKPushMock
import KKPushSystem
import Synchronization

/// Whether a run's send-batch has finished, and whether its fault fired.
final class TriggerFlags: Sendable {
    let finished = Atomic<Bool>(false)
    let fired = Atomic<Bool>(false)
}

/// The fault matrix: the mock, the tokens, one send-batch run per fault.
package struct FaultMatrix {
    package let count: Int
    package let requestTimeout: Double
    package let tokens: [String]
    package let directory: URL
    package let tokenFile: URL
    package let certificates: String
    package let key: (file: String, keyID: String, teamID: String)
    package let executable: String
    /// The environment the send-batch runs get (without APNS_* variables).
    package let environment: [String: String]
    /// The command line of one send-batch run (after the executable).
    package let sendBatchArguments: @Sendable (SendBatchInvocation) -> [String]

    package static let topic = "nl.kantinekoning.app"

    /// One fault's figures: a row of the table, an object of `--json`'s `faults`.
    package struct Row: Encodable, Sendable {
        package var fault: String
        package var pushes: Int
        package var results: Int
        package var withoutOneResult: Int
        package var accepted: Int
        package var rejected: Int
        package var failed: Int
        package var flagged: Int
        package var deliveredTwice: Int
        package var unflaggedDuplicates: Int
        package var retried: Int
        package var connections = 0
        package var seconds: Double
        package var exitStatus: Int32
        package var note: String?
        /// Which run of the matrix (`--runs`), from 1.
        package var run = 1

        package var ok: Bool { withoutOneResult == 0 && unflaggedDuplicates == 0 && note == nil }

        /// The JSON field names: stable, what scripts read.
        enum CodingKeys: String, CodingKey {
            case fault, pushes, results, accepted, rejected, failed, retried, connections, seconds, ok, note, run
            case withoutOneResult = "without_one_result"
            case flagged = "possibly_duplicated"
            case deliveredTwice = "delivered_twice"
            case unflaggedDuplicates = "unflagged_duplicates"
            case exitStatus = "send_batch_exit"
        }

        /// Every field, `note` as `null` when there is none; `seconds` to the millisecond.
        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(fault, forKey: .fault)
            try c.encode(pushes, forKey: .pushes)
            try c.encode(results, forKey: .results)
            try c.encode(withoutOneResult, forKey: .withoutOneResult)
            try c.encode(accepted, forKey: .accepted)
            try c.encode(rejected, forKey: .rejected)
            try c.encode(failed, forKey: .failed)
            try c.encode(flagged, forKey: .flagged)
            try c.encode(deliveredTwice, forKey: .deliveredTwice)
            try c.encode(unflaggedDuplicates, forKey: .unflaggedDuplicates)
            try c.encode(retried, forKey: .retried)
            try c.encode(connections, forKey: .connections)
            try c.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
            try c.encode(Int(exitStatus), forKey: .exitStatus)
            try c.encode(ok, forKey: .ok)
            try c.encode(note, forKey: .note)
            try c.encode(run, forKey: .run)
        }
    }

    /// The alert body: the fault's name, padded so the payload is about `payloadBytes` (0: not padded).
    package let payloadBytes: Int

    /// `executable`: the kkpush whose send-batch is under test, run with `environment` (less its APNS_* variables)
    /// and the command line `sendBatchArguments` makes.
    package init(
        count: Int, requestTimeout: Double, payloadBytes: Int = 0, executable: String, environment: [String: String],
        sendBatchArguments: @escaping @Sendable (SendBatchInvocation) -> [String]
    ) throws {
        self.count = count
        self.requestTimeout = requestTimeout
        self.payloadBytes = payloadBytes
        guard let certificates = MockServerConfiguration.findCertificatesDirectory() else {
            throw KKPushError(
                code: .benchFaultsCertificates, message: "No Certificates folder was found.",
                fix: "Run from the kkpush checkout (it has Certificates/), or set KKPUSH_CERTIFICATES.")
        }
        self.certificates = certificates
        key = try Self.findKey(in: certificates)
        self.executable = executable
        self.environment = environment
        self.sendBatchArguments = sendBatchArguments
        var rng = SystemRandomNumberGenerator()
        tokens = (0..<count).map { _ in
            (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-faults-\(UUID().uuidString)")
        tokenFile = directory.appendingPathComponent("tokens.txt")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data((tokens.joined(separator: "\n") + "\n").utf8).write(to: tokenFile)
        } catch {
            throw KKPushError(
                code: .benchFaultsTemp, message: "Cannot write the token file in \(directory.path).",
                fix: "Check the temporary directory ($TMPDIR) is writable.", underlying: error)
        }
    }

    package func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    /// The first key of `keys.json` valid in both environments whose `.p8` file is a private key.
    package static func findKey(in certificates: String) throws -> (file: String, keyID: String, teamID: String) {
        let registry = certificates + "/keys.json"
        if let data = FileManager.default.contents(atPath: registry),
            let entries = (try? JSONValue.parse(Array(data)))?.arrayValue
        {
            for entry in entries {
                guard let keyID = entry["key_id"]?.stringValue, let teamID = entry["team_id"]?.stringValue,
                    let file = entry["file"]?.stringValue
                else { continue }
                let environments = entry["environments"]?.arrayValue?.compactMap(\.stringValue) ?? []
                guard environments.isEmpty || (environments.contains("sandbox") && environments.contains("production"))
                else { continue }
                let path = file.hasPrefix("/") ? file : certificates + "/" + file
                if (try? ES256PrivateKey(contentsOfFile: path)) != nil { return (path, keyID, teamID) }
            }
        }
        throw KKPushError(
            code: .benchFaultsKey, message: "\(registry) lists no .p8 private key valid in both environments.",
            fix: "Use the repository's Certificates/ (KKTEST0001), or regenerate it with Certificates/generate.sh.")
    }

    package func startMock() async throws -> MockAPNsServer {
        var configuration = MockServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.adminPort = nil
        configuration.certificatesDirectory = certificates
        configuration.deliveryLogCapacity = max(100_000, 4 * count)
        // The matrix measures the faults it injects: the mock's own guards against idle and silent clients (10 s by
        // default) must not close a connection the client opened and has not used yet, which on a loaded machine
        // once made the clean row retry a push (a run of 9.2 s, a third connection).
        configuration.handshakeTimeout = 120
        configuration.firstRequestTimeout = 120
        return try await MockAPNsServer.start(configuration: configuration)
    }

    /// Runs send-batch under `fault` and measures it.
    package func run(fault name: String, on server: MockAPNsServer) async throws -> Row {
        server.reset()
        let environment: APNsEnvironment = name == "wrong-environment" ? .production : .sandbox
        for token in tokens {
            try server.registerDevice(MockDeviceRegistration(token: token, environment: environment, topic: Self.topic))
        }
        // Faults let the first half of the requests pass (`skip`), so they fire at request count/2 + 1
        // as the mock sees them, whatever is in flight; the restart and the token expiry, which are
        // not faults, come after a third of the pushes were accepted.
        let half = count / 2
        let third = max(1, count / 3)
        let burst = max(1, count / 20)
        var fault: MockFault? = nil
        var action: (@Sendable () async -> Void)? = nil
        switch name {
        case "delay": fault = MockFault(kind: .delay(milliseconds: 50))
        case "429", "500", "503": fault = .failNext(burst, status: Int(name)!)
        case "goaway": fault = MockFault(kind: .goAway(afterStreams: 1, reason: .shutdown), remaining: 1)
        case "close": fault = MockFault(kind: .closeConnection, remaining: 1)
        case "reset": fault = MockFault(kind: .resetConnection, remaining: 1)
        case "stall": fault = MockFault(kind: .stall, remaining: 1)
        // The restart and the token expiry answer after 20 ms, so that pushes are still waiting to be
        // sent when they come (else a fast client may have every push judged before the trigger).
        case "restart":
            fault = MockFault(kind: .delay(milliseconds: 20))
            action = { try? await server.restart() }
        case "expired-token":
            fault = MockFault(kind: .delay(milliseconds: 20))
            action = { server.expireProviderTokens() }
        default: break  // clean, wrong-environment
        }
        var added: MockFault? = nil
        if var fault {
            if case .delay = fault.kind {} else { fault.skip = half }
            added = try server.addFault(fault)
        }
        let flags = TriggerFlags()
        var triggerTask: Task<Void, Never>? = nil
        if let action {
            triggerTask = Task { [flags] in
                await server.waitForDeliveries(third)
                guard !flags.finished.load(ordering: .sequentiallyConsistent) else { return }
                flags.fired.store(true, ordering: .sequentiallyConsistent)
                await action()
            }
        }

        let results = directory.appendingPathComponent("\(name).jsonl")
        let errors = directory.appendingPathComponent("\(name).stderr")
        let arguments = sendBatchArguments(
            SendBatchInvocation(
                tokens: tokenFile.path, topic: Self.topic, url: server.sandboxEndpoint.baseURL,
                caFile: server.caFile ?? certificates + "/ca.crt", key: key, title: "Fault matrix",
                body: name + String(repeating: "x", count: max(0, payloadBytes - 60 - name.count)),
                requestTimeout: requestTimeout))
        let connectionsBefore = server.acceptedConnections
        let start = ContinuousClock.now
        let limit = 120 + Double(count) / 50 + requestTimeout * 4
        let (status, timedOut) = try await Self.runProcess(
            executable, arguments, environment: self.environment, stdout: results, stderr: errors, timeout: limit)
        let elapsed = ContinuousClock.now - start
        flags.finished.store(true, ordering: .sequentiallyConsistent)
        let delivered = server.deliveries(limit: Int.max)
        // A fault took effect if it was used up, or applied to at least one request.
        let faultTookEffect =
            added.map { added in
                guard let left = server.faults.first(where: { $0.id == added.id }) else { return true }
                return left.skip == 0 && (left.remaining == nil || left.remaining! < added.remaining!)
            } ?? true
        server.reset()  // also releases a trigger still waiting
        await triggerTask?.value

        var row = Self.measure(
            fault: name, tokens: tokens, results: (try? Data(contentsOf: results)) ?? Data(), delivered: delivered)
        row.seconds = elapsed.seconds
        row.exitStatus = status
        row.connections = server.acceptedConnections - connectionsBefore
        if timedOut {
            row.note = "send-batch did not finish within \(Int(limit)) s"
        } else if !faultTookEffect || (action != nil && !flags.fired.load(ordering: .sequentiallyConsistent)) {
            row.note = "the fault never took effect"
        } else if status != 0 && status != 1 {
            let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            row.note = "send-batch exited \(status): \(text.split(separator: "\n").last.map(String.init) ?? "")"
        }
        return row
    }

    /// The figures of one run from send-batch's JSON lines and the mock's log.
    package static func measure(fault: String, tokens: [String], results: Data, delivered: [DeliveredNotification])
        -> Row
    {
        var row = Row(
            fault: fault, pushes: tokens.count, results: 0, withoutOneResult: 0, accepted: 0, rejected: 0, failed: 0,
            flagged: 0, deliveredTwice: 0, unflaggedDuplicates: 0, retried: 0, seconds: 0, exitStatus: 0)
        var resultCount: [String: Int] = [:]
        var flaggedTokens: Set<String> = []
        for line in results.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let object = try? JSONValue.parse(Array(line)), object.objectValue != nil else { continue }
            row.results += 1
            let token = (object["token"]?.stringValue ?? "").lowercased()
            resultCount[token, default: 0] += 1
            switch object["status"]?.stringValue {
            case "accepted": row.accepted += 1
            case "rejected": row.rejected += 1
            default: row.failed += 1
            }
            if object["possibly_duplicated"]?.boolValue == true {
                row.flagged += 1
                flaggedTokens.insert(token)
            }
            if (object["attempts"]?.intValue ?? 0) > 1 { row.retried += 1 }
        }
        let known = Set(tokens)
        row.withoutOneResult =
            tokens.filter { resultCount[$0] != 1 }.count
            + resultCount.keys.filter { !known.contains($0) }.count
        var deliveries: [String: Int] = [:]
        for d in delivered { deliveries[d.token, default: 0] += 1 }
        let twice = deliveries.filter { $0.value >= 2 }.map(\.key)
        row.deliveredTwice = twice.count
        row.unflaggedDuplicates = twice.filter { !flaggedTokens.contains($0) }.count
        return row
    }

    /// Runs a process with stdout and stderr to files, bounded by `timeout` seconds; waits on a
    /// Dispatch thread, never on a cooperative one.
    package static func runProcess(
        _ executable: String, _ arguments: [String], environment: [String: String], stdout: URL, stderr: URL,
        timeout: Double
    ) async throws -> (status: Int32, timedOut: Bool) {
        var environment = environment
        for key in environment.keys where key.hasPrefix("APNS_") { environment[key] = nil }
        let process: SpawnedCommand.Child
        do {
            process = try SpawnedCommand.start(
                executable, arguments, environment: environment, input: .null, output: .file(stdout.path),
                error: .file(stderr.path))
        } catch {
            throw KKPushError(
                code: .benchFaultsSpawn, message: "Cannot run \(executable) send-batch.",
                fix: "Run the built kkpush binary (swift build), not through another program.", underlying: error)
        }
        return await withCheckedContinuation { (c: CheckedContinuation<(status: Int32, timedOut: Bool), Never>) in
            DispatchQueue.global().async {
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    process.wait()
                    done.signal()
                }
                var timedOut = false
                if done.wait(timeout: .now() + timeout) == .timedOut {
                    timedOut = true
                    process.send(SIGTERM)
                    if done.wait(timeout: .now() + 5) == .timedOut {
                        process.send(SIGKILL)
                    }
                    done.wait()
                }
                c.resume(returning: (process.terminationStatus, timedOut))
            }
        }
    }

    /// The matrix as a text table.
    package static func table(_ rows: [Row]) -> String {
        let header = [
            "fault", "pushes", "results", "not 1 result", "accepted", "rejected", "failed", "flagged dup",
            "delivered 2x", "2x unflagged", "retried", "conns", "seconds",
        ]
        var lines = [header]
        for r in rows {
            lines.append([
                r.fault, "\(r.pushes)", "\(r.results)", "\(r.withoutOneResult)", "\(r.accepted)", "\(r.rejected)",
                "\(r.failed)", "\(r.flagged)", "\(r.deliveredTwice)", "\(r.unflaggedDuplicates)", "\(r.retried)",
                "\(r.connections)", String(format: "%.2f", r.seconds),
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for line in lines { for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var text = lines.map { line in
            line.enumerated().map { i, cell in
                i == 0
                    ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[i] - cell.count) + cell
            }.joined(separator: "  ")
        }
        for r in rows { if let note = r.note { text.append("\(r.fault): \(note)") } }
        return text.joined(separator: "\n")
    }
}

/// One send-batch run of a bench harness: what its command line says, for the caller to spell.
package struct SendBatchInvocation: Sendable {
    /// The token file, or - for standard input.
    package var tokens: String
    package var topic: String
    /// The endpoint's base URL, and the CA file that verifies it.
    package var url: String
    package var caFile: String
    /// The provider key: the .p8 file, its key ID and team ID.
    package var key: (file: String, keyID: String, teamID: String)
    /// The alert's title and body.
    package var title: String
    package var body: String
    /// Seconds each request may take.
    package var requestTimeout: Double
}
