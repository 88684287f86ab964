import Foundation
import KKPushTestSupport
import Testing

/// The sync throttle's last-sync times live in the enrollment store (`kkpush_sync_throttle`), so a backend
/// restarted on the same database still answers 429 within the hour.
@Suite("The sync throttle survives a backend restart")
struct SyncThrottleRestartCLITests {
    static let secret = "kkpush-test-secret-0123456789abcdef"
    static let phone = "5A6B7C8D-0000-4000-8000-00000000C0AF"

    @Test("sync, restart the backend on the same SQLite file, sync again: 429")
    func restart() async throws {
        let dir = try makeTemporaryDirectory(prefix: "kkpush-throttle")
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("enrollments.sqlite").path
        let env = ["KKPUSH_BACKEND_SECRET": Self.secret]
        let phone = Self.phone
        let (first, base, _) = try await CLI.startBackend(["--db", db], environment: env)
        let body =
            #"{"tenant_slug": "vvwilhelmus", "team_codes": ["JO11-3"], "role": "member", "hardware_identifier": "\#(phone)", "device_id": "dev-1"}"#
        let (created, text) = try await StoreConcurrencyCLITests.curl([
            "-X", "POST", "-H", "Content-Type: application/json", "--data", body, base + "/admin/enrollments",
        ])
        #expect(created == 201, "\(text)")
        let jwt = try #require(BackendServeSyncCLITests.json(text)["signed_device_token"] as? String)
        let sync =
            #"{"enrollments": [{"tenant_slug": "vvwilhelmus", "role": "member", "team_codes": ["JO11-3"], "hardware_identifier": "\#(phone)"}]}"#
        func post(_ base: String) async throws -> (Int, String) {
            try await StoreConcurrencyCLITests.curl([
                "-X", "POST", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer \(jwt)", "--data",
                sync, base + "/api/mobile/v1/enrollments/sync",
            ])
        }
        let (ok, okText) = try await post(base)
        #expect(ok == 200, "\(okText)")
        await first.stop()

        let (second, base2, _) = try await CLI.startBackend(["--db", db], environment: env)
        let (again, againText) = try await post(base2)
        await second.stop()
        #expect(again == 429, "\(againText)")
        #expect(againText.contains("sync-throttled"), "\(againText)")
    }
}
