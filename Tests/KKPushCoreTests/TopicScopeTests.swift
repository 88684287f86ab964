import KKPushCore
import Testing

/// `TopicScope`: the one rule of a scope of bundle ids (credentials, the mock's keys and devices, diagnose): a bundle
/// id covers itself and itself plus a documented push-type suffix, nothing else.
@Suite("Topic scope: which topics a bundle id covers")
struct TopicScopeTests {
    static let bundle = "nl.kantinekoning.app"

    @Test("The bundle id and each documented push-type suffix of PushType are covered")
    func documentedSuffixes() {
        #expect(TopicScope.covers(bundleID: Self.bundle, topic: Self.bundle))
        #expect(PushType.knownTopicSuffixes.count == 8)
        for type in PushType.allCases {
            let topic = type.topic(forBundleID: Self.bundle)
            #expect(TopicScope.covers(bundleID: Self.bundle, topic: topic), "\(type): \(topic)")
        }
        for suffix in [
            ".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity", ".location-query",
            ".voip-ptt", ".push-type.widgets", ".push-type.controls",
        ] {
            #expect(TopicScope.covers(bundleID: Self.bundle, topic: Self.bundle + suffix), "\(suffix)")
        }
    }

    @Test(
        "Any other <bundle id>.X (an extension's own bundle id), another app, and an empty topic are not covered",
        arguments: [
            "nl.kantinekoning.app.widget", "nl.kantinekoning.app.NotificationService", "nl.kantinekoning.app.",
            "nl.kantinekoning.app.voip.x", "nl.kantinekoning.app.widget.voip", "nl.kantinekoning.appx",
            "nl.kantinekoning", "nl.voetbal.app", "", "NL.KANTINEKONING.APP", "nl.kantinekoning.app.VOIP",
        ])
    func notCovered(_ topic: String) {
        #expect(!TopicScope.covers(bundleID: Self.bundle, topic: topic), "\(topic)")
        #expect(!TopicScope.covers(anyOf: [Self.bundle, "nl.kantine"], topic: topic), "\(topic)")
    }

    @Test("An empty bundle id covers nothing, not even an empty topic; an empty list covers nothing")
    func emptyScope() {
        #expect(!TopicScope.covers(bundleID: "", topic: ""))
        #expect(!TopicScope.covers(bundleID: "", topic: ".voip"))
        #expect(!TopicScope.covers(anyOf: [String](), topic: Self.bundle))
        #expect(!TopicScope.covers(anyOf: [Self.bundle], topic: ""))
        #expect(TopicScope.covers(anyOf: ["nl.voetbal.app", Self.bundle], topic: Self.bundle + ".voip"))
    }
}
