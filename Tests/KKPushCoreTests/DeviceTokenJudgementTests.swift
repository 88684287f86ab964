import KKPushCore
import Testing

/// `DeviceToken.judge`: the one judgement of a token that `audit`, `diagnose`, `send` and the mock share.
@Suite("Device token judgement")
struct DeviceTokenJudgementTests {
    static let lower = String(repeating: "ab12", count: 16)

    @Test("Lowercase hex is clean; uppercase is the same token, a warning (token-uppercase), sent lowercased")
    func uppercaseIsAWarning() {
        #expect(DeviceToken.judge(Self.lower).form == .clean)
        #expect(DeviceToken.judge(Self.lower).severity == nil)
        let upper = DeviceToken.judge(Self.lower.uppercased())
        #expect(upper.form == .uppercase)
        #expect(upper.severity == .warning)
        #expect(upper.token == Self.lower)
        #expect(upper.problems.map(\.code.rawValue) == ["token-uppercase"])
        #expect(DeviceToken.canonical(Self.lower.uppercased()) == Self.lower)
    }

    @Test("The request rules (send, send-batch, the mock) warn about uppercase with the same problem")
    func requestRulesShareTheProblem() {
        let request = NotificationRequest(
            deviceToken: Self.lower.uppercased(), topic: "nl.kantinekoning.app", pushType: .alert,
            payload: Array(#"{"aps":{}}"#.utf8))
        let check = APNsRequestRules.checkTopicAndToken(
            request, topicRequired: true, allowedTopics: nil, usingCertificate: false)
        #expect(check.problems.contains(DeviceToken.uppercaseProblem))
        #expect(check.rejection == nil)
    }

    @Test("Decorated and unusable values are errors")
    func decoratedAndUnusable() {
        let decorated = DeviceToken.judge("<\(Self.lower.prefix(8)) \(Self.lower.dropFirst(8))>")
        #expect(decorated.form == .decorated)
        #expect(decorated.severity == .error)
        let short = DeviceToken.judge("abc")
        #expect(short.form == .unusable)
        #expect(short.token == nil)
        #expect(short.severity == .error)
    }

    @Test("A value too short to be a token is shown as it is; a token only by its prefix")
    func redaction() {
        #expect(DeviceToken.redacted("abc") == "abc")
        #expect(DeviceToken.redacted("a\u{7}b") == "aU+0007b")
        #expect(DeviceToken.redacted(Self.lower) == String(Self.lower.prefix(12)) + "…")
        #expect(!DeviceToken.redacted(Self.lower).contains(Self.lower))
    }
}
