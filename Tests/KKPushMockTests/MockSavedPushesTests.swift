import Foundation
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// The web console's saved pushes over the admin API of the in-process mock (real HTTP, curl), kept in a file:
/// a push APNs would refuse is not saved, and a change whose file write fails is not kept.
@Suite("The console's saved pushes")
struct MockSavedPushesTests {
    static func body(
        _ name: String, payload: String, pushType: String? = nil, priority: Int? = nil, collapseID: String? = nil
    ) throws -> String {
        var object: [String: Any] = ["name": name, "topic": Fixtures.topic, "payload": payload]
        if let pushType { object["push_type"] = pushType }
        if let priority { object["priority"] = priority }
        if let collapseID { object["collapse_id"] = collapseID }
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func saved(_ admin: Admin) async throws -> [String: String] {
        let list = try #require(try await admin.call("GET", "/saved-pushes").body["saved_pushes"] as? [[String: Any]])
        var out: [String: String] = [:]
        for push in list {
            if let name = push["name"] as? String { out[name] = push["payload"] as? String }
        }
        return out
    }

    @Test(
        "A push APNs would refuse is not saved, with APNs's reason",
        arguments: [
            (#"{"aps":{"alert":"x"}"#, nil, nil, nil, "PayloadEmpty"),
            ("[1,2]", nil, nil, nil, "PayloadEmpty"),
            ("", nil, nil, nil, "PayloadEmpty"),
            ("4200 bytes of alert", nil, nil, nil, "PayloadTooLarge"),
            (#"{"aps":{"alert":"x"}}"#, nil, 7, nil, "BadPriority"),
            (#"{"aps":{"alert":"x"}}"#, "nope", nil, nil, "InvalidPushType"),
            (#"{"aps":{"alert":"x"}}"#, nil, nil, String(repeating: "c", count: 65), "BadCollapseId"),
        ] as [(String, String?, Int?, String?, String)])
    func invalidNotSaved(payload: String, pushType: String?, priority: Int?, collapseID: String?, reason: String)
        async throws
    {
        try await withTemporaryDirectory { dir in
            var configuration = Fixtures.configuration()
            configuration.savedPushesFile = dir + "/saved.json"
            try await withMockServer(configuration: configuration) { server in
                let admin = Admin(base: try #require(server.adminURL))
                let payload =
                    payload == "4200 bytes of alert"
                    ? #"{"aps":{"alert":"\#(String(repeating: "x", count: 4200))"}}"# : payload
                let r = try await admin.call(
                    "POST", "/saved-pushes",
                    json: try Self.body(
                        "bad", payload: payload, pushType: pushType, priority: priority, collapseID: collapseID))
                #expect(r.status == 400, "\(r.body) \(r.curl)")
                let error = try #require(r.body["error"] as? [String: Any])
                #expect(error["code"] as? String == "admin-saved-push-invalid")
                #expect((error["message"] as? String)?.contains("APNs would answer \(reason)") == true, "\(error)")
                #expect(try await Self.saved(admin).isEmpty)
                #expect(!FileManager.default.fileExists(atPath: dir + "/saved.json"))
                // A valid one is saved (a Live Activity push for a channel may name the bare bundle id).
                let good = try await admin.call(
                    "POST", "/saved-pushes",
                    json: try Self.body(
                        "la", payload: #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{}}}"#,
                        pushType: "liveactivity"))
                #expect(good.status == 201, "\(good.body)")
            }
        }
    }

    @Test("A change whose file write fails is answered 500 and not kept; the file and the list agree")
    func failedWriteRolledBack() async throws {
        try await withTemporaryDirectory { dir in
            let folder = dir + "/saved"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            let file = folder + "/saved.json"
            var configuration = Fixtures.configuration()
            configuration.savedPushesFile = file
            try await withMockServer(configuration: configuration) { server in
                let admin = Admin(base: try #require(server.adminURL))
                let first = #"{"aps":{"alert":"eerste"}}"#
                #expect(
                    try await admin.call("POST", "/saved-pushes", json: try Self.body("a", payload: first)).status
                        == 201)

                // The file's folder is gone: no write can succeed (not even as root).
                try FileManager.default.removeItem(atPath: folder)
                let added = try await admin.call(
                    "POST", "/saved-pushes", json: try Self.body("b", payload: #"{"aps":{"alert":"b"}}"#))
                #expect(added.status == 500, "\(added.body)")
                let error = try #require(added.body["error"] as? [String: Any])
                #expect(error["code"] as? String == "admin-saved-pushes-file")
                #expect((error["message"] as? String)?.contains("No such file or directory") == true, "\(error)")
                #expect((error["message"] as? String)?.contains("(savedPushesFile)") == false, "\(error)")
                let replaced = try await admin.call(
                    "POST", "/saved-pushes", json: try Self.body("a", payload: #"{"aps":{"alert":"tweede"}}"#))
                #expect(replaced.status == 500)
                #expect(try await admin.call("DELETE", "/saved-pushes/a").status == 500)
                #expect(try await Self.saved(admin) == ["a": first], "nothing a failed write did is kept")

                // Writable again: the next change writes what the list holds.
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
                let c = #"{"aps":{"alert":"c"}}"#
                #expect(
                    try await admin.call("POST", "/saved-pushes", json: try Self.body("c", payload: c)).status == 201)
                #expect(try await Self.saved(admin) == ["a": first, "c": c])
                let stored = try #require(
                    try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
                        as? [String: Any])
                let names = (stored["saved_pushes"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
                #expect(names == ["a", "c"])
            }
        }
    }
}
