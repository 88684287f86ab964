import KKPushCore
import KKPushTestSupport
import PropertyBased
import Testing

private let hexBytes = Gen.uint8(in: 0...255).array(of: 32...64).map { bytes in
    bytes.map { byte -> String in
        let text = String(byte, radix: 16)
        return text.count == 1 ? "0" + text : text
    }.joined()
}
private let uuids = Gen.element(of: Array("0123456789abcdef")).array(of: 32).map { chars -> String in
    let s = String(chars.compactMap { $0 })
    let parts = [
        s.prefix(8), s.dropFirst(8).prefix(4), s.dropFirst(12).prefix(4), s.dropFirst(16).prefix(4), s.dropFirst(20),
    ]
    return parts.joined(separator: "-")
}

/// Valid requests of every push type, with random optional headers.
private let validRequests = zip(
    hexBytes, Gen.case as Generator<PushType, _>, Gen.element(of: [1, 5, 10]).optional,
    Gen.int(in: 0...2_000_000_000).optional,
    Gen.letterOrNumber.string(of: 0...64).optional, uuids.optional
).map { (input: (String, PushType, Int??, Int?, String?, String?)) -> NotificationRequest in
    let (token, type, priority, expiration, collapse, id) = input
    return NotificationRequest(
        deviceToken: token, topic: type.topic(forBundleID: bundleID), pushType: type,
        priority: type == .background ? 5 : priority.flatMap { $0 }, expiration: expiration, collapseID: collapse,
        apnsID: id, payload: Array(#"{"aps":{"content-available":1}}"#.utf8))
}

/// Arbitrary, mostly broken, received requests.
private let junkRequests = zip(
    Gen.element(of: ["POST", "GET", "post", ""]), Gen.ascii.string(of: 0...30),
    zip(
        Gen.element(of: [
            "apns-id", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-push-type", "apns-topic", "x",
        ]),
        Gen.ascii.string(of: 0...70)
    ).array(of: 0...6),
    Gen.uint8(in: 0...255).array(of: 0...40)
).map { (input: (String?, String, [(String?, String)], [UInt8])) -> ReceivedRequest in
    let (method, pathTail, headers, body) = input
    return ReceivedRequest(
        method: method ?? "POST", path: "/3/device/" + pathTail,
        headers: headers.map { (name: $0.0 ?? "x", value: $0.1) }, body: body)
}

@Suite("APNs request rules: properties")
struct RulesPropertyTests {
    @Test("a valid request goes over the wire and parses back to itself, accepted")
    func wireRoundTrip() async throws {
        await propertyCheck(count: 300, input: validRequests) { request in
            let (parsed, check) = APNsRequestRules.checkRequestLine(ReceivedRequest(request))
            #expect(parsed == request)
            #expect(check.problems.isEmpty)
            let preflight = APNsRequestRules.preflight(request, authentication: .token)
            #expect(preflight.isValid, "\(preflight.problems)")
            #expect(preflight.rejection == nil)
        }
    }

    @Test("any input gets a verdict, never a crash; the rejection is the first error, errors are APNs reasons")
    func anyInputJudged() async {
        await propertyCheck(count: 500, input: junkRequests) { received in
            let (request, check) = APNsRequestRules.checkRequestLine(received)
            #expect((check.rejection == nil) == !check.problems.hasErrors)
            #expect(check.rejection?.reason.rawValue == check.errors.first?.code.rawValue)
            #expect((request == nil) == (check.rejection != nil))
            if let request {
                for stage in [
                    APNsRequestRules.checkTopicAndToken(
                        request, topicRequired: true, allowedTopics: nil, usingCertificate: false),
                    APNsRequestRules.checkPayload(request),
                ] {
                    #expect(stage.rejection?.reason.rawValue == stage.errors.first?.code.rawValue)
                    #expect(stage.errors.allSatisfy { APNsReason($0.code.rawValue).isKnown })
                    if let rejection = stage.rejection { #expect(rejection.status == rejection.reason.status) }
                }
            }
        }
    }
}
