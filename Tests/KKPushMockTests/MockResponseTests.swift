import Foundation
import KKPushAuth
import KKPushCore
import KKPushMock
import Testing

@Suite("Responses as APNs sends them")
struct MockResponseTests {
    @Test(
        "200 on both environments: apns-id echoed, apns-unique-id only in the sandbox",
        arguments: APNsEnvironment.allCases)
    func accepted(environment: APNsEnvironment) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let device = server.mintDevice(environment: environment, topic: Fixtures.topic)
            let id = "123E4567-E89B-12D3-A456-4266554400A0"
            let token = try Fixtures.token(issuedAt: clock.now())
            let r = try await Curl.one(
                Curl.push(
                    server.endpoint(environment), token: device.token, authorization: token, headers: ["apns-id: \(id)"]
                ))
            #expect(r.status == 200)
            #expect(r.header("apns-id") == id.lowercased())
            #expect(r.body.isEmpty)
            #expect(r.header("content-type") == nil)
            let unique = r.header("apns-unique-id")
            if environment == .sandbox {
                let u = try #require(unique)
                #expect(APNsRequestRules.isCanonicalUUID(u))
                #expect(server.delivery(apnsUniqueID: u)?.apnsID == id.lowercased())
            } else {
                #expect(unique == nil)
            }
            let logged = try #require(server.delivery(apnsID: id))
            #expect(logged.environment == environment)
            #expect(logged.token == device.token)
            #expect(logged.topic == Fixtures.topic)
            #expect(logged.pushType == "alert")
            #expect(logged.priority == 10)
            #expect(logged.payload == Fixtures.payload)
        }
    }

    @Test("A new lowercase apns-id when the request has none")
    func generatedID() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let r = try await Curl.one(
                Curl.push(
                    server.productionEndpoint, token: Fixtures.randomToken(),
                    authorization: try Fixtures.token(issuedAt: clock.now())))
            #expect(r.status == 200)
            let id = try #require(r.header("apns-id"))
            #expect(APNsRequestRules.isCanonicalUUID(id))
            #expect(id == id.lowercased())
        }
    }

    @Test("Errors: content-type application/json, apns-id, {\"reason\"} body")
    func errorShape() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil))
            #expect(r.status == 403)
            #expect(r.header("content-type") == "application/json")
            #expect(r.header("apns-id").map(APNsRequestRules.isCanonicalUUID) == true)
            #expect(r.header("apns-unique-id") == nil)
            #expect(r.body == #"{"reason":"MissingProviderToken"}"#)
        }
    }

    @Test("Provider tokens with a DER signature are accepted as well as raw r‖s")
    func derSignature() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let der = try Fixtures.derToken(issuedAt: clock.now())
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: der))
            #expect(r.status == 200)
        }
    }

    @Test("Many requests share one connection")
    func connectionReuse() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let requests = (0..<5).map { _ in
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt)
            }
            let (responses, _) = try await Curl.send(requests)
            #expect(responses.map(\.status) == Array(repeating: 200, count: 5))
            #expect(responses.filter(\.newConnection).count == 1)
            #expect(server.deliveries().count == 5)
        }
    }
}
