import Foundation
import KKPushCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue #15: two processes on one SQLite file. A running `kkpush backend serve --db F` enrolls over HTTP
/// while other `kkpush` processes enroll (`backend enroll`), export (`backend export`) and look up
/// (`diagnose --store`) on the same file: no SQLITE_BUSY, no lost row. Loopback only, bounded.
@Suite("The enrollment database shared by processes")
struct StoreConcurrencyCLITests {
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let phone = "8C1E0B7A-3D2F-4E5A-9B6C-7D8E9F0A1B2C"
    /// Rounds of each writer and reader; every round of each runs at the same time as the others.
    static let rounds = 12

    /// Runs `curl` (bounded) and returns the HTTP status and body.
    static func curl(_ args: [String]) async throws -> (Int, String) {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<(Int, String), any Error>) in
            DispatchQueue.global().async {
                c.resume(with: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                    process.arguments = ["curl", "-s", "--max-time", "20", "-w", "\n%{http_code}"] + args
                    let out = Pipe()
                    process.standardOutput = out
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    let data = out.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    let text = String(decoding: data, as: UTF8.self)
                    let status = text.split(separator: "\n").last.flatMap { Int($0) } ?? 0
                    return (status, text)
                })
            }
        }
    }

    static func lockProblem(_ text: String) -> Bool {
        let t = text.lowercased()
        return t.contains("sqlite_busy") || t.contains("database is locked") || t.contains("store-query-failed")
            || t.contains("store-open-failed")
    }

    @Test("backend serve writing while backend enroll, backend export and diagnose --store use the same file")
    func twoProcesses() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let env = ["KKPUSH_BACKEND_SECRET": Self.secret]
        let enrollArgs = ["backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
            "--hardware-identifier", Self.phone]
        let seed = try await CLI.run(enrollArgs + ["--device-id", "seed-0"], environment: env)
        try #require(seed.status == 0, "\(seed.stderr)")

        let server = Process()
        server.executableURL = CLI.binary
        server.arguments = ["backend", "serve", "--db", db, "--port", "0"]
        var serverEnv = ProcessInfo.processInfo.environment
        serverEnv["KKPUSH_BACKEND_SECRET"] = Self.secret
        server.environment = serverEnv
        let out = Pipe()
        let serverErr = dir.appendingPathComponent("serve.stderr")
        FileManager.default.createFile(atPath: serverErr.path, contents: nil)
        server.standardOutput = out
        server.standardError = try FileHandle(forWritingTo: serverErr)
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        let line: String = await withCheckedContinuation { c in
            DispatchQueue.global().async {
                var data = Data()
                while data.count < 65_536, !data.contains(UInt8(ascii: "\n")) {
                    let chunk = out.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    data += chunk
                }
                c.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        let base = try #require(line.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }.map(String.init),
            "no listening line: \(line)")

        let started = Date()
        let failures = try await withThrowingTaskGroup(of: [String].self) { group in
            group.addTask {  // the server writes (process 1)
                var bad: [String] = []
                for i in 0..<Self.rounds {
                    let body = #"{"device_id": "http-\#(i)", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "\#(Self.phone)"}"#
                    let (status, text) = try await Self.curl(["-X", "POST", "-H", "Content-Type: application/json",
                        "--data", body, base + "/admin/enrollments"])
                    if status != 201 { bad.append("POST http-\(i): \(status) \(text)") }
                }
                return bad
            }
            group.addTask {  // another process writes
                var bad: [String] = []
                for i in 0..<Self.rounds {
                    let r = try await CLI.run(enrollArgs + ["--device-id", "cli-\(i)"], environment: env)
                    if r.status != 0 || Self.lockProblem(r.stderr) { bad.append("enroll cli-\(i): \(r.status) \(r.stderr)") }
                }
                return bad
            }
            group.addTask {  // another process reads everything
                var bad: [String] = []
                for i in 0..<Self.rounds {
                    let r = try await CLI.run(["backend", "export", "--db", db])
                    let rows = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])?.count
                    if r.status != 0 || rows == nil || Self.lockProblem(r.stderr) {
                        bad.append("export \(i): \(r.status) \(r.stderr)")
                    }
                }
                return bad
            }
            group.addTask {  // and another looks one up
                var bad: [String] = []
                for i in 0..<Self.rounds {
                    let r = try await CLI.run(["diagnose", "--store", db, "--device-id", "seed-0", "--tenant", "vvwilhelmus", "--json"])
                    if Self.lockProblem(r.stdout + r.stderr) || !r.stdout.contains("seed-0") {
                        bad.append("diagnose \(i): \(r.status) \(r.stderr)")
                    }
                }
                return bad
            }
            var all: [String] = []
            for try await bad in group { all += bad }
            return all
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(server.isRunning, "backend serve died")

        // No lost row: the seed, every HTTP enrollment and every CLI enrollment, read by a third process.
        let final = try await CLI.run(["backend", "export", "--db", db])
        #expect(final.status == 0, "\(final.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(final.stdout.utf8)) as? [[String: Any]])
        let ids = Set(rows.compactMap { $0["device_id"] as? String })
        let expected = Set(["seed-0"] + (0..<Self.rounds).map { "http-\($0)" } + (0..<Self.rounds).map { "cli-\($0)" })
        #expect(ids == expected, "missing: \(expected.subtracting(ids).sorted())")
        // The server's own view agrees.
        let (status, text) = try await Self.curl([base + "/admin/enrollments"])
        #expect(status == 200)
        #expect(text.components(separatedBy: "\"device_id\"").count - 1 == expected.count)
        kill(server.processIdentifier, SIGTERM)
        let serverLog = (try? String(contentsOf: serverErr, encoding: .utf8)) ?? ""
        #expect(!Self.lockProblem(serverLog), "\(serverLog)")
        #expect(elapsed < 300, "the rounds took \(Int(elapsed)) s")
        print("store concurrency: \(4 * Self.rounds) concurrent operations (\(2 * Self.rounds) writes in 2 processes) in \(String(format: "%.1f", elapsed)) s, \(ids.count) rows, no failures: \(failures.isEmpty)")
    }
}
