import KKPushCore
import KKPushTestSupport
import Testing

/// A request with several faults is answered with the one that comes first in the documented order.
struct OrderCase: Sendable, CustomTestStringConvertible {
    var faults: [String]
    var rule: RuleCase
    var expected: String
    var testDescription: String { faults.joined(separator: " + ") + " → " + expected }
}

private let base = RuleCase(name: "base")

let orderCases: [OrderCase] = [
    OrderCase(
        faults: ["GET", "bad path"],
        rule: base.with {
            $0.method = "GET"
            $0.path = "/4/device/x"
        }, expected: "404 BadPath"),
    OrderCase(
        faults: ["GET", "no token"],
        rule: base.with {
            $0.method = "GET"
            $0.path = "/3/device/"
        },
        expected: "405 MethodNotAllowed"),
    OrderCase(
        faults: ["no token", "duplicate topic"],
        rule: base.with {
            $0.path = "/3/device/"
            $0.headers.append(("apns-topic", "x"))
        },
        expected: "400 MissingDeviceToken"),
    OrderCase(
        faults: ["duplicate priority", "bad apns-id"],
        rule: base.with { $0.headers += [("apns-priority", "5"), ("apns-id", "nope")] },
        expected: "400 DuplicateHeaders"),
    OrderCase(
        faults: ["bad apns-id", "bad priority"], rule: base.header("apns-id", "nope").header("apns-priority", "3"),
        expected: "400 BadMessageId"),
    OrderCase(
        faults: ["bad priority", "bad expiration"],
        rule: base.header("apns-priority", "3").header("apns-expiration", "x"),
        expected: "400 BadPriority"),
    OrderCase(
        faults: ["bad expiration", "long collapse id"],
        rule: base.header("apns-expiration", "x").header("apns-collapse-id", String(repeating: "a", count: 100)),
        expected: "400 BadExpirationDate"),
    OrderCase(
        faults: ["long collapse id", "bad push type"],
        rule: base.header("apns-collapse-id", String(repeating: "a", count: 100)).header("apns-push-type", "sms"),
        expected: "400 BadCollapseId"),
    OrderCase(
        faults: ["bad push type", "no topic", "empty body"],
        rule: base.header("apns-push-type", "sms").header("apns-topic", nil).with { $0.body = [] },
        expected: "400 InvalidPushType"),
    OrderCase(
        faults: ["no topic", "bad token", "empty body"],
        rule: base.header("apns-topic", nil).with {
            $0.path = "/3/device/xyz"
            $0.body = []
        }, expected: "400 MissingTopic"),
    OrderCase(
        faults: ["topic suffix", "bad token"],
        rule: base.header("apns-topic", bundleID + ".voip").with { $0.path = "/3/device/xyz" }, expected: "400 BadTopic"
    ),
    OrderCase(
        faults: ["bad token", "empty body"],
        rule: base.with {
            $0.path = "/3/device/abc"
            $0.body = []
        },
        expected: "400 BadDeviceToken"),
    OrderCase(
        faults: ["too large", "not JSON"],
        rule: base.with { $0.body = Array(repeating: UInt8(ascii: "x"), count: 5000) }, expected: "413 PayloadTooLarge"),
]

@Suite("APNs request rules: stage order")
struct StageOrderTests {
    @Test("the first fault in the documented order wins", arguments: orderCases)
    func firstFaultWins(_ order: OrderCase) {
        let (rejection, _) = judgeLikeMock(order.rule.received, authentication: .token)
        #expect(rejection?.description == order.expected)
    }

    @Test("stages 1 and 2 report every fault, and reject with the first")
    func everyFaultReported() {
        let rule = base.with { $0.method = "DELETE" }.header("apns-id", "x").header("apns-priority", "2")
            .header("apns-expiration", "-5").header("apns-collapse-id", String(repeating: "z", count: 70))
            .header("apns-push-type", "fax")
        let (request, check) = APNsRequestRules.checkRequestLine(rule.received)
        #expect(request == nil)
        #expect(
            check.errors.map(\.code.rawValue) == [
                "MethodNotAllowed", "BadMessageId", "BadPriority", "BadExpirationDate", "BadCollapseId",
                "InvalidPushType",
            ])
        #expect(check.rejection == APNsRejection(status: 405, reason: .methodNotAllowed))
    }

    @Test("the preflight collects every stage, and rejects with the first")
    func preflightCollectsAllStages() {
        let request = NotificationRequest(
            deviceToken: "abc", topic: nil, pushType: .background, priority: 10,
            payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))
        let check = APNsRequestRules.preflight(request, authentication: .token)
        let codes = check.problems.map(\.code.rawValue)
        #expect(codes.contains("MissingTopic"))
        #expect(codes.contains("BadDeviceToken"))
        #expect(codes.contains("background-priority-10"))
        #expect(codes.contains("background-with-alert"))
        #expect(check.rejection == APNsRejection(.missingTopic))
        #expect(!check.isValid)
    }

    @Test("a parsed request carries every header value")
    func parsedRequest() throws {
        let received = ReceivedRequest(
            method: "POST", path: "/3/device/" + token64,
            headers: [
                ("APNS-Push-Type", "background"), ("apns-topic", bundleID), ("apns-priority", "5"),
                ("apns-expiration", "0"), ("apns-collapse-id", "dienst-4711"),
                ("apns-id", "123e4567-e89b-12d3-a456-4266554400a0"), ("authorization", "bearer x"),
            ], body: Array(#"{"aps":{"content-available":1}}"#.utf8))
        let (parsed, check) = APNsRequestRules.checkRequestLine(received)
        let request = try #require(parsed)
        #expect(check.problems.isEmpty)
        #expect(request.deviceToken == token64)
        #expect(request.pushType == .background)
        #expect(request.priority == 5)
        #expect(request.expiration == 0)
        #expect(request.collapseID == "dienst-4711")
        #expect(request.apnsID == "123e4567-e89b-12d3-a456-4266554400a0")
        #expect(request.path == "/3/device/" + token64)
        #expect(
            request.headerFields.map(\.name) == [
                "apns-id", "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id",
            ])
    }
}
