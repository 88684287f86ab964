import Foundation
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// ``SQLiteEnrollmentStore`` opened read-only: the file is never written, a table shaped like the real backend's
/// (without kkpush's own columns) is read with their defaults, and a write is refused.
@Suite("SQLite store opened read-only")
struct ReadOnlyStoreTests {
    /// A backend-shaped file made with the `sqlite3` tool: one enrollment, none of kkpush's own columns.
    static func makeBackendShaped(_ path: String) async throws {
        let sql = """
            CREATE TABLE device_enrollments (tenant_slug TEXT NOT NULL, device_id TEXT NOT NULL,
                team_codes TEXT NOT NULL, role TEXT NOT NULL, hardware_identifier TEXT NOT NULL, apns_token TEXT,
                build_environment TEXT, app_version TEXT, is_test_user INTEGER NOT NULL DEFAULT 0,
                status TEXT NOT NULL, team_manager_email TEXT, updated_at TEXT NOT NULL,
                PRIMARY KEY (tenant_slug, device_id));
            INSERT INTO device_enrollments VALUES ('vvwilhelmus', 'dev-1', '["JO11-3"]', 'member',
                '\(BackendFixtures.phoneA)', NULL, 'production', '1.4.2', 0, 'active', NULL, '2026-11-01T10:00:00Z');
            """
        let out = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [path], stdin: Data(sql.utf8), timeout: 30)
        try #require(out.status == 0 && !out.timedOut, "\(String(decoding: out.stderr, as: UTF8.self))")
    }

    @Test("Reads a backend-shaped table with defaults, names the absent columns, writes nothing")
    func backendShaped() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("backend.sqlite").path
        try await Self.makeBackendShaped(path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        try await SQLiteEnrollmentStore.withStore(path: path, readOnly: true) { store in
            #expect(store.absentColumns == ["generation", "token_updated_at", "aps_environment"])
            let all = try await store.all()
            #expect(all.map(\.deviceID) == ["dev-1"])
            #expect(all.first?.generation == 1)
            #expect(all.first?.apsEnvironment == nil)
            let write = await #expect(throws: KKPushError.self) {
                try await store.revoke(deviceID: "dev-1", tenant: "vvwilhelmus", at: Date())
            }
            #expect(write?.code == .storeReadOnly)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(files == ["backend.sqlite"], "no -wal or -shm created: \(files)")
    }

    @Test("A file without the table is store-not-migrated, and is not created")
    func noTable() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("other.sqlite").path
        let out = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [path], stdin: Data("CREATE TABLE t (x);".utf8), timeout: 30)
        try #require(out.status == 0)
        let error = await #expect(throws: KKPushError.self) {
            try await SQLiteEnrollmentStore.withStore(path: path, readOnly: true) { _ in }
        }
        #expect(error?.code == .storeNotMigrated)
        #expect(error?.message.contains("has no device_enrollments table") == true)
        let missing = await #expect(throws: KKPushError.self) {
            try await SQLiteEnrollmentStore.withStore(
                path: dir.appendingPathComponent("absent.sqlite").path, readOnly: true
            ) { _ in }
        }
        #expect(missing?.code == .storeOpenFailed)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("absent.sqlite").path))
    }
}
