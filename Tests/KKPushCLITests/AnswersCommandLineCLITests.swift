import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// What the command line itself says: which flag chose an environment, a misspelt option or command named with
/// the nearest real one, two listeners on one port, and mock serve's banner.
@Suite("The command line: labels, misspellings, listeners and banners")
struct AnswersCommandLineCLITests {
    // MARK: 4. The environment label says what chose it

    @Test("send --url to the sandbox listener with --env production: the label says --env chose the word, not the host")
    func urlWithEnvLabel() async throws {
        try await withMockServer(configuration: .forTests()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Answers.topic)
            let arguments = [
                "send", "--token", device.token, "--title", "x", "--topic", Answers.topic, "--url",
                server.sandboxEndpoint.baseURL, "--ca-file", try #require(server.caFile), "--key", Answers.key,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001", "--env", "production",
            ]
            let text = try await CLI.run(arguments)
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("production as --env says; --url chose the host"), "\(text.stdout)")
            let json = try await CLI.run(arguments + ["--json"])
            #expect(try json.json()["environment_source"] as? String == "--env", "\(json.stdout)")
        }
    }

    // MARK: 5. Typos named before anything else

    @Test(
        "A misspelt option or command is named, with the nearest real one (64)",
        arguments: [
            (
                ["diagnose", "--store", "be.sqlite", "--e-mail", "x"],
                "Unknown option '--e-mail'. Did you mean '--email'?"
            ),
            (["send", "--tokn", "abc"], "Unknown option '--tokn'. Did you mean '--token'?"),
            (["sned", "--token", "x"], "'kkpush' has no command 'sned'. Did you mean 'send'?"),
            (["channl", "--help"], "'kkpush' has no command 'channl'"),
            (["help", "sned"], "'kkpush' has no command 'sned'. Did you mean 'send'?"),
            (["mock", "srve"], "'kkpush mock' has no command 'srve'. Did you mean 'serve'?"),
        ])
    func typos(_ arguments: [String], _ expected: String) async throws {
        let r = try await CLI.run(arguments)
        #expect(r.status == 64, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(expected), "\(r.stderr)")
        let json = try await CLI.run(arguments + ["--json"])
        #expect(json.status == 64)
        #expect(json.stdout.contains(expected.replacingOccurrences(of: "'", with: "'")), "\(json.stdout)")
    }

    @Test("Correct spellings still work: help, a subcommand's --help, an option value starting with --")
    func spellingsThatAreRight() async throws {
        #expect(try await CLI.run(["help", "send"]).status == 0)
        #expect(try await CLI.run(["mock", "serve", "--help"]).status == 0)
        let decoded = try await CLI.run(["payload", "build", "--body=--not-an-option"])
        #expect(decoded.status == 0 && decoded.stdout.contains("--not-an-option"), "\(decoded.stderr)")
    }

    // MARK: 6, 7. mock serve's ports and banner

    @Test("Two listeners on one port: 64, naming both flags (not 'something else')")
    func portsClash() async throws {
        let given = try await CLI.run(
            ["mock", "serve", "--sandbox-port", "45001", "--production-port", "45001", "--admin-port", "0"])
        #expect(given.status == 64, "\(given.stderr)")
        #expect(given.stderr.contains("--sandbox-port and --production-port are both 45001"), "\(given.stderr)")
        let byDefault = try await CLI.run(["mock", "serve", "--production-port", "2197", "--admin-port", "0"])
        #expect(byDefault.status == 64, "\(byDefault.stderr)")
        #expect(byDefault.stderr.contains("--sandbox-port (by default or --config)"), "\(byDefault.stderr)")
    }

    @Test("mock serve --host 0.0.0.0: the banner says every interface, and shows the web console")
    func bannerOnEveryInterface() async throws {
        let (mock, _) = try await CLI.start([
            "mock", "serve", "--host", "0.0.0.0", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0",
            "--admin-token", String(repeating: "t", count: 20),
        ])
        defer { mock.send(SIGKILL) }
        var output = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !output.contains("Stop with Ctrl-C") {
            try await Task.sleep(for: .milliseconds(100))
            output = mock.output.stdout
        }
        #expect(output.contains("every interface"), "\(output)")
        #expect(output.contains("console:    http://127.0.0.1:"), "\(output)")
    }
}
