import Foundation
import KKPushTestSupport
import Testing

/// The result of running the real `kkpush` binary.
struct CLIResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as a JSON object.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        return try #require(object as? [String: Any], "stdout is not a JSON object: \(stdout)")
    }
}

/// Runs the built `kkpush` executable (built by `swift test`, as this target depends on it).
enum CLI {
    /// The repository root.
    static let root: URL = Repository.root

    /// `Certificates/` in the repository.
    static let certificates = Repository.certificates

    /// The `kkpush` binary next to the test bundle, or `$KKPUSH_BINARY` (`.ci/smoke-release` runs the
    /// "true answers" suites against the release build that way).
    static let binary: URL = {
        let fm = FileManager.default
        if let override = ProcessInfo.processInfo.environment["KKPUSH_BINARY"], !override.isEmpty {
            return URL(fileURLWithPath: override, relativeTo: root).standardizedFileURL
        }
        var candidates: [URL] = []
        if let exe = Bundle.main.executableURL { candidates.append(exe.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        if let arg0 = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: arg0).deletingLastPathComponent())
        }
        candidates.append(root.appendingPathComponent(".build/debug"))
        for dir in candidates {
            var d = dir
            for _ in 0..<4 {
                let c = d.appendingPathComponent("kkpush")
                var isDir: ObjCBool = false
                if fm.fileExists(atPath: c.path, isDirectory: &isDir), !isDir.boolValue { return c }
                d = d.deletingLastPathComponent()
            }
        }
        return root.appendingPathComponent(".build/debug/kkpush")
    }()

    /// Runs `kkpush args...` with an optional stdin and extra environment; bounded by `timeout` seconds.
    static func run(
        _ args: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> CLIResult {
        let output = try await runProcess(
            binary, args, stdin: stdin.map { Data($0.utf8) }, environment: Self.environment(environment),
            currentDirectory: root, timeout: timeout)
        if output.timedOut {
            Issue.record("kkpush \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        return CLIResult(
            status: output.status,
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    /// This process's environment without the variables kkpush reads (so a developer's shell does not change
    /// what a test sees), plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        for key in [
            "APNS_ENV", "APNS_FORCE_ENV", "APNS_KEY_PATH", "APNS_KEY", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC",
            "APNS_CERT_PASSWORD", "APNS_PROVIDER_TOKEN", "KKPUSH_BEARER", "KKPUSH_BACKEND_SECRET", "KKPUSH_ADMIN_TOKEN",
            "DATABASE_URL",
        ] { env[key] = nil }
        env.merge(extra) { _, new in new }
        return env
    }

    /// Starts a long-running `kkpush args...` (a server) in the repository root and waits (bounded) for its
    /// first output line, which it returns; the caller stops the process.
    static func start(
        _ args: [String], environment: [String: String] = [:], timeout: TimeInterval = 30
    ) async throws -> (process: BackgroundProcess, firstLine: String) {
        let process = try BackgroundProcess(
            binary, args, environment: Self.environment(environment), currentDirectory: root)
        guard let line = await process.firstLine(timeout: timeout) else {
            await process.stop()
            Issue.record(
                "kkpush \(args.joined(separator: " ")) printed no line in \(timeout) s: \(process.output.stderr)")
            throw CLIStartError()
        }
        return (process, line)
    }

    /// Starts `kkpush backend serve --port 0` with `args` (the store: `--db …`) and the test secret in
    /// `environment`, and returns it with its base URL (`http://127.0.0.1:PORT`) from its listening line.
    static func startBackend(
        _ args: [String], environment: [String: String]
    ) async throws -> (process: BackgroundProcess, base: String, line: String) {
        let (process, line) = try await start(["backend", "serve", "--port", "0"] + args, environment: environment)
        guard let base = line.split(separator: " ").first(where: { $0.hasPrefix("http://127.0.0.1:") }) else {
            await process.stop()
            Issue.record("backend serve printed no listening line: \(line) \(process.output.stderr)")
            throw CLIStartError()
        }
        return (process, String(base), line)
    }

    struct CLIStartError: Error {}
}
