import Foundation
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
    /// The repository root, found from this file's path.
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `Certificates/` in the repository.
    static let certificates = root.appendingPathComponent("Certificates")

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
                c.resume(with: Result { try runBlocking(args, stdin: stdin, environment: environment, timeout: timeout) })
            }
        }
    }

    private static func runBlocking(
        _ args: [String], stdin: String?, environment: [String: String], timeout: TimeInterval
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = binary
        process.arguments = args
        var env = ProcessInfo.processInfo.environment
        for key in ["APNS_ENV", "APNS_FORCE_ENV", "APNS_KEY_PATH", "APNS_KEY", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC", "APNS_CERT_PASSWORD", "APNS_PROVIDER_TOKEN", "KKPUSH_BEARER", "KKPUSH_BACKEND_SECRET", "KKPUSH_ADMIN_TOKEN"] { env[key] = nil }
        env.merge(environment) { _, new in new }
        process.environment = env
        process.currentDirectoryURL = root
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let outData = LockedData()
        let errData = LockedData()
        let group = DispatchGroup()
        for (pipe, sink) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            Issue.record("kkpush \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        process.waitUntilExit()
        return CLIResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData.get(), as: UTF8.self),
            stderr: String(decoding: errData.get(), as: UTF8.self))
    }
}

/// A thread-safe box for bytes read on another thread.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.lock(); data = d; lock.unlock() }
    func get() -> Data { lock.lock(); defer { lock.unlock() }; return data }
}
