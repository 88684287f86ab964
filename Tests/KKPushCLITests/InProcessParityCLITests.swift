import Foundation
import Testing

/// The suite runs command lines in process (``CLI/inProcess(_:stdin:environment:timeout:)``); users run the
/// binary. Both must answer the same: exit status, stdout and stderr byte for byte, for each way a command ends.
@Suite("A command in process answers as the binary does")
struct InProcessParityCLITests {
    struct Case: Sendable, CustomTestStringConvertible {
        var args: [String]
        var stdin: String? = nil
        var environment: [String: String] = [:]
        var status: Int32
        var testDescription: String { args.joined(separator: " ") }
    }

    static let body =
        #"{"token": "\#(String(repeating: "ab", count: 32))", "build_environment": "development", "app_version": "1.4.2", "#
        + #""hardware_identifier": "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"}"#

    static let cases: [Case] = [
        // Done, on stdout; the same as JSON.
        .init(args: ["env", "resolve", "--build-environment", "TestFlight"], status: 0),
        .init(args: ["env", "resolve", "--build-environment", "development", "--json"], status: 0),
        // The environment the command reads, not the process's.
        .init(args: ["env", "resolve", "--json"], environment: ["APNS_FORCE_ENV": "sandbox"], status: 0),
        // Standard input, read once; a verdict (exit 1) and a valid body (exit 0).
        .init(args: ["token", "verify", "-"], stdin: body, status: 0),
        .init(args: ["token", "verify", "-"], stdin: #"{"token": 5}"#, status: 1),
        .init(args: ["token", "verify", "-"], stdin: "", status: 2),
        // An unusable file (exit 2), as text and as the JSON error object on stdout.
        .init(args: ["payload", "lint", "/nonexistent/payload.json"], status: 2),
        .init(args: ["payload", "lint", "/nonexistent/payload.json", "--json"], status: 2),
        // ArgumentParser's own words: a usage error (stderr, 64), help and --version (stdout, 0).
        .init(args: ["send", "--priority", "eleven"], status: 64),
        .init(args: ["send", "--json", "--priority", "eleven"], status: 64),
        .init(args: ["jwt", "sign", "--help"], status: 0),
        .init(args: ["--version"], status: 0),
        // A misspelt command is named, not answered with the root's help.
        .init(args: ["chanel", "--help"], status: 64),
    ]

    @Test("status, stdout and stderr are the binary's", arguments: cases)
    func parity(_ c: Case) async throws {
        let inProcess = try await CLI.inProcess(c.args, stdin: c.stdin, environment: c.environment)
        let binary = try await CLI.spawn(c.args, stdin: c.stdin, environment: c.environment)
        #expect(binary.status == c.status, "\(binary.stderr)")
        #expect(inProcess.status == binary.status)
        #expect(inProcess.stdout == binary.stdout)
        #expect(inProcess.stderr == binary.stderr)
        #expect(!(binary.stdout + binary.stderr).isEmpty)
    }
}
