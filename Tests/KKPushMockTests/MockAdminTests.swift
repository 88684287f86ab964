import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Testing

/// An admin API answer: the status and the JSON object (immutable once made).
struct AdminResponse: @unchecked Sendable {
    let status: Int
    let body: [String: Any]
    /// curl's exit status and standard error, for a failure message when no answer came (status 0).
    var curl = ""
}

/// Calls the admin API with the curl binary.
struct Admin {
    let base: String

    func call(_ method: String, _ path: String, json: String? = nil, headers: [String] = []) async throws
        -> AdminResponse
    {
        var args = ["-sS", "--max-time", "70", "-X", method, "-w", "\n%{http_code}"]
        if let json { args += ["-H", "content-type: application/json", "--data-binary", json] }
        for h in headers { args += ["-H", h] }
        args.append(base + path)
        let result = try await Curl.run("/usr/bin/curl", args, timeout: 80)
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.popLast() ?? "") ?? 0
        let text = lines.joined(separator: "\n")
        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        return AdminResponse(status: status, body: object, curl: "curl exit \(result.status): \(result.stderr)")
    }
}

@Suite("The admin HTTP API")
struct MockAdminTests {
    @Test("health, devices, unregister, log, faults, clock, reset")
    func endpoints() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            #expect(try await admin.call("GET", "/health").body["status"] as? String == "ok")

            // Mint a device over HTTP, push to it, read the log by apns-id and apns-unique-id.
            let minted = try await admin.call(
                "POST", "/devices", json: #"{"environment":"sandbox","topic":"nl.kantinekoning.app"}"#)
            #expect(minted.status == 201)
            let token = try #require(minted.body["token"] as? String)
            #expect(token.count == 64)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let r = try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: jwt))
            #expect(r.status == 200)
            let apnsID = try #require(r.header("apns-id"))
            let unique = try #require(r.header("apns-unique-id"))
            for query in [
                "apns_id=\(apnsID)", "apns_unique_id=\(unique)", "token=\(token)", "topic=\(Fixtures.topic)",
                "token=\(token)&topic=\(Fixtures.topic)",
            ] {
                let log = try await admin.call("GET", "/log?\(query)")
                let list = try #require(log.body["notifications"] as? [[String: Any]])
                #expect(list.count == 1)
                #expect(list.first?["apns_id"] as? String == apnsID)
                #expect(list.first?["payload"] as? String == Fixtures.payload)
            }

            let otherTopic = try await admin.call("GET", "/log?topic=nl.kantinekoning.other")
            #expect((otherTopic.body["notifications"] as? [Any])?.isEmpty == true)

            // Delivery to another process: the notifications of a token, after a sequence number.
            let got = try await admin.call("GET", "/devices/\(token)/notifications?after=0")
            let notifications = try #require(got.body["notifications"] as? [[String: Any]])
            #expect(notifications.count == 1)
            let last = try #require(got.body["last_sequence"] as? Int)
            let none = try await admin.call("GET", "/devices/\(token)/notifications?after=\(last)")
            #expect((none.body["notifications"] as? [Any])?.isEmpty == true)

            // Unregister → 410 with that timestamp.
            let del = try await admin.call("DELETE", "/devices/\(token)?timestamp_ms=1790000000000")
            #expect(del.status == 200)
            let gone = try await Curl.one(Curl.push(server.sandboxEndpoint, token: token, authorization: jwt))
            #expect(gone.status == 410)
            #expect(gone.timestamp == 1_790_000_000_000)

            // Register a token for production.
            let prodToken = Fixtures.randomToken()
            let reg = try await admin.call(
                "POST", "/devices",
                json: #"{"token":"\#(prodToken)","environment":"production","topic":"nl.kantinekoning.app"}"#)
            #expect(reg.status == 201)
            let wrongEnv = try await Curl.one(Curl.push(server.sandboxEndpoint, token: prodToken, authorization: jwt))
            #expect(wrongEnv.reason == "BadDeviceToken")

            // Faults over HTTP.
            let fault = try await admin.call("POST", "/faults", json: #"{"kind":"respond","status":503,"count":1}"#)
            #expect(fault.status == 201)
            #expect((try await admin.call("GET", "/faults").body["faults"] as? [Any])?.count == 1)
            let failed = try await Curl.one(Curl.push(server.productionEndpoint, token: prodToken, authorization: jwt))
            #expect(failed.status == 503)
            #expect(failed.reason == "ServiceUnavailable")
            _ = try await admin.call(
                "POST", "/faults", json: #"[{"kind":"stall","token":"\#(prodToken)"},{"kind":"delay","delay_ms":10}]"#)
            #expect(server.faults.count == 2)
            #expect(try await admin.call("DELETE", "/faults").status == 200)
            #expect(server.faults.isEmpty)

            // The clock: expire the token from outside.
            let moved = try await admin.call("POST", "/clock", json: #"{"advance_seconds":3601}"#)
            #expect(moved.status == 200)
            let expired = try await Curl.one(Curl.push(server.productionEndpoint, token: prodToken, authorization: jwt))
            #expect(expired.reason == "ExpiredProviderToken")

            // Reset forgets devices and the log, and the clock offset.
            #expect(try await admin.call("POST", "/reset").status == 200)
            #expect(server.devices.isEmpty)
            #expect(server.deliveries().isEmpty)
            #expect(
                try await Curl.one(Curl.push(server.productionEndpoint, token: prodToken, authorization: jwt)).status
                    == 200)
        }
    }

    @Test("Long-poll: a waiting GET returns when a notification arrives")
    func longPoll() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .production, topic: Fixtures.topic)
            async let waited = Task.detached {
                try await admin.call("GET", "/devices/\(device.token)/notifications?after=0&wait_ms=60000")
            }.value
            // One push, in process (the test is about the poll, not about curl; a curl process could wait for a
            // slot longer than the poll on a loaded machine).
            let (configuration, _) = try ClientSupport.configuration(server)
            let outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(
                    NotificationRequest(
                        deviceToken: device.token, topic: Fixtures.topic, pushType: .alert, priority: 10,
                        payload: Array(Fixtures.payload.utf8)),
                    environment: .production)
            }
            #expect(outcome.isAccepted, "\(outcome)")
            let result = try await waited
            let list = try #require(result.body["notifications"] as? [[String: Any]])
            #expect(list.count >= 1)
            #expect(list.first?["token"] as? String == device.token)
            // A poll with nothing to deliver times out with an empty list.
            let empty = try await admin.call(
                "GET",
                "/devices/\(device.token)/notifications?after=\(result.body["last_sequence"] as? Int ?? 0)&wait_ms=100")
            #expect((empty.body["notifications"] as? [Any])?.isEmpty == true)
        }
    }

    @Test(
        "Bad admin input: clear errors naming the field",
        arguments: [
            ("POST", "/devices", #"{"environment":"moon"}"#, 400, "admin-environment"),
            ("POST", "/devices", #"{"environment":"sandbox"}"#, 400, "admin-topic"),
            ("POST", "/devices", #"{"token":"xyz","environment":"sandbox"}"#, 400, "admin-token"),
            ("POST", "/faults", #"{"kind":"explode"}"#, 400, "admin-json"),
            ("POST", "/faults", #"{"kind":"respond","status":42}"#, 400, "mock-fault-status"),
            ("POST", "/clock", "{}", 400, "admin-json"),
            ("POST", "/keys", #"{"key_id":"X","team_id":"T","pem":"nope"}"#, 400, ""),
            ("GET", "/log?limit=abc", nil, 400, "admin-query"),
            ("DELETE", "/devices/abcdef", nil, 404, "admin-device-unknown"),
            ("GET", "/nothing", nil, 404, "admin-not-found"),
            ("PUT", "/reset", nil, 405, "admin-method"),
        ] as [(String, String, String?, Int, String)])
    func badInput(method: String, path: String, json: String?, status: Int, code: String) async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let r = try await admin.call(method, path, json: json)
            #expect(r.status == status, "\(r.curl)")
            let error = try #require(r.body["error"] as? [String: Any], "\(r.curl)")
            if !code.isEmpty { #expect(error["code"] as? String == code) }
            #expect((error["message"] as? String)?.isEmpty == false)
        }
    }
}
