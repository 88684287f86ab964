import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// "Every answer true" for `send`, `send-batch`, `mock serve` and `bench`: the command line, its exit codes
/// and the words a user reads.
@Suite("kkpush send, send-batch, mock: true answers (the command line)", .serialized)
struct AnswersSendMockCLITests {
    static let topic = "nl.kantinekoning.app"
    static var key: String { CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path }

    static func temporaryDirectory() throws -> URL { try makeTemporaryDirectory(prefix: "kkpush-answers") }

    static func credential(_ server: MockAPNsServer) throws -> [String] {
        [
            "--topic", topic, "--url", server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile),
            "--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
        ]
    }

    static func results(_ text: String) throws -> [Int: [String: Any]] {
        var byLine: [Int: [String: Any]] = [:]
        for line in text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            byLine[try #require(object["index"] as? Int)] = object
        }
        return byLine
    }

    /// Runs `mock serve` with `arguments` (on free ports) and returns what it printed; a mock that starts is
    /// stopped with SIGTERM.
    static func mockServe(_ arguments: [String]) async throws -> CLIResult {
        try await CLI.run(
            ["mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0"] + arguments,
            timeout: 10)
    }

    // MARK: 1. http_status

    @Test("send --json and send-batch report http_status 200 for an accepted push, and every documented field")
    func httpStatusWhenAccepted() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let send = try await CLI.run(
                ["send", "--token", device.token, "--title", "Dienst", "--json"] + Self.credential(server))
            #expect(send.status == 0, "\(send.stderr)")
            let object = try send.json()
            #expect(object["http_status"] as? Int == 200)
            for field in [
                "status", "http_status", "apns_id", "apns_unique_id", "reason", "timestamp", "environment",
                "duration_ms", "attempts", "possibly_duplicated",
            ] {
                #expect(object.keys.contains(field), "send --json lacks \(field): \(send.stdout)")
            }

            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = dir.appendingPathComponent("tokens.txt")
            let second = server.mintDevice(environment: .sandbox, topic: Self.topic)
            try "\(device.token)\n\(second.token)\n".write(to: tokens, atomically: true, encoding: .utf8)
            let batch = try await CLI.run(
                ["send-batch", "--tokens", tokens.path, "--title", "Dienst", "--env", "sandbox", "--threads", "1"]
                    + Self.credential(server))
            #expect(batch.status == 0, "\(batch.stderr)")
            let results = try Self.results(batch.stdout)
            let line = try #require(results[1])
            #expect(line["http_status"] as? Int == 200)
            #expect(line["status"] as? String == "accepted")
            #expect(line["reason"] is NSNull)
            // The connection the push went on, by its number: one thread, one connection, one number for both.
            let connection = try #require(line["connection"] as? Int, "\(line)")
            #expect(connection >= 1 && results[2]?["connection"] as? Int == connection, "\(batch.stdout)")
        }
    }

    @Test("send --json on a rejection: http_status is APNs's status, with explanation and fix")
    func httpStatusWhenRejected() async throws {
        var config = MockServerConfiguration.forTests()
        config.faults = [MockFault.failNext(10, status: 410, reason: .unregistered)]
        try await withMockServer(configuration: config) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let send = try await CLI.run(
                ["send", "--token", device.token, "--title", "Dienst", "--json"] + Self.credential(server))
            #expect(send.status == 1)
            let object = try send.json()
            #expect(object["http_status"] as? Int == 410)
            #expect(object["status"] as? String == "rejected")
            #expect(object["explanation"] is String)
            #expect(object["fix"] is String)
        }
    }

    // MARK: 2. and 3. send-batch lines

    @Test(
        "send-batch: a line's environment wins over --env and is counted; bad lines are bad-input with their line number"
    )
    func batchLines() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let t = device.token
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = dir.appendingPathComponent("tokens.jsonl")
            let lines = [
                #"{"token":"\#(t)","environment":"sandbox"}"#,  // 1: overrides --env production
                #"{"token":"\#(t)","environment":"bogus"}"#,  // 2
                #"{"token": "\#(t)" "#,  // 3: invalid JSON
                #"{"environment":"sandbox"}"#,  // 4: no token
                #"{"tokn":"\#(t)"}"#,  // 5: unknown key
                #"{"token":"\#(t)","payload":"hi"}"#,  // 6: payload not an object
                "",  // 7
                TestTokens.random(),  // 8: plain token, --env production
            ]
            try (lines.joined(separator: "\n") + "\n").write(to: tokens, atomically: true, encoding: .utf8)
            // One endpoint per environment: each line goes to its own environment's listener (one --url would
            // stand in for --env's environment only, and refuse line 1).
            let r = try await CLI.run(
                [
                    "send-batch", "--tokens", tokens.path, "--title", "Dienst", "--env", "production", "--topic",
                    Self.topic, "--sandbox-url", server.sandboxEndpoint.baseURL, "--production-url",
                    server.productionEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key", Self.key,
                    "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
                ])
            #expect(r.status == 1, "\(r.stderr)")
            let results = try Self.results(r.stdout)
            #expect(results.count == 7)
            #expect(results[1]?["status"] as? String == "accepted")
            #expect(results[1]?["environment"] as? String == "sandbox")
            #expect(results[8]?["environment"] as? String == "production")
            for line in [2, 3, 4, 5, 6] {
                #expect(results[line]?["status"] as? String == "failed")
                #expect(results[line]?["reason"] as? String == "bad-input")
                #expect(
                    (results[line]?["error"] as? String)?.hasPrefix("Line \(line)") == true, "\(results[line] ?? [:])")
            }
            #expect(
                (results[2]?["error"] as? String)?.contains(
                    "`environment` is 'bogus'; the valid values are sandbox and production") == true)
            #expect((results[3]?["error"] as? String)?.contains("Line 3 is not valid JSON") == true)
            #expect((results[3]?["error"] as? String)?.contains("at column") == true)
            #expect(
                (results[4]?["error"] as? String)?.contains(
                    "the field `token` (or `channel`, for a broadcast) is missing") == true)
            #expect((results[5]?["error"] as? String)?.contains("unknown key `tokn`; did you mean `token`?") == true)
            #expect(
                (results[6]?["error"] as? String)?.contains("`payload` is a string, but must be a JSON object") == true)
            #expect(!r.stdout.contains("BadDeviceToken"))
            #expect(!r.stdout.contains("/3/device/"))
            #expect(r.stderr.contains("failed (bad-input): 5"))
            #expect(
                r.stderr.contains(
                    "1 JSON line named another environment than --env/--build-environment gives: sent to that environment's endpoint"
                ), "\(r.stderr)")
            #expect(
                server.deliveries(limit: 10).map(\.environment).sorted { $0.rawValue < $1.rawValue } == [
                    .production, .sandbox,
                ])
        }
    }

    @Test("send-batch --resume sends a bad-input line again once it is fixed")
    func resumeAfterFix() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Self.topic)
            let dir = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let tokens = dir.appendingPathComponent("tokens.jsonl")
            let results = dir.appendingPathComponent("results.jsonl")
            try "{\"tokn\":\"\(device.token)\"}\n".write(to: tokens, atomically: true, encoding: .utf8)
            let args =
                try [
                    "send-batch", "--tokens", tokens.path, "--title", "Dienst", "--env", "sandbox", "--output",
                    results.path,
                ]
                + Self.credential(server)
            let first = try await CLI.run(args)
            #expect(first.status == 1)
            try "{\"token\":\"\(device.token)\"}\n".write(to: tokens, atomically: true, encoding: .utf8)
            let second = try await CLI.run(args + ["--resume", results.path])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stderr.contains("1 accepted"))
        }
    }

    @Test("send-batch: an empty stdin, a missing token file and a folder are answered, not crashed on")
    func batchInputs() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = [
            "send-batch", "--topic", Self.topic, "--key", Self.key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            "--title", "x", "--url", "https://127.0.0.1:9", "--ca-file",
            CLI.certificates.appendingPathComponent("ca.crt").path,
        ]
        let missing = try await CLI.run(base + ["--tokens", dir.appendingPathComponent("nosuch.txt").path])
        #expect(missing.status == 2)
        #expect(
            missing.stderr.contains("The token file --tokens \(dir.path)/nosuch.txt does not exist."),
            "\(missing.stderr)")
        let resume = try await CLI.run(base + ["--tokens", "-", "--resume", dir.path], stdin: "ab\n")
        #expect(resume.status == 2)
        #expect(resume.stderr.contains("The results file --resume \(dir.path) is a folder"), "\(resume.stderr)")
        let output = try await CLI.run(base + ["--tokens", "-", "--output", dir.path], stdin: "ab\n")
        #expect(output.status == 2)
        #expect(output.stderr.contains("The results file --output \(dir.path) is a folder."), "\(output.stderr)")
        let binary = try await CLI.run(base + ["--tokens", "-"], stdin: "\u{01}\u{02}binary\n")
        #expect(binary.status == 1)
        #expect(binary.stdout.contains("Line 1: binary data, not text"), "\(binary.stdout)")
        #expect(!missing.stderr.contains("NSCocoaErrorDomain"))
        let folder = try await CLI.run(base + ["--tokens", dir.path])
        #expect(folder.status == 2)
        #expect(folder.stderr.contains("folder"))
        let empty = try await CLI.run(base + ["--tokens", "-"], stdin: "")
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("Standard input is empty: nothing was sent."), "\(empty.stderr)")
        let comments = try await CLI.run(base + ["--tokens", "-"], stdin: "# nothing\n\n")
        #expect(comments.status == 2)
        #expect(comments.stderr.contains("holds only blank and comment lines (2)"), "\(comments.stderr)")
        let priority = try await CLI.run(
            base + ["--tokens", "-", "--priority", "7"], stdin: String(repeating: "ab", count: 32))
        #expect(priority.status == 64)
        #expect(
            priority.stderr.contains("APNs would reject every push of this batch (--priority)"), "\(priority.stderr)")
        #expect(priority.stderr.contains("--no-preflight"))
        let negative = try await CLI.run(base + ["--tokens", "-", "--max-in-flight", "-1"], stdin: "")
        #expect(negative.status == 64)
        #expect(negative.stderr.contains("--max-in-flight -1 is out of range"), "\(negative.stderr)")
    }

    @Test("send: pre-flight names the flag at fault; negative numbers and bad files are answered, naming the flag")
    func sendFlagsAndFiles() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ca = CLI.certificates.appendingPathComponent("ca.crt").path
        let base = [
            "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--key", Self.key,
            "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--url", "https://127.0.0.1:9",
        ]
        let priority = try await CLI.run(base + ["--ca-file", ca, "--title", "x", "--priority", "7"])
        #expect(priority.status == 1)
        #expect(priority.stdout.contains("BadPriority"))
        #expect(priority.stdout.contains("Flag at fault: --priority."), "\(priority.stdout)")
        let expiration = try await CLI.run(base + ["--ca-file", ca, "--title", "x", "--expiration", "-1", "--json"])
        #expect(expiration.status == 1)
        #expect(
            (try expiration.json()["error"] as? String)?.contains("Flag at fault: --expiration.") == true,
            "\(expiration.stdout)")
        let badge = try await CLI.run(base + ["--ca-file", ca, "--title", "x", "--badge", "-1"])
        #expect(badge.status == 64)
        #expect(badge.stderr.contains("--badge -1 is out of range"), "\(badge.stderr)")
        let missingCA = try await CLI.run(
            base + ["--ca-file", dir.appendingPathComponent("nosuch.crt").path, "--title", "x"])
        #expect(missingCA.status == 2)
        #expect(missingCA.stderr.contains("--ca-file"), "\(missingCA.stderr)")
        let keyAsCA = try await CLI.run(base + ["--ca-file", Self.key, "--title", "x"])
        #expect(keyAsCA.status == 2)
        #expect(keyAsCA.stderr.contains("holds a private key"), "\(keyAsCA.stderr)")
        let folder = try await CLI.run(base + ["--ca-file", ca, "--payload", dir.path])
        #expect(folder.status == 2)
        #expect(folder.stderr.contains("--payload") && folder.stderr.contains("is a folder"), "\(folder.stderr)")
        let folderJSON = try await CLI.run(base + ["--ca-file", ca, "--payload", dir.path, "--json"])
        #expect(folderJSON.status == 2)
        #expect((try folderJSON.json()["error"] as? [String: Any])?["code"] as? String == "file-is-directory")
        let url = try await CLI.run(
            base.filter { $0 != "https://127.0.0.1:9" && $0 != "--url" } + [
                "--url", "http://127.0.0.1:9", "--title", "x",
            ])
        #expect(url.status == 64)
        #expect(url.stderr.contains("--url: The URL 'http://127.0.0.1:9' is not https"), "\(url.stderr)")
        let proxy = try await CLI.run(base + ["--ca-file", ca, "--title", "x", "--proxy", "ftp://x"])
        #expect(proxy.status == 64)
        #expect(proxy.stderr.contains("--proxy: The proxy URL 'ftp://x'"), "\(proxy.stderr)")
        let p12 = CLI.certificates.appendingPathComponent("client-development.p12").path
        let password = dir.appendingPathComponent("p12.pass")
        try "wrong\n".write(to: password, atomically: true, encoding: .utf8)
        let cert = try await CLI.run(
            [
                "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--cert", p12,
                "--cert-password-file",
                password.path, "--url", "https://127.0.0.1:9", "--ca-file", ca, "--title", "x",
            ])
        #expect(cert.status == 2)
        #expect(
            cert.stderr.contains("(--cert-password, --cert-password-file or $APNS_CERT_PASSWORD)"), "\(cert.stderr)")
        #expect(!cert.stderr.contains("(--password)"))
        let stdin = try await CLI.run(
            [
                "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--cert", p12,
                "--cert-password-file", "-",
                "--payload", "-", "--url", "https://127.0.0.1:9", "--ca-file", ca,
            ], stdin: "{}")
        #expect(stdin.status == 64)
        #expect(
            stdin.stderr.contains("--cert-password-file -, --payload - would all read standard input"),
            "\(stdin.stderr)")
        // Any two flags of send or send-batch naming `-` are refused before either is read.
        let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
        let keyAndPayload = try await CLI.run(
            [
                "send", "--token", String(repeating: "ab", count: 32), "--topic", Self.topic, "--key", "-", "--key-id",
                "KKTEST0001",
                "--team-id", "KKTEAM0001", "--payload", "-", "--url", "https://127.0.0.1:9", "--ca-file", ca,
            ],
            stdin: try String(contentsOfFile: key, encoding: .utf8))
        #expect(keyAndPayload.status == 64)
        #expect(
            keyAndPayload.stderr.contains("--key -, --payload - would all read standard input"),
            "\(keyAndPayload.stderr)")
        #expect(keyAndPayload.stderr.contains("Usage: kkpush send"), "\(keyAndPayload.stderr)")
        let batch = try await CLI.run(
            [
                "send-batch", "--tokens", "-", "--topic", Self.topic, "--key", "-", "--key-id", "KKTEST0001",
                "--team-id", "KKTEAM0001",
                "--title", "x", "--url", "https://127.0.0.1:9", "--ca-file", ca,
            ], stdin: String(repeating: "ab", count: 32) + "\n")
        #expect(batch.status == 64)
        #expect(batch.stderr.contains("--tokens -, --key - would all read standard input"), "\(batch.stderr)")
    }

    @Test("bench and bench faults: out-of-range numbers and unknown faults are usage errors naming the flag")
    func benchFlags() async throws {
        for (args, words) in [
            (["bench", "-n", "0"], "-n 0 is out of range"),
            (["bench", "--max-in-flight", "0"], "--max-in-flight 0 is out of range"),
            (["bench", "faults", "--count", "-5"], "--count -5 is out of range"),
            (["bench", "faults", "--request-timeout", "nan"], "--request-timeout nan is out of range"),
            (["bench", "faults", "--faults", "clsoe"], "unknown fault 'clsoe' (did you mean 'close'?)"),
        ] {
            let r = try await CLI.run(args, timeout: 10)
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
        let missing = try await CLI.run(["bench"], timeout: 10)
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("bench needs -n (or BENCH_N)"), "\(missing.stderr)")
    }

    // MARK: 4. and 5. mock serve --config

    @Test(
        "mock serve --config: a missing file, a folder, invalid JSON, wrong types and unknown keys name the file and field"
    )
    func mockConfig() async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func file(_ name: String, _ text: String) throws -> String {
            let url = dir.appendingPathComponent(name)
            try text.write(to: url, atomically: true, encoding: .utf8)
            return url.path
        }
        let token = String(repeating: "ab", count: 32)
        let cases: [(String, String)] = [
            (
                try file("typo.json", #"{"sandbox_prot": 0}"#),
                "unknown key `sandbox_prot`; did you mean `sandbox_port`?"
            ),
            (
                try file(
                    "nested.json", #"{"devices": [{"token": "\#(token)", "environment": "sandbox", "topc": "x"}]}"#),
                "unknown key `topc` in `devices[0]`; did you mean `topic`?"
            ),
            (
                try file(
                    "type.json",
                    #"{"devices": [{"token": "\#(token)", "environment": "sandbox"}, {"token": 5, "environment": "sandbox"}]}"#
                ),
                "`devices[1].token` is a number (5), but must be a string"
            ),
            (
                try file("env.json", #"{"devices": [{"token": "\#(token)", "environment": "bogus"}]}"#),
                "`devices[0].environment`: 'bogus' is neither sandbox nor production"
            ),
            (
                try file("syntax.json", "{\"sandbox_port\": 1,\n \"strict\": tru}"),
                "is not valid JSON: expected 'true' at line 2, column 12"
            ),
            (try file("port.json", #"{"sandbox_port": 70000}"#), "sandbox_port 70000 is not a TCP port"),
            (
                try file("fault.json", #"{"faults": [{"kind": "respond", "status": 700}]}"#),
                "`faults[0]`: The fault's status 700"
            ),
            (
                CLI.certificates.appendingPathComponent("ca.crt").path,
                "is a PEM file (a certificate or a key), not JSON"
            ),
            (dir.appendingPathComponent("nosuch.json").path, "does not exist"),
            (dir.path, "is a folder"),
        ]
        for (path, words) in cases {
            let r = try await Self.mockServe(["--config", path])
            #expect(r.status == 2, "\(path): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(path): \(r.stderr)")
            #expect(r.stderr.contains("Fix: "), "\(path): \(r.stderr)")
            #expect(
                !r.stderr.contains("NSCocoaErrorDomain") && !r.stderr.contains("Fix the field named"), "\(r.stderr)")
        }
        let json = try await Self.mockServe(["--config", cases[0].0, "--json"])
        #expect(json.status == 2)
        let error = try #require(try json.json()["error"] as? [String: Any])
        #expect((error["message"] as? String)?.contains("sandbox_prot") == true)
    }

    @Test("mock serve: certificate files and folder are checked first, naming the flag (exit 2)")
    func mockFiles() async throws {
        let key = CLI.certificates.appendingPathComponent("server.key").path
        let crt = CLI.certificates.appendingPathComponent("server.crt").path
        for (args, words) in [
            (
                ["--cert", "/nonexistent/server.crt", "--key", key],
                "The server certificate --cert /nonexistent/server.crt does not exist."
            ),
            (["--cert", key, "--key", crt], "The server certificate --cert \(key) holds no PEM certificate."),
            (["--ca", "/nonexistent/ca.crt"], "The CA certificate --ca /nonexistent/ca.crt does not exist."),
            (["--certificates", crt], "--certificates \(crt) is a file, not a folder."),
            (
                ["--key-file", "/nonexistent/k.p8", "--key-id", "ABCDE12345", "--team-id", "ABCDE12345"],
                "--key-file /nonexistent/k.p8 does not exist"
            ),
        ] {
            let r = try await Self.mockServe(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
        // A listener beyond loopback needs an admin token (checked first); with one, the bad host is named.
        let host = try await Self.mockServe([
            "--host", "no-such-host.invalid", "--admin-token", String(repeating: "t", count: 20),
        ])
        #expect(host.status == 64, "\(host.stderr)")
        #expect(host.stderr.contains("Give an address this machine has (--host)"), "\(host.stderr)")
    }

    @Test("mock serve: bad flag values are usage errors naming the flag")
    func mockFlags() async throws {
        for (args, words) in [
            (["--sandbox-port", "65536"], "--sandbox-port 65536 is not a port"),
            (["--first-request-timeout", "0"], "--first-request-timeout 0 is out of range"),
            (["--body-timeout", "nan"], "--body-timeout"),
            (["--max-connections", "0"], "--max-connections 0 is out of range"),
            (["--admin-token", "short"], "--admin-token must be at least 16"),
            (["--sandbox-port", "-1"], "--sandbox-port -1 is not a port"),
        ] {
            let r = try await CLI.run(["mock", "serve"] + args, timeout: 10)
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
    }
}
