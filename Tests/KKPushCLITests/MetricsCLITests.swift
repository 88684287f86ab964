import Foundation
import KKPushCore
import KKPushHTTP
import KKPushMock
import KKPushTestSupport
import Prometheus
import Synchronization
import Testing

/// Prometheus metrics end to end: the real `kkpush send-batch` against the mock (with faults, so there
/// are rejections), the mock's `GET /metrics` scraped during and after the batch, and `--metrics-file`,
/// each compared exactly with the batch's own result lines and summary and with the mock's delivery log.
@Suite("Metrics: the mock's /metrics during send-batch, --metrics-file (the command line)", .serialized)
struct MetricsCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    static func arguments(_ server: MockAPNsServer, tokens: String) throws -> [String] {
        [
            "send-batch", "--tokens", tokens, "--topic", topic, "--url", server.sandboxEndpoint.baseURL,
            "--ca-file", try #require(server.caFile), "--env", "sandbox", "--key", key, "--key-id", "KKTEST0001",
            "--team-id", "KKTEAM0001", "--title", "Dienst",
        ]
    }

    /// A key for counting: outcome, HTTP status ("" for failed), reason ("" for accepted), environment.
    struct Key: Hashable, CustomStringConvertible {
        var outcome: String
        var status: String
        var reason: String
        var environment: String
        var description: String { "\(outcome)/\(status)/\(reason)/\(environment)" }
    }

    /// The result lines counted by key.
    static func countResults(_ stdout: String) throws -> [Key: Int] {
        var counts: [Key: Int] = [:]
        for line in stdout.split(separator: "\n") {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(String(line))")
            let outcome = try #require(object["status"] as? String)
            let http = (object["http_status"] as? Int).map(String.init) ?? ""
            let reason = object["reason"] as? String ?? ""
            let environment = object["environment"] as? String ?? ""
            counts[Key(outcome: outcome, status: http, reason: reason, environment: environment), default: 0] += 1
        }
        return counts
    }

    /// The stderr summary's head: (total, accepted, rejected, failed), and its `rejected X: n` lines.
    static func summary(_ stderr: String) throws -> (
        total: Int, accepted: Int, rejected: Int, failed: Int, byReason: [String: Int]
    ) {
        let head = try #require(stderr.split(separator: "\n").first { $0.contains(" pushes in ") }, "\(stderr)")
        func number(before word: String) throws -> Int {
            let range = try #require(head.range(of: " \(word)"), "no \(word) in \(String(head))")
            let digits = head[..<range.lowerBound].reversed().prefix { $0.isNumber }
            return try #require(Int(String(digits.reversed())))
        }
        let total = try #require(Int(head.prefix { $0.isNumber }))
        var byReason: [String: Int] = [:]
        for line in stderr.split(separator: "\n") where line.hasPrefix("  rejected ") {
            let rest = line.dropFirst("  rejected ".count)
            let name = String(rest.prefix { $0 != ":" })
            let count = rest.dropFirst(name.count + 2).prefix { $0.isNumber }
            byReason[name] = Int(count)
        }
        return (
            total, try number(before: "accepted"), try number(before: "rejected"), try number(before: "failed"),
            byReason
        )
    }

    @Test("/metrics scraped during and after a batch agrees exactly with its results, summary and the delivery log")
    func batchAgainstMock() async throws {
        var config = MockServerConfiguration.forTests()
        config.faults = [
            // Every request waits a little (the batch lasts long enough to be scraped while it runs).
            MockFault(id: "slow", kind: .delay(milliseconds: 100)),
            // Then eight requests in the middle wait 3 s: they fill every stream the batch may have in flight (2
            // connections × 4), so it stands still halfway for that long, and a scrape falls inside it even when one
            // scrape takes seconds on a loaded machine (with the 100 ms delay alone, a run once ended between two
            // scrapes).
            MockFault(id: "hold", kind: .delay(milliseconds: 3000), remaining: 8, skip: 100),
            MockFault(id: "gone", kind: .respond(status: 410, reason: .unregistered), remaining: 7, skip: 10),
            MockFault(id: "bad", kind: .respond(status: 400, reason: .badDeviceToken), remaining: 5, skip: 50),
            // Retried by the client (each push then ends accepted): the mock counts requests, the batch pushes.
            MockFault(id: "busy", kind: .respond(status: 503, reason: .serviceUnavailable), remaining: 3, skip: 120),
        ]
        try await withMockServer(configuration: config) { server in
            let admin = try #require(server.adminURL)
            // Before any push: valid, every family there with HELP and TYPE, nothing counted.
            let first = try await MetricsScrape.get(admin + "/metrics")
            #expect(first.status == 200)
            #expect(first.contentType == "text/plain; version=0.0.4; charset=utf-8")
            let empty = try first.exposition()
            for family in [
                "kkpush_mock_requests_total", "kkpush_mock_request_duration_seconds", "kkpush_mock_open_connections",
                "kkpush_mock_open_streams", "kkpush_mock_faults_fired_total", "kkpush_mock_provider_tokens_total",
            ] {
                #expect(empty.types[family] != nil, "no TYPE for \(family)")
                #expect(empty.helps[family]?.isEmpty == false, "no HELP for \(family)")
            }
            #expect(empty.sum("kkpush_mock_requests_total") == 0)

            let dir = try makeTemporaryDirectory(prefix: "kkpush-metrics")
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = TestTokens.random(240)
            var lines = ["# metrics test"] + tokens
            lines.insert("not-a-token", at: 100)  // fails the pre-flight: failed, never sent
            let file = dir.appendingPathComponent("tokens.txt")
            try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            let metricsFile = dir.appendingPathComponent("batch.prom").path

            let args =
                try Self.arguments(server, tokens: file.path) + [
                    "--max-connections", "2", "--max-in-flight", "4", "--metrics-file", metricsFile,
                ]
            // How late NIO's shared loops (the mock's APNs listeners), the HTTP/1.1 servers' loops (the admin port) and
            // the HTTP/1.1 client's loops run a task, for the message of a failed scrape.
            let serverLoops = EventLoopLag()
            let adminLoops = EventLoopLag(group: HTTP1Server.serverGroup)
            let clientLoops = EventLoopLag(group: HTTP1Client.clientGroup)
            defer {
                serverLoops.stop()
                adminLoops.stop()
                clientLoops.stop()
            }
            let finished = Atomic(false)
            // On threads of its own too: with every cooperative thread busy (the suite in parallel), the batch once
            // stood still for 100 s while the scrapes went on, and no scrape fell inside it.
            let batch = Task(executorPreference: OwnThreads(name: "kkpush.test.batch")) {
                defer { finished.store(true, ordering: .releasing) }
                return try await CLI.run(args, timeout: 120)
            }
            // Scrape while it runs (until it ends: on a loaded machine the process may wait to start): every answer
            // parses, counters never go down.
            // On threads of their own: with every cooperative thread busy (the suite in parallel), this loop once slept
            // through the whole batch and saw none of it.
            let during = try await withTaskExecutorPreference(OwnThreads(name: "kkpush.test.scrape")) {
                var during: [PrometheusExposition] = []
                var previous = 0.0
                let deadline = ContinuousClock.now + .seconds(120)
                while !finished.load(ordering: .acquiring), ContinuousClock.now < deadline {
                    let scrape: MetricsScrape
                    do {
                        scrape = try await MetricsScrape.get(admin + "/metrics")
                    } catch {
                        // A failed scrape (reset 3 times in 24 parallel runs, not explained; 20 s timeouts, the last one
                        // on a shared event loop a busy mock connection held): say what the admin listener counted
                        // and how many descriptors this process holds.
                        let counts = server.adminConnectionCounts.map { "\($0)" } ?? "none"
                        let descriptors =
                            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
                        // A second scrape on a new connection: is the admin port silent, or was it that connection?
                        let again: String
                        let clock = ContinuousClock()
                        var second: Result<Int, any Error> = .success(0)
                        let took = await clock.measure {
                            do {
                                second = .success(try await MetricsScrape.get(admin + "/metrics", timeout: 10).status)
                            } catch {
                                second = .failure(error)
                            }
                        }
                        switch second {
                        case .success(let status): again = "a second scrape got \(status) in \(took)"
                        case .failure(let error): again = "a second scrape failed after \(took): \(error)"
                        }
                        Issue.record(
                            "scrape \(during.count + 1) failed: \(error); admin connections \(counts); descriptors open in this process: \(descriptors); \(again); APNs listeners' loops: \(serverLoops.summary); admin loops: \(adminLoops.summary); client loops: \(clientLoops.summary)"
                        )
                        throw error
                    }
                    #expect(scrape.status == 200)
                    let exposition = try scrape.exposition()
                    let requests = exposition.sum("kkpush_mock_requests_total")
                    #expect(requests >= previous)
                    previous = requests
                    during.append(exposition)
                    if requests >= Double(tokens.count) { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return during
            }
            let result = try await batch.value
            #expect(result.status == 1, "\(result.stderr)")  // rejections and a bad line
            #expect(
                during.contains {
                    $0.sum("kkpush_mock_requests_total") > 0
                        && $0.sum("kkpush_mock_requests_total") < Double(tokens.count)
                }, "no scrape fell inside the batch: \(during.map { $0.sum("kkpush_mock_requests_total") })")
            #expect(during.contains { $0.sum("kkpush_mock_open_connections") >= 1 })
            #expect(during.contains { $0.sum("kkpush_mock_open_streams") >= 1 })

            // After: the mock's counts against the result lines, the summary and the delivery log.
            let counts = try Self.countResults(result.stdout)
            let after = try await MetricsScrape.get(admin + "/metrics").exposition()
            var mockCounts: [Key: Int] = [:]
            for s in after.series("kkpush_mock_requests_total") where s.value > 0 {
                #expect(s.labels["environment"] == "sandbox")
                let status = s.labels["status"] ?? ""
                let key = Key(
                    outcome: status == "200" ? "accepted" : "rejected", status: status,
                    reason: s.labels["reason"] ?? "",
                    environment: s.labels["environment"] ?? "")
                mockCounts[key, default: 0] += Int(s.value)
            }
            let sent = counts.filter { $0.key.outcome != "failed" }
            let retried = Key(outcome: "rejected", status: "503", reason: "ServiceUnavailable", environment: "sandbox")
            #expect(mockCounts[retried] == 3)
            #expect(mockCounts.filter { $0.key != retried } == sent)
            #expect(
                counts.filter { $0.key.outcome == "failed" } == [
                    Key(outcome: "failed", status: "", reason: "preflight", environment: "sandbox"): 1
                ], "\(counts)")
            #expect(
                counts[Key(outcome: "rejected", status: "410", reason: "Unregistered", environment: "sandbox")] == 7)
            #expect(
                counts[Key(outcome: "rejected", status: "400", reason: "BadDeviceToken", environment: "sandbox")] == 5)
            let accepted = Int(
                after.sum(
                    "kkpush_mock_requests_total", matching: ["environment": "sandbox", "status": "200", "reason": ""]))
            #expect(accepted == tokens.count - 12)
            #expect(server.deliveries(limit: 10_000).count == accepted)
            #expect(server.deliveries(limit: 10_000).allSatisfy { $0.environment == .sandbox })
            #expect(after.value("kkpush_mock_faults_fired_total", ["fault": "respond"]) == 15)
            #expect(after.value("kkpush_mock_faults_fired_total", ["fault": "delay"]) == Double(tokens.count + 3 + 8))
            #expect(after.value("kkpush_mock_faults_fired_total", ["fault": "close"]) == 0)
            #expect((after.value("kkpush_mock_provider_tokens_total", ["result": "verified", "reason": ""]) ?? 0) >= 1)
            #expect(after.series("kkpush_mock_provider_tokens_total", matching: ["result": "rejected"]).isEmpty)
            // Every answer went out: the latency histogram counted each request once.
            #expect(
                after.value("kkpush_mock_request_duration_seconds_count", ["environment": "sandbox"])
                    == Double(tokens.count + 3))
            let slowest = after.value(
                "kkpush_mock_request_duration_seconds_bucket", ["environment": "sandbox", "le": "0.05"])
            #expect(slowest == 0, "a 100 ms delay answered under 50 ms")

            // The summary on stderr says the same.
            let summary = try Self.summary(result.stderr)
            #expect(summary.total == tokens.count + 1)
            #expect(summary.accepted == accepted)
            #expect(summary.rejected == 12)
            #expect(summary.failed == 1)
            #expect(summary.byReason == ["Unregistered": 7, "BadDeviceToken": 5])

            // --metrics-file: valid exposition, the batch's counts exactly.
            let text = try String(contentsOfFile: metricsFile, encoding: .utf8)
            let written = try PrometheusExposition(parsing: text)
            var fileCounts: [Key: Int] = [:]
            for s in written.series("kkpush_batch_pushes_total") where s.value > 0 {
                let key = Key(
                    outcome: s.labels["outcome"] ?? "?", status: s.labels["status"] ?? "?",
                    reason: s.labels["reason"] ?? "?", environment: s.labels["environment"] ?? "?")
                fileCounts[key, default: 0] += Int(s.value)
            }
            #expect(fileCounts == counts)
            // Apple's breakdowns: the batch's push type and priority on every push, and on the mock's requests.
            let labelled = written.series("kkpush_batch_pushes_total").filter { $0.value > 0 }
            #expect(
                !labelled.isEmpty
                    && labelled.allSatisfy { $0.labels["push_type"] == "alert" && $0.labels["priority"] == "10" },
                "\(labelled)")
            let mockLabelled = after.series("kkpush_mock_requests_total").filter { $0.value > 0 }
            #expect(
                !mockLabelled.isEmpty
                    && mockLabelled.allSatisfy { $0.labels["push_type"] == "alert" && $0.labels["priority"] == "10" },
                "\(mockLabelled)")
            #expect(
                written.sum("kkpush_batch_pushes_total", matching: ["outcome": "accepted"]) == Double(summary.accepted))
            #expect(
                written.sum("kkpush_batch_pushes_total", matching: ["outcome": "rejected"]) == Double(summary.rejected))
            #expect(written.sum("kkpush_batch_pushes_total", matching: ["outcome": "failed"]) == Double(summary.failed))
            #expect(written.value("kkpush_batch_blank_lines_total") == 1)
            #expect(written.value("kkpush_batch_possibly_duplicated_total") == 0)
            #expect(written.value("kkpush_batch_exit_code") == 1)
            #expect(written.value("kkpush_batch_push_duration_seconds_count") == Double(tokens.count))
            // Requests: the batch's attempts are the mock's answers, retries included.
            #expect(written.value("kkpush_batch_attempts_total") == after.sum("kkpush_mock_requests_total"))
            #expect(written.value("kkpush_batch_attempts_total") == Double(tokens.count + 3))
            #expect((written.value("kkpush_batch_duration_seconds") ?? 0) > 0)
            #expect(abs((written.value("kkpush_batch_end_time_seconds") ?? 0) - Date().timeIntervalSince1970) < 120)
            for family in written.families {
                #expect(written.helps[family]?.isEmpty == false, "no HELP for \(family)")
                if written.types[family] == "counter" { #expect(family.hasSuffix("_total")) }
            }
            // Atomic write: no temporary file left beside it.
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["batch.prom", "tokens.txt"])

            // Once the client is gone, nothing is open any more.
            var open = 1.0
            for _ in 0..<50 {
                let now = try await MetricsScrape.get(admin + "/metrics").exposition()
                open = now.sum("kkpush_mock_open_connections") + now.sum("kkpush_mock_open_streams")
                if open == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(open == 0)
        }
    }

    @Test("An unwritable --metrics-file is exit 2 naming the path, before anything is sent")
    func unwritableMetricsFile() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-metrics")
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("tokens.txt")
            try (TestTokens.random(3).joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            let bad = dir.appendingPathComponent("missing/batch.prom").path
            let result = try await CLI.run(
                try Self.arguments(server, tokens: file.path) + ["--metrics-file", bad], timeout: 60)
            #expect(result.status == 2)
            #expect(result.stderr.contains(bad), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(server.deliveries().isEmpty)
            #expect(server.metrics.registry.emitToString().contains("kkpush_mock_requests_total"))
            let stdout = try await CLI.run(try Self.arguments(server, tokens: file.path) + ["--metrics-file", "-"])
            #expect(stdout.status == 2)
            #expect(stdout.stderr.contains("--metrics-file"))
            let clash = try await CLI.run(
                try Self.arguments(server, tokens: file.path) + ["--metrics-file", file.path])
            #expect(clash.status == 2)
            #expect(clash.stderr.contains("batch-metrics-file-clash") || clash.stderr.contains("--tokens"))
            #expect(server.deliveries().isEmpty)
        }
    }

    @Test("SIGTERM: the metrics file is still written, with the interrupted pushes and exit 143")
    func metricsFileOnSignal() async throws {
        var config = MockServerConfiguration.forTests()
        config.faults = [MockFault(kind: .delay(milliseconds: 300))]
        try await withMockServer(configuration: config) { server in
            let dir = try makeTemporaryDirectory(prefix: "kkpush-metrics")
            defer { try? FileManager.default.removeItem(at: dir) }
            let file = dir.appendingPathComponent("tokens.txt")
            try (TestTokens.random(400).joined(separator: "\n") + "\n").write(
                to: file, atomically: true, encoding: .utf8)
            let metricsFile = dir.appendingPathComponent("batch.prom").path
            let args =
                try Self.arguments(server, tokens: file.path) + [
                    "--max-connections", "1", "--max-in-flight", "4", "--grace", "0", "--metrics-file", metricsFile,
                ]
            let running = try RunningCLI(args)
            // Once some pushes were answered, stop it.
            #expect(await running.waitForLines(4, timeout: 30))
            running.signal(SIGTERM)
            let result = await running.finish(timeout: 30)
            #expect(result.status == 143, "\(result.stderr)")
            let counts = try Self.countResults(result.stdout)
            let written = try PrometheusExposition(parsing: try String(contentsOfFile: metricsFile, encoding: .utf8))
            var fileCounts: [Key: Int] = [:]
            for s in written.series("kkpush_batch_pushes_total") where s.value > 0 {
                let key = Key(
                    outcome: s.labels["outcome"] ?? "?", status: s.labels["status"] ?? "?",
                    reason: s.labels["reason"] ?? "?", environment: s.labels["environment"] ?? "?")
                fileCounts[key, default: 0] += Int(s.value)
            }
            #expect(fileCounts == counts)
            #expect(written.value("kkpush_batch_exit_code") == 143)
            #expect(written.sum("kkpush_batch_pushes_total", matching: ["reason": "interrupted"]) > 0)
        }
    }
}
