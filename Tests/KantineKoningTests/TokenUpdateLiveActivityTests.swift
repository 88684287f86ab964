import Foundation
import KKPushCore
import KantineKoning
import Testing

/// The `live_activity` part of the token-update contract (``LiveActivityTokens``): what is accepted, what is refused
/// with its JSON path, and the `null` push-to-start rotation, which is a finding and never an error.
@Suite("Token-update Live Activity tokens")
struct TokenUpdateLiveActivityTests {
    /// A valid body with `live_activity` set to `live` (JSON text).
    static func body(_ live: String) -> Data {
        Data(
            """
            {"token": "\(TokenUpdateFixtures.token(1))", "build_environment": "development", "app_version": "1.4.2",
             "hardware_identifier": "\(TokenUpdateFixtures.phoneA)", "live_activity": \(live)}
            """.utf8)
    }

    @Test("Push-to-start tokens, activity tokens and states decode; a null rotation is an info, not an error")
    func valid() throws {
        let pts = TokenUpdateFixtures.token(2)
        let act = TokenUpdateFixtures.token(3)
        let report = TokenUpdateRules.check(
            body: Self.body(
                """
                {"push_to_start_tokens": [{"attributes_type": "DienstAttributes", "token": "\(pts)"},
                                          {"attributes_type": "App.WedstrijdAttributes", "token": null}],
                 "activity_tokens": [{"activity_key": "dienst-vvwilhelmus-812", "activity_id": "5E1C",
                                      "attributes_type": "DienstAttributes", "token": "\(act.uppercased())"}],
                 "activity_states": [{"activity_key": "dienst-vvwilhelmus-700", "state": "dismissed"}]}
                """))
        #expect(report.valid, "\(report.problems)")
        let live = try #require(report.update?.liveActivity)
        #expect(
            live.pushToStartTokens == [
                .init(attributesType: "DienstAttributes", token: pts),
                .init(attributesType: "App.WedstrijdAttributes", token: nil),
            ])
        // Uppercase hex is accepted lowercased, with a warning naming the path.
        #expect(
            live.activityTokens == [
                .init(
                    activityKey: "dienst-vvwilhelmus-812", activityID: "5E1C", attributesType: "DienstAttributes",
                    token: act)
            ])
        #expect(live.activityStates == [.init(activityKey: "dienst-vvwilhelmus-700", state: .dismissed)])
        let null = try #require(report.problems.first { $0.code == .pushToStartTokenNull })
        #expect(null.severity == .info)
        #expect(null.message.contains("live_activity.push_to_start_tokens[1].token is null"))
        #expect(null.message.contains("keeps the stored push-to-start token of App.WedstrijdAttributes"))
        let upper = try #require(report.problems.first { $0.code == .tokenUppercase })
        #expect(upper.severity == .warning && upper.message.hasPrefix("live_activity.activity_tokens[0].token"))
        #expect(report.summaryLines.contains { $0.contains("2 push-to-start token(s) (1 null: kept, not stored)") })

        // The typed update round-trips through its JSON and the same checks.
        let update = try #require(report.update)
        let again = TokenUpdateRules.check(body: try update.jsonData())
        #expect(again.update == update)
        #expect(TokenUpdate.optionalFields.contains("live_activity"))
        // A missing token key is read as null (Swift's synthesized Encodable leaves a nil out).
        let missing = TokenUpdateRules.check(
            body: Self.body(#"{"push_to_start_tokens": [{"attributes_type": "DienstAttributes"}]}"#))
        #expect(missing.valid && missing.codes == ["push-to-start-token-null"])
        #expect(
            missing.update?.liveActivity?.pushToStartTokens == [.init(attributesType: "DienstAttributes", token: nil)])
    }

    /// One broken `live_activity` and the error code, path and words it must get.
    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var live: String
        var code: String
        var words: [String]
        var testDescription: String { name }
    }

    static let broken: [Broken] = [
        Broken(
            name: "not an object", live: "[]", code: "wrong-type",
            words: ["'live_activity' is an array, not an object"]),
        Broken(
            name: "description form",
            live: #"{"push_to_start_tokens": [{"attributes_type": "D", "token": "<ab cd>"}]}"#,
            code: "live-activity-token-invalid", words: ["live_activity.push_to_start_tokens[0].token is not a token"]),
        Broken(
            name: "short token",
            live: #"{"activity_tokens": [{"activity_key": "k", "attributes_type": "D", "token": "abcd"}]}"#,
            code: "live-activity-token-invalid", words: ["live_activity.activity_tokens[0].token", "truncated"]),
        Broken(
            name: "null activity token",
            live: #"{"activity_tokens": [{"activity_key": "k", "attributes_type": "D", "token": null}]}"#,
            code: "missing-field", words: ["'live_activity.activity_tokens[0].token' is missing"]),
        Broken(
            name: "type with a space", live: #"{"push_to_start_tokens": [{"attributes_type": "Dienst Attributes"}]}"#,
            code: "live-activity-type-invalid",
            words: ["live_activity.push_to_start_tokens[0].attributes_type \"Dienst Attributes\" is not a Swift type"]),
        Broken(
            name: "type missing", live: #"{"push_to_start_tokens": [{"token": null}]}"#, code: "missing-field",
            words: ["live_activity.push_to_start_tokens[0].attributes_type"]),
        Broken(
            name: "empty key", live: #"{"activity_states": [{"activity_key": "", "state": "ended"}]}"#,
            code: "live-activity-key-invalid", words: ["live_activity.activity_states[0].activity_key is empty"]),
        Broken(
            name: "long key",
            live:
                #"{"activity_states": [{"activity_key": "\#(String(repeating: "k", count: 201))", "state": "ended"}]}"#,
            code: "live-activity-key-invalid", words: ["is 201 bytes, more than 200"]),
        Broken(
            name: "key with a newline", live: #"{"activity_states": [{"activity_key": "a\nb", "state": "ended"}]}"#,
            code: "live-activity-key-invalid", words: ["not printable ASCII"]),
        Broken(
            name: "state active", live: #"{"activity_states": [{"activity_key": "k", "state": "active"}]}"#,
            code: "live-activity-state-invalid", words: ["live_activity.activity_states[0].state is \"active\""]),
        Broken(
            name: "camelCase list", live: #"{"pushToStartTokens": []}"#, code: "field-not-snake-case",
            words: ["'live_activity.pushToStartTokens'", "'push_to_start_tokens'"]),
        Broken(
            name: "list not an array", live: #"{"activity_tokens": {}}"#, code: "wrong-type",
            words: ["'live_activity.activity_tokens' is an object, not an array"]),
    ]

    @Test("A bad field is an error naming its JSON path and the fix", arguments: broken)
    func refused(_ c: Broken) throws {
        let report = TokenUpdateRules.check(body: Self.body(c.live))
        #expect(!report.valid, "\(c.name)")
        let p = try #require(report.problems.first { $0.code.rawValue == c.code }, "\(c.name): \(report.problems)")
        #expect(p.severity == .error)
        for word in c.words { #expect(p.message.contains(word), "\(c.name): \(p.message)") }
        #expect(!p.fix.isEmpty)
        // The device token's own fields are still judged: the body's other parts decode.
        #expect(report.update?.token == TokenUpdateFixtures.token(1))
    }

    @Test("The same attributes type twice: a warning, and the last one counts")
    func duplicate() throws {
        let a = TokenUpdateFixtures.token(5)
        let b = TokenUpdateFixtures.token(6)
        let report = TokenUpdateRules.check(
            body: Self.body(
                """
                {"push_to_start_tokens": [{"attributes_type": "D", "token": "\(a)"},
                                          {"attributes_type": "D", "token": "\(b)"}]}
                """))
        #expect(report.valid && report.codes == ["live-activity-duplicate"])
        #expect(report.update?.liveActivity?.pushToStartTokens == [.init(attributesType: "D", token: b)])
    }
}
