import Foundation
import KKPushCore
import KKPushMock
import Testing

/// The mock's two topic checks on one rule (`TopicScope`): a topic-specific key, and the app a device token belongs
/// to. A bundle id covers itself plus a documented push-type suffix; an extension's own bundle id is another app.
@Suite("The mock's topic scope: topic-specific keys and the device's app")
struct MockTopicScopeTests {
    static let widget = Fixtures.topic + ".widget"

    @Test("A key scoped to the app: its push-type suffixes pass, an extension's bundle id is TopicDisallowed")
    func scopedKey() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.registerDefaultKeys = false
        try await withMockServer(configuration: configuration) { server in
            let pem = try String(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"), encoding: .utf8)
            try server.registerKey(
                MockKey(teamID: Fixtures.teamID, keyID: Fixtures.bothKeyID, pem: pem, topics: [Fixtures.topic]))
            #expect(server.keys.first?.allows(topic: Self.widget) == false)
            #expect(server.keys.first?.allows(topic: "") == false)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: token, authorization: jwt),
                Curl.push(
                    server.sandboxEndpoint, token: token, authorization: jwt, topic: Fixtures.topic + ".voip",
                    pushType: "voip"),
                Curl.push(
                    server.sandboxEndpoint, token: token, authorization: jwt,
                    topic: Fixtures.topic + ".push-type.widgets",
                    pushType: "widgets", body: #"{"aps":{"content-changed":true}}"#),
                Curl.push(server.sandboxEndpoint, token: token, authorization: jwt, topic: Self.widget),
                Curl.push(
                    server.sandboxEndpoint, token: token, authorization: jwt,
                    topic: Fixtures.topic + ".NotificationService"),
            ])
            #expect(responses.map(\.status) == [200, 200, 200, 400, 400], "\(responses.map(\.body))")
            #expect(responses[3].reason == "TopicDisallowed" && responses[4].reason == "TopicDisallowed")
            #expect(Set(server.deliveries(limit: 10).map(\.topic)).isDisjoint(with: [Self.widget]))
        }
    }

    @Test("A device of the app: an extension's bundle id is DeviceTokenNotForTopic")
    func deviceOfTheApp() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: device.token, authorization: jwt, topic: Self.widget),
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt,
                    topic: Fixtures.topic + ".push-type.liveactivity", pushType: "liveactivity",
                    body: #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{}}}"#),
            ])
            #expect(responses.map(\.status) == [400, 200], "\(responses.map(\.body))")
            #expect(responses.first?.reason == "DeviceTokenNotForTopic")
        }
    }
}
