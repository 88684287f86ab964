import ArgumentParser
import Foundation
import KKPushClient
import KKPushCore
import Synchronization

/// `kkpush send-batch`: many pushes from a token file, streamed; results as JSON lines.
struct SendBatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-batch",
        abstract: "Send one push per line of a token file (or stdin), streamed; results as JSON lines on stdout.",
        discussion: """
            Each line is a hex device token, or a JSON object {"token": "...", "payload": {...}, \
            "environment": "sandbox"|"production"} (payload and environment optional). Empty lines and lines \
            starting with # are skipped. The file is read line by line, never whole. A summary goes to stderr \
            (and a progress line while stderr is a terminal). Exit 0 if every push was accepted, 1 otherwise.
            """)

    @Option(help: "Token file, one per line; - for stdin.") var tokens: String
    @Option(help: "apns-topic: the bundle ID (plus the push type's suffix).") var topic: String
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var payloadOptions: PayloadOptions
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(help: "apns-priority: 10, 5 or 1 (default: 10, or 5 for background).") var priority: Int?
    @Option(help: "apns-expiration: UNIX seconds (0 = try once).") var expiration: Int?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id.") var collapseID: String?
    @Option(name: .customLong("max-in-flight"), help: "Streams in flight per connection.") var maxInFlight: Int?
    @Option(name: .customLong("max-connections"), help: "Connections per endpoint.") var maxConnections: Int?
    @Flag(name: .customLong("quiet-accepted"), help: "Print result lines only for pushes that were not accepted.")
    var quietAccepted = false

    func validate() throws {
        if let maxInFlight, !(1...10_000).contains(maxInFlight) {
            throw ValidationError("--max-in-flight must be 1...10000.")
        }
        if let maxConnections, !(1...64).contains(maxConnections) {
            throw ValidationError("--max-connections must be 1...64.")
        }
    }

    func run() async throws {
        try await reportingErrors {
            var warnings: [Problem] = []
            let defaultEnvironment = connection.environment(warnings: &warnings)
            let explicitEnvironment = connection.env != nil || connection.buildEnvironment != nil
            for line in Output.lines(warnings) { Output.printError(line) }
            let (bytes, suggested, _) = try payloadOptions.build()
            let type = pushType.map { PushType($0) } ?? suggested
            let template = NotificationRequest(
                deviceToken: "", topic: topic, pushType: type, priority: priority ?? (type == .background ? 5 : 10),
                expiration: expiration, collapseID: collapseID, payload: bytes)
            let endpoints = [
                APNsEnvironment.sandbox: try connection.endpoint(for: .sandbox),
                .production: try connection.endpoint(for: .production),
            ]
            let reader = try LineReader(path: tokens)
            let lines = BatchLines(
                reader: reader, template: template, endpoints: endpoints, defaultEnvironment: defaultEnvironment,
                environmentFromLine: !explicitEnvironment)
            let configuration = try connection.clientConfiguration(
                maxInFlight: maxInFlight, maxConnections: maxConnections)
            let summary = BatchSummary(progress: isatty(2) == 1, quietAccepted: quietAccepted)
            let start = ContinuousClock.now
            try await withAPNsClient(configuration: configuration) { client in
                try await client.sendAll(streaming: lines) { result in summary.record(result) }
            }
            let elapsed = ContinuousClock.now - start
            summary.finish(elapsed: elapsed, skipped: lines.skipped)
            if !summary.allAccepted { throw ExitCode(1) }
        }
    }
}

/// Reads a file (or stdin) line by line with a fixed buffer, never the whole file.
final class LineReader: @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private let closeOnDeinit: Bool
    private var buffer: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0

    init(path: String) throws {
        if path == "-" {
            guard let f = fdopen(dup(0), "r") else {
                throw KKPushError(
                    code: "batch-stdin-unreadable", message: "Cannot read standard input: \(String(cString: strerror(errno))).")
            }
            file = f
            closeOnDeinit = true
        } else {
            guard let f = fopen(path, "r") else {
                throw KKPushError(
                    code: "batch-tokens-unreadable",
                    message: "Cannot open the token file '\(path)': \(String(cString: strerror(errno))).",
                    fix: "Give a readable file with one token (or JSON object) per line, or - for stdin.")
            }
            file = f
            closeOnDeinit = true
        }
    }

    deinit {
        free(buffer)
        if closeOnDeinit { fclose(file) }
    }

    /// The next line without its line break, or nil at the end.
    func next() -> String? {
        let n = getline(&buffer, &capacity, file)
        guard n >= 0, let buffer else { return nil }
        var length = n
        while length > 0, buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D { length -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// The token file as an async sequence of batch items (JSON lines parsed, tokens normalised).
/// Lines that cannot be read become items whose token is left as given, so that pre-flight reports
/// them as an outcome of their own (BadDeviceToken); invalid JSON lines too.
struct BatchLines: AsyncSequence, Sendable {
    typealias Element = PushBatchItem
    let reader: LineReader
    let template: NotificationRequest
    let endpoints: [APNsEnvironment: APNsEndpoint]
    let defaultEnvironment: APNsEnvironment
    let environmentFromLine: Bool

    init(
        reader: LineReader, template: NotificationRequest, endpoints: [APNsEnvironment: APNsEndpoint],
        defaultEnvironment: APNsEnvironment, environmentFromLine: Bool
    ) {
        self.reader = reader
        self.template = template
        self.endpoints = endpoints
        self.defaultEnvironment = defaultEnvironment
        self.environmentFromLine = environmentFromLine
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
    private let counter = Counter()

    /// Lines skipped (empty or comments).
    var skipped: Int { counter.value.load(ordering: .relaxed) }

    struct AsyncIterator: AsyncIteratorProtocol {
        let lines: BatchLines
        mutating func next() async throws -> PushBatchItem? {
            while let line = lines.reader.next() {
                let trimmed = line.trimmingWhitespace()
                if trimmed.isEmpty || trimmed.hasPrefix("#") {
                    lines.counter.value.add(1, ordering: .relaxed)
                    continue
                }
                return lines.item(trimmed)
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(lines: self) }

    func item(_ line: String) -> PushBatchItem {
        var request = template
        var environment = defaultEnvironment
        if line.hasPrefix("{") {
            if let object = try? JSONValue.parse(line), let members = object.objectValue {
                request.deviceToken = normalized(members["token"]?.stringValue ?? "")
                if let payload = members["payload"] {
                    request.payload = payload.encoded()
                }
                if environmentFromLine, let text = members["environment"]?.stringValue,
                    let e = APNsEnvironment(lenient: text)
                {
                    environment = e
                }
            } else {
                // Not JSON: sent as is, so pre-flight reports the token as malformed.
                request.deviceToken = line
            }
        } else {
            request.deviceToken = normalized(line)
        }
        return PushBatchItem(request: request, endpoint: endpoints[environment] ?? endpoints[.sandbox]!)
    }

    private func normalized(_ token: String) -> String {
        DeviceToken.normalize(token).token ?? token
    }
}

/// Counts outcomes and writes the JSON lines (on the client's loop thread, one at a time).
final class BatchSummary: Sendable {
    private struct State {
        var accepted = 0
        var rejected: [String: Int] = [:]
        var failed: [String: Int] = [:]
        var duplicated = 0
        var lastProgress: UInt64 = 0
        var out: [UInt8] = []
    }

    private let state = Mutex(State())
    private let progress: Bool
    private let quietAccepted: Bool

    init(progress: Bool, quietAccepted: Bool) {
        self.progress = progress
        self.quietAccepted = quietAccepted
    }

    var allAccepted: Bool {
        state.withLock { $0.rejected.isEmpty && $0.failed.isEmpty }
    }

    func record(_ result: PushResult) {
        state.withLock { s in
            let outcome = result.outcome
            switch outcome.result {
            case .accepted: s.accepted += 1
            case .rejected(let r): s.rejected[r.reason.rawValue, default: 0] += 1
            case .failed(let f): s.failed[f.kind.rawValue, default: 0] += 1
            }
            if outcome.possiblyDuplicated { s.duplicated += 1 }
            if !(quietAccepted && outcome.isAccepted) {
                Self.writeLine(result, to: &s.out)
                if s.out.count >= 64 * 1024 { Self.flush(&s.out) }
            }
            if progress {
                let now = DispatchTime.now().uptimeNanoseconds
                if now - s.lastProgress > 250_000_000 {
                    s.lastProgress = now
                    let failed = s.failed.values.reduce(0, +)
                    let rejected = s.rejected.values.reduce(0, +)
                    let line = "\r\(s.accepted + failed + rejected) done: \(s.accepted) accepted, \(rejected) rejected, \(failed) failed"
                    FileHandle.standardError.write(Data(line.utf8))
                }
            }
        }
    }

    /// One result as a JSON line, written by hand (this runs once per push on the client's loop thread):
    /// `index`, `token`, `status`, `apns_id`, `apns_unique_id`, `reason`, `http_status`, `timestamp`,
    /// `environment`, `duration_ms`, `attempts`, `possibly_duplicated`, and `error` for failures.
    static func writeLine(_ result: PushResult, to out: inout [UInt8]) {
        let outcome = result.outcome
        func key(_ name: String) {
            out.append(contentsOf: name.utf8)
        }
        func string(_ value: String?) {
            if let value { JSONValue.writeString(value, to: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        key("{\"index\":\(result.index),\"token\":")
        string(result.deviceToken)
        key(",\"status\":\"\(outcome.status)\",\"apns_id\":")
        string(outcome.apnsID)
        var unique: String? = nil
        var reason: String? = nil
        var httpStatus: Int? = nil
        var timestamp: Int64? = nil
        var error: String? = nil
        switch outcome.result {
        case .accepted(_, let u): unique = u
        case .rejected(let r):
            reason = r.reason.rawValue
            httpStatus = r.status
            timestamp = r.timestamp.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
        case .failed(let f):
            reason = f.kind.rawValue
            error = f.message
        }
        key(",\"apns_unique_id\":")
        string(unique)
        key(",\"reason\":")
        string(reason)
        key(",\"http_status\":\(httpStatus.map(String.init) ?? "null"),\"timestamp\":\(timestamp.map(String.init) ?? "null")")
        key(",\"environment\":")
        string(outcome.endpoint.environment?.rawValue)
        let tenths = Int((outcome.durationMilliseconds * 10).rounded())
        key(",\"duration_ms\":\(tenths / 10).\(tenths % 10),\"attempts\":\(outcome.attempts)")
        key(",\"possibly_duplicated\":\(outcome.possiblyDuplicated)")
        if let error {
            key(",\"error\":")
            string(error)
        }
        out.append(contentsOf: "}\n".utf8)
    }

    private static func flush(_ out: inout [UInt8]) {
        out.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { break }
                offset += n
            }
        }
        out.removeAll(keepingCapacity: true)
    }

    func finish(elapsed: Duration, skipped: Int) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        state.withLock { s in
            Self.flush(&s.out)
            let rejected = s.rejected.values.reduce(0, +)
            let failed = s.failed.values.reduce(0, +)
            let total = s.accepted + rejected + failed
            var lines: [String] = []
            if progress { lines.append("") }
            lines.append(
                "\(total) pushes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", seconds > 0 ? Double(total) / seconds : 0)) req/s): \(s.accepted) accepted, \(rejected) rejected, \(failed) failed"
                    + (skipped > 0 ? ", \(skipped) lines skipped" : ""))
            for (reason, count) in s.rejected.sorted(by: { $0.value > $1.value }) {
                lines.append("  rejected \(reason): \(count) — \(APNsReason(reason).fix)")
            }
            for (kind, count) in s.failed.sorted(by: { $0.value > $1.value }) {
                lines.append("  failed (\(kind)): \(count)")
            }
            if s.duplicated > 0 {
                lines.append("  \(s.duplicated) possibly delivered twice (the connection dropped after sending)")
            }
            FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
    }
}
