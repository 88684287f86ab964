import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// `kkpush send-batch` as the real binary against the mock started in this process: signals, grace,
/// `--resume`, closed pipes and the input and option errors.
///
/// Connections: libcurl resets every finished stream (RST_STREAM), and this mock's NIO HTTP/2 handler
/// cuts a connection after 200 resets in 30 s (a GOAWAY naming a stream below ones it already
/// logged, so libcurl re-sends those unflagged). The batches here spread over 32 connections, well
/// under 200 streams each, so what the delivery log shows is kkpush's doing, not that.
@Suite("kkpush send-batch: signals, resume, errors (the command line)", .serialized)
struct SendBatchCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    /// A fresh temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL { try makeTemporaryDirectory(prefix: "kkpush-batch") }

    /// `count` random tokens (64 hex digits), all different.
    static func randomTokens(_ count: Int) -> [String] { TestTokens.random(count) }

    /// The token file's text, and the line number of each token: a comment first, a blank line after
    /// every 500 tokens (line numbers count them).
    static func tokenFile(_ tokens: [String]) -> (text: String, lineOf: [String: Int]) {
        var lines = ["# send-batch test tokens"]
        var lineOf: [String: Int] = [:]
        for (i, token) in tokens.enumerated() {
            if i > 0, i % 500 == 0 { lines.append("") }
            lines.append(token)
            lineOf[token] = lines.count
        }
        return (lines.joined(separator: "\n") + "\n", lineOf)
    }

    static func arguments(_ server: MockAPNsServer, tokens: String) throws -> [String] {
        [
            "send-batch", "--tokens", tokens, "--topic", topic, "--url", server.sandboxEndpoint.baseURL,
            "--ca-file", try #require(server.caFile), "--env", "sandbox", "--key", key, "--key-id", "KKTEST0001",
            "--team-id", "KKTEAM0001", "--title", "Dienst", "--max-connections", "32", "--max-in-flight", "10",
        ]
    }

    static func delayed(_ milliseconds: Int) -> MockServerConfiguration {
        var config = MockServerConfiguration.forTests()
        config.faults = [MockFault(kind: .delay(milliseconds: milliseconds))]
        return config
    }

    /// Result lines as JSON objects (each line must parse).
    static func results(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not a JSON object: \(line)")
        }
    }

    /// The number N of "stopped after input line N" on stderr.
    static func stoppedAfter(_ stderr: String) throws -> Int {
        let range = try #require(stderr.range(of: "stopped after input line "), "stderr: \(stderr)")
        let digits = stderr[range.upperBound...].prefix { $0.isNumber }
        return try #require(Int(digits))
    }

    /// Checks the run wrote exactly one result line for every token line up to the line it stopped
    /// after, and none for later lines; returns the results by line number.
    static func checkOneLinePerReadLine(
        _ results: [[String: Any]], lineOf: [String: Int], stoppedAfter last: Int
    ) throws -> [Int: [String: Any]] {
        var byLine: [Int: [String: Any]] = [:]
        for r in results {
            let index = try #require(r["index"] as? Int)
            #expect(byLine[index] == nil, "two result lines for input line \(index)")
            byLine[index] = r
            let token = try #require(r["token"] as? String)
            #expect(lineOf[token] == index, "line \(index) has token \(token.prefix(8))…, not the token of that line")
        }
        let expected = Set(lineOf.values.filter { $0 <= last })
        #expect(
            Set(byLine.keys) == expected,
            "result lines for \(byLine.count) lines; \(expected.count) token lines up to line \(last)")
        return byLine
    }

    // MARK: Signals and resume

    @Test("SIGINT at a random point, then --resume: every token delivered once (or flagged possibly_duplicated)")
    func interruptAndResume() async throws {
        // 300 ms per answer and 320 in flight: about 1,000 pushes a second. The signal comes after 200 to 1,200
        // results; on a loaded machine the test may read the output, or the signal may arrive, seconds late (a series
        // once saw the signal land after 4,590 of the 5,000, and every line read). So requests 1,301 to 1,620 are held
        // for 60 s: they fill every slot in flight, the batch stands still until the signal, however late, and
        // nothing past about 1,300 completes in run 1. The hold is removed before run 2.
        var configuration = Self.delayed(300)
        configuration.faults.append(
            MockFault(id: "hold", kind: .delay(milliseconds: 60_000), remaining: 320, skip: 1300))
        try await withMockServer(configuration: configuration) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = Self.randomTokens(5000)
            let (text, lineOf) = Self.tokenFile(tokens)
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try text.write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let args = try Self.arguments(server, tokens: tokenPath)

            // Run 1: results on stdout; SIGINT once a random number of them has come, no grace.
            let threshold = Int.random(in: 200...1200)
            let run = try RunningCLI(args + ["--grace", "0"])
            let reached = await run.waitForLines(threshold, timeout: 90)
            #expect(reached, "only \(run.outputLineCount) result lines in 90 s")
            run.signal(SIGINT)
            let first = await run.finish(timeout: 60)
            server.removeFaults(id: "hold")
            #expect(first.status == 130, "stderr: \(first.stderr)")
            #expect(first.stderr.contains("SIGINT"))
            let firstResults = try Self.results(first.stdout)
            let last = try Self.stoppedAfter(first.stderr)
            let firstByLine = try Self.checkOneLinePerReadLine(firstResults, lineOf: lineOf, stoppedAfter: last)
            #expect(firstResults.count >= threshold)
            #expect(firstResults.count < tokens.count, "the batch ended before the signal")
            let interrupted = firstResults.filter { $0["reason"] as? String == "interrupted" }
            #expect(!interrupted.isEmpty, "no push ended interrupted")
            for r in interrupted { #expect(r["status"] as? String == "failed") }

            // Run 2: --resume the saved results, appending to the same file.
            let resultsPath = dir.appendingPathComponent("results.jsonl").path
            try first.stdout.write(toFile: resultsPath, atomically: true, encoding: .utf8)
            let second = try await CLI.run(args + ["--resume", resultsPath, "--output", resultsPath], timeout: 180)
            #expect(second.status == 0, "stderr: \(second.stderr)")
            #expect(second.stdout.isEmpty, "results went to stdout with --output")
            let acceptedBefore = firstResults.filter { $0["status"] as? String == "accepted" }.count
            #expect(
                second.stderr.contains("\(acceptedBefore) skipped as done before (--resume)"),
                "stderr: \(second.stderr)")
            let all = try Self.results(try String(contentsOfFile: resultsPath, encoding: .utf8))
            let secondResults = Array(all.dropFirst(firstResults.count))
            #expect(secondResults.count == tokens.count - acceptedBefore)
            for r in secondResults {
                let index = try #require(r["index"] as? Int)
                #expect(
                    firstByLine[index]?["status"] as? String != "accepted",
                    "line \(index) was sent again after being accepted")
            }

            // Every line accepted exactly once over both runs.
            var acceptedLines: [Int: Int] = [:]
            for r in all where r["status"] as? String == "accepted" {
                acceptedLines[r["index"] as! Int, default: 0] += 1
            }
            #expect(acceptedLines.count == tokens.count)
            #expect(acceptedLines.values.allSatisfy { $0 == 1 })

            // The mock's delivery log: once per token, and at most once more for each result line that said it may
            // have been sent twice (an interrupted push in run 1, then a retry in run 2 on a loaded machine: 3).
            var flaggedLines: [String: Int] = [:]
            for r in all where r["possibly_duplicated"] as? Bool == true {
                if let token = r["token"] as? String { flaggedLines[token, default: 0] += 1 }
            }
            let flagged = Set(flaggedLines.keys)
            var delivered: [String: Int] = [:]
            for d in server.deliveries(limit: 100_000) { delivered[d.token, default: 0] += 1 }
            var twice = 0
            for token in tokens {
                let n = delivered[token, default: 0]
                if let lines = flaggedLines[token] {
                    #expect(
                        (1...(1 + lines)).contains(n), "flagged token delivered \(n) times, flagged on \(lines) lines")
                    if n >= 2 { twice += 1 }
                } else {
                    #expect(
                        n == 1, "token on line \(lineOf[token]!) delivered \(n) times, not flagged possibly_duplicated")
                }
            }
            #expect(delivered.count == tokens.count)
            print(
                "interrupt+resume: \(tokens.count) tokens, SIGINT after \(threshold)+ results (stopped after line \(last)); "
                    + "run 1: \(firstResults.count) lines, \(acceptedBefore) accepted, \(interrupted.count) interrupted; "
                    + "run 2: \(secondResults.count) sent; delivered once: \(tokens.count - twice), more than once (flagged): \(twice), flagged: \(flagged.count)"
            )
        }
    }

    @Test("SIGTERM: in-flight pushes finish within --grace, the rest end interrupted unsent; exit 143")
    func sigterm() async throws {
        try await withMockServer(configuration: Self.delayed(300)) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = Self.randomTokens(2000)
            let (text, lineOf) = Self.tokenFile(tokens)
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try text.write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let run = try RunningCLI(try Self.arguments(server, tokens: tokenPath) + ["--grace", "20"])
            let reached = await run.waitForLines(Int.random(in: 50...600), timeout: 90)
            #expect(reached)
            run.signal(SIGTERM)
            let r = await run.finish(timeout: 60)
            #expect(r.status == 143, "stderr: \(r.stderr)")
            // The mock answers in waves (every push 300 ms late): when the signal lands after a wave's last answer
            // and before the loop started the next pushes, nothing is in flight, and kkpush says it stops at once.
            #expect(
                r.stderr.contains("SIGTERM: no new pushes; waiting up to 20 s")
                    || r.stderr.contains("SIGTERM: stopping; no new pushes."), "stderr: \(r.stderr)")
            let results = try Self.results(r.stdout)
            _ = try Self.checkOneLinePerReadLine(results, lineOf: lineOf, stoppedAfter: try Self.stoppedAfter(r.stderr))
            let interrupted = results.filter { $0["reason"] as? String == "interrupted" }
            // The rest were not sent: read ahead and reported interrupted, or never read (a loaded machine can
            // leave the read-ahead empty at the moment the signal lands).
            #expect(!interrupted.isEmpty || results.count < tokens.count, "\(results.count) results of \(tokens.count)")
            // The grace was long enough: only pushes never started ended interrupted.
            for i in interrupted {
                #expect(i["possibly_duplicated"] as? Bool == false)
                #expect(i["attempts"] as? Int == 0)
            }
            let accepted = Set(
                results.filter { $0["status"] as? String == "accepted" }.compactMap { $0["token"] as? String })
            let delivered = Set(server.deliveries(limit: 100_000).map(\.token))
            #expect(delivered == accepted, "delivered \(delivered.count), accepted \(accepted.count)")
        }
    }

    @Test(
        "A second SIGINT stops at once: pushes in flight end interrupted, flagged possibly_duplicated",
        .timeSensitive)
    func secondSignal() async throws {
        try await withMockServer(configuration: Self.delayed(8000)) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = Self.randomTokens(600)
            let (text, lineOf) = Self.tokenFile(tokens)
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try text.write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let run = try RunningCLI(try Self.arguments(server, tokens: tokenPath) + ["--grace", "60"])
            // Wait until the mock has taken some pushes (their answers come only after 8 s).
            var polls = 0
            while server.deliveries(limit: 20).count < 20, polls < 600 {
                polls += 1
                try await Task.sleep(for: .milliseconds(50))
            }
            let start = ContinuousClock.now
            run.signal(SIGINT)
            // The second signal once the first was handled (its notice on stderr), so it is the second one.
            #expect(await run.waitForError(containing: "no new pushes", timeout: 10), "\(run.errorText)")
            run.signal(SIGINT)
            let r = await run.finish(timeout: 30)
            let took = ContinuousClock.now - start
            #expect(r.status == 130, "stderr: \(r.stderr)")
            #expect(took < .seconds(5), "took \(took) after the first signal")
            #expect(r.stderr.contains("again: stopping now"), "stderr: \(r.stderr)")
            let results = try Self.results(r.stdout)
            let byLine = try Self.checkOneLinePerReadLine(
                results, lineOf: lineOf, stoppedAfter: try Self.stoppedAfter(r.stderr))
            #expect(results.allSatisfy { $0["reason"] as? String == "interrupted" })
            // Every push the mock took was sent: its line must say so.
            let taken = server.deliveries(limit: 100_000)
            #expect(!taken.isEmpty)
            for d in taken {
                let line = try #require(lineOf[d.token])
                #expect(byLine[line]?["possibly_duplicated"] as? Bool == true, "line \(line) was sent but not flagged")
            }
        }
    }

    // MARK: Output and input errors

    @Test("stdout closed (| head -1): one error on stderr, exit 74, no SIGPIPE death")
    func closedPipe() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try Self.tokenFile(Self.randomTokens(3000)).text.write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let run = try RunningCLI(try Self.arguments(server, tokens: tokenPath))
            let reached = await run.waitForLines(1, timeout: 60)
            #expect(reached)
            run.closeOutput()
            let r = await run.finish(timeout: 60)
            #expect(r.exitedNormally, "ended by a signal: \(r.status)")
            #expect(r.status == 74, "stderr: \(r.stderr)")
            let errors = r.stderr.split(separator: "\n").filter { $0.lowercased().hasPrefix("error") }
            #expect(errors.count == 1, "stderr: \(r.stderr)")
            #expect(r.stderr.contains("standard output"))
            #expect(r.stderr.contains("Broken pipe"))
        }
    }

    @Test("--payload - with --tokens - is a usage error")
    func bothStdin() async throws {
        let r = try await CLI.run(
            [
                "send-batch", "--tokens", "-", "--payload", "-", "--topic", Self.topic, "--url", "https://127.0.0.1:9",
                "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            ], stdin: "{}")
        #expect(r.status == 64)
        #expect(r.stderr.contains("--tokens -, --payload - would all read standard input"), "stderr: \(r.stderr)")
    }

    @Test("--quiet-accepted with --resume is a usage error (its results could not be resumed from)")
    func quietResume() async throws {
        let r = try await CLI.run(
            [
                "send-batch", "--tokens", "-", "--topic", Self.topic, "--url", "https://127.0.0.1:9", "--title", "x",
                "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--quiet-accepted",
                "--resume", "results.jsonl",
            ], stdin: "")
        #expect(r.status == 64)
        #expect(r.stderr.contains("--quiet-accepted"), "stderr: \(r.stderr)")
    }

    @Test("--grace must be finite and not negative", arguments: ["-1", "nan", "inf", "1e400", "soon"])
    func graceValidation(_ value: String) async throws {
        let r = try await CLI.run(
            [
                "send-batch", "--tokens", "-", "--topic", Self.topic, "--url", "https://127.0.0.1:9", "--title", "x",
                "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--grace=\(value)",
            ], stdin: "")
        #expect(r.status == 64)
        #expect(r.stderr.contains("--grace"), "stderr: \(r.stderr)")
    }

    @Test("A directory as --tokens is a read error, not an empty input")
    func directoryInput() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let r = try await CLI.run(try Self.arguments(server, tokens: dir.path))
            #expect(r.status == 2, "stderr: \(r.stderr)")
            #expect(r.stderr.contains("is a folder, not a file"), "stderr: \(r.stderr)")
            #expect(server.deliveries(limit: 10).isEmpty)
        }
    }

    @Test("index is the input line number; blank and comment lines count")
    func lineNumbers() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = Self.randomTokens(3)
            let text =
                "# header\n\n\(tokens[0])\n   \n# another comment\n\(tokens[1].uppercased())\n{\"token\":\"\(tokens[2])\"}\n"
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try text.write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let r = try await CLI.run(try Self.arguments(server, tokens: tokenPath))
            #expect(r.status == 0, "stderr: \(r.stderr)")
            let byIndex = Dictionary(
                uniqueKeysWithValues: try Self.results(r.stdout).map { ($0["index"] as! Int, $0["token"] as! String) })
            #expect(byIndex == [3: tokens[0], 6: tokens[1], 7: tokens[2]])
            #expect(r.stderr.contains("4 blank or comment lines"), "stderr: \(r.stderr)")
        }
    }

    // MARK: --resume

    @Test("--resume skips accepted and final rejections, sends failures and 503s again; exit 1 for the final rejection")
    func resumeVerdicts() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let devices = (0..<6).map { _ in server.mintDevice(environment: .sandbox, topic: Self.topic) }
            try server.unregister(token: devices[1].token)
            try server.addFault(.failNext(1, status: 503, scope: .token(devices[2].token)))
            try server.addFault(.failNext(1, status: 429, scope: .token(devices[3].token)))
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try (devices.map(\.token).joined(separator: "\n") + "\n").write(
                toFile: tokenPath, atomically: true, encoding: .utf8)
            let resultsPath = dir.appendingPathComponent("results.jsonl").path
            let args = try Self.arguments(server, tokens: tokenPath) + ["--max-attempts", "1", "--output", resultsPath]
            let first = try await CLI.run(args)
            #expect(first.status == 1, "stderr: \(first.stderr)")
            let firstResults = try Self.results(try String(contentsOfFile: resultsPath, encoding: .utf8))
            #expect(firstResults.count == 6)

            let second = try await CLI.run(args + ["--resume", resultsPath])
            // Unregistered stays a rejection of the batch: exit 1, as an uninterrupted run would.
            #expect(second.status == 1, "stderr: \(second.stderr)")
            #expect(second.stderr.contains("4 skipped as done before (--resume)"), "stderr: \(second.stderr)")
            #expect(second.stderr.contains("1 rejected Unregistered"), "stderr: \(second.stderr)")
            #expect(second.stderr.contains("2 to send again"), "stderr: \(second.stderr)")
            let all = try Self.results(try String(contentsOfFile: resultsPath, encoding: .utf8))
            let resent = all.dropFirst(6)
            #expect(Set(resent.compactMap { $0["index"] as? Int }) == [3, 4])
            #expect(resent.allSatisfy { $0["status"] as? String == "accepted" })
            for (i, device) in devices.enumerated() {
                let n = server.deliveries(token: device.token, limit: 10).count
                #expect(n == (i == 1 ? 0 : 1), "device \(i) got \(n) deliveries")
            }

            // A third run has nothing left to send.
            let third = try await CLI.run(args + ["--resume", resultsPath])
            #expect(third.stderr.contains("0 pushes"), "stderr: \(third.stderr)")
            #expect(third.stderr.contains("6 skipped as done before (--resume)"), "stderr: \(third.stderr)")
        }
    }

    @Test("--resume with a changed input is refused (exit 2), naming the line")
    func resumeChangedInput() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            var tokens = Self.randomTokens(5)
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try (tokens.joined(separator: "\n") + "\n").write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let resultsPath = dir.appendingPathComponent("results.jsonl").path
            let args = try Self.arguments(server, tokens: tokenPath)
            let first = try await CLI.run(args + ["--output", resultsPath])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            // Keep only lines 1 and 2 as done, change the token on line 3.
            let kept = try String(contentsOfFile: resultsPath, encoding: .utf8).split(separator: "\n")
                .filter {
                    [1, 2, 3].contains(
                        (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["index"] as? Int)
                }
            try (kept.joined(separator: "\n") + "\n").write(toFile: resultsPath, atomically: true, encoding: .utf8)
            tokens[2] = Self.randomTokens(1)[0]
            try (tokens.joined(separator: "\n") + "\n").write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let r = try await CLI.run(args + ["--resume", resultsPath])
            #expect(r.status == 2, "stderr: \(r.stderr)")
            #expect(r.stderr.contains("Line 3 of"), "stderr: \(r.stderr)")
            #expect(r.stderr.contains("the input changed"), "stderr: \(r.stderr)")
            #expect(server.deliveries(token: tokens[2], limit: 10).isEmpty, "the changed line was sent")
        }
    }

    @Test("--resume: a malformed results line is an error naming its line; a stdout that truncated the file is refused")
    func resumeFileErrors() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = Self.randomTokens(2)
            let tokenPath = dir.appendingPathComponent("tokens.txt").path
            try (tokens.joined(separator: "\n") + "\n").write(toFile: tokenPath, atomically: true, encoding: .utf8)
            let resultsPath = dir.appendingPathComponent("results.jsonl").path
            let good = #"{"index":1,"token":"\#(tokens[0])","status":"accepted"}"#
            let args = try Self.arguments(server, tokens: tokenPath)
            for (bad, why) in [
                ("{\"index\":2,\"token\":", "not valid JSON: the text ends where a value should be at column 20"),
                (#"{"index":0,"token":"ab","status":"accepted"}"#, "index"),
                (#"{"index":2,"token":"ab","status":"sent"}"#, "status"),
                (#"{"index":2,"token":"ab","status":"rejected"}"#, "reason"),
            ] {
                try "\(good)\n\(bad)\n".write(toFile: resultsPath, atomically: true, encoding: .utf8)
                let r = try await CLI.run(args + ["--resume", resultsPath])
                #expect(r.status == 2, "stderr: \(r.stderr)")
                #expect(
                    r.stderr.contains("results.jsonl line 2 is not a send-batch result line"), "stderr: \(r.stderr)")
                #expect(r.stderr.contains(why), "stderr: \(r.stderr)")
            }
            #expect(server.deliveries(limit: 10).isEmpty)

            // `--resume results.jsonl > results.jsonl`: the shell has emptied the file; refuse to send.
            try "\(good)\n".write(toFile: resultsPath, atomically: true, encoding: .utf8)
            let quoted = ([try CLI.binary.path] + args + ["--resume", resultsPath]).map { "'\($0)'" }.joined(
                separator: " ")
            let shell = try await Shell.run("\(quoted) > '\(resultsPath)'")
            #expect(shell.status == 2, "stderr: \(shell.stderr)")
            #expect(shell.stderr.contains("opened without append"), "stderr: \(shell.stderr)")
            #expect(server.deliveries(limit: 10).isEmpty)
        }
    }
}

/// A `kkpush` process whose stdout is read as it comes, to signal it or close its stdout mid-run.
final class RunningCLI: @unchecked Sendable {
    private let child: ChildProcess
    private let lock = NSLock()
    private var out = Data()
    private var newlines = 0
    private var err = Data()
    private let readers = DispatchGroup()
    private var outputClosed = false

    init(_ args: [String]) throws {
        var env = ProcessInfo.processInfo.environment
        for key in ["APNS_ENV", "APNS_FORCE_ENV", "APNS_KEY_PATH", "APNS_KEY_ID", "APNS_TEAM_ID"] { env[key] = nil }
        child = try ChildProcess(
            try CLI.binary.path, args, environment: env, currentDirectory: CLI.root.path, input: .null, output: .pipes)
        for (fd, isOut) in [(child.output, true), (child.error, false)] {
            guard let fd else { continue }
            readers.enter()
            Thread.detachNewThread { [self] in
                defer {
                    close(fd)
                    readers.leave()
                }
                while true {
                    let chunk = PipeIO.readSome(fd)
                    if chunk.isEmpty { break }
                    lock.lock()
                    if isOut {
                        if !outputClosed {
                            out.append(chunk)
                            newlines += chunk.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                        }
                    } else {
                        err.append(chunk)
                    }
                    let stop = isOut && outputClosed
                    lock.unlock()
                    // Closed here (the defer), by the thread that reads it: kkpush's next write gets EPIPE.
                    if stop { break }
                }
            }
        }
    }

    var outputLineCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return newlines
    }

    /// Waits (polling every 20 ms, at most `timeout` seconds) until stdout has `count` lines; false on timeout.
    func waitForLines(_ count: Int, timeout: TimeInterval) async -> Bool {
        let polls = Int(timeout / 0.02)
        for _ in 0..<polls {
            if outputLineCount >= count { return true }
            if !child.isRunning { return outputLineCount >= count }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return outputLineCount >= count
    }

    func signal(_ number: Int32) {
        child.signal(number)
    }

    /// What the process wrote to stderr so far.
    var errorText: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: err, as: UTF8.self)
    }

    /// Waits (polling every 20 ms, at most `timeout` seconds) until stderr contains `text`; false on timeout.
    func waitForError(containing text: String, timeout: TimeInterval) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if errorText.contains(text) { return true }
            if !child.isRunning { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return errorText.contains(text)
    }

    /// Closes the read end of stdout (as `| head -1` does once it has its line): the reading thread
    /// closes it when the next output arrives, and reads nothing more.
    func closeOutput() {
        lock.lock()
        outputClosed = true
        lock.unlock()
    }

    /// Waits for the exit (at most `timeout` seconds, then SIGKILL and a recorded issue).
    func finish(timeout: TimeInterval) async -> Finished {
        await offThread { [self] in
            let (end, timedOut) = child.wait(timeout: timeout)
            if timedOut { Issue.record("kkpush did not exit within \(timeout) s") }
            _ = readers.wait(timeout: .now() + 10)
            lock.lock()
            let result = Finished(
                status: end.status, exitedNormally: end.exited,
                stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
            lock.unlock()
            return result
        }
    }

    struct Finished: Sendable {
        var status: Int32
        var exitedNormally: Bool
        var stdout: String
        var stderr: String
    }
}

/// Runs a command line with /bin/sh (for redirections), bounded to 60 s.
enum Shell {
    static func run(_ command: String) async throws -> RunningCLI.Finished {
        let output = try await runProcess(
            URL(fileURLWithPath: "/bin/sh"), ["-c", command], currentDirectory: CLI.root, timeout: 60)
        if output.timedOut { Issue.record("sh -c \(command) did not finish in 60 s") }
        return RunningCLI.Finished(
            status: output.status, exitedNormally: output.exitedNormally,
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self))
    }
}
