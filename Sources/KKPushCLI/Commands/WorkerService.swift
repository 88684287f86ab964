import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushHTTP
import KKPushQueue
import KKPushStore
import Logging
import NIOHTTP1
import Synchronization

/// `kkpush worker`'s flags for running it as a service: the HTTP endpoints, the log format, the attempt ledger's
/// retention and the webhook.
struct WorkerServiceOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Serve /metrics (Prometheus), /healthz and /readyz over HTTP on this address (host:port; port 0 picks one, said on stderr).",
            valueName: "addr"))
    var http: String?
    @Option(
        name: .customLong("log-format"),
        help: ArgumentHelp(
            "text (lines for people) or json (one JSON object a line on stderr: time, level, label, message, metadata).",
            valueName: "format"))
    var logFormat: String = "text"
    @Option(
        name: .customLong("attempt-retention"), parsing: .unconditional,
        help: ArgumentHelp(
            "Days the attempt ledger and delivered or failed webhook events are kept (pruned by the worker), 0.001 to 3650.",
            valueName: "days"))
    /// 30 days, a choice: a month covers a support question about last week's pushes, and bounds the ledger at the
    /// queue's volume (PushQueue.md, "The attempt ledger").
    var attemptRetention: Double = 30
    @Flag(
        name: .customLong("no-attempt-ledger"),
        help:
            "Write no row to the attempt ledger (each row's history column still keeps its attempts): less work for PostgreSQL per push. The ledger is still pruned."
    )
    var noAttemptLedger = false
    @Option(
        help: ArgumentHelp(
            "POST each final outcome (accepted, rejected, dead, collapsed) and receipt to this URL, signed (needs --webhook-secret-file).",
            valueName: "url"))
    var webhook: String?
    @Option(
        name: .customLong("webhook-secret-file"),
        help: ArgumentHelp(
            "A file holding the webhook's HMAC-SHA256 secret (X-KKPush-Signature); '-' for stdin.", valueName: "file"))
    var webhookSecretFile: String?
    @Option(
        name: .customLong("webhook-attempts"), parsing: .unconditional,
        help: ArgumentHelp(
            "Deliveries of one webhook event before it ends failed, 1 to 100 (back-off 1 s doubling, at most 600 s).",
            valueName: "n"))
    /// 15, a choice: with the back-off (1 s doubling, at most 600 s, times 0.5 to 1) half an hour to an hour of a
    /// receiver being down before an event is `failed`: a deploy or a restart of the receiver passes, an outage is
    /// noticed.
    var webhookAttempts: Int = 15

    func validate() throws {
        guard ["text", "json"].contains(logFormat) else {
            throw ValidationError("--log-format '\(logFormat)' is neither text nor json.")
        }
        try NumericFlags.seconds(attemptRetention, flag: "--attempt-retention", in: 0.001...3650, unit: "days")
        try NumericFlags.integer(webhookAttempts, flag: "--webhook-attempts", in: 1...100)
        if let http, Self.address(http) == nil {
            throw ValidationError(
                "--http '\(http)' is not host:port (for example 127.0.0.1:9464, [::1]:9464 or 0.0.0.0:0).")
        }
        if let webhook {
            guard let url = URL(string: webhook), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false
            else {
                throw ValidationError("--webhook '\(webhook)' is not an http:// or https:// URL.")
            }
            // Unsigned webhooks are not offered (a choice): a receiver could not tell the queue's events from anyone
            // else's POST, and a signature costs the sender one HMAC.
            if webhookSecretFile == nil {
                throw ValidationError(
                    "--webhook needs --webhook-secret-file: every event is signed (X-KKPush-Signature), so a receiver can tell it came from this queue."
                )
            }
        } else if webhookSecretFile != nil {
            throw ValidationError("--webhook-secret-file is for --webhook: give the URL to POST to.")
        }
    }

    /// `host:port` (IPv6 in brackets) as its parts; nil if it is not that.
    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(" "), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        return (host, port)
    }

    /// The webhook's settings, its secret read (never printed), or nil without --webhook.
    func webhookConfiguration(owner: String) throws -> QueueWebhookConfiguration? {
        guard let webhook, let url = URL(string: webhook), let webhookSecretFile else { return nil }
        let secret = try Secrets.read(webhookSecretFile, flag: "--webhook-secret-file")
        return QueueWebhookConfiguration(
            url: url, secret: Array(secret.utf8), owner: owner, maxAttempts: webhookAttempts)
    }
}

/// The worker's own lines on stderr: as they were (text), or one JSON object a line (`--log-format json`) through
/// a swift-log handler (``JSONLogHandler``), with the worker's id in the metadata.
struct WorkerLog: Sendable {
    let logger: Logger?

    init(json: Bool, worker: String) {
        guard json else {
            logger = nil
            return
        }
        var logger = Logger(label: "kkpush.worker", factory: { JSONLogHandler(label: $0) })
        logger[metadataKey: "worker"] = "\(worker)"
        self.logger = logger
    }

    /// `text` said at `level`: a warning keeps its `warning: ` prefix in text.
    func say(_ level: Logger.Level, _ text: String, metadata: Logger.Metadata = [:]) {
        if let logger {
            logger.log(level: level, "\(text)", metadata: metadata)
        } else {
            StandardError.line(level >= .error ? "error: \(text)" : level >= .warning ? "warning: \(text)" : text)
        }
    }
}

/// One JSON object per line on the command's stderr: `time` (ISO 8601, UTC, milliseconds), `level`, `label`,
/// `message` and `metadata` (values as strings; nested lists and dictionaries as their description).
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    let label: String

    init(label: String) { self.label = label }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private struct Line: Encodable {
        var time: String
        var level: String
        var label: String
        var message: String
        var metadata: [String: String]
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let line = Line(
            time: formatter.string(from: Date()), level: event.level.rawValue, label: label,
            message: event.message.description, metadata: all.mapValues { "\($0)" })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(line) else { return }
        StandardError.line(String(decoding: data, as: UTF8.self))
    }

    /// Makes every `Logger` of this process (the APNs client's, the key cache's) write JSON lines: once, and only
    /// in a process of its own (a command run in a test's process leaves the process's logging alone).
    static func bootstrapProcess() {
        guard CommandIO.current.isProcess else { return }
        let first = bootstrapped.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { LoggingSystem.bootstrap { JSONLogHandler(label: $0) } }
    }

    private static let bootstrapped = Mutex(false)
}

/// `kkpush worker --http`: `/metrics`, `/healthz` and `/readyz` on KKPushHTTP's server and router.
///
/// - `/metrics`: the worker's registry (``QueueMetrics``) in the Prometheus text format;
/// - `/healthz`: 200 `{"status":"ok"}` while the worker's loop runs, 503 once it has stopped (while it drains);
/// - `/readyz`: 200 when the database answers now (a `SELECT 1` on a connection of its own, at most 2 s) and the
///   worker can send (``QueueWorkerHealth``: a credential loaded, its last claim not refused for it or unable to
///   connect); else 503 with `{"ready": false, "reason": "..."}`.
enum WorkerHTTPEndpoints {
    static func start(
        host: String, port: Int, metrics: QueueMetrics, health: QueueWorkerHealth, probe: PushQueueStore
    ) async throws -> HTTP1Server {
        var routes = HTTPRouter()
        routes.get("/metrics") { _ in HTTPResponse.metrics(metrics.exposition()) }
        routes.get("/healthz") { _ in
            health.isRunning
                ? HTTPResponse.json(.object(["status": .string("ok")]))
                : HTTPResponse.json(
                    .object(["status": .string("stopping"), "reason": .string("the worker's loop has ended")]),
                    status: .serviceUnavailable)
        }
        routes.get("/readyz") { _ in
            if let problem = await Self.databaseProblem(probe) ?? health.apnsProblem ?? notRunning(health) {
                return HTTPResponse.json(
                    .object(["ready": .bool(false), "reason": .string(problem)]), status: .serviceUnavailable)
            }
            return HTTPResponse.json(.object(["ready": .bool(true)]))
        }
        let router = routes
        let configuration = HTTP1Server.Configuration(
            host: host, port: port, maximumBody: 4096, maxConnections: 64, threadName: "kkpush.worker.http")
        return try await HTTP1Server.start(
            configuration, logger: Logger(label: "kkpush.worker.http", factory: { _ in SwiftLogNoOpLogHandler() }),
            handler: { await router.respond(to: $0) })
    }

    private static func notRunning(_ health: QueueWorkerHealth) -> String? {
        health.isRunning ? nil : "the worker's loop has ended"
    }

    /// Why the database is not usable now (nil: it answered `SELECT 1` within 2 s). The query runs in a task of
    /// its own: a server that does not answer leaves it waiting, not the probe.
    static func databaseProblem(_ store: PushQueueStore) async -> String? {
        let waiting = FirstAnswer()
        return await withCheckedContinuation { continuation in
            waiting.slot.withLock { $0 = continuation }
            Task {
                var problem: String?
                do {
                    try await store.ping()
                } catch {
                    problem = "database: " + ((error as? KKPushError)?.message ?? "\(error)")
                }
                waiting.answer(problem)
            }
            Task {
                try? await Task.sleep(for: .seconds(2))
                waiting.answer("database: no answer to SELECT 1 within 2 s")
            }
        }
    }

    /// A continuation resumed by whichever answer comes first.
    private final class FirstAnswer: Sendable {
        let slot = Mutex<CheckedContinuation<String?, Never>?>(nil)
        func answer(_ value: String?) { slot.withLock { $0.take() }?.resume(returning: value) }
    }
}
