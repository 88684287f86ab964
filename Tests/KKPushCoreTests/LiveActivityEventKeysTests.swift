import KKPushCore
import Testing

/// The Live Activity event rules in their one place (`LiveActivityRules.eventKeys`): what each event needs and
/// allows, the same for a payload's `aps` (`payload lint`, the client's pre-flight) and a builder's inputs
/// (`payload build --live-activity`).
@Suite("LiveActivityRules: what each event needs and allows")
struct LiveActivityEventKeysTests {
    @Test("A start needs attributes-type, attributes, content-state and an alert; an update its content-state")
    func required() {
        #expect(
            LiveActivityRules.eventKeys(.start, present: { _ in false }).missing
                == ["attributes-type", "attributes", "content-state", "alert"])
        #expect(LiveActivityRules.eventKeys(.update, present: { _ in false }).missing == ["content-state"])
        #expect(LiveActivityRules.eventKeys(.end, present: { _ in false }).missing.isEmpty)
        #expect(LiveActivityRules.eventKeys(.start, present: { _ in true }).missing.isEmpty)
    }

    @Test("Start-only keys are a mistake on an update or an end, never on a start or an unknown event")
    func startOnly() {
        let all: (String) -> Bool = { _ in true }
        #expect(LiveActivityRules.eventKeys(.update, present: all).startOnly == LiveActivityRules.startOnlyKeys)
        #expect(
            LiveActivityRules.eventKeys(.end, present: { $0 == "input-push-token" }).startOnly == ["input-push-token"])
        #expect(LiveActivityRules.eventKeys(.start, present: all).startOnly.isEmpty)
        #expect(LiveActivityRules.eventKeys(LiveActivityEvent(rawValue: "begin"), present: all).startOnly.isEmpty)
    }

    @Test("The payload rules say what eventKeys says: a start lacking its keys, an end carrying a start's")
    func payloadRulesAgree() throws {
        let now = LiveActivityRules.currentUnixSeconds()
        func codes(_ aps: [String: JSONValue]) -> [String] {
            var check = RequestCheck()
            let request = NotificationRequest(
                deviceToken: String(repeating: "ab", count: 32), topic: "nl.kantinekoning.app.push-type.liveactivity",
                pushType: .liveactivity, priority: 5, payload: [])
            LiveActivityRules.check(aps, request: request, now: now, into: &check)
            return check.problems.map(\.code.rawValue)
        }
        let start = codes(["event": "start", "timestamp": .int(now)])
        #expect(start.contains("liveactivity-start-incomplete"))
        #expect(start.contains("liveactivity-missing-content-state"))
        let end = codes(["event": "end", "timestamp": .int(now), "attributes": [:]])
        #expect(end.contains("liveactivity-start-only-key"))
        let update = codes(["event": "update", "timestamp": .int(now), "content-state": [:]])
        #expect(!update.contains { $0.hasPrefix("liveactivity-missing") || $0 == "liveactivity-start-only-key" })
    }

    @Test("A UNIX time over 10^11 is milliseconds")
    func milliseconds() {
        #expect(LiveActivityRules.isMilliseconds(1_800_000_000_000))
        #expect(!LiveActivityRules.isMilliseconds(1_800_000_000))
    }
}
