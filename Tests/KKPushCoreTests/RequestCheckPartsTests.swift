import KKPushCore
import Testing

/// `APNsRequestRules.check(_:authentication:judging:)`: the pre-flight is the check of every part, and a check
/// of some parts (what `kkpush diagnose` knows) says the same about those parts.
@Suite("Request rules on the known parts")
struct RequestCheckPartsTests {
    static let token = String(repeating: "ab", count: 32)

    static let requests: [NotificationRequest] = [
        NotificationRequest(
            deviceToken: token, topic: "nl.kantinekoning.app", pushType: PushType("backgroud"),
            payload: Array(#"{"aps":{}}"#.utf8)),
        NotificationRequest(
            deviceToken: token, topic: "nl.kantinekoning.app", pushType: .alert, priority: 7,
            payload: Array(#"{"aps":{"alert":"x"}}"#.utf8)),
        NotificationRequest(
            deviceToken: token, topic: "nl.kantinekoning.app", pushType: .voip, expiration: -1,
            payload: Array(#"{"aps":{}}"#.utf8)),
        NotificationRequest(
            deviceToken: token, topic: "nl.kantinekoning.app", pushType: .background, priority: 5,
            collapseID: String(repeating: "c", count: 65), payload: []),
        NotificationRequest(deviceToken: "xyz", topic: nil, pushType: .alert, payload: Array("{}".utf8)),
    ]

    @Test("every part known: the same verdict as the pre-flight", arguments: requests)
    func allParts(_ request: NotificationRequest) {
        for auth in [
            AuthenticationKind.token, .certificate(topics: ["nl.kantinekoning.app"]), .certificate(topics: nil),
        ] {
            #expect(
                APNsRequestRules.check(request, authentication: auth, judging: .all)
                    == APNsRequestRules.preflight(request, authentication: auth))
        }
    }

    @Test(
        "header values only: the header errors of the pre-flight, nothing about token, topic or payload",
        arguments: requests)
    func headersOnly(_ request: NotificationRequest) {
        let partial = APNsRequestRules.check(request, authentication: .token, judging: [])
        let full = APNsRequestRules.preflight(request, authentication: .token)
        let headerCodes: Set<String> = [
            "BadMessageId", "BadPriority", "BadExpirationDate", "BadCollapseId", "InvalidPushType",
        ]
        #expect(partial.errors.map(\.code) == full.errors.map(\.code).filter { headerCodes.contains($0.rawValue) })
    }

    @Test("the topic part adds MissingTopic and BadTopic, as the pre-flight")
    func topicPart() {
        let voip = NotificationRequest(deviceToken: "", topic: "nl.kantinekoning.app", pushType: .voip, payload: [])
        #expect(
            APNsRequestRules.check(voip, authentication: .token, judging: .topic).errors.map(\.code.rawValue) == [
                "BadTopic"
            ])
        #expect(APNsRequestRules.check(voip, authentication: .token, judging: []).errors.isEmpty)
        let none = NotificationRequest(deviceToken: "", topic: nil, pushType: .alert, payload: [])
        #expect(
            APNsRequestRules.check(none, authentication: .token, judging: .topic).errors.map(\.code.rawValue) == [
                "MissingTopic"
            ]
        )
    }
}
