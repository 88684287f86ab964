import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// `kkpush token verify` as a process: the built binary over the token-update table.
@Suite("kkpush token verify (the built binary)")
struct TokenVerifyCLITests {

    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    /// Runs the binary with `arguments`, feeding `stdin`; bounded by `timeout` seconds.
    static func run(_ arguments: [String], stdin: Data, environment: [String: String] = [:], timeout: TimeInterval = 30)
        async throws -> Run
    {
        var env = ProcessInfo.processInfo.environment
        for key in ["KKPUSH_BACKEND_SECRET", "APNS_FORCE_ENV", "APNS_ENV"] { env[key] = nil }
        env.merge(environment) { _, new in new }
        let output = try await runProcess(
            try Repository.builtProduct("kkpush"), arguments, stdin: stdin, environment: env, timeout: timeout)
        return Run(status: output.status, stdout: output.stdout, stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    @Test("Exit status, valid, resolved_environment and codes match the table", arguments: TokenUpdateCase.all())
    func table(_ c: TokenUpdateCase) async throws {
        var arguments = ["token", "verify", "-", "--json"]
        if let known = c.knownEnvironment { arguments += ["--known-environment", known] }
        if let force = c.forceEnv { arguments += ["--apns-force-env", force] }
        if let legacy = c.legacyEnv { arguments += ["--apns-env", legacy] }
        let run = try await Self.run(arguments, stdin: c.data())
        let object = try #require(try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        // A body that is not a JSON object is an unusable input for the CLI (exit 2, `token-update-malformed`,
        // naming what it is); the backend answers it with `body-not-json` (the table's expectation).
        if c.errors == ["body-not-json"] {
            #expect(run.status == 2, "\(c.name): \(run.stderr)")
            let error = try #require(object["error"] as? [String: Any])
            #expect(error["code"] as? String == "token-update-malformed")
            #expect((error["message"] as? String)?.contains("standard input") == true)
            return
        }
        #expect(run.status == (c.valid ? 0 : 1), "\(c.name): \(run.stderr)")
        #expect(object["valid"] as? Bool == c.valid)
        #expect(object["resolved_environment"] as? String == c.resolvedEnvironment)
        let problems = try #require(object["problems"] as? [[String: Any]])
        let errors = Set(problems.filter { $0["severity"] as? String == "error" }.compactMap { $0["code"] as? String })
        #expect(errors == Set(c.errors), "\(c.name)")
        #expect(problems.allSatisfy { Set($0.keys) == ["severity", "code", "message", "fix"] })
    }

    @Test(
        "live_activity: a null push-to-start rotation is an info (exit 0); a bad activity token is exit 1 by its path")
    func liveActivity() async throws {
        func body(_ live: String) -> String {
            #"{"token": "\#(String(repeating: "ab", count: 32))", "build_environment": "development", "app_version": "1.4.2", "hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C", "live_activity": \#(live)}"#
        }
        let null = body(#"{"push_to_start_tokens": [{"attributes_type": "DienstAttributes", "token": null}]}"#)
        let json = try await CLI.run(["token", "verify", "-", "--json"], stdin: null)
        #expect(json.status == 0, "\(json.stderr)")
        let problems = try #require(try json.json()["problems"] as? [[String: Any]])
        let info = try #require(problems.first { $0["code"] as? String == "push-to-start-token-null" })
        #expect(info["severity"] as? String == "info")
        #expect((info["message"] as? String)?.contains("keeps the stored push-to-start token") == true)
        let text = try await CLI.run(["token", "verify", "-"], stdin: null)
        #expect(text.status == 0)
        #expect(
            text.stdout.contains("live_activity: 1 push-to-start token(s) (1 null: kept, not stored)"), "\(text.stdout)"
        )

        let bad = body(
            #"{"activity_tokens": [{"activity_key": "dienst-1", "attributes_type": "DienstAttributes", "token": "<ab cd>"}]}"#
        )
        let refused = try await CLI.run(["token", "verify", "-", "--json"], stdin: bad)
        #expect(refused.status == 1)
        let errors = try #require(try refused.json()["problems"] as? [[String: Any]]).filter {
            $0["severity"] as? String == "error"
        }
        #expect(errors.map { $0["code"] as? String } == ["live-activity-token-invalid"])
        #expect((errors.first?["message"] as? String)?.contains("live_activity.activity_tokens[0].token") == true)
        let help = try await CLI.run(["help", "token", "verify"])
        #expect(help.stdout.contains("live_activity") && help.stdout.contains("push-to-start-token-null"))
    }

    @Test("An unreadable file is exit 2 with the reason on stderr")
    func unreadable() async throws {
        let run = try await Self.run(["token", "verify", "/nonexistent/kkpush-token-update.json"], stdin: Data())
        #expect(run.status == 2)
        #expect(
            run.stderr.contains("error: The token-update body '/nonexistent/kkpush-token-update.json' does not exist."))
    }
}
