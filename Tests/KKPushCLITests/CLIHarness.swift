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
    /// The waiting happens on a Dispatch thread, never on one of Swift's cooperative threads: tests run
    /// in parallel, and a blocked cooperative thread (two on this machine) would stall every other test.
    static func run(
        _ args: [String], stdin: String? = nil, environment: [String: String] = [:], timeout: TimeInterval = 60
    ) async throws -> CLIResult {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<CLIResult, any Error>) in
            DispatchQueue.global().async {
                c.resume(
                    with: Result { try runBlocking(args, stdin: stdin, environment: environment, timeout: timeout) })
            }
        }
    }

    private static func runBlocking(
        _ args: [String], stdin: String?, environment: [String: String], timeout: TimeInterval
    ) throws -> CLIResult {
        var env = ProcessInfo.processInfo.environment
        for key in [
            "APNS_ENV", "APNS_FORCE_ENV", "APNS_KEY_PATH", "APNS_KEY", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC",
            "APNS_CERT_PASSWORD", "APNS_PROVIDER_TOKEN", "KKPUSH_BEARER", "KKPUSH_BACKEND_SECRET", "KKPUSH_ADMIN_TOKEN",
            "DATABASE_URL",
        ] { env[key] = nil }
        env.merge(environment) { _, new in new }
        let output = try runProcess(
            binary, args, stdin: stdin.map { Data($0.utf8) }, environment: env, currentDirectory: root, timeout: timeout
        )
        if output.timedOut {
            Issue.record("kkpush \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        return CLIResult(
            status: output.status,
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self))
    }
}
