import Foundation
import KKPushCore
import KKPushTestSupport
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
    /// Rounds; the operations of one round run at the same time.
    static let rounds = 6
    /// Rows of each round's `backend import` (one transaction).
    static let importSize = 300

    /// Runs `curl` (bounded) and returns the HTTP status and body.
    static func curl(_ args: [String]) async throws -> (Int, String) {
        let output = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-s", "--max-time", "20", "-w", "\n%{http_code}"] + args,
            timeout: 30)
        let text = String(decoding: output.stdout, as: UTF8.self)
        return (text.split(separator: "\n").last.flatMap { Int($0) } ?? 0, text)
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
        let enrollArgs = [
            "backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
            "--hardware-identifier", Self.phone,
        ]
        let seed = try await CLI.run(enrollArgs + ["--device-id", "seed-0"], environment: env)
        try #require(seed.status == 0, "\(seed.stderr)")

        let (server, base, _) = try await CLI.startBackend(
            ["--db", db], environment: ["KKPUSH_BACKEND_SECRET": Self.secret])
        defer { server.send(SIGKILL) }

        // Each round runs at once: 4 enrollments over HTTP (the server writes), 2 `backend enroll` and one
        // `backend import` of importSize rows (other processes write), 2 `backend export` and one
        // `diagnose --store` (other processes read).
        let importFiles = try (0..<Self.rounds).map { round -> String in
            let rows = (0..<Self.importSize).map { i -> [String: Any] in
                [
                    "device_id": "imp-\(round)-\(i)", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"],
                    "role": "member",
                    "hardware_identifier": Self.phone, "updated_at": "2027-01-15T08:00:00Z",
                ]
            }
            let file = dir.appendingPathComponent("import-\(round).json")
            try JSONSerialization.data(withJSONObject: rows).write(to: file)
            return file.path
        }
        let started = Date()
        var failures: [String] = []
        var operations = 0
        for round in 0..<Self.rounds {
            let bad = try await withThrowingTaskGroup(of: [String].self) { group in
                for k in 0..<4 {
                    group.addTask {
                        let id = "http-\(round)-\(k)"
                        let body =
                            #"{"device_id": "\#(id)", "tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "\#(Self.phone)"}"#
                        let (status, text) = try await Self.curl([
                            "-X", "POST", "-H", "Content-Type: application/json",
                            "--data", body, base + "/admin/enrollments",
                        ])
                        return status == 201 ? [] : ["POST \(id): \(status) \(text)"]
                    }
                }
                for k in 0..<2 {
                    group.addTask {
                        let r = try await CLI.run(enrollArgs + ["--device-id", "cli-\(round)-\(k)"], environment: env)
                        return r.status == 0 && !Self.lockProblem(r.stderr)
                            ? [] : ["enroll cli-\(round)-\(k): \(r.status) \(r.stderr)"]
                    }
                }
                group.addTask {
                    let r = try await CLI.run(["backend", "import", importFiles[round], "--db", db])
                    return r.status == 0 && !Self.lockProblem(r.stderr)
                        ? [] : ["import \(round): \(r.status) \(r.stderr)"]
                }
                for k in 0..<2 {
                    group.addTask {
                        let r = try await CLI.run(["backend", "export", "--db", db])
                        let rows = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])?
                            .count
                        return r.status == 0 && rows != nil && !Self.lockProblem(r.stderr)
                            ? [] : ["export \(round)-\(k): \(r.status) \(r.stderr)"]
                    }
                }
                group.addTask {
                    let r = try await CLI.run([
                        "diagnose", "--store", db, "--device-id", "seed-0", "--tenant", "vvwilhelmus", "--json",
                    ])
                    return !Self.lockProblem(r.stdout + r.stderr) && r.stdout.contains("seed-0")
                        ? [] : ["diagnose \(round): \(r.status) \(r.stderr)"]
                }
                var all: [String] = []
                for try await bad in group { all += bad }
                return all
            }
            failures += bad
            operations += 10
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(failures.isEmpty, "\(failures.count) failures: \(failures.prefix(5).joined(separator: "\n"))")
        #expect(server.isRunning, "backend serve died")

        // No lost row: the seed, every HTTP enrollment and every CLI enrollment, read by a third process.
        let final = try await CLI.run(["backend", "export", "--db", db])
        #expect(final.status == 0, "\(final.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(final.stdout.utf8)) as? [[String: Any]])
        let ids = Set(rows.compactMap { $0["device_id"] as? String })
        var expected: Set<String> = ["seed-0"]
        for round in 0..<Self.rounds {
            for k in 0..<4 { expected.insert("http-\(round)-\(k)") }
            for k in 0..<2 { expected.insert("cli-\(round)-\(k)") }
            for i in 0..<Self.importSize { expected.insert("imp-\(round)-\(i)") }
        }
        #expect(
            ids == expected,
            "missing \(expected.subtracting(ids).count): \(expected.subtracting(ids).sorted().prefix(20))")
        // The server's own view agrees.
        let (status, text) = try await Self.curl([base + "/admin/enrollments"])
        #expect(status == 200)
        #expect(text.components(separatedBy: "\"device_id\"").count - 1 == expected.count)
        await server.stop()
        let serverLog = server.output.stderr
        #expect(!Self.lockProblem(serverLog), "\(serverLog)")
        #expect(elapsed < 300, "the rounds took \(Int(elapsed)) s")
        print(
            "store concurrency: \(operations) operations in \(Self.rounds) rounds of 10 at once, \(String(format: "%.1f", elapsed)) s, \(ids.count) of \(expected.count) rows, \(failures.count) failures"
        )
    }
    /// Reads one line from `pipe` on a Dispatch thread (the writer is bounded by the caller).
    /// python3 running `script` on the database: told things through its standard input, heard on its standard
    /// output; stopped (SIGTERM) when dropped.
    final class LockHolder {
        let child: ChildProcess

        init(script: String, database: String) throws {
            child = try ChildProcess("/usr/bin/env", ["python3", "-c", script, database])
        }

        /// Its next line of output.
        func line() async -> String { await StoreConcurrencyCLITests.line(from: child.output ?? -1) }

        func send(_ text: String) {
            if let input = child.input { PipeIO.write(Data(text.utf8), to: input) }
        }

        deinit {
            child.signal(SIGTERM)
            for fd in [child.input, child.output, child.error].compactMap({ $0 }) { close(fd) }
        }
    }

    static func line(from fd: Int32) async -> String {
        await offThread {
            var data = Data()
            while data.count < 4096, !data.contains(UInt8(ascii: "\n")) {
                let chunk = PipeIO.readSome(fd)
                if chunk.isEmpty { break }
                data += chunk
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    @Test(
        "Another process holding the write lock: readers go on (WAL), writers wait for it (busy timeout)",
        .timeSensitive)
    func heldWriteLock() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let env = ["KKPUSH_BACKEND_SECRET": Self.secret]
        let enrollArgs = [
            "backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
            "--hardware-identifier", Self.phone,
        ]
        let seed = try await CLI.run(enrollArgs + ["--device-id", "seed-0"], environment: env)
        try #require(seed.status == 0, "\(seed.stderr)")

        // A third party (python3's sqlite3) takes the write lock, writes a row, and holds the transaction
        // open until told to commit.
        let script = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            db.execute('BEGIN EXCLUSIVE')
            db.execute(\"\"\"INSERT INTO device_enrollments (tenant_slug, device_id, team_codes, role, hardware_identifier,
                status, updated_at) VALUES ('vvwilhelmus', 'held-lock', '["JO11-3"]', 'member', '\(Self.phone)', 'active',
                '2027-01-15T08:00:00Z')\"\"\")
            print('locked', flush=True)
            sys.stdin.readline()
            db.execute('COMMIT')
            print('committed', flush=True)
            """
        let holder = try LockHolder(script: script, database: db)
        let locked = await holder.line()
        try #require(locked.hasPrefix("locked"), "python3 did not take the lock: \(locked)")

        // Readers are not blocked: they see the database as it was before the open transaction.
        let export = try await CLI.run(["backend", "export", "--db", db], timeout: 30)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(!Self.lockProblem(export.stderr))
        #expect(export.stdout.contains("seed-0") && !export.stdout.contains("held-lock"))
        let diagnose = try await CLI.run(
            ["diagnose", "--store", db, "--device-id", "seed-0", "--tenant", "vvwilhelmus", "--json"],
            timeout: 30)
        #expect(
            !Self.lockProblem(diagnose.stdout + diagnose.stderr) && diagnose.stdout.contains("seed-0"),
            "\(diagnose.stderr)")

        // A writer waits for the lock (up to the 5 s busy timeout; it cannot finish before the commit below).
        async let writer = CLI.run(enrollArgs + ["--device-id", "while-locked"], environment: env)
        try await Task.sleep(for: .milliseconds(1500))
        holder.send("commit\n")
        #expect(await holder.line().hasPrefix("committed"))
        let wrote = try await writer
        #expect(
            wrote.status == 0 && !Self.lockProblem(wrote.stderr),
            "the writer did not wait for the lock: \(wrote.stderr)")

        let after = try await CLI.run(["backend", "export", "--db", db])
        let ids = Set(
            ((try? JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]]) ?? [])
                .compactMap { $0["device_id"] as? String })
        #expect(ids == ["seed-0", "held-lock", "while-locked"])
    }
    @Test(
        "A writer gives up after the 5 s busy timeout with a clear error instead of waiting forever",
        .timeSensitive)
    func busyTimeoutBounded() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let env = ["KKPUSH_BACKEND_SECRET": Self.secret]
        let enrollArgs = [
            "backend", "enroll", "--db", db, "--tenant", "vvwilhelmus", "--teams", "JO11-3",
            "--hardware-identifier", Self.phone,
        ]
        try #require(try await CLI.run(enrollArgs + ["--device-id", "seed-0"], environment: env).status == 0)
        // python3 holds the write lock for at most 40 s (or until told to let go).
        let script = """
            import sqlite3, sys, select
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            db.execute('BEGIN IMMEDIATE')
            print('locked', flush=True)
            select.select([sys.stdin], [], [], 40)
            db.execute('ROLLBACK')
            """
        let holder = try LockHolder(script: script, database: db)
        try #require(await holder.line().hasPrefix("locked"))

        let started = Date()
        let r = try await CLI.run(enrollArgs + ["--device-id", "too-late"], environment: env, timeout: 35)
        let waited = Date().timeIntervalSince(started)
        holder.send("done\n")
        #expect(r.status != 0)
        #expect(r.stderr.contains("database is locked") && r.stderr.contains("5 s"), "\(r.stderr)")
        #expect(waited >= 4.5 && waited < 30, "waited \(waited) s")
    }
}
