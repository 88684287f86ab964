import KKPushCore
import KKPushTestSupport
import PropertyBased
import Testing

private let text = Gen.letterOrNumber.string(of: 0...20)
private let unicodeText = Gen.unicodeScalar(in: "\u{0}"..."\u{2FF}").array(of: 0...12).map { scalars in
    String(String.UnicodeScalarView(scalars))
}

/// Random payloads built with the model.
private let payloads = zip(
    text.optional, unicodeText.optional, Gen.int(in: 0...999).optional, Gen.bool,
    Gen.double(in: 0...1).optional, Gen.element(of: ["k1", "tenant", "dienst_id", "deep_link", "x"]).array(of: 0...4)
).map { (input: (String?, String?, Int?, Bool, Double?, [String?])) -> Payload in
    let (title, body, badge, background, score, optionalKeys) = input
    let keys = optionalKeys.compactMap { $0 }
    var aps = APS()
    if background {
        aps.contentAvailable = true
    } else {
        aps.alert = .fields(APSAlert.Fields(title: title, body: body))
        aps.badge = badge
        aps.relevanceScore = score
        aps.sound = badge.map { $0 % 2 == 0 ? .default : .critical(name: "alarm.caf", volume: score) }
    }
    var payload = Payload(aps: aps)
    for (index, key) in keys.enumerated() {
        let value: JSONValue = index % 2 == 0 ? JSONValue.string(body ?? "") : JSONValue.int(badge ?? index)
        payload.setCustom(key, value)
    }
    return payload
}

/// Random JSON values, three levels deep.
private let scalars = Gen<JSONValue>.oneOf(
    Gen<JSONValue>.always(.null).eraseToAny(),
    Gen.bool.map(JSONValue.bool).eraseToAny(),
    Gen.int(in: -1_000_000...1_000_000).map(JSONValue.int).eraseToAny(),
    Gen.double(in: -1e6...1e6).map(JSONValue.double).eraseToAny(),
    unicodeText.map(JSONValue.string).eraseToAny()
)
private let level1 = Gen<JSONValue>.oneOf(
    scalars.eraseToAny(),
    scalars.array(of: 0...4).map(JSONValue.array).eraseToAny(),
    zip(text, scalars).array(of: 0...4).map { pairs in
        JSONValue.object(Dictionary(pairs, uniquingKeysWith: { a, _ in a }))
    }.eraseToAny()
)
private let jsonValues = zip(text, level1).array(of: 0...4).map { pairs in
    JSONValue.object(Dictionary(pairs, uniquingKeysWith: { a, _ in a }))
}

@Suite("Payload model and JSON")
struct PayloadModelAndJSONTests {
    @Test("built payloads always parse back to the same payload, and pass the rules")
    func builderOutputParses() async throws {
        await propertyCheck(count: 200, input: payloads) { payload in
            let bytes = payload.encoded()
            let parsed = try Payload(parsing: bytes)
            #expect(parsed == payload)
            #expect(parsed.encoded() == bytes)
            let request = NotificationRequest(
                deviceToken: token64, topic: bundleID, pushType: payload.suggestedPushType,
                priority: payload.suggestedPushType == .background ? 5 : 10, payload: bytes)
            let check = APNsRequestRules.preflight(request, authentication: .token)
            #expect(check.isValid, "\(check.problems)")
        }
    }

    @Test("the size is the count of exactly the bytes sent")
    func sizeIsExactBytes() async {
        await propertyCheck(input: payloads) { payload in
            let bytes = payload.encoded()
            #expect(payload.size == bytes.count)
            #expect(payload.size == Array(payload.jsonString.utf8).count)
            let request = NotificationRequest(deviceToken: token64, payload: bytes)
            #expect(request.payload.count == payload.size)
        }
    }

    @Test("JSON values survive encode → parse")
    func jsonRoundTrip() async throws {
        await propertyCheck(count: 200, input: jsonValues) { value in
            let parsed = try JSONValue.parse(value.encoded())
            #expect(parsed == value)
        }
    }

    @Test("the encoding is compact, aps first, custom keys in insertion order, slashes and non-ASCII unescaped")
    func exactEncoding() {
        var payload = Payload.alert(title: "Dienst", body: "Zaterdag 10:00 – kantine/bar")
        payload.aps?.badge = 2
        payload.aps?.sound = .critical(name: "default", volume: 0.5)
        payload.aps?.threadID = "vv-oranje"
        payload.aps?.interruptionLevel = .timeSensitive
        payload.setCustom("z", .int(1))
        payload.setCustom("a", .object(["y": .bool(true), "b": .null]))
        payload.setCustom("z", .string("again"))  // replaces in place
        #expect(
            payload.jsonString
                == #"{"aps":{"alert":{"title":"Dienst","body":"Zaterdag 10:00 – kantine/bar"},"badge":2,"sound":{"critical":1,"name":"default","volume":0.5},"thread-id":"vv-oranje","interruption-level":"time-sensitive"},"z":"again","a":{"b":null,"y":true}}"#
        )
        #expect(payload.size == payload.jsonString.utf8.count)
    }

    @Test("control characters and quotes are escaped")
    func escaping() throws {
        let value = JSONValue.string("a\"b\\c\nd\u{1}")
        #expect(value.description == #""a\"b\\c\nd\u0001""#)
        #expect(try JSONValue.parse(value.encoded()) == value)
    }

    @Test(
        "invalid JSON is refused with the byte offset",
        arguments: [
            "", "   ", "{", "{\"a\":}", "{\"a\":1,}", "[1,]", "{'a':1}", "NaN", "01", "1.", "\"\u{1}\"", "{\"a\":1} x",
            "\"\\ud800\"", "tru", "{\"a\" 1}",
        ])
    func invalidJSON(_ text: String) {
        #expect(throws: KKPushError.self) { try JSONValue.parse(text) }
        do throws(KKPushError) {
            _ = try JSONValue.parse(text)
        } catch {
            #expect(error.code.rawValue == "payload-not-json")
            #expect(error.message.contains("at byte"))
        }
    }

    @Test("deep nesting is refused, not a crash")
    func deepNesting() {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: KKPushError.self) { try JSONValue.parse(text) }
    }

    @Test("integers and decimals stay apart; unicode escapes decode")
    func numbersAndEscapes() throws {
        #expect(try JSONValue.parse("1") == .int(1))
        #expect(try JSONValue.parse("1.0") == .double(1))
        #expect(try JSONValue.parse("-2e3") == .double(-2000))
        #expect(try JSONValue.parse(#""\u00e9\ud83d\ude00""#) == .string("é😀"))
    }

    @Test("parsing keeps unexpected values in extra, so nothing is lost")
    func lossless() throws {
        let text =
            #"{"aps":{"alert":{"title":"x","action":"y"},"badge":"3","content-available":true,"url-args":["a"]},"b":1,"a":2}"#
        let payload = try Payload(parsing: text)
        #expect(payload.aps?.badge == nil)
        #expect(payload.aps?.extra["badge"] == .string("3"))
        #expect(payload.aps?.extra["content-available"] == .bool(true))
        #expect(payload.custom.map(\.key) == ["b", "a"])
        let reparsed = try Payload(parsing: payload.encoded())
        #expect(reparsed == payload)
    }

    @Test("a payload that is not an object, or whose aps is not a dictionary, is refused")
    func notAnObject() {
        #expect(throws: KKPushError.self) { try Payload(parsing: "[]") }
        #expect(throws: KKPushError.self) { try Payload(parsing: #"{"aps":"x"}"#) }
    }

    @Test("push types: suffixes, limits, token-only")
    func pushTypes() {
        #expect(PushType.allCases.count == 11)
        #expect(PushType.allCases.allSatisfy { $0.isKnown })
        #expect(!PushType("sms").isKnown)
        #expect(PushType.voip.payloadLimit == 5120)
        #expect(PushType.alert.payloadLimit == 4096)
        #expect(PushType.mdm.topicSuffix == nil)
        #expect(PushType.background.topicSuffix == "")
        #expect(PushType.pushtotalk.topic(forBundleID: bundleID) == bundleID + ".voip-ptt")
        #expect(PushType.implied(byTopic: bundleID + ".voip-ptt") == .pushtotalk)
        #expect(PushType.implied(byTopic: bundleID + ".voip") == .voip)
        #expect(PushType.implied(byTopic: bundleID) == nil)
        #expect(PushType.allCases.filter { $0.requiresTokenAuth } == [.liveactivity, .location])
        #expect(APNsPriority.allCases.map(\.rawValue).sorted() == [1, 5, 10])
        #expect(!APNsPriority(7).isValid)
    }
}
