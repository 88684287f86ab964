import Foundation
import KKPushActivities
import KKPushBackend
import KKPushCore
import KKPushStore
import KKPushTestSupport
import KantineKoning
import Testing

/// The token update's `live_activity` tokens through the simulated backend over HTTP into a real activity registry
/// (SQLite in a temporary directory): push-to-start tokens with a `null` rotation that keeps the stored token, an
/// activity's update token, the app's reported end; without a registry the answer says they were not recorded.
@Suite("Simulated backend: token updates with Live Activity tokens")
struct TokenUpdateLiveActivityBackendTests {
    static func update(_ live: LiveActivityTokens?) -> TokenUpdate {
        TokenUpdate(
            token: BackendFixtures.token(1), buildEnvironment: "development", appVersion: "1.4.2",
            hardwareIdentifier: BackendFixtures.phoneA, liveActivity: live)
    }

    /// A simulated backend with an SQLite activity registry of its own (closed at the end), at a manual clock, with
    /// one enrolled device: `body` gets the backend, the registry, the clock, the device's id and its JWT.
    static func withRegistryBackend(
        _ body: (SimulatedBackend, SQLiteActivityRegistry, ManualWallClock, String, String) async throws -> Void
    ) async throws {
        let directory = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let registry = try await SQLiteActivityRegistry.open(path: directory.appendingPathComponent("la.sqlite").path)
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        do {
            try await withSimulatedBackend(
                configuration: BackendAppAPIOverHTTPTests.configuration(clock), activities: registry
            ) { backend in
                let (device, jwt) = try await BackendAppAPIOverHTTPTests.enroll(
                    backend, tenant: "vvwilhelmus", teams: ["JO11-3"])
                try await body(backend, registry, clock, device, jwt)
            }
        } catch {
            await registry.close()
            throw error
        }
        await registry.close()
    }

    @Test("live_activity goes to the registry under <tenant>/<device_id>; a null rotation keeps the stored token")
    func recorded() async throws {
        try await Self.withRegistryBackend { backend, registry, clock, device, jwt in
            let url = backend.baseURL + TokenUpdate.path
            let pushToStart = BackendFixtures.token(7)
            let first = Self.update(
                LiveActivityTokens(pushToStartTokens: [.init(attributesType: "DienstAttributes", token: pushToStart)]))
            let r1 = try await HTTP.request("POST", url, bearer: jwt, body: try first.jsonData())
            #expect(r1.status == 200, "\(String(decoding: r1.body, as: UTF8.self))")
            let live1 = try #require(r1.json["live_activity"] as? [String: Any])
            #expect(live1["recorded"] as? Bool == true && live1["device"] as? String == "vvwilhelmus/\(device)")
            #expect(!String(decoding: r1.body, as: UTF8.self).contains(pushToStart), "a whole token in the answer")

            // iOS yields a rotation without a token: recorded as refused, the stored token kept.
            clock.advance(by: 60)
            let rotation = Self.update(
                LiveActivityTokens(pushToStartTokens: [.init(attributesType: "DienstAttributes", token: nil)]))
            let r2 = try await HTTP.request("POST", url, bearer: jwt, body: try rotation.jsonData())
            #expect(r2.status == 200)
            let live2 = try #require(r2.json["live_activity"] as? [String: Any])
            let outcome = try #require((live2["push_to_start_tokens"] as? [[String: Any]])?.first)
            #expect(
                outcome["outcome"] as? String == "refused"
                    && outcome["attributes_type"] as? String == "DienstAttributes")
            let problems = ((r2.json["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
            #expect(problems.contains("push-to-start-token-null"))
            let tokens = try await registry.pushToStartTokens(device: "vvwilhelmus/\(device)")
            #expect(tokens.map(\.token) == [pushToStart])
            #expect(tokens.first?.history.contains { $0.outcome == .refused && $0.token == nil } == true)

            // A start the registry planned; the app reports its update token, then that it ended.
            let plan = try await registry.planStart(
                ActivityStartRequest(
                    key: "dienst-vvwilhelmus-9", device: "vvwilhelmus/\(device)", topic: BackendFixtures.bundleID,
                    attributesType: "DienstAttributes", contentState: .object(["volunteers": .int(1)]),
                    alert: .text("Bardienst")), at: clock.now())
            guard case .send = plan else {
                Issue.record("the start was not planned: \(plan)")
                return
            }
            let updateToken = BackendFixtures.token(8)
            let r3 = try await HTTP.request(
                "POST", url, bearer: jwt,
                body: try Self.update(
                    LiveActivityTokens(activityTokens: [
                        .init(
                            activityKey: "dienst-vvwilhelmus-9", activityID: "A1", attributesType: "DienstAttributes",
                            token: updateToken)
                    ])
                ).jsonData())
            #expect(r3.status == 200)
            #expect(try await registry.activity(key: "dienst-vvwilhelmus-9")?.updateToken == updateToken)
            #expect(try await registry.activity(key: "dienst-vvwilhelmus-9")?.state == .active)
            let r4 = try await HTTP.request(
                "POST", url, bearer: jwt,
                body: try Self.update(
                    LiveActivityTokens(activityStates: [.init(activityKey: "dienst-vvwilhelmus-9", state: .ended)])
                ).jsonData())
            #expect(r4.status == 200)
            #expect(try await registry.activity(key: "dienst-vvwilhelmus-9")?.state == .ended)

            // A broken token is refused with its JSON path, like a broken device token (422).
            let broken =
                #"{"token": "\#(BackendFixtures.token(1))", "build_environment": "development", "app_version": "1.4.2", "hardware_identifier": "\#(BackendFixtures.phoneA)", "live_activity": {"activity_tokens": [{"activity_key": "k", "attributes_type": "D", "token": "xyz"}]}}"#
            let r5 = try await HTTP.request("POST", url, bearer: jwt, body: Data(broken.utf8))
            #expect(r5.status == 422 && r5.errorCode == "live-activity-token-invalid")
            let message = (r5.json["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("live_activity.activity_tokens[0].token"), "\(message)")
        }
    }

    @Test(
        "An activity the app started itself is recorded under the app's Live Activity topic: its bundle_id, or the backend's app when the update leaves it out"
    )
    func appStartedActivityTopic() async throws {
        try await Self.withRegistryBackend { backend, registry, clock, _, jwt in
            for (i, bundleID) in [BackendFixtures.bundleID, nil].enumerated() {
                var update = Self.update(
                    LiveActivityTokens(activityTokens: [
                        .init(
                            activityKey: "app-own-\(i)", attributesType: "DienstAttributes",
                            token: BackendFixtures.token(UInt8(20 + i)))
                    ]))
                update.bundleID = bundleID
                let r = try await HTTP.request(
                    "POST", backend.baseURL + TokenUpdate.path, bearer: jwt, body: try update.jsonData())
                #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
                let live = try #require(r.json["live_activity"] as? [String: Any])
                #expect((live["ignored"] as? [String])?.isEmpty == true, "\(live)")
                let activity = try #require(try await registry.activity(key: "app-own-\(i)"))
                #expect(activity.state == .active)
                #expect(activity.topic == BackendFixtures.bundleID + ".push-type.liveactivity")
                let push = try await registry.planUpdate(
                    ActivityUpdateRequest(key: "app-own-\(i)", contentState: ["volunteers": 2]), at: clock.now())
                guard case .send(let planned) = push else {
                    Issue.record("the update was not planned: \(push)")
                    continue
                }
                #expect(planned.request.topic == BackendFixtures.bundleID + ".push-type.liveactivity")
            }
        }
    }

    @Test("Without a registry the tokens are checked and the answer says they were not recorded")
    func notRecorded() async throws {
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await withSimulatedBackend(configuration: BackendAppAPIOverHTTPTests.configuration(clock)) { backend in
            let (_, jwt) = try await BackendAppAPIOverHTTPTests.enroll(
                backend, tenant: "vvwilhelmus", teams: ["JO11-3"])
            let body = try Self.update(
                LiveActivityTokens(pushToStartTokens: [.init(attributesType: "D", token: BackendFixtures.token(7))])
            ).jsonData()
            let r = try await HTTP.request("POST", backend.baseURL + TokenUpdate.path, bearer: jwt, body: body)
            #expect(r.status == 200)
            let live = try #require(r.json["live_activity"] as? [String: Any])
            #expect(
                live["recorded"] as? Bool == false
                    && (live["reason"] as? String)?.contains("no activity registry") == true)
            // A body without live_activity is answered as before: no such key.
            let plain = try Self.update(nil).jsonData()
            let r2 = try await HTTP.request("POST", backend.baseURL + TokenUpdate.path, bearer: jwt, body: plain)
            #expect(r2.status == 200 && r2.json["live_activity"] == nil)
        }
    }
}
