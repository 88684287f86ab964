import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Synchronization
import Testing

/// The device side of the mock, against the real in-process mock over TLS: pushes sent with kkpush's client and with
/// curl (an independent HTTP/2 peer), device states set through the admin API (curl) and the library, what became of
/// each push read back from `GET /log` (by apns-id, apns-unique-id, token, state), the device's stream and
/// `GET /metrics`. Time moves with the mock's clock (`POST /clock`), never by sleeping.
@Suite("The device side: offline storage, coalescing, expiry, collapse ids, background budget, app states")
struct MockDeviceSideTests {
    /// Everything a device's stream yields, collected by a task of its own.
    final class Collector: Sendable {
        final class Received: Sendable {
            let items = Mutex<[DeliveredNotification]>([])
        }
        let received = Received()
        let task: Task<Void, Never>

        init(_ device: SimulatedDevice) {
            let received = self.received
            task = Task {
                for await n in device.notifications { received.items.withLock { $0.append(n) } }
            }
        }

        /// The apns-ids received, once at least `count` arrived (bounded: 10 s).
        func apnsIDs(atLeast count: Int) async throws -> [String] {
            for _ in 0..<1000 {
                let now = received.items.withLock { $0.map(\.apnsID) }
                if now.count >= count { return now }
                try await Task.sleep(for: .milliseconds(10))
            }
            return received.items.withLock { $0.map(\.apnsID) }
        }

        deinit { task.cancel() }
    }

    /// Sends `requests` in order through kkpush's client (one connection), on the mock's clock; their answers.
    static func send(_ server: MockAPNsServer, _ requests: [NotificationRequest]) async throws -> [PushOutcome] {
        let (configuration, _) = try ClientSupport.configuration(server)
        return try await withAPNsClient(configuration: configuration) { client in
            var outcomes: [PushOutcome] = []
            for request in requests { outcomes.append(await client.send(request, to: server.sandboxEndpoint)) }
            return outcomes
        }
    }

    static func alert(_ token: String, _ body: String, collapseID: String? = nil, expiration: Int? = nil)
        -> NotificationRequest
    {
        NotificationRequest(
            deviceToken: token, topic: Fixtures.topic, pushType: .alert, priority: 10, expiration: expiration,
            collapseID: collapseID,
            payload: Array(#"{"aps":{"alert":{"title":"Dienst","body":"\#(body)"}}}"#.utf8))
    }

    /// The entries of `GET /log?<query>`.
    static func log(_ admin: Admin, _ query: String) async throws -> [[String: Any]] {
        let answer = try await admin.call("GET", "/log?\(query)")
        #expect(answer.status == 200, "\(answer.body) \(answer.curl)")
        return answer.body["notifications"] as? [[String: Any]] ?? []
    }

    /// The one entry with `apnsID`, read back by apns-id.
    static func entry(_ admin: Admin, apnsID: String) async throws -> [String: Any] {
        let found = try await log(admin, "apns_id=\(apnsID)")
        #expect(found.count == 1, "\(found)")
        return try #require(found.first)
    }

    static func states(_ entry: [String: Any]) -> [String] {
        (entry["history"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
    }

    static func state(_ admin: Admin, _ token: String, _ json: String) async throws -> AdminResponse {
        try await admin.call("PUT", "/devices/\(token)/state", json: json)
    }

    @Test(
        "Three pushes to an offline device (kkpush's client): on reconnect only the last is delivered, the others discarded: replaced"
    )
    func offlineCoalescing() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let stream = Collector(device)
            let offline = try await Self.state(admin, device.token, #"{"connectivity":"offline","app":"background"}"#)
            #expect(offline.status == 200, "\(offline.body)")
            #expect(
                offline.body["connectivity"] as? String == "offline" && offline.body["app"] as? String == "background")

            let outcomes = try await Self.send(
                server, ["Eerste", "Tweede", "Derde"].map { Self.alert(device.token, $0) })
            #expect(outcomes.filter(\.isAccepted).count == 3)
            let ids = outcomes.compactMap(\.apnsID)
            #expect(ids.count == 3)
            // While offline: the first two replaced, the newest stored; nothing reached the device.
            #expect(
                try await Self.entry(admin, apnsID: ids[0])["state"] as? String == "discarded: replaced by a newer push"
            )
            #expect(
                try await Self.entry(admin, apnsID: ids[1])["state"] as? String == "discarded: replaced by a newer push"
            )
            #expect(try await Self.entry(admin, apnsID: ids[2])["state"] as? String == "stored: device offline")
            let held = try await admin.call("GET", "/devices/\(device.token)/state")
            #expect(held.body["stored"] as? Int == 1)

            // Back online: the stored one is delivered, from storage; the device shows it, and runs no code until
            // opened (the app is in the background).
            let online = try await Self.state(admin, device.token, #"{"connectivity":"online"}"#)
            #expect(online.body["stored"] as? Int == 0)
            let last = try await Self.entry(admin, apnsID: ids[2])
            #expect(last["state"] as? String == "delivered")
            #expect(Self.states(last) == ["received", "stored: device offline", "delivered"])
            let history = try #require(last["history"] as? [[String: Any]])
            #expect((history.last?["detail"] as? String)?.contains("from storage") == true)
            let code = try #require(last["app_code"] as? [String: Any])
            #expect(code["on_open"] as? Bool == true && (code["runs"] as? [String])?.isEmpty == true)
            for id in ids.prefix(2) {
                let older = try await Self.entry(admin, apnsID: id)
                #expect(
                    Self.states(older) == ["received", "stored: device offline", "discarded: replaced by a newer push"])
                #expect(older["app_code"] == nil)
            }
            // The device's stream: the last push, then the next one sent (nothing in between).
            let marker = try await Self.send(server, [Self.alert(device.token, "Vierde")])
            let markerID = try #require(marker.first?.apnsID)
            #expect(try await stream.apnsIDs(atLeast: 2) == [ids[2], markerID])
        }
    }

    @Test("apns-expiration 0 to an offline device (curl) is never stored nor delivered; a past expiration is discarded")
    func expiration() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic, connectivity: .offline)
            let stream = Collector(device)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let zero = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt, headers: ["apns-expiration: 0"]))
            #expect(zero.status == 200)
            let zeroID = try #require(zero.header("apns-id"))
            let discarded = try await Self.entry(admin, apnsID: zeroID)
            #expect(discarded["state"] as? String == "discarded: expired")
            #expect(Self.states(discarded) == ["received", "discarded: expired"])
            try server.setDeviceState(token: device.token, connectivity: .online)
            #expect(try await Self.entry(admin, apnsID: zeroID)["state"] as? String == "discarded: expired")

            // A past expiration, to an online device: discarded at once.
            let past = Int(clock.now().timeIntervalSince1970) - 60
            let late = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt,
                    headers: ["apns-expiration: \(past)"]))
            #expect(late.status == 200)
            let lateID = try #require(late.header("apns-id"))
            #expect(try await Self.entry(admin, apnsID: lateID)["state"] as? String == "discarded: expired")

            // Stored until its expiration: the clock passes it while the device is offline; it never arrives.
            try server.setDeviceState(token: device.token, connectivity: .offline)
            let soon = Int(clock.now().timeIntervalSince1970) + 600
            let stored = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt,
                    headers: ["apns-expiration: \(soon)"]))
            let storedID = try #require(stored.header("apns-id"))
            #expect(try await Self.entry(admin, apnsID: storedID)["state"] as? String == "stored: device offline")
            let moved = try await admin.call("POST", "/clock", json: #"{"advance_seconds":601}"#)
            #expect(moved.status == 200)
            #expect(try await Self.entry(admin, apnsID: storedID)["state"] as? String == "discarded: expired")
            _ = try await Self.state(admin, device.token, #"{"connectivity":"online"}"#)
            let after = try await Self.entry(admin, apnsID: storedID)
            #expect(Self.states(after) == ["received", "stored: device offline", "discarded: expired"])

            // Nothing of the three reached the device: the first thing it gets is a push sent now.
            let now = try await Curl.one(Curl.push(server.sandboxEndpoint, token: device.token, authorization: jwt))
            #expect(try await stream.apnsIDs(atLeast: 1) == [try #require(now.header("apns-id"))])
        }
    }

    @Test("apns-collapse-id (curl): the newer alert replaces the one shown with the same collapse id, not another")
    func collapseID() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            var ids: [String] = []
            for collapse in ["dienst-12", "dienst-13", "dienst-12"] {
                let r = try await Curl.one(
                    Curl.push(
                        server.sandboxEndpoint, token: device.token, authorization: jwt,
                        headers: ["apns-collapse-id: \(collapse)"]))
                #expect(r.status == 200)
                ids.append(try #require(r.header("apns-id")))
            }
            let first = try await Self.entry(admin, apnsID: ids[0])
            #expect(first["state"] as? String == "replaced: same collapse id")
            #expect(Self.states(first) == ["received", "delivered", "replaced: same collapse id"])
            #expect(try await Self.entry(admin, apnsID: ids[1])["state"] as? String == "delivered")
            #expect(try await Self.entry(admin, apnsID: ids[2])["state"] as? String == "delivered")
            let replaced = try await Self.log(admin, "token=\(device.token)&state=replaced")
            #expect(replaced.compactMap { $0["apns_id"] as? String } == [ids[0]])
        }
    }

    @Test("Background pushes past the budget are deferred, the newest kept, run once the budget frees")
    func backgroundBudget() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let rules = try await admin.call("PUT", "/device-rules", json: #"{"background_budget":2}"#)
            #expect(rules.status == 200 && rules.body["background_budget"] as? Int == 2, "\(rules.body)")
            #expect(rules.body["background_budget_window_s"] as? Double == 3600)
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic, app: .suspended)
            let stream = Collector(device)
            let silent = Array(#"{"aps":{"content-available":1},"dienst":12}"#.utf8)
            let requests = (0..<4).map { _ in
                NotificationRequest(
                    deviceToken: device.token, topic: Fixtures.topic, pushType: .background, priority: 5,
                    payload: silent)
            }
            let ids = try await Self.send(server, requests).compactMap(\.apnsID)
            #expect(ids.count == 4)
            for id in ids.prefix(2) {
                let ran = try await Self.entry(admin, apnsID: id)
                #expect(ran["state"] as? String == "delivered")
                let code = try #require(ran["app_code"] as? [String: Any])
                #expect(
                    code["runs"] as? [String] == ["background-handler"] && code["app_state"] as? String == "suspended")
            }
            #expect(
                try await Self.entry(admin, apnsID: ids[2])["state"] as? String == "discarded: replaced by a newer push"
            )
            #expect(try await Self.entry(admin, apnsID: ids[3])["state"] as? String == "deferred: background budget")
            #expect(try await stream.apnsIDs(atLeast: 2) == Array(ids.prefix(2)))

            // An hour later the budget frees: the deferred push runs.
            server.advanceClock(by: 3601)
            let released = try await Self.entry(admin, apnsID: ids[3])
            #expect(Self.states(released) == ["received", "deferred: background budget", "delivered"])
            #expect(try await stream.apnsIDs(atLeast: 3) == Array(ids.prefix(2)) + [ids[3]])

            // In the foreground no budget applies.
            try server.setDeviceState(token: device.token, app: .foreground)
            let more = try await Self.send(server, Array(requests.prefix(3))).compactMap(\.apnsID)
            for id in more { #expect(try await Self.entry(admin, apnsID: id)["state"] as? String == "delivered") }
        }
    }

    @Test("A force-quit app: a background push is not run (curl); an alert is shown and runs code only when opened")
    func forceQuit() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let set = try await Self.state(admin, device.token, #"{"app":"force-quit"}"#)
            #expect(set.status == 200 && set.body["app"] as? String == "force-quit", "\(set.body)")
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let background = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt, pushType: "background",
                    headers: ["apns-priority: 5"], body: #"{"aps":{"content-available":1}}"#))
            #expect(background.status == 200)
            let notRun = try await Self.entry(admin, apnsID: try #require(background.header("apns-id")))
            #expect(notRun["state"] as? String == "not run: app force-quit")
            #expect((notRun["app_code"] as? [String: Any])?["runs"] as? [String] == [])

            let alert = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt,
                    body: #"{"aps":{"alert":{"body":"Dienst gewijzigd"},"mutable-content":1,"content-available":1}}"#))
            let shown = try await Self.entry(admin, apnsID: try #require(alert.header("apns-id")))
            #expect(shown["state"] as? String == "delivered")
            let code = try #require(shown["app_code"] as? [String: Any])
            #expect(code["runs"] as? [String] == ["service-extension"])
            #expect(code["on_open"] as? Bool == true)
            #expect((code["note"] as? String)?.contains("force-quit") == true)

            // Foreground: the alert reaches willPresent.
            try server.setDeviceState(token: device.token, app: .foreground)
            let open = try await Curl.one(Curl.push(server.sandboxEndpoint, token: device.token, authorization: jwt))
            let presented = try await Self.entry(admin, apnsID: try #require(open.header("apns-id")))
            #expect((presented["app_code"] as? [String: Any])?["runs"] as? [String] == ["will-present"])
        }
    }

    @Test("Lookups by apns-id, apns-unique-id, token and state; metrics by state and push type")
    func lookupsAndMetrics() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let minted = try await admin.call(
                "POST", "/devices",
                json: #"{"environment":"sandbox","topic":"nl.kantinekoning.app","connectivity":"offline"}"#)
            #expect(minted.status == 201 && minted.body["connectivity"] as? String == "offline", "\(minted.body)")
            let token = try #require(minted.body["token"] as? String)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let (responses, _) = try await Curl.send(
                (0..<3).map { _ in Curl.push(server.sandboxEndpoint, token: token, authorization: jwt) })
            #expect(responses.map(\.status) == [200, 200, 200])
            let last = try #require(responses.last)
            let apnsID = try #require(last.header("apns-id"))
            let unique = try #require(last.header("apns-unique-id"))
            for query in ["apns_id=\(apnsID)", "apns_unique_id=\(unique)", "token=\(token)&state=stored"] {
                let found = try await Self.log(admin, query)
                #expect(found.count == 1 && found.first?["apns_id"] as? String == apnsID, "\(query): \(found)")
                #expect(found.first?["state"] as? String == "stored: device offline")
            }
            let byToken = try await Self.log(admin, "token=\(token)")
            #expect(
                byToken.compactMap { $0["state"] as? String } == [
                    "discarded: replaced by a newer push", "discarded: replaced by a newer push",
                    "stored: device offline",
                ])
            #expect(try await Self.log(admin, "token=\(token)&state=discarded").count == 2)
            let bad = try await admin.call("GET", "/log?state=lost")
            #expect(bad.status == 400 && (bad.body["error"] as? [String: Any])?["code"] as? String == "admin-query")

            let metrics = try await Curl.run("/usr/bin/curl", ["-sS", try #require(server.adminURL) + "/metrics"])
            func value(_ state: String) -> String? {
                metrics.stdout.split(separator: "\n").first {
                    $0.hasPrefix("kkpush_mock_delivery_states_total{") && $0.contains("state=\"\(state)\"")
                        && $0.contains("push_type=\"alert\"") && $0.contains("environment=\"sandbox\"")
                }.map { String($0.split(separator: " ").last ?? "") }
            }
            #expect(value("received") == "3")
            #expect(value("stored: device offline") == "3")
            #expect(value("discarded: replaced by a newer push") == "2")
            let held = metrics.stdout.split(separator: "\n").first {
                $0.hasPrefix("kkpush_mock_pushes_held{") && $0.contains("state=\"stored: device offline\"")
            }
            #expect(held.flatMap { Double($0.split(separator: " ").last ?? "") } == 1, "\(held ?? "none held")")

            // Unregistered while stored: discarded, and no longer held.
            let gone = try await admin.call("DELETE", "/devices/\(token)")
            #expect(gone.status == 200)
            #expect(try await Self.entry(admin, apnsID: apnsID)["state"] as? String == "discarded: token unregistered")
        }
    }

    @Test("Priority 5 held for power when configured: stored: power considerations, then delivered in one burst")
    func powerHold() async throws {
        var configuration = Fixtures.configuration()
        configuration.deviceRules.lowPriorityHold = 900
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            var low = Self.alert(device.token, "Later")
            low.priority = 5
            let ids = try await Self.send(server, [low, low, Self.alert(device.token, "Nu")]).compactMap(\.apnsID)
            #expect(try await Self.entry(admin, apnsID: ids[0])["state"] as? String == "stored: power considerations")
            #expect(try await Self.entry(admin, apnsID: ids[2])["state"] as? String == "delivered")
            server.advanceClock(by: 901)
            for id in ids.prefix(2) {
                #expect(
                    Self.states(try await Self.entry(admin, apnsID: id)) == [
                        "received", "stored: power considerations", "delivered",
                    ])
            }
        }
    }

    @Test("Bad device states and rules are refused, naming the field and the fix; an unknown token is 404")
    func refusals() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            for (json, words) in [
                (#"{"connectivity":"airplane"}"#, "connectivity 'airplane'"), (#"{"app":"killed"}"#, "app 'killed'"),
                (#"{}"#, "neither"),
            ] {
                let r = try await Self.state(admin, device.token, json)
                let error = r.body["error"] as? [String: Any]
                #expect(r.status == 400 && error?["code"] as? String == "admin-device-state", "\(json): \(r.body)")
                #expect((error?["message"] as? String)?.contains(words) == true)
                #expect(error?["fix"] as? String != nil)
            }
            let unknown = try await Self.state(admin, Fixtures.randomToken(), #"{"connectivity":"offline"}"#)
            #expect(unknown.status == 404)
            let rules = try await admin.call("PUT", "/device-rules", json: #"{"background_budget_window_s":0}"#)
            #expect((rules.body["error"] as? [String: Any])?["code"] as? String == "mock-device-rules", "\(rules.body)")
            #expect(throws: KKPushError.self) { try server.setDeviceRules(MockDeviceRules(storageLimit: -1)) }
            #expect(throws: KKPushError.self) {
                try server.setDeviceState(token: Fixtures.randomToken(), app: .background)
            }
        }
    }
}
