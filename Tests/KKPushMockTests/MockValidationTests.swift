import Foundation
import KKPushCore
import KKPushMock
import Testing

/// A request that breaks one rule, and what APNs answers.
struct RuleCase: CustomTestStringConvertible, Sendable {
    var name: String
    var status: Int
    var reason: String
    var method = "POST"
    var path: String? = nil
    var topic: String? = Fixtures.topic
    var pushType: String? = "alert"
    var headers: [String] = []
    var body: String? = Fixtures.payload
    var testDescription: String { "\(name) → \(status) \(reason)" }
}

@Suite("Validation with the shared rules, in the documented order")
struct MockValidationTests {
    static let cases: [RuleCase] = [
        RuleCase(name: "path not /3/device", status: 404, reason: "BadPath", path: "/3/devices/abc"),
        RuleCase(name: "GET", status: 405, reason: "MethodNotAllowed", method: "GET", body: nil),
        RuleCase(name: "no token", status: 400, reason: "MissingDeviceToken", path: "/3/device/"),
        RuleCase(
            name: "apns-priority twice", status: 400, reason: "DuplicateHeaders",
            headers: ["apns-priority: 10", "apns-priority: 5"]),
        RuleCase(name: "apns-id not a UUID", status: 400, reason: "BadMessageId", headers: ["apns-id: not-a-uuid"]),
        RuleCase(name: "priority 7", status: 400, reason: "BadPriority", headers: ["apns-priority: 7"]),
        RuleCase(
            name: "expiration text", status: 400, reason: "BadExpirationDate", headers: ["apns-expiration: tomorrow"]),
        RuleCase(
            name: "collapse id 65 bytes", status: 400, reason: "BadCollapseId",
            headers: ["apns-collapse-id: " + String(repeating: "c", count: 65)]),
        RuleCase(name: "push type unknown", status: 400, reason: "InvalidPushType", pushType: "banner"),
        RuleCase(name: "no topic", status: 400, reason: "MissingTopic", topic: nil),
        RuleCase(name: "voip without suffix", status: 400, reason: "BadTopic", pushType: "voip"),
        RuleCase(
            name: "token not hex", status: 400, reason: "BadDeviceToken",
            path: "/3/device/" + String(repeating: "zz", count: 32)),
        RuleCase(name: "token truncated", status: 400, reason: "BadDeviceToken", path: "/3/device/abcd"),
        RuleCase(name: "empty body", status: 400, reason: "PayloadEmpty", body: nil),
        RuleCase(name: "body not JSON", status: 400, reason: "PayloadEmpty", body: "hello"),
        RuleCase(
            name: "4097 bytes", status: 413, reason: "PayloadTooLarge",
            body: #"{"aps":{"alert":""# + String(repeating: "x", count: 4097) + #""}}"#),
    ]

    @Test("Each rule answers with its reason", arguments: cases)
    func rule(_ c: RuleCase) async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            var request = Curl.push(
                server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt, topic: c.topic,
                pushType: c.pushType, headers: c.headers, body: c.body)
            request.method = c.method
            if let path = c.path { request.url = server.sandboxEndpoint.baseURL + path }
            let r = try await Curl.one(request)
            #expect(r.status == c.status)
            #expect(r.reason == c.reason)
            #expect(server.deliveries().isEmpty)
        }
    }

    @Test("A 5120-byte voip payload is accepted; 4096 is the alert limit")
    func voipLimit() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let prefix = #"{"aps":{},"x":""#
            let body = prefix + String(repeating: "v", count: 5120 - prefix.count - 2) + #""}"#
            #expect(body.utf8.count == 5120)
            let r = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: jwt,
                    topic: Fixtures.topic + ".voip", pushType: "voip", body: body))
            #expect(r.status == 200)
        }
    }

    @Test("A body far over the limit is answered 413 before it ends; the connection goes on")
    func hugeBody() async throws {
        let clock = ManualWallClock(Date())
        try await withMockServer(configuration: Fixtures.configuration(clock: clock)) { server in
            let jwt = try Fixtures.token(issuedAt: clock.now())
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "kkpush-mock-big-\(UUID().uuidString).json")
            try Data((#"{"aps":{},"x":""# + String(repeating: "x", count: 300_000) + #""}"#).utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let token = Fixtures.randomToken()
            let (responses, _) = try await Curl.send([
                Curl.push(server.sandboxEndpoint, token: token, authorization: jwt, body: "@" + file.path),
                Curl.push(server.sandboxEndpoint, token: token, authorization: jwt),
            ])
            // curl stops reading a response once it sees a 4xx before it has sent everything
            // ("HTTP error before end of send"), so only the status is checked here.
            #expect(responses.map(\.status) == [413, 200])
            #expect(responses.last?.newConnection == false)
            #expect(server.deliveries().count == 1)
        }
    }

    @Test("Route errors come before authentication; header errors too")
    func order() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            // No authorization at all, and a bad path: the path wins.
            var request = Curl.push(server.sandboxEndpoint, token: "x", authorization: nil)
            request.url = server.sandboxEndpoint.baseURL + "/4/nothing"
            #expect(try await Curl.one(request).reason == "BadPath")
            // No authorization, and a bad priority: the header syntax wins.
            let r = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil,
                    headers: ["apns-priority: 3"]))
            #expect(r.reason == "BadPriority")
            // Authentication before topic: no authorization and no topic → MissingProviderToken.
            let r2 = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil, topic: nil))
            #expect(r2.reason == "MissingProviderToken")
        }
    }
}
