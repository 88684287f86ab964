import Foundation
import KKPushTestSupport
import Testing

/// An SQLite file shaped like the real backend's `device_enrollments` (none of kkpush's own columns
/// `generation`, `token_updated_at`, `aps_environment`; no indexes; no CHECK on role or status), made with the
/// `sqlite3` command-line tool, as a user's copy of the backend's database would be.
enum BackendShapedSQLite {
    static let createTable = """
        CREATE TABLE device_enrollments (
            tenant_slug TEXT NOT NULL, device_id TEXT NOT NULL, team_codes TEXT NOT NULL, role TEXT NOT NULL,
            hardware_identifier TEXT NOT NULL, apns_token TEXT, build_environment TEXT, app_version TEXT,
            is_test_user INTEGER NOT NULL DEFAULT 0, status TEXT NOT NULL, team_manager_email TEXT,
            updated_at TEXT NOT NULL, PRIMARY KEY (tenant_slug, device_id));
        """

    /// One row's values: tenant, device id, role, status, hardware identifier, token, e-mail.
    struct Row {
        var tenant = "vvwilhelmus"
        var device: String
        var role = "member"
        var status = "active"
        var hardware: String
        var token: String? = String(repeating: "0f", count: 32)
        var email: String? = nil

        var sql: String {
            func quoted(_ s: String?) -> String { s.map { "'\($0)'" } ?? "NULL" }
            return
                "INSERT INTO device_enrollments VALUES ('\(tenant)', '\(device)', '[\"JO11-3\"]', '\(role)', '\(hardware)', \(quoted(token)), 'production', '1.4.2', 0, '\(status)', \(quoted(email)), '2026-11-01T10:00:00Z');"
        }
    }

    /// Runs the script `sql` (statements and dot-commands) on `path` with the `sqlite3` tool (bounded: 30 s).
    static func sqlite3(_ path: String, _ sql: String) async throws {
        let out = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [path], stdin: Data(sql.utf8), timeout: 30)
        try #require(out.status == 0 && !out.timedOut, "sqlite3: \(String(decoding: out.stderr, as: UTF8.self))")
    }

    /// Creates the file with `rows`.
    static func make(_ path: String, rows: [Row]) async throws {
        try await sqlite3(path, createTable + rows.map(\.sql).joined())
    }

    /// The bytes of every file in `folder` by name (the database and any -wal or -shm beside it).
    static func contents(_ folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
        }
        return files
    }

    /// A folder every user may enter and read (the tests may run a command as another user).
    static func makeFolder() throws -> String {
        let url = try makeTemporaryDirectory(prefix: "kkpush-readonly")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url.path
    }
}

/// Every reader of an SQLite enrollment store (`audit`, `diagnose`, `token verify`, `backend export`) opens it
/// read-only: the file never changes, a file this user cannot write is read, and a table shaped like the real
/// backend's is read with kkpush's own columns as defaults, with a note.
@Suite("Readers open an SQLite store read-only")
struct ReadOnlyStoreCLITests {
    static let hardware = "6F1C2A8E-0000-4000-8000-00000000A001"

    /// Runs the built `kkpush` as a user who cannot write `folder` or its files: as root (who may write anything),
    /// as `nobody` through setpriv; otherwise as this user, with the folder and files made read-only.
    static func runAsReader(_ args: [String], folder: String) async throws -> CLIResult {
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: folder) {
            try fm.setAttributes([.posixPermissions: 0o444], ofItemAtPath: folder + "/" + name)
        }
        try fm.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder)
        defer { try? fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
        let (executable, arguments): (URL, [String]) =
            getuid() == 0
            ? (
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                ["--reuid=65534", "--regid=65534", "--clear-groups", try CLI.binary.path] + args
            )
            : (try CLI.binary, args)
        let out = try await runProcess(
            executable, arguments, environment: CLI.environment([:]), currentDirectory: URL(fileURLWithPath: folder),
            timeout: 60)
        #expect(!out.timedOut)
        return CLIResult(
            status: out.status, stdout: String(decoding: out.stdout, as: UTF8.self),
            stderr: String(decoding: out.stderr, as: UTF8.self))
    }

    @Test("audit, diagnose and backend export leave a backend-shaped file byte for byte as it was")
    func nothingWritten() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let db = folder + "/backend.sqlite"
        try await BackendShapedSQLite.make(
            db, rows: [.init(device: "dev-1", role: "manager", hardware: Self.hardware, email: "m@example.com")])
        let before = try BackendShapedSQLite.contents(folder)
        let audit = try await CLI.run(["audit", "--store", db])
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
        #expect(audit.stdout.contains("Audited 1 enrollments"))
        #expect(audit.stderr.contains("note: generation unknown: the table has no generation"))
        #expect(audit.stderr.contains("note: aps_environment unknown"))
        let diagnose = try await CLI.run(["diagnose", "--store", db, "--device-id", "dev-1", "--json"])
        #expect(diagnose.status == 0, "\(diagnose.stdout) \(diagnose.stderr)")
        #expect(diagnose.stderr.contains("note: token age unknown"))
        let export = try await CLI.run(["backend", "export", "--db", db])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.contains("\"device_id\" : \"dev-1\""))
        #expect(try BackendShapedSQLite.contents(folder) == before)
        let schema = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [db, ".schema"], timeout: 30)
        let text = String(decoding: schema.stdout, as: UTF8.self)
        #expect(!text.contains("generation") && !text.contains("CREATE INDEX"), "\(text)")
    }

    @Test("A file and folder this user cannot write are audited and exported, not blamed on corruption")
    func unwritableFile() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await BackendShapedSQLite.make(
            folder + "/backup.sqlite", rows: [.init(device: "dev-1", hardware: Self.hardware)])
        let audit = try await Self.runAsReader(["audit", "--store", "backup.sqlite"], folder: folder)
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
        #expect(audit.stdout.contains("Audited 1 enrollments"))
        #expect(!audit.stderr.contains("corrupt"), "\(audit.stderr)")
        let export = try await Self.runAsReader(["backend", "export", "--db", "backup.sqlite"], folder: folder)
        #expect(export.status == 0, "\(export.stderr)")
        #expect(!export.stderr.contains("readonly database"), "\(export.stderr)")
    }

    @Test("A WAL database whose -wal holds the rows, in a read-only folder without its -shm, is read whole")
    func walInReadOnlyFolder() async throws {
        let folder = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let source = try BackendShapedSQLite.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: source) }
        // sqlite3 checkpoints and removes the -wal when it closes: its files are copied while it holds them open
        // (a `.system` command run by the same sqlite3, after the rows are written with checkpoints off).
        let db = source + "/live.sqlite"
        try await BackendShapedSQLite.sqlite3(
            db,
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; " + BackendShapedSQLite.createTable
                + BackendShapedSQLite.Row(device: "dev-1", hardware: Self.hardware).sql
                + BackendShapedSQLite.Row(device: "dev-2", hardware: Self.hardware).sql
                + "\n.system cp \(db) \(folder)/copy.sqlite && cp \(db)-wal \(folder)/copy.sqlite-wal\n")
        #expect(FileManager.default.fileExists(atPath: folder + "/copy.sqlite-wal"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/copy.sqlite-shm"))
        let before = try BackendShapedSQLite.contents(folder)
        let audit = try await Self.runAsReader(["audit", "--store", "copy.sqlite"], folder: folder)
        #expect(audit.status == 0, "\(audit.stdout) \(audit.stderr)")
        #expect(audit.stdout.contains("Audited 2 enrollments"), "\(audit.stdout) \(audit.stderr)")
        #expect(audit.stderr.contains("read from a private copy"), "\(audit.stderr)")
        #expect(try BackendShapedSQLite.contents(folder) == before)
    }
}
