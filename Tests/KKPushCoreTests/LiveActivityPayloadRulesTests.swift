import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// A Live Activity payload and what the shared rules must say about it.
struct LiveActivityCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    /// The code that must be reported (nil: none beyond infos).
    var code: String?
    /// Words the problem's message must contain.
    var words: String = ""
    /// The severity of `code`.
    var severity: Severity = .warning
    var priority: Int? = 5

    var testDescription: String { name }
}

/// UNIX seconds the cases use as "now" (dates relative to it; the rules see the real clock too, so it is recent).
private let now = LiveActivityRules.currentUnixSeconds()
private let start =
    #"{"aps":{"event":"start","timestamp":\#(now),"content-state":{"open":3},"attributes-type":"KantineAttributes","attributes":{"club":"vv-oranje"},"alert":{"title":"Dienst","body":"Begint"}}}"#
private let update = #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"open":2}}}"#
private let end = #"{"aps":{"event":"end","timestamp":\#(now),"content-state":{"open":0}}}"#

/// Valid payloads: no warnings, no errors.
let validLiveActivities: [LiveActivityCase] = [
    LiveActivityCase(name: "start with attributes and alert", json: start),
    LiveActivityCase(name: "update", json: update),
    LiveActivityCase(name: "end", json: end),
    LiveActivityCase(
        name: "end without content-state, dismissed at once (Apple's idiom: info only)",
        json: #"{"aps":{"event":"end","timestamp":\#(now),"dismissal-date":\#(now - 60)}}"#),
    LiveActivityCase(
        name: "update with stale-date, relevance 50 and an alert",
        json:
            #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"open":1},"stale-date":\#(now + 900),"relevance-score":50,"alert":{"title":"Bijna"}}}"#
    ),
    LiveActivityCase(
        name: "start asking for an update token (iOS 18)",
        json: start.replacingOccurrences(of: #""event":"start""#, with: #""event":"start","input-push-token":1"#)),
    LiveActivityCase(
        name: "start subscribing to a channel (iOS 18)",
        json: start.replacingOccurrences(
            of: #""event":"start""#, with: #""event":"start","input-push-channel":"dHN0LXNyY2gtY2hubA==""#)),
]

/// One mistake each, with the code and words that must name it.
let liveActivityMistakes: [LiveActivityCase] = [
    LiveActivityCase(
        name: "unknown event", json: #"{"aps":{"event":"begin","timestamp":\#(now),"content-state":{}}}"#,
        code: "liveactivity-event-unknown", words: "not start, update or end"),
    LiveActivityCase(
        name: "no event", json: #"{"aps":{"timestamp":\#(now),"content-state":{}}}"#,
        code: "liveactivity-missing-event", words: "no 'aps.event'"),
    LiveActivityCase(
        name: "update without content-state", json: #"{"aps":{"event":"update","timestamp":\#(now)}}"#,
        code: "liveactivity-missing-content-state", words: "Live Activity update has no 'aps.content-state'"),
    LiveActivityCase(
        name: "start without content-state",
        json: start.replacingOccurrences(of: #""content-state":{"open":3},"#, with: ""),
        code: "liveactivity-missing-content-state", words: "Live Activity start has no 'aps.content-state'"),
    LiveActivityCase(
        name: "content-state not an object",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":"3 open"}}"#,
        code: "aps-value-wrong-type", words: "'aps.content-state' is a string"),
    LiveActivityCase(
        name: "start without attributes",
        json: start.replacingOccurrences(of: #","attributes":{"club":"vv-oranje"}"#, with: ""),
        code: "liveactivity-start-incomplete", words: "lacks aps.attributes;"),
    LiveActivityCase(
        name: "start without attributes-type",
        json: start.replacingOccurrences(of: #""attributes-type":"KantineAttributes","#, with: ""),
        code: "liveactivity-start-incomplete", words: "lacks aps.attributes-type"),
    LiveActivityCase(
        name: "start without alert",
        json: start.replacingOccurrences(of: #","alert":{"title":"Dienst","body":"Begint"}"#, with: ""),
        code: "liveactivity-start-incomplete", words: "lacks aps.alert"),
    LiveActivityCase(
        name: "attributes on an update",
        json:
            #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"attributes-type":"A","attributes":{}}}"#,
        code: "liveactivity-start-only-key", words: "aps.attributes-type, aps.attributes, which only a start uses"),
    LiveActivityCase(
        name: "input-push-token on an end", json: #"{"aps":{"event":"end","timestamp":\#(now),"input-push-token":1}}"#,
        code: "liveactivity-start-only-key", words: "aps.input-push-token, which only a start uses"),
    LiveActivityCase(
        name: "input-push-channel on an update",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"input-push-channel":"abc"}}"#,
        code: "liveactivity-start-only-key", words: "aps.input-push-channel"),
    LiveActivityCase(
        name: "input-push-token true instead of 1",
        json: start.replacingOccurrences(of: #""event":"start""#, with: #""event":"start","input-push-token":true"#),
        code: "liveactivity-input-push-token-not-1", words: "not the number 1"),
    LiveActivityCase(
        name: "no timestamp", json: #"{"aps":{"event":"update","content-state":{}}}"#,
        code: "liveactivity-missing-timestamp", words: "Live Activity update has no 'aps.timestamp'"),
    LiveActivityCase(
        name: "timestamp in milliseconds",
        json: #"{"aps":{"event":"update","timestamp":\#(now * 1000),"content-state":{}}}"#,
        code: "liveactivity-timestamp-milliseconds", words: "timestamp is in milliseconds; APNs wants seconds"),
    LiveActivityCase(
        name: "timestamp as a string", json: #"{"aps":{"event":"update","timestamp":"\#(now)","content-state":{}}}"#,
        code: "aps-value-wrong-type", words: "'aps.timestamp' is a string"),
    LiveActivityCase(
        name: "stale-date before the timestamp",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"stale-date":\#(now - 10)}}"#,
        code: "liveactivity-stale-date-past", words: "before the timestamp"),
    LiveActivityCase(
        name: "stale-date in the past (no timestamp: against now)",
        json: #"{"aps":{"event":"update","content-state":{},"stale-date":1000}}"#,
        code: "liveactivity-stale-date-past", words: "before now"),
    LiveActivityCase(
        name: "stale-date in milliseconds",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"stale-date":\#(now * 1000)}}"#,
        code: "liveactivity-date-milliseconds", words: "'aps.stale-date'"),
    LiveActivityCase(
        name: "dismissal-date in the past on an update",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"dismissal-date":\#(now - 1)}}"#,
        code: "liveactivity-dismissal-date-past", words: "dismissed at once"),
    LiveActivityCase(
        name: "dismissal-date in the past on an end (info: Apple's way to dismiss at once)",
        json: #"{"aps":{"event":"end","timestamp":\#(now),"dismissal-date":\#(now - 1)}}"#,
        code: "liveactivity-dismissal-date-past", words: "dismissed at once", severity: .info),
    LiveActivityCase(
        name: "relevance-score as a string",
        json: #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{},"relevance-score":"high"}}"#,
        code: "aps-value-wrong-type", words: "'aps.relevance-score'"),
    LiveActivityCase(
        name: "priority 10: the hourly budget", json: update, code: "liveactivity-priority-budget",
        words: "hourly budget", severity: .info, priority: 10),
    LiveActivityCase(
        name: "no priority: APNs uses 10", json: update, code: "liveactivity-priority-budget",
        words: "APNs uses 10", severity: .info, priority: nil),
]

@Suite("Live Activity payload rules (shared by pre-flight, lint and the mock)")
struct LiveActivityPayloadRulesTests {
    static func request(_ json: String, priority: Int?) -> NotificationRequest {
        NotificationRequest(
            deviceToken: token64, topic: bundleID + ".push-type.liveactivity", pushType: .liveactivity,
            priority: priority, payload: Array(json.utf8))
    }

    @Test(
        "valid start, update and end: accepted by pre-flight, the mock's stages and lint, no warnings",
        arguments: validLiveActivities)
    func valid(_ item: LiveActivityCase) throws {
        let request = Self.request(item.json, priority: item.priority)
        let preflight = APNsRequestRules.preflight(request, authentication: .token)
        #expect(preflight.isValid)
        #expect(preflight.warnings.isEmpty, "\(preflight.warnings.map(\.code))")
        let received = ReceivedRequest(
            method: "POST", path: "/3/device/" + token64,
            headers: [
                ("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity"),
                ("apns-priority", "5"),
            ], body: Array(item.json.utf8))
        let (rejection, problems) = judgeLikeMock(received, authentication: .token)
        #expect(rejection == nil)
        #expect(!problems.contains { $0.severity >= .warning }, "\(problems.map(\.code))")
        let lint = PayloadLint.lint(PayloadFile(payload: Array(item.json.utf8)), priority: 5)
        #expect(lint.pushType == .liveactivity)  // assumed from aps.event
        #expect(lint.isValid)
        #expect(lint.check.warnings.isEmpty, "\(lint.check.warnings.map(\.code))")
    }

    @Test(
        "each mistake is named, with its code and words, and APNs's verdict (accepted) is kept",
        arguments: liveActivityMistakes)
    func mistake(_ item: LiveActivityCase) throws {
        let check = APNsRequestRules.checkPayload(Self.request(item.json, priority: item.priority))
        let code = try #require(item.code)
        let found = check.problems.filter { $0.code.rawValue == code }
        #expect(found.count == 1, "expected \(code) once, got \(check.problems.map(\.code))")
        let problem = try #require(found.first)
        #expect(problem.severity == item.severity)
        #expect(problem.message.contains(item.words), "\(problem.message)")
        // None of these is an APNs rejection on /3/device/: the device, not APNs, drops such pushes.
        #expect(check.isValid)
        #expect(check.rejection == nil)
        // Library texts name no CLI flags.
        for problem in check.problems {
            #expect(!problem.message.contains(" --") && !problem.fix.contains(" --"), "\(problem)")
        }
        // And lint says the same.
        let lint = PayloadLint.lint(
            PayloadFile(payload: Array(item.json.utf8)), pushType: .liveactivity, priority: item.priority)
        #expect(lint.check.problems.contains { $0.code.rawValue == code && $0.severity == item.severity })
    }

    @Test("the payload limit: 4096 bytes for a device push (413 PayloadTooLarge), noting broadcast's 5120")
    func payloadLimit() throws {
        let prefix = #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"note":""#
        let suffix = #""}}}"#
        func payload(_ size: Int) -> String {
            prefix + String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
        }
        let fits = APNsRequestRules.checkPayload(Self.request(payload(4096), priority: 5))
        #expect(fits.isValid)
        #expect(!fits.problems.contains { $0.code.rawValue == "liveactivity-broadcast-size" })
        let over = APNsRequestRules.checkPayload(Self.request(payload(4097), priority: 5))
        #expect(over.rejection?.description == "413 PayloadTooLarge")
        let note = try #require(over.problems.first { $0.code.rawValue == "liveactivity-broadcast-size" })
        #expect(note.severity == .info)
        #expect(note.message.contains("5120"))
        let huge = APNsRequestRules.checkPayload(Self.request(payload(5121), priority: 5))
        #expect(huge.rejection?.description == "413 PayloadTooLarge")
        #expect(!huge.problems.contains { $0.code.rawValue == "liveactivity-broadcast-size" })
        #expect(LiveActivityRules.devicePayloadLimit == PushType.liveactivity.payloadLimit)
    }

    @Test("Live Activity keys on an alert push are still flagged, and not judged as a Live Activity")
    func wrongPushType() {
        var request = Self.request(#"{"aps":{"alert":"Hoi","event":"update","timestamp":1}}"#, priority: 5)
        request.pushType = .alert
        request.topic = bundleID
        let check = APNsRequestRules.checkPayload(request)
        #expect(check.problems.map(\.code.rawValue).contains("liveactivity-keys-wrong-push-type"))
        #expect(!check.problems.contains { $0.code.rawValue == "liveactivity-missing-content-state" })
    }

    @Test("LiveActivityContent builds start, update and end payloads that read back the same")
    func model() throws {
        let start = LiveActivityContent.start(
            attributesType: "KantineAttributes", attributes: ["club": "vv-oranje"], contentState: ["open": 3],
            alert: .fields(APSAlert.Fields(title: "Dienst", body: "Begint")), timestamp: 1_800_000_000)
        #expect(
            Payload.liveActivity(start).jsonString
                == #"{"aps":{"alert":{"title":"Dienst","body":"Begint"},"content-state":{"open":3},"timestamp":1800000000,"event":"start","attributes-type":"KantineAttributes","attributes":{"club":"vv-oranje"}}}"#
        )
        var withToken = start
        withToken.inputPushToken = true
        withToken.relevanceScore = 50
        withToken.staleDate = 1_800_000_900
        for content in [
            start, withToken, .update(contentState: ["open": 2], timestamp: 1_800_000_001),
            .end(timestamp: 1_800_000_002, dismissalDate: 1_800_000_000),
        ] {
            let payload = Payload.liveActivity(content)
            #expect(payload.suggestedPushType == .liveactivity)
            let read = try Payload(parsing: payload.encoded())
            #expect(read.aps?.liveActivity == content)
        }
        #expect(LiveActivityContent.topic(forBundleID: bundleID) == bundleID + ".push-type.liveactivity")
        #expect(LiveActivityContent.pushType == .liveactivity)
        #expect(LiveActivityContent.tokenNote.contains("pushToStartTokenUpdates"))
        #expect(!LiveActivityContent.tokenNote.contains("--"))
    }
}

@Suite("payload lint --broadcast: the broadcast endpoint's rules, then the Live Activity ones")
struct BroadcastLintTests {
    static func lint(_ json: String, bundleID: String? = "nl.kantinekoning.app", priority: Int? = 5)
        -> PayloadLint.Result
    {
        PayloadLint.lintBroadcast(PayloadFile(payload: Array(json.utf8)), bundleID: bundleID, priority: priority)
    }

    @Test("an update and an end are valid, up to 5120 bytes (a device push stops at 4096)")
    func valid() {
        for json in [update, end] {
            let r = Self.lint(json)
            #expect(r.isValid && r.check.warnings.isEmpty, "\(r.check.problems)")
            #expect(r.limit == 5120 && r.pushType == .liveactivity)
        }
        let filler = String(repeating: "a", count: 4_800)
        let big = #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"x":"\#(filler)"}}}"#
        #expect(Self.lint(big).isValid)
        #expect(!Self.lint(big).check.problems.contains { $0.code.rawValue == "liveactivity-broadcast-size" })
        #expect(
            PayloadLint.lint(PayloadFile(payload: Array(big.utf8)), pushType: .liveactivity).check.rejection?.reason
                == .payloadTooLarge)
    }

    @Test("each mistake named: too large, no aps, empty, suffixed bundle id, bad priority, a start")
    func mistakes() {
        let huge =
            #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"x":"\#(String(repeating: "a", count: 5_200))"}}}"#
        #expect(Self.lint(huge).check.rejection == APNsRejection(status: 413, reason: .payloadTooLarge))
        #expect(Self.lint(#"{"event":"update"}"#).check.rejection?.reason == .badRequestPayload)
        #expect(Self.lint("  ").check.rejection?.reason == .payloadEmpty)
        let suffixed = Self.lint(update, bundleID: "nl.kantinekoning.app.push-type.liveactivity")
        #expect(suffixed.check.rejection?.reason == .topicDisallowed)
        #expect(Self.lint(update, priority: 7).check.rejection?.reason == .badPriority)
        let started = Self.lint(start)
        #expect(started.isValid)
        #expect(started.check.warnings.map(\.code.rawValue) == ["broadcast-start"])
        // The Live Activity rules still speak: a timestamp in milliseconds.
        let ms = #"{"aps":{"event":"update","timestamp":\#(now * 1000),"content-state":{}}}"#
        #expect(Self.lint(ms).check.warnings.contains { $0.code.rawValue == "liveactivity-timestamp-milliseconds" })
    }
}
