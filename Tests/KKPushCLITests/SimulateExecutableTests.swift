import Foundation
import KKPushTestSupport
import Testing

/// `kkpush-simulate`, the README's first command: `kkpush simulate` as an executable of its own. Its run, its errors
/// and its help are the command's, under its own name.
@Suite("kkpush-simulate: kkpush simulate built alone")
struct SimulateExecutableTests {
    static func run(_ args: [String]) async throws -> CLIResult {
        let output = try await runProcess(
            try Repository.builtProduct("kkpush-simulate"), args, stdin: nil,
            environment: CLI.environment([:]), currentDirectory: Repository.root, timeout: 120)
        #expect(!output.timedOut, "kkpush-simulate \(args.joined(separator: " ")) did not finish in 120 s")
        return CLIResult(
            status: output.status, stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    @Test("A run: every push accepted, every phone refreshed, the same JSON fields as kkpush simulate")
    func runMatchesCommand() async throws {
        let alone = try await Self.run(["--devices", "2", "--json"])
        #expect(alone.status == 0, "\(alone.stderr)")
        let command = try await CLI.run(["simulate", "--devices", "2", "--json"], timeout: 120)
        #expect(command.status == 0, "\(command.stderr)")
        let a = try alone.json()
        let c = try command.json()
        #expect(a["ok"] as? Bool == true)
        #expect(Set(a.keys) == Set(c.keys))
        #expect(a["ok_means"] as? String == c["ok_means"] as? String)
    }

    @Test(
        "Bad flags get the command's errors and exit codes, with kkpush-simulate's usage line",
        arguments: [
            (["--devices", "0"], Int32(64), "--devices 0 is out of range"),
            (["--scenario", "nosuch"], 64, "server-apns-env-override"),
            (["--devcies", "3"], 64, "Did you mean '--devices'?"),
            (["--certificates", "/nonexistent-kkpush"], 2, "--certificates /nonexistent-kkpush does not exist"),
        ])
    func badFlags(_ args: [String], _ status: Int32, _ words: String) async throws {
        let r = try await Self.run(args)
        #expect(r.status == status)
        #expect(r.stderr.contains(words), "\(r.stderr)")
        if status == 64 { #expect(r.stderr.contains("kkpush-simulate --help"), "\(r.stderr)") }
    }

    @Test("--json errors are the JSON error object, naming kkpush-simulate's help")
    func jsonError() async throws {
        let r = try await Self.run(["--devices", "0", "--json"])
        #expect(r.status == 64)
        let error = try #require(try r.json()["error"] as? [String: Any])
        #expect(error["code"] as? String == "usage")
        #expect(error["fix"] as? String == "Run kkpush-simulate --help for its flags.")
    }

    @Test("--help is simulate's, under its own name, and says what it is")
    func help() async throws {
        let alone = try await Self.run(["--help"])
        #expect(alone.status == 0)
        let command = try await CLI.run(["simulate", "--help"])
        #expect(alone.stdout.contains("USAGE: kkpush-simulate [--scenario <scenario>] [--devices <devices>]"))
        #expect(alone.stdout.contains("kkpush-simulate is `kkpush simulate` built alone"))
        // Every option of the command is there, with its help.
        for line in command.stdout.split(separator: "\n") where line.hasPrefix("  --") {
            #expect(alone.stdout.contains(line), "missing: \(line)")
        }
    }
}
