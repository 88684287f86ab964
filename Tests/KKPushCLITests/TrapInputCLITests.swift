import Foundation
import KKPushAuth
import KKPushCore
import KKPushTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue #15: nothing a user types or a peer sends crashes kkpush. Each input here used to trap (exit
/// status 132/133, "Double value cannot be converted to Int64", or a segfault); each must now be a
/// clean error that names the flag (ArgumentParser's exit 64 for flags, 1 for config files).
@Suite("Inputs that used to trap are clean errors (the command line)")
struct TrapInputCLITests {
    static let key = CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path
    static let credentials = ["--key", key, "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001"]
    static let deviceToken = String(repeating: "0f", count: 32)
    static let hardware = "6F1C2A8E-0000-4000-8000-00000000A001"
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let send =
        ["send", "--token", deviceToken, "--topic", "nl.kantinekoning.app", "--title", "x"] + credentials
        + ["--url", "https://127.0.0.1:9", "--ca-file", CLI.certificates.appendingPathComponent("ca.crt").path]
    static let sendBatch =
        ["send-batch", "--tokens", "-", "--topic", "nl.kantinekoning.app", "--content-available"] + credentials
        + ["--url", "https://127.0.0.1:9"]
    /// A token-update body, written once per process (only its path matters: the flags fail first).
    static let tokenUpdate: String = {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-trap-update-\(getpid()).json")
        let body =
            #"{"token":"\#(deviceToken)","build_environment":"production","app_version":"1.4.2","hardware_identifier":"\#(hardware)"}"#
        try? Data(body.utf8).write(to: file)
        return file.path
    }()

    struct Case: Sendable, CustomTestStringConvertible {
        var args: [String]
        /// The flag the error must name.
        var flag: String
        var testDescription: String {
            args.filter { $0.hasPrefix("--") || !$0.contains("/") }.suffix(3).joined(separator: " ")
        }
    }

    static var cases: [Case] {
        var cases: [Case] = []
        for v in ["nan", "inf", "-inf", "1e19", "1e300", "-5", "0"] {
            cases.append(Case(args: send + ["--request-timeout=\(v)"], flag: "--request-timeout"))
            cases.append(Case(args: send + ["--connect-timeout=\(v)"], flag: "--connect-timeout"))
        }
        cases.append(Case(args: sendBatch + ["--request-timeout", "nan"], flag: "--request-timeout"))
        cases.append(Case(args: sendBatch + ["--connect-timeout", "1e300"], flag: "--connect-timeout"))
        cases.append(Case(args: send + ["--max-attempts=-1"], flag: "--max-attempts"))
        cases.append(Case(args: send + ["--max-attempts=101"], flag: "--max-attempts"))
        cases.append(Case(args: send + ["--badge=-1"], flag: "--badge"))
        cases.append(Case(args: sendBatch + ["--badge=-1"], flag: "--badge"))
        for v in ["nan", "inf", "1e300", "-1", "0"] {
            cases.append(Case(args: ["diagnose", "--token", deviceToken, "--timeout=\(v)"], flag: "--timeout"))
        }
        for v in ["1e300", "-5", "nan", "inf", "0"] {
            cases.append(
                Case(
                    args: ["diagnose", "--token-update", tokenUpdate, "--token-refresh-minutes=\(v)"],
                    flag: "--token-refresh-minutes"))
        }
        for v in ["-9223372036854775808", "9223372036854775807", "-1", "253402300800"] {
            cases.append(Case(args: ["diagnose", "--token-update", tokenUpdate, "--now=\(v)"], flag: "--now"))
            cases.append(Case(args: ["jwt", "sign"] + credentials + ["--issued-at=\(v)"], flag: "--issued-at"))
            cases.append(Case(args: ["jwt", "decode", "a.b.c", "--now=\(v)"], flag: "--now"))
            cases.append(Case(args: ["jwt", "verify", "a.b.c", "--key", key, "--now=\(v)"], flag: "--now"))
            cases.append(
                Case(
                    args: [
                        "cert", "inspect", CLI.certificates.appendingPathComponent("client-development.p12").path,
                        "--password", "kkpush", "--now=\(v)",
                    ],
                    flag: "--now"))
        }
        for v in ["-5", "0", "9223372036854775807"] {
            cases.append(Case(args: ["jwt", "verify", "a.b.c", "--key", key, "--max-age=\(v)"], flag: "--max-age"))
        }
        for v in ["nan", "inf", "1e300", "-1", "0"] {
            cases.append(
                Case(
                    args: [
                        "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--no-admin",
                        "--idle-timeout=\(v)",
                    ], flag: "--idle-timeout"))
        }
        cases.append(
            Case(
                args: ["mock", "serve", "--no-admin", "--max-concurrent-streams", "0"], flag: "--max-concurrent-streams"
            ))
        cases.append(Case(args: ["mock", "serve", "--no-admin", "--log-capacity", "0"], flag: "--log-capacity"))
        return cases
    }

    /// True if the run ended in a clean error exit, not a crash (a signal shows as a status of 128 or more).
    static func expectClean(_ r: CLIResult, status: Int32, naming flag: String, _ args: [String]) {
        #expect(r.status == status, "kkpush \(args.joined(separator: " ")): \(r.status)\n\(r.stderr)")
        #expect(r.status < 128, "crashed: \(r.stderr)")
        #expect(r.stderr.contains(flag), "the error does not name \(flag): \(r.stderr)")
        #expect(!r.stderr.contains("Fatal error"))
    }

    @Test("Numeric flags out of range are refused with the flag and its range", arguments: cases)
    func flags(testCase: Case) async throws {
        let r = try await CLI.run(testCase.args, stdin: "")
        Self.expectClean(r, status: 64, naming: testCase.flag, testCase.args)
        #expect(r.stderr.contains(" to "), "the error gives no range: \(r.stderr)")
    }

    @Test(
        "bench -n and -c out of range are clean errors, not a crash",
        arguments: [["-n=-1", "-c", "10"], ["-n", "10", "-c", "0"], ["-n", "0", "-c", "10"]])
    func benchCounts(args: [String]) async throws {
        let r = try await CLI.run(["bench", "--url", "https://127.0.0.1:9", "--token", Self.deviceToken] + args)
        #expect(r.status != 0 && r.status < 128, "\(r.status): \(r.stderr)")
        #expect(r.stderr.contains("out of range"), "\(r.stderr)")
    }

    @Test("backend enroll --days 100000000000000000 is refused before the database is written")
    func enrollDays() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-trap-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("e.sqlite").path
        for days in ["100000000000000000", "36501", "0", "-1"] {
            let args = [
                "backend", "enroll", "--db", db, "--secret", Self.secret, "--tenant", "t", "--teams", "A",
                "--hardware-identifier", Self.hardware, "--days=\(days)",
            ]
            Self.expectClean(try await CLI.run(args), status: 64, naming: "--days", args)
            #expect(!FileManager.default.fileExists(atPath: db), "--days \(days) wrote the database")
        }
        // The longest lifetime works, and the enrollment comes with its JWT.
        let ok = try await CLI.run([
            "backend", "enroll", "--db", db, "--secret", Self.secret, "--tenant", "t", "--teams", "A",
            "--hardware-identifier", Self.hardware, "--days", "36500", "--json",
        ])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect((try ok.json()["signed_device_token"] as? String)?.split(separator: ".").count == 3)
    }

    @Test("mock serve --config with idle_timeout_s 1e300 is a clean error naming the field")
    func mockConfigIdleTimeout() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-trap-\(UUID()).json")
        try Data(#"{"idle_timeout_s": 1e300, "sandbox_port": 0, "production_port": 0}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let args = ["mock", "serve", "--no-admin", "--config", file.path]
        // A config file that cannot be used is an unusable input: exit 2.
        Self.expectClean(try await CLI.run(args), status: 2, naming: "idle_timeout_s", args)
    }

    /// A provider token with this `iat`, signed with the test key (so only the iat is wrong).
    static func token(iat: Int) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KKTEST0001"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iat":\#(iat),"iss":"KKTEAM0001"}"#.utf8))
        let signed = header + "." + claims
        let signature = try ES256PrivateKey(contentsOfFile: key).signature(for: Array(signed.utf8))
        return signed + "." + Base64URL.encode(signature)
    }

    @Test(
        "Hand-made tokens with an iat out of range: jwt decode warns, jwt verify refuses, diagnose judges",
        arguments: [Int.min, -9_223_372_036_854_775_000, Int.max, -1])
    func iatOutOfRange(iat: Int) async throws {
        let token = try Self.token(iat: iat)
        let decoded = try await CLI.run(["jwt", "decode", token, "--json"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let warnings = try #require(try decoded.json()["warnings"] as? [[String: Any]])
        #expect(warnings.contains { $0["code"] as? String == "iat-out-of-range" })
        #expect(try decoded.json()["age_seconds"] is NSNull)

        let human = try await CLI.run(["jwt", "decode", token])
        #expect(human.status == 0)
        #expect(human.stdout.contains("not a UNIX time"))

        let verified = try await CLI.run(["jwt", "verify", token, "--key", Self.key, "--json"])
        #expect(verified.status == 1, "\(verified.stderr)")
        #expect(try verified.json()["code"] as? String == "iat-out-of-range")

        let diagnosed = try await CLI.run(
            ["diagnose", "--provider-token", token, "--ignore-process-env", "--json"] + Self.credentials)
        #expect(diagnosed.status == 1, "\(diagnosed.stderr)")
        #expect(diagnosed.stdout.contains("not a UNIX time"))
    }

    @Test("jwt sign at the last second of 9999, then decode and verify it")
    func lastSecond() async throws {
        let signed = try await CLI.run(["jwt", "sign", "--issued-at", "253402300799"] + Self.credentials)
        #expect(signed.status == 0, "\(signed.stderr)")
        let token = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try await CLI.run(["jwt", "decode", token, "--now", "253402300799", "--json"])
        #expect(decoded.status == 0)
        #expect(try decoded.json()["issued_at"] as? String == "9999-12-31T23:59:59Z")
        let verified = try await CLI.run(["jwt", "verify", token, "--key", Self.key, "--now", "0"])
        #expect(verified.status == 1)
        #expect(verified.stdout.contains("iat-in-future"))
    }

    @Test(
        "diagnose --store: every lookup that finds an enrollment works (a double close segfaulted release builds)",
        arguments: [
            ["--device-id", "dev-m1"], ["--device-id", "dev-l2", "--tenant", "agovv"],
            ["--email", "MANAGER@example.com"],
            ["--hardware-identifier", DiagnoseStoreCLITests.hardware],
            ["--apns-token", String(repeating: "0F", count: 32)],
        ])
    func storeLookups(lookup: [String]) async throws {
        let db = try await DiagnoseStoreCLITests.makeStore()
        defer { try? FileManager.default.removeItem(at: db) }
        let r = try await CLI.run(["diagnose", "--store", db.path, "--ignore-process-env", "--json"] + lookup)
        #expect(r.status == 0 || r.status == 1, "\(r.status): \(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        _ = try r.json()
    }
}

/// `kkpush mock serve` as a process: the admin API's empty queries (`?=`) killed it.
@Suite("kkpush mock serve survives any admin query (the command line)")
struct MockAdminQueryCLITests {
    /// Runs `curl` (bounded) and returns the HTTP status it got, or nil.
    static func httpStatus(_ url: String) async throws -> Int? {
        let output = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", url], timeout: 20)
        return Int(String(decoding: output.stdout, as: UTF8.self))
    }

    @Test("GET /health?=, /log?= and friends are answered; the mock keeps serving and exits 0 on SIGTERM")
    func emptyQueries() async throws {
        let (process, line) = try await CLI.start([
            "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json",
        ])
        defer { process.send(SIGKILL) }
        let info = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let admin = try #require(info["admin_url"] as? String)
        for path in ["/health?=", "/log?=", "/health?&&=&==x", "/log?=&limit=", "/devices?=", "/health"] {
            let status = try await Self.httpStatus(admin + path)
            #expect(status.map { (200..<500).contains($0) } == true, "GET \(path): \(String(describing: status))")
            #expect(process.isRunning, "the mock died on GET \(path)")
        }
        #expect(try await Self.httpStatus(admin + "/health") == 200)
        process.send(SIGTERM)
        let exited = await process.waitForExit(timeout: 20)
        #expect(exited, "mock serve did not stop within 20 s of SIGTERM")
        if exited {
            #expect(process.exitedNormally)
            #expect(process.status == 0)
        }
    }
}
