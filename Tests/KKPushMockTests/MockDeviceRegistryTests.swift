import Foundation
import KKPushCore
import KKPushMock
import Testing

@Suite("Devices, the registry and delivery")
struct MockDeviceRegistryTests {
    @Test("A token sent to the other environment gets BadDeviceToken", arguments: APNsEnvironment.allCases)
    func otherEnvironment(environment: APNsEnvironment) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: environment, topic: Fixtures.topic)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let wrong = try await Curl.one(
                Curl.push(server.endpoint(environment.other), token: device.token, authorization: jwt))
            #expect(wrong.status == 400)
            #expect(wrong.reason == "BadDeviceToken")
            let right = try await Curl.one(
                Curl.push(server.endpoint(environment), token: device.token, authorization: jwt))
            #expect(right.status == 200)
        }
    }

    @Test("Unregistered: 410 with the timestamp in milliseconds; ExpiredToken too")
    func unregistered() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: .production, topic: Fixtures.topic)
            let when = Date(timeIntervalSince1970: 1_790_000_000.123)
            try server.unregister(token: device.token, at: when)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let r = try await Curl.one(Curl.push(server.productionEndpoint, token: device.token, authorization: jwt))
            #expect(r.status == 410)
            #expect(r.reason == "Unregistered")
            #expect(r.timestamp == 1_790_000_000_123)
            #expect(r.header("content-type") == "application/json")

            let other = server.mintDevice(environment: .production, topic: Fixtures.topic)
            try server.unregister(token: other.token, reason: .expiredToken)
            let r2 = try await Curl.one(Curl.push(server.productionEndpoint, token: other.token, authorization: jwt))
            #expect(r2.status == 410)
            #expect(r2.reason == "ExpiredToken")
            #expect(r2.timestamp == Int64((clock.now().timeIntervalSince1970 * 1000).rounded()))
            #expect(throws: KKPushError.self) { try server.unregister(token: Fixtures.randomToken()) }
        }
    }

    @Test("DeviceTokenNotForTopic for another app's topic; the app's own suffixed topics pass")
    func wrongTopic() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: device.token, authorization: jwt, topic: "com.other.app"))
            #expect(r.status == 400)
            #expect(r.reason == "DeviceTokenNotForTopic")
            let voip = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: device.token, authorization: jwt, topic: Fixtures.topic + ".voip",
                    pushType: "voip"))
            #expect(voip.status == 200)
        }
    }

    @Test("Unknown well-formed tokens: accepted by default, BadDeviceToken when strict")
    func strict() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.strictDeviceTokens = true
        let known = Fixtures.randomToken()
        configuration.devices = [MockDeviceRegistration(token: known, environment: .sandbox, topic: Fixtures.topic)]
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let unknown = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
            #expect(unknown.reason == "BadDeviceToken")
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: known, authorization: jwt)).status == 200)
            server.strictDeviceTokens = false
            #expect(
                try await Curl.one(Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt))
                    .status == 200)
        }
    }

    @Test("Accepted notifications arrive on the device's AsyncStream, in order")
    func deliveryStream() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: .sandbox, topic: Fixtures.topic)
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let bodies = (1...3).map { #"{"aps":{"alert":"n\#($0)"}}"# }
            let (responses, _) = try await Curl.send(
                bodies.map {
                    Curl.push(
                        server.sandboxEndpoint, token: device.token, authorization: jwt, headers: ["apns-priority: 5"],
                        body: $0)
                })
            #expect(responses.map(\.status) == [200, 200, 200])
            var received: [DeliveredNotification] = []
            for await n in device.notifications {
                received.append(n)
                if received.count == 3 { break }
            }
            #expect(received.map(\.payload) == bodies)
            #expect(received.map(\.apnsID) == responses.compactMap { $0.header("apns-id") })
            #expect(received.allSatisfy { $0.priority == 5 && $0.environment == .sandbox })
            #expect(received.map(\.sequence) == received.map(\.sequence).sorted())
        }
    }

    @Test("The delivery log is a bounded ring buffer")
    func ringBuffer() async throws {
        let clock = ManualWallClock(Date())
        var configuration = Fixtures.configuration(clock: clock)
        configuration.deliveryLogCapacity = 3
        try await withMockServer(configuration: configuration) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let token = Fixtures.randomToken()
            let bodies = (1...5).map { #"{"aps":{},"n":\#($0)}"# }
            let (responses, _) = try await Curl.send(
                bodies.map { Curl.push(server.sandboxEndpoint, token: token, authorization: jwt, body: $0) })
            #expect(responses.count == 5)
            #expect(server.deliveries().map(\.payload) == Array(bodies.suffix(3)))
            #expect(server.deliveries(limit: 2).map(\.payload) == Array(bodies.suffix(2)))
        }
    }
}
