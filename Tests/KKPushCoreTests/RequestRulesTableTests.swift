import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// One request and how APNs judges it.
struct RuleCase: Sendable, CustomTestStringConvertible {
    var name: String
    var method = "POST"
    var path = "/3/device/" + token64
    var headers: [(name: String, value: String)] = [
        ("apns-push-type", "alert"), ("apns-topic", bundleID), ("apns-priority", "10"),
    ]
    var body: [UInt8] = Array(#"{"aps":{"alert":{"title":"Dienst","body":"Zaterdag 10:00"}}}"#.utf8)
    var authentication: AuthenticationKind = .token
    /// `"400 BadPriority"`, or nil when APNs accepts it.
    var expected: String?
    /// Warning codes that must be among the problems.
    var warnings: [String] = []

    var testDescription: String { name }

    func with(_ change: (inout RuleCase) -> Void) -> RuleCase {
        var copy = self
        change(&copy)
        return copy
    }

    func header(_ name: String, _ value: String?) -> RuleCase {
        with { c in
            c.headers.removeAll { $0.name == name }
            if let value { c.headers.append((name, value)) }
        }
    }

    func json(_ text: String) -> RuleCase { with { $0.body = Array(text.utf8) } }

    var received: ReceivedRequest { ReceivedRequest(method: method, path: path, headers: headers, body: body) }
}

private let base = RuleCase(name: "alert with title and body")
private let background = RuleCase(
    name: "background dienst update",
    headers: [("apns-push-type", "background"), ("apns-topic", bundleID), ("apns-priority", "5")],
    body: Array(#"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vv-oranje","dienst_id":"4711"}"#.utf8)
)
private let uuid = "123e4567-e89b-12d3-a456-4266554400a0"

/// The table: each case judged as APNs would (status and reason), warnings where APNs accepts but it is wrong.
let ruleCases: [RuleCase] = [
    // Accepted.
    base,
    background,
    base.with { $0.name = "alert as a plain string" }.json(#"{"aps":{"alert":"Hoi"}}"#),
    base.with { $0.name = "priority 5" }.header("apns-priority", "5"),
    base.with { $0.name = "priority 1" }.header("apns-priority", "1"),
    base.with { $0.name = "no priority header (APNs uses 10)" }.header("apns-priority", nil),
    base.with { $0.name = "expiration 0" }.header("apns-expiration", "0"),
    base.with { $0.name = "expiration in 2027" }.header("apns-expiration", "1800000000"),
    base.with { $0.name = "apns-id lowercase UUID" }.header("apns-id", uuid),
    base.with { $0.name = "apns-id uppercase UUID" }.header("apns-id", uuid.uppercased()),
    base.with { $0.name = "collapse id of 64 bytes" }.header("apns-collapse-id", String(repeating: "c", count: 64)),
    base.with { $0.name = "unknown headers are ignored, and may repeat" }
        .with { $0.headers += [("accept", "*/*"), ("accept", "*/*"), ("content-type", "application/json")] },
    base.with {
        $0.name = "payload of exactly 4096 bytes"
        $0.body = alertPayload(ofSize: 4096)
    },
    RuleCase(
        name: "voip payload of 5120 bytes",
        headers: [("apns-push-type", "voip"), ("apns-topic", bundleID + ".voip"), ("apns-priority", "10")],
        body: alertPayload(ofSize: 5120)),
    RuleCase(
        name: "no push type, .voip topic: voip limit applies", headers: [("apns-topic", bundleID + ".voip")],
        body: alertPayload(ofSize: 5000), warnings: ["push-type-missing"]),
    RuleCase(
        name: "widgets push",
        headers: [("apns-push-type", "widgets"), ("apns-topic", bundleID + ".push-type.widgets")],
        body: Array(#"{"aps":{"content-changed":true}}"#.utf8)),
    RuleCase(
        name: "controls push",
        headers: [("apns-push-type", "controls"), ("apns-topic", bundleID + ".push-type.controls")],
        body: Array(#"{"aps":{"content-changed":true}}"#.utf8)),
    RuleCase(
        name: "live activity update",
        headers: [
            ("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity"),
            ("apns-priority", "10"),
        ],
        body: Array(#"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"open":3}}}"#.utf8)),
    RuleCase(
        name: "location push with a provider token",
        headers: [("apns-push-type", "location"), ("apns-topic", bundleID + ".location-query")],
        body: Array(#"{"aps":{}}"#.utf8)),
    RuleCase(
        name: "pushtotalk", headers: [("apns-push-type", "pushtotalk"), ("apns-topic", bundleID + ".voip-ptt")],
        body: Array(#"{"aps":{}}"#.utf8)),
    RuleCase(
        name: "complication",
        headers: [("apns-push-type", "complication"), ("apns-topic", bundleID + ".complication")],
        body: Array(#"{"aps":{"content-available":1}}"#.utf8)),
    RuleCase(
        name: "fileprovider",
        headers: [("apns-push-type", "fileprovider"), ("apns-topic", bundleID + ".pushkit.fileprovider")],
        body: Array(#"{"aps":{}}"#.utf8)),
    RuleCase(
        name: "mdm with any topic",
        headers: [("apns-push-type", "mdm"), ("apns-topic", "com.apple.mgmt.External.1234")],
        body: Array(#"{"mdm":"magic"}"#.utf8)),
    base.with {
        $0.name = "single-topic certificate, topic left out"
        $0.authentication = .certificate(topics: [bundleID])
    }
    .header("apns-topic", nil),
    base.with {
        $0.name = "certificate with its topic"
        $0.authentication = .certificate(topics: [bundleID, bundleID + ".voip"])
    },
    base.with {
        $0.name = "token of 160 hex digits"
        $0.path = "/3/device/" + String(repeating: "ab", count: 80)
    },
    base.with {
        $0.name = "uppercase token (accepted, warned)"
        $0.path = "/3/device/" + token64.uppercased()
        $0.warnings = ["token-uppercase"]
    },

    // Accepted, but wrong (warnings).
    background.with {
        $0.name = "background with priority 10"
        $0.warnings = ["background-priority-10"]
    }
    .header("apns-priority", "10"),
    background.with {
        $0.name = "background without apns-priority (APNs uses 10)"
        $0.warnings = ["background-priority-10"]
    }
    .header("apns-priority", nil),
    background.with {
        $0.name = "background with an alert"
        $0.warnings = ["background-with-alert"]
    }
    .json(#"{"aps":{"content-available":1,"alert":"Hoi","badge":2}}"#),
    background.with {
        $0.name = "background without content-available"
        $0.warnings = ["background-missing-content-available"]
    }
    .json(#"{"aps":{},"type":"dienst_update"}"#),
    base.with {
        $0.name = "no apns-push-type"
        $0.warnings = ["push-type-missing"]
    }.header("apns-push-type", nil),
    base.with {
        $0.name = "alert push that is really background"
        $0.warnings = ["push-type-mismatch"]
    }
    .json(#"{"aps":{"content-available":1}}"#),
    base.with {
        $0.name = "custom key inside aps"
        $0.warnings = ["custom-key-in-aps"]
    }
    .json(#"{"aps":{"alert":"Hoi","dienst_id":"4711"}}"#),
    base.with {
        $0.name = "content-available as a string"
        $0.warnings = ["content-available-not-1"]
    }
    .json(#"{"aps":{"alert":"Hoi","content-available":"1"}}"#),
    base.with {
        $0.name = "mutable-content without alert text"
        $0.warnings = ["mutable-content-without-alert"]
    }
    .json(#"{"aps":{"mutable-content":1,"badge":1}}"#),
    base.with {
        $0.name = "relevance-score above 1"
        $0.warnings = ["relevance-score-out-of-range"]
    }
    .json(#"{"aps":{"alert":"Hoi","relevance-score":2}}"#),
    base.with {
        $0.name = "unknown interruption level"
        $0.warnings = ["interruption-level-unknown"]
    }
    .json(#"{"aps":{"alert":"Hoi","interruption-level":"urgent"}}"#),
    base.with {
        $0.name = "critical sound volume 1.5"
        $0.warnings = ["sound-volume-out-of-range"]
    }
    .json(#"{"aps":{"alert":"Hoi","sound":{"critical":1,"name":"default","volume":1.5}}}"#),
    base.with {
        $0.name = "badge as a string"
        $0.warnings = ["badge-not-integer"]
    }
    .json(#"{"aps":{"alert":"Hoi","badge":"3"}}"#),
    base.with {
        $0.name = "no aps at all"
        $0.warnings = ["aps-missing"]
    }.json(#"{"type":"dienst_update"}"#),
    base.with {
        $0.name = "duplicate JSON key"
        $0.warnings = ["duplicate-json-key"]
    }
    .json(#"{"aps":{"alert":"a","alert":"b"}}"#),
    base.with {
        $0.name = "live activity keys on an alert push"
        $0.warnings = ["liveactivity-keys-wrong-push-type"]
    }
    .json(#"{"aps":{"alert":"Hoi","event":"update","timestamp":1}}"#),
    RuleCase(
        name: "live activity without timestamp",
        headers: [("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity")],
        body: Array(#"{"aps":{"event":"update","content-state":{"open":3}}}"#.utf8),
        warnings: ["liveactivity-missing-timestamp"]),
    RuleCase(
        name: "live activity timestamp in milliseconds",
        headers: [("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity")],
        body: Array(#"{"aps":{"event":"end","timestamp":1800000000000}}"#.utf8),
        warnings: ["liveactivity-timestamp-milliseconds"]),
    RuleCase(
        name: "live activity start without attributes",
        headers: [("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity")],
        body: Array(#"{"aps":{"event":"start","timestamp":1800000000,"content-state":{}}}"#.utf8),
        warnings: ["liveactivity-start-incomplete"]),
    RuleCase(
        name: "widgets without content-changed",
        headers: [("apns-push-type", "widgets"), ("apns-topic", bundleID + ".push-type.widgets")],
        body: Array(#"{"aps":{}}"#.utf8), warnings: ["widgets-missing-content-changed"]),

    // Stage 1: route and method.
    base.with {
        $0.name = "wrong path"
        $0.path = "/3/devices/" + token64
        $0.expected = "404 BadPath"
    },
    base.with {
        $0.name = "version 2 path"
        $0.path = "/2/device/" + token64
        $0.expected = "404 BadPath"
    },
    base.with {
        $0.name = "more after the token"
        $0.path = "/3/device/" + token64 + "/x"
        $0.expected = "404 BadPath"
    },
    base.with {
        $0.name = "query after the token"
        $0.path = "/3/device/" + token64 + "?a=b"
        $0.expected = "404 BadPath"
    },
    base.with {
        $0.name = "GET"
        $0.method = "GET"
        $0.expected = "405 MethodNotAllowed"
    },
    base.with {
        $0.name = "PUT"
        $0.method = "PUT"
        $0.expected = "405 MethodNotAllowed"
    },
    base.with {
        $0.name = "no token in the path"
        $0.path = "/3/device/"
        $0.expected = "400 MissingDeviceToken"
    },
    base.with {
        $0.name = "path /3/device"
        $0.path = "/3/device"
        $0.expected = "400 MissingDeviceToken"
    },

    // Stage 2: header syntax.
    base.with {
        $0.name = "apns-topic twice"
        $0.headers.append(("apns-topic", bundleID))
        $0.expected = "400 DuplicateHeaders"
    },
    base.with {
        $0.name = "authorization twice"
        $0.headers += [("authorization", "bearer a"), ("authorization", "bearer b")]
        $0.expected = "400 DuplicateHeaders"
    },
    base.with {
        $0.name = "apns-id not a UUID"
        $0.expected = "400 BadMessageId"
    }.header("apns-id", "dienst-4711"),
    base.with {
        $0.name = "apns-id without hyphens"
        $0.expected = "400 BadMessageId"
    }
    .header("apns-id", uuid.replacingOccurrences(of: "-", with: "")),
    base.with {
        $0.name = "apns-id with braces"
        $0.expected = "400 BadMessageId"
    }.header("apns-id", "{\(uuid)}"),
    base.with {
        $0.name = "priority 7"
        $0.expected = "400 BadPriority"
    }.header("apns-priority", "7"),
    base.with {
        $0.name = "priority 0"
        $0.expected = "400 BadPriority"
    }.header("apns-priority", "0"),
    base.with {
        $0.name = "priority high"
        $0.expected = "400 BadPriority"
    }.header("apns-priority", "high"),
    base.with {
        $0.name = "priority 05"
        $0.expected = "400 BadPriority"
    }.header("apns-priority", "05"),
    base.with {
        $0.name = "priority empty"
        $0.expected = "400 BadPriority"
    }.header("apns-priority", ""),
    base.with {
        $0.name = "expiration -1"
        $0.expected = "400 BadExpirationDate"
    }.header("apns-expiration", "-1"),
    base.with {
        $0.name = "expiration as a date"
        $0.expected = "400 BadExpirationDate"
    }
    .header("apns-expiration", "2027-01-15T10:00:00Z"),
    base.with {
        $0.name = "expiration with a fraction"
        $0.expected = "400 BadExpirationDate"
    }.header("apns-expiration", "1800000000.5"),
    base.with {
        $0.name = "collapse id of 65 bytes"
        $0.expected = "400 BadCollapseId"
    }
    .header("apns-collapse-id", String(repeating: "c", count: 65)),
    base.with {
        $0.name = "collapse id of 33 é (66 bytes, 33 characters)"
        $0.expected = "400 BadCollapseId"
    }
    .header("apns-collapse-id", String(repeating: "é", count: 33)),
    base.with {
        $0.name = "push type 'notification'"
        $0.expected = "400 InvalidPushType"
    }.header("apns-push-type", "notification"),
    base.with {
        $0.name = "push type 'Alert' (case matters)"
        $0.expected = "400 InvalidPushType"
    }.header("apns-push-type", "Alert"),
    base.with {
        $0.name = "push type empty"
        $0.expected = "400 InvalidPushType"
    }.header("apns-push-type", ""),

    // Stage 4: topic and token.
    base.with {
        $0.name = "no topic with a provider token"
        $0.expected = "400 MissingTopic"
    }.header("apns-topic", nil),
    base.with {
        $0.name = "empty topic with a provider token"
        $0.expected = "400 MissingTopic"
    }.header("apns-topic", ""),
    base.with {
        $0.name = "no topic, multi-topic certificate"
        $0.authentication = .certificate(topics: [bundleID, bundleID + ".voip"])
        $0.expected = "400 MissingTopic"
    }
    .header("apns-topic", nil),
    base.with {
        $0.name = "topic not the certificate's"
        $0.authentication = .certificate(topics: [bundleID])
        $0.expected = "400 BadTopic"
    }
    .header("apns-topic", "com.other.app"),
    base.with {
        $0.name = "alert to a .voip topic"
        $0.expected = "400 BadTopic"
    }.header("apns-topic", bundleID + ".voip"),
    base.with {
        $0.name = "voip to the plain bundle id"
        $0.expected = "400 BadTopic"
    }.header("apns-push-type", "voip"),
    base.with {
        $0.name = "liveactivity without the suffix"
        $0.expected = "400 BadTopic"
    }.header("apns-push-type", "liveactivity"),
    base.with {
        $0.name = "widgets with the controls suffix"
        $0.expected = "400 BadTopic"
    }
    .header("apns-push-type", "widgets").header("apns-topic", bundleID + ".push-type.controls"),
    base.with {
        $0.name = "topic with a space"
        $0.expected = "400 BadTopic"
    }.header("apns-topic", "com.kantinekoning app"),
    RuleCase(
        name: "location over a certificate",
        headers: [("apns-push-type", "location"), ("apns-topic", bundleID + ".location-query")],
        body: Array(#"{"aps":{}}"#.utf8), authentication: .certificate(topics: nil), expected: "400 BadTopic"),
    RuleCase(
        name: "liveactivity over a certificate",
        headers: [("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity")],
        body: Array(#"{"aps":{"event":"end","timestamp":1800000000}}"#.utf8), authentication: .certificate(topics: nil),
        expected: "400 BadTopic"),
    base.with {
        $0.name = "token with non-hex"
        $0.path = "/3/device/" + String(token64.dropLast()) + "g"
        $0.expected = "400 BadDeviceToken"
    },
    base.with {
        $0.name = "token of odd length"
        $0.path = "/3/device/" + token64 + "a"
        $0.expected = "400 BadDeviceToken"
    },
    base.with {
        $0.name = "truncated token (32 hex)"
        $0.path = "/3/device/" + String(token64.prefix(32))
        $0.expected = "400 BadDeviceToken"
    },
    base.with {
        $0.name = "token of 402 hex"
        $0.path = "/3/device/" + String(repeating: "ab", count: 201)
        $0.expected = "400 BadDeviceToken"
    },
    base.with {
        $0.name = "old description form in the path"
        $0.path = "/3/device/<5f0c1b6d 9e2a47f3>"
        $0.expected = "400 BadDeviceToken"
    },

    // Stage 6: payload.
    base.with {
        $0.name = "empty body"
        $0.body = []
        $0.expected = "400 PayloadEmpty"
    },
    base.with {
        $0.name = "payload of 4097 bytes"
        $0.body = alertPayload(ofSize: 4097)
        $0.expected = "413 PayloadTooLarge"
    },
    RuleCase(
        name: "voip payload of 5121 bytes",
        headers: [("apns-push-type", "voip"), ("apns-topic", bundleID + ".voip")], body: alertPayload(ofSize: 5121),
        expected: "413 PayloadTooLarge"),
    background.with {
        $0.name = "background payload of 4097 bytes"
        $0.body = alertPayload(ofSize: 4097)
        $0.expected = "413 PayloadTooLarge"
    },
    base.with {
        $0.name = "not JSON (decided: PayloadEmpty)"
        $0.expected = "400 PayloadEmpty"
    }.json("Hallo"),
    base.with {
        $0.name = "JSON array (decided: PayloadEmpty)"
        $0.expected = "400 PayloadEmpty"
    }.json("[1,2]"),
    base.with {
        $0.name = "trailing comma"
        $0.expected = "400 PayloadEmpty"
    }.json(#"{"aps":{"alert":"Hoi"},}"#),
    base.with {
        $0.name = "truncated JSON"
        $0.expected = "400 PayloadEmpty"
    }.json(#"{"aps":{"alert":"Hoi""#),
]

@Suite("APNs request rules: the table")
struct RequestRulesTableTests {
    @Test("judged as APNs would, stage by stage like the mock", arguments: ruleCases)
    func judgedLikeTheMock(_ rule: RuleCase) {
        let (rejection, problems) = judgeLikeMock(rule.received, authentication: rule.authentication)
        #expect(rejection?.description == rule.expected)
        let codes = Set(problems.map(\.code.rawValue))
        for warning in rule.warnings {
            #expect(codes.contains(warning), "expected warning \(warning), got \(codes.sorted())")
        }
        // Errors are exactly APNs reasons; warnings are kebab-case.
        for problem in problems {
            if problem.severity == .error {
                #expect(APNsReason(problem.code.rawValue).isKnown, "error code \(problem.code) is not an APNs reason")
            } else {
                #expect(
                    problem.code.rawValue == problem.code.rawValue.lowercased() && !problem.code.rawValue.contains(" "))
            }
        }
        if rule.expected == nil {
            #expect(!problems.hasErrors)
        }
    }

    @Test("the client's preflight gives the same answer as the mock", arguments: ruleCases)
    func preflightAgrees(_ rule: RuleCase) {
        let (request, lineCheck) = APNsRequestRules.checkRequestLine(rule.received)
        // Requests the client cannot even express (bad path, method, duplicate or malformed headers)
        // are stage 1-2 rejections; for the rest the typed request goes through the preflight.
        guard let request else {
            #expect(lineCheck.rejection?.description == rule.expected)
            return
        }
        let check = APNsRequestRules.preflight(request, authentication: rule.authentication)
        #expect(check.rejection?.description == rule.expected)
        #expect(check.isValid == (rule.expected == nil))
    }
}
