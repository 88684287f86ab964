import Foundation
import KKPushCLI
import KKPushCLISupport
import KKPushHTTP
import KKPushTestSupport
import Testing

/// The result of a `kkpush` command line: its exit status and what it wrote.
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

/// Runs `kkpush` command lines: in this process through the command library, or the built `kkpush` executable
/// (built by `swift test`, as this target depends on it) where a process is needed.
enum CLI {
    /// The repository root.
    static let root: URL = Repository.root

    /// `Certificates/` in the repository.
    static let certificates = Repository.certificates

    /// The built `kkpush` binary (``Repository/builtProduct(_:)``: beside the test bundle, or `$KKPUSH_BINARY`,
    /// which `.ci/smoke-release` sets to run the "true answers" suites against the release build).
    static var binary: URL {
        get throws { try Repository.builtProduct("kkpush") }
    }

    /// Runs `kkpush args...` with an optional stdin and extra environment; bounded by `timeout` seconds.
    ///
    /// In this process (``inProcess(_:stdin:environment:timeout:)``), except where only a process will do (see
    /// ``needsProcess(environment:)``) and when `$KKPUSH_BINARY` names a binary to test (`.ci/smoke-release`).
    static func run(
        _ args: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> CLIResult {
        if needsProcess(args, environment: environment) {
            return try await spawn(args, stdin: stdin, environment: environment, timeout: timeout)
        }
        return try await inProcess(args, stdin: stdin, environment: environment, timeout: timeout)
    }

    /// Whether a command line must run as a process of its own. In process go the command lines that neither reach
    /// a server nor run one: a command's work then never shares this process's event loops and sockets with the
    /// servers of other tests. Measured: with every command line in process, parallel runs of the suite in a row
    /// failed (late answers from mocks in this process, clients timing out, `bench soak`'s "both processes" being
    /// this one). As a process go:
    /// - servers (`mock serve`, `backend serve`), and `simulate` and `demo` (a mock, a backend and phones);
    /// - clients: `send`, `send-batch`, `channel`, `bench` (which also measures processes), `tls`, `--probe`,
    ///   `--webhook`, and a
    ///   PostgreSQL URL (libpq, which also reads `PG*` from the process itself);
    /// - `PATH` in `environment` (where programs a command starts are looked up);
    /// - everything when `$KKPUSH_BINARY` names a binary to test (`.ci/smoke-release`), or when this process's
    ///   working directory is not the repository root (relative paths in tests start there).
    static func needsProcess(_ args: [String], environment: [String: String]) -> Bool {
        if let override = ProcessInfo.processInfo.environment["KKPUSH_BINARY"], !override.isEmpty { return true }
        if FileManager.default.currentDirectoryPath != root.path { return true }
        let reachesOrRunsServer: Set<String> = ["send", "send-batch", "channel", "bench", "simulate", "demo", "tls"]
        if let first = args.first, reachesOrRunsServer.contains(first) { return true }
        if args.count >= 2, ["mock", "backend"].contains(args[0]), args[1] == "serve" { return true }
        if args.contains("--probe") || args.contains("--webhook") || args.contains(where: { $0.contains("postgres") }) {
            return true
        }
        return environment.keys.contains { $0.hasPrefix("PG") || $0 == "PATH" }
    }

    /// Runs `kkpush args...` as a process of its own (the binary of ``binary``).
    static func spawn(
        _ args: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> CLIResult {
        let output = try await runProcess(
            try binary, args, stdin: stdin.map { Data($0.utf8) }, environment: Self.environment(environment),
            currentDirectory: root, timeout: timeout)
        if output.timedOut {
            Issue.record("kkpush \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        return CLIResult(
            status: output.status,
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self))
    }

    /// Runs `kkpush args...` in this process through ``KKPushCommand/run(_:io:)``: the command's environment is
    /// ``environment(_:)``, its standard input `stdin` (empty if nil), its output and error go to files of its own
    /// that are read back when it ends. It takes the ``LoadGate`` as a process would. A command still running after
    /// `timeout` seconds is recorded as an issue and left behind (a task cannot be killed), with what it wrote.
    static func inProcess(
        _ args: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> CLIResult {
        let executable = try binary.path
        return try await LoadGate.shared.withProcess {
            try await withTemporaryDirectory(prefix: "kkpush-cli") { dir in
                let input = try CapturedFile(path: dir + "/stdin", contents: Data((stdin ?? "").utf8))
                let output = try CapturedFile(path: dir + "/stdout")
                let error = try CapturedFile(path: dir + "/stderr")
                defer { for file in [input, output, error] { file.close() } }
                let io = CommandIO(
                    arguments: args, environment: Self.environment(environment), input: input.descriptor,
                    output: output.descriptor, error: error.descriptor, executable: executable)
                // On threads of their own, as a process has: a command's work (CPU, or a blocking call) never holds
                // one of the cooperative threads every other test's tasks need.
                let status = await withTimeout(seconds: timeout) {
                    await withTaskExecutorPreference(OwnThreads(name: "kkpush.test.\(args.first ?? "kkpush")")) {
                        await KKPushCommand.run(args, io: io)
                    }
                }
                if status == nil {
                    Issue.record("kkpush \(args.joined(separator: " ")) did not finish in \(timeout) s (in process)")
                }
                return CLIResult(status: status ?? -1, stdout: output.contents(), stderr: error.contents())
            }
        }
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
            try binary, args, environment: Self.environment(environment), currentDirectory: root)
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

/// A file a command run in process reads or writes as one of its standard streams (unlinked with its directory).
private struct CapturedFile {
    let path: String
    let descriptor: Int32

    init(path: String, contents: Data? = nil) throws {
        if let contents { try contents.write(to: URL(fileURLWithPath: path)) }
        let flags = contents == nil ? O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC : O_RDONLY | O_CLOEXEC
        descriptor = open(path, flags, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        self.path = path
    }

    /// Everything written to it so far, as text.
    func contents() -> String {
        String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data(), as: UTF8.self)
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// `body`'s result, or nil if it has not finished after `seconds` (it is then left running).
private func withTimeout<T: Sendable>(seconds: TimeInterval, _ body: @escaping @Sendable () async -> T) async -> T? {
    let once = ResumeOnce<T?>()
    return await withCheckedContinuation { continuation in
        once.set(continuation)
        let work = Task { once.resume(await body()) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            if once.resume(nil) { work.cancel() }
        }
    }
}

/// A continuation resumed by whichever comes first; the value may come before the continuation.
private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?
    private var value: T?
    private var done = false

    func set(_ c: CheckedContinuation<T, Never>) {
        lock.lock()
        defer { lock.unlock() }
        if done, let value { c.resume(returning: value) } else { continuation = c }
    }

    /// Resumes with `value` if nothing did before; true if this call did.
    @discardableResult func resume(_ result: T) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return false }
        done = true
        if let c = continuation {
            continuation = nil
            c.resume(returning: result)
        } else {
            value = result
        }
        return true
    }
}
