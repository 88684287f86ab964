import Foundation
import KKPushCore
import Testing

@testable import KKPushMock

/// "Every answer true" for the mock: the admin API's JSON bodies and the config file are read strictly
/// (unknown keys refused with the nearest known one, wrong types named by their path).
@Suite("Mock: strict JSON input (admin bodies, config file)")
struct AnswersMockTests {
    @Test(
        "Admin API: unknown keys, wrong types and invalid JSON are 400 admin-json naming the field",
        arguments: [
            (
                "/devices", #"{"environment":"sandbox","topc":"nl.kantinekoning.app"}"#,
                "unknown key `topc`; did you mean `topic`?"
            ),
            ("/faults", #"{"kind":"respond","status":503,"cuont":2}"#, "unknown key `cuont`; did you mean `count`?"),
            (
                "/faults", #"[{"kind":"delay","delay_ms":5},{"kind":"close","tokn":"ab"}]"#,
                "unknown key `tokn` in `[1]`; did you mean `token`?"
            ),
            ("/clock", #"{"advance_secs":5}"#, "unknown key `advance_secs`; did you mean `advance_seconds`?"),
            ("/clock", #"{"advance_seconds":"5"}"#, "`advance_seconds` is a string (\"5\"), but must be a number"),
            ("/faults", #"{"kind":"respond","status":503,}"#, "is not valid JSON"),
            (
                "/keys", #"{"key_id":"X","team_id":"T","pem":"x","enviroments":["sandbox"]}"#,
                "did you mean `environments`?"
            ),
        ] as [(String, String, String)])
    func adminUnknownKeys(path: String, json: String, words: String) async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let r = try await admin.call("POST", path, json: json)
            #expect(r.status == 400)
            let error = try #require(r.body["error"] as? [String: Any])
            #expect(error["code"] as? String == "admin-json")
            #expect((error["message"] as? String)?.contains(words) == true, "\(error)")
            #expect((error["fix"] as? String)?.isEmpty == false)
        }
    }

    @Test("Admin API: an unknown query parameter is 400 admin-query naming it and the nearest known one")
    func adminUnknownQuery() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let r = try await admin.call("GET", "/log?tokn=ab")
            #expect(r.status == 400)
            let error = try #require(r.body["error"] as? [String: Any])
            #expect(error["code"] as? String == "admin-query")
            #expect(
                (error["message"] as? String)?.contains("unknown query parameter `tokn`; did you mean `token`?")
                    == true, "\(error)")
            #expect(try await admin.call("GET", "/log?token=ab&limit=5").status == 200)
        }
    }

    @Test("Config file: an unknown key at any level names it and the nearest known key")
    func configUnknownKey() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-mockcfg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("mock.json")
        try #"{"faults": [{"kind": "delay", "delay_ms": 5, "skp": 1}]}"#.write(
            to: file, atomically: true, encoding: .utf8)
        var configuration = MockServerConfiguration()
        #expect {
            try configuration.apply(configFile: file.path)
        } throws: { error in
            guard let e = error as? KKPushError else { return false }
            return e.code.rawValue == "mock-config-invalid"
                && e.message.contains("unknown key `skp` in `faults[0]`; did you mean `skip`?")
        }
    }

    @Test("Nearest key: typos are found, unrelated words are not")
    func nearest() {
        #expect(JSONInput.nearest("sandbox_prot", among: ["sandbox_port", "production_port"]) == "sandbox_port")
        #expect(JSONInput.nearest("Token", among: ["token", "topic"]) == "token")
        #expect(JSONInput.nearest("colour", among: ["token", "topic"]) == nil)
    }
}
