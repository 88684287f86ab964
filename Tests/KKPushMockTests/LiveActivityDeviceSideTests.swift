import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import Testing

/// The device side of the mock for Live Activities, against the real in-process mock over TLS on loopback: starts,
/// updates and ends sent with kkpush's client, rules and device states set through the admin API (curl) and the
/// library, what became of each push read back from `GET /log` and the device's state. APNs answers 200 to every one;
/// the device side decides. Time moves with the mock's clock, never by sleeping.
@Suite("The device side of Live Activities: start budget, stale push-to-start tokens, update tokens, ended activities")
struct LiveActivityDeviceSideTests {
    static let type = "DienstActivityAttributes"
    static let topic = LiveActivityContent.topic(forBundleID: Fixtures.topic)

    static func start(key: String, timestamp: Int, inputPushToken: Bool = true) -> NotificationRequest {
        var content = LiveActivityContent.start(
            attributesType: type, attributes: .object(["kk_activity_key": .string(key)]),
            contentState: .object(["n": .int(1)]), alert: .text("Je dienst begint"), timestamp: timestamp)
        content.inputPushToken = inputPushToken
        return request(content, to: "")
    }

    static func request(_ content: LiveActivityContent, to token: String) -> NotificationRequest {
        NotificationRequest(
            deviceToken: token, topic: topic, pushType: .liveactivity, priority: 10,
            payload: content.payload.encoded())
    }

    static func to(_ token: String, _ request: NotificationRequest) -> NotificationRequest {
        var r = request
        r.deviceToken = token
        return r
    }

    static func entry(_ admin: Admin, _ apnsID: String) async throws -> [String: Any] {
        try await MockDeviceSideTests.entry(admin, apnsID: apnsID)
    }

    @Test("Starts past the push-to-start budget (set by the admin API) are accepted and discarded: start-budget")
    func startBudget() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let defaults = try await admin.call("GET", "/device-rules")
            #expect(defaults.body["push_to_start_budget"] as? Int == 10, "\(defaults.body)")
            #expect(defaults.body["push_to_start_budget_window_s"] as? Double == 3600)
            let bad = try await admin.call("PUT", "/device-rules", json: #"{"push_to_start_budget":-1}"#)
            let badError = bad.body["error"] as? [String: Any]
            #expect(bad.status == 400 && badError?["code"] as? String == "mock-device-rules", "\(bad.body)")
            #expect((badError?["message"] as? String)?.contains("push_to_start_budget -1") == true, "\(bad.body)")
            let rules = try await admin.call(
                "PUT", "/device-rules", json: #"{"push_to_start_budget":3,"push_to_start_budget_window_s":600}"#)
            #expect(rules.status == 200 && rules.body["push_to_start_budget"] as? Int == 3, "\(rules.body)")
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let stream = MockDeviceSideTests.Collector(device)
            let now = LiveActivityRules.currentUnixSeconds()
            let starts = (0..<4).map { Self.to(device.token, Self.start(key: "dienst-\($0)", timestamp: now + $0)) }
            let outcomes = try await MockDeviceSideTests.send(server, starts)
            #expect(outcomes.filter(\.isAccepted).count == 4, "APNs answers 200 to each: \(outcomes)")
            let ids = outcomes.compactMap(\.apnsID)
            #expect(ids.count == 4)
            for id in ids.prefix(3) {
                let taken = try await Self.entry(admin, id)
                #expect(taken["state"] as? String == "delivered", "\(taken)")
                #expect((taken["activity_update_token"] as? String)?.count == 64, "\(taken)")
            }
            let dropped = try await Self.entry(admin, ids[3])
            #expect(dropped["state"] as? String == "discarded: start-budget")
            #expect(dropped["activity_update_token"] == nil)
            let detail = (dropped["history"] as? [[String: Any]])?.last?["detail"] as? String ?? ""
            #expect(detail.contains("3 per 600 s (push_to_start_budget)"), "\(detail)")
            #expect(try await stream.apnsIDs(atLeast: 3) == Array(ids.prefix(3)))
            let found = try await MockDeviceSideTests.log(admin, "state=discarded")
            #expect(found.compactMap { $0["apns_id"] as? String } == [ids[3]])

            let state = try await admin.call("GET", "/devices/\(device.token)/state")
            #expect(state.body["starts_in_window"] as? Int == 3 && state.body["push_to_start_budget"] as? Int == 3)
            let activities = try #require(state.body["activities"] as? [[String: Any]])
            #expect(activities.compactMap { $0["activity_key"] as? String } == ["dienst-0", "dienst-1", "dienst-2"])

            // Past the window the budget frees: the next start is taken.
            server.advanceClock(by: 601)
            let later = try await MockDeviceSideTests.send(
                server, [Self.to(device.token, Self.start(key: "dienst-4", timestamp: now + 10))])
            let laterID = try #require(later.first?.apnsID)
            #expect(try await Self.entry(admin, laterID)["state"] as? String == "delivered")
            #expect(server.activities(pushToStartToken: device.token).count == 4)
        }
    }

    @Test("The budget in the mock's configuration file (device_rules); out of range refused naming the field")
    func budgetInConfigurationFile() throws {
        var configuration = Fixtures.configuration()
        try configuration.apply(
            configBytes: Array(
                #"{"device_rules":{"push_to_start_budget":2,"push_to_start_budget_window_s":60}}"#.utf8),
            path: "mock.json")
        #expect(configuration.deviceRules.pushToStartBudget == 2)
        #expect(configuration.deviceRules.pushToStartBudgetWindow == 60)
        #expect(configuration.deviceRules.backgroundBudget == 3, "the other rules keep their defaults")
        var wrong = Fixtures.configuration()
        let error = try #require(throws: KKPushError.self) {
            try wrong.apply(
                configBytes: Array(#"{"device_rules":{"push_to_start_budget_window_s":0}}"#.utf8), path: "mock.json")
        }
        #expect(
            error.message.contains("mock.json") && error.message.contains("push_to_start_budget_window_s 0"),
            "\(error)")
    }

    @Test("A stale push-to-start token (admin call, library, device file) gets 200 and its pushes are never delivered")
    func stalePushToStartToken() async throws {
        let registered = Fixtures.randomToken()
        var configuration = Fixtures.configuration()
        configuration.devices = [
            MockDeviceRegistration(
                token: registered, environment: .sandbox, topic: Fixtures.topic, pushToStartStale: true)
        ]
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let stream = MockDeviceSideTests.Collector(device)
            let marked = try await admin.call(
                "PUT", "/devices/\(device.token)/state", json: #"{"push_to_start_stale":true}"#)
            #expect(marked.status == 200 && marked.body["push_to_start_stale"] as? Bool == true, "\(marked.body)")

            let now = LiveActivityRules.currentUnixSeconds()
            let outcomes = try await MockDeviceSideTests.send(
                server,
                [
                    Self.to(device.token, Self.start(key: "dienst-1", timestamp: now)),
                    Self.to(registered, Self.start(key: "dienst-2", timestamp: now)),
                ])
            #expect(outcomes.filter(\.isAccepted).count == 2, "\(outcomes)")
            for id in outcomes.compactMap(\.apnsID) {
                let entry = try await Self.entry(admin, id)
                #expect(entry["state"] as? String == "discarded: stale-push-to-start-token", "\(entry)")
                #expect(MockDeviceSideTests.states(entry) == ["received", "discarded: stale-push-to-start-token"])
            }
            #expect(server.activities(pushToStartToken: device.token).isEmpty)

            // The token current again (the library): the next start is delivered and starts an activity.
            let current = try server.markPushToStartStale(token: device.token, stale: false)
            #expect(!current.pushToStartStale)
            let again = try await MockDeviceSideTests.send(
                server, [Self.to(device.token, Self.start(key: "dienst-1", timestamp: now + 1))])
            let id = try #require(again.first?.apnsID)
            #expect(try await Self.entry(admin, id)["state"] as? String == "delivered")
            #expect(try await stream.apnsIDs(atLeast: 1) == [id])

            // Refusals: an unknown token is 404, a wrong type names the field.
            let unknown = try await admin.call(
                "PUT", "/devices/\(Fixtures.randomToken())/state", json: #"{"push_to_start_stale":true}"#)
            #expect(unknown.status == 404, "\(unknown.body)")
            let wrong = try await admin.call(
                "PUT", "/devices/\(device.token)/state", json: #"{"push_to_start_stale":"yes"}"#)
            #expect(wrong.status == 400, "\(wrong.body)")
        }
    }

    @Test(
        "A start makes an activity with its own update token (accepted in strict mode); after its end, updates and ends are dropped: activity-ended"
    )
    func updateTokenAndEndedActivity() async throws {
        var configuration = Fixtures.configuration()
        configuration.strictDeviceTokens = true
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let stream = MockDeviceSideTests.Collector(device)
            let now = LiveActivityRules.currentUnixSeconds()
            let started = try await MockDeviceSideTests.send(
                server,
                [
                    Self.to(device.token, Self.start(key: "dienst-7", timestamp: now)),
                    Self.to(device.token, Self.start(key: "dienst-8", timestamp: now, inputPushToken: false)),
                ])
            let startID = try #require(started.first?.apnsID)
            let entry = try await Self.entry(admin, startID)
            let token = try #require(entry["activity_update_token"] as? String)
            #expect(token != device.token)
            let activities = server.activities(pushToStartToken: device.token)
            #expect(activities.map(\.updateToken) == [token, nil], "a start without input-push-token has no token")
            #expect(activities.map(\.activityKey) == ["dienst-7", "dienst-8"])

            // The update token is a token of the same device: known in strict mode, delivered to its stream.
            let tokenState = try await admin.call("GET", "/devices/\(token)/state")
            #expect(tokenState.body["activity_of"] as? String == device.token, "\(tokenState.body)")
            // Its connectivity and app state follow the device's.
            try server.setDeviceState(token: device.token, connectivity: .offline, app: .background)
            #expect(server.deviceState(token: token)?.connectivity == .offline)
            #expect(server.deviceState(token: token)?.app == .background)
            try server.setDeviceState(token: device.token, connectivity: .online, app: .foreground)
            #expect(server.deviceState(token: token)?.connectivity == .online)
            let sent = try await MockDeviceSideTests.send(
                server,
                [
                    Self.request(.update(contentState: .object(["n": .int(2)]), timestamp: now + 1), to: token),
                    Self.request(
                        .end(contentState: .object(["n": .int(3)]), timestamp: now + 2, dismissalDate: now + 3600),
                        to: token),
                    Self.request(.update(contentState: .object(["n": .int(4)]), timestamp: now + 3), to: token),
                    Self.request(
                        .end(contentState: .object(["n": .int(5)]), timestamp: now + 4, dismissalDate: now), to: token),
                    Self.request(
                        .update(contentState: .object(["n": .int(6)]), timestamp: now + 5), to: Fixtures.randomToken()),
                ])
            #expect(sent.prefix(4).filter(\.isAccepted).count == 4, "\(sent)")
            #expect(sent.last?.rejection?.reason == .badDeviceToken, "an unknown token in strict mode: \(sent)")
            let ids = sent.prefix(4).compactMap(\.apnsID)
            #expect(try await Self.entry(admin, ids[0])["state"] as? String == "delivered")
            #expect(try await Self.entry(admin, ids[1])["state"] as? String == "delivered")
            for id in ids.suffix(2) {
                let late = try await Self.entry(admin, id)
                #expect(late["state"] as? String == "dropped on the device: activity-ended", "\(late)")
            }
            let ended = try #require(server.activities(pushToStartToken: device.token).first)
            #expect(ended.phase == .ended && ended.dismissalDate == now + 3600)
            #expect(try await stream.apnsIDs(atLeast: 4) == [startID, started[1].apnsID ?? ""] + ids.prefix(2))
        }
    }

    @Test("With the app's types configured: a Unix time in a Date field is delivered (misread), a wrong type dropped")
    func misreadDateDelivered() async throws {
        var configuration = Fixtures.configuration()
        configuration.activityAttributes = ActivityAttributesDescription(
            name: Self.type, attributes: [.init("kk_activity_key", .string)],
            contentState: [.init("n", .int), .init("startsAt", .date)])
        try await withMockServer(configuration: configuration) { server in
            let admin = Admin(base: try #require(server.adminURL))
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let now = LiveActivityRules.currentUnixSeconds()
            let sent = try await MockDeviceSideTests.send(
                server,
                [
                    Self.request(
                        .update(contentState: .object(["n": .int(1), "startsAt": .int(now)]), timestamp: now),
                        to: device.token),
                    Self.request(
                        .update(contentState: .object(["n": .int(2), "startsAt": .string("morgen")]), timestamp: now),
                        to: device.token),
                ])
            let ids = sent.compactMap(\.apnsID)
            #expect(ids.count == 2, "\(sent)")
            let misread = try await Self.entry(admin, ids[0])
            #expect(misread["state"] as? String == "delivered", "\(misread)")
            #expect(misread["warnings"] == nil)
            let wrong = try await Self.entry(admin, ids[1])
            #expect(wrong["state"] as? String == "dropped on the device: does not decode", "\(wrong)")
        }
    }
}
