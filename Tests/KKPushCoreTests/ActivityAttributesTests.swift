import Foundation
import KKPushCore
import Testing

/// Live Activities checked against the app's own types: public `ActivityAttributes` structs (Swift source copied
/// into `.fixtures/activity-attributes/`, each naming its repository) read into descriptions, and payloads that do
/// and do not decode against them, as the device's `JSONDecoder` (default strategies) would.
@Suite("ActivityAttributes: read from Swift source, payloads checked against them")
struct ActivityAttributesTests {
    static func describe(_ file: String, name: String? = nil) throws -> ActivityAttributesDescription {
        let source = String(decoding: try fixture("activity-attributes/\(file).swift.txt"), as: UTF8.self)
        return try ActivityAttributesSource.describe(source, name: name)
    }

    static func problems(_ description: ActivityAttributesDescription, _ payload: String) throws -> [Problem] {
        description.problems(in: try Payload(parsing: payload))
    }

    @Test("HoldThatThought: Bool, String?, Int, Date; a start, updates that decode and that do not")
    func holdThatThought() throws {
        let d = try Self.describe("HoldThatThoughtAttributes")
        #expect(d.name == "HoldThatThoughtAttributes")
        #expect(d.attributes == [.init("sessionId", .string), .init("startTime", .date)])
        #expect(
            d.contentState == [
                .init("isListening", .bool), .init("currentClaim", .optional(.string)), .init("claimCount", .int),
            ])
        // A start that decodes: the Date as seconds since 2001-01-01, the optional left out.
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1700000000,"event":"start","attributes-type":"HoldThatThoughtAttributes","attributes":{"sessionId":"s1","startTime":785000000},"content-state":{"isListening":true,"claimCount":0},"alert":{"title":"x","body":"y"}}}"#
            ).isEmpty)
        // The wrong attributes-type, an ISO date, a missing key, 1 for a Bool: each named.
        let bad = try Self.problems(
            d,
            #"{"aps":{"timestamp":1700000000,"event":"start","attributes-type":"ThoughtAttributes","attributes":{"sessionId":"s1","startTime":"2026-01-01T00:00:00Z"},"content-state":{"isListening":1},"alert":"x"}}"#
        )
        let messages = bad.map(\.message)
        #expect(bad.allSatisfy { $0.code == "live-activity-would-not-decode" && $0.severity == .warning })
        #expect(messages.contains { $0.hasPrefix("aps.attributes-type is 'ThoughtAttributes'") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("aps.attributes.startTime is string") && $0.contains("Date") })
        #expect(messages.contains { $0.hasPrefix("aps.content-state.isListening is number") })
        #expect(messages.contains { $0.hasPrefix("aps.content-state.claimCount is missing") })
        #expect(bad.count == 4, "\(messages)")
        // An update: content-state only; null for the optional decodes (decodeIfPresent), 2.5 for an Int does not.
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"isListening":false,"currentClaim":null,"claimCount":3}}}"#
            ).isEmpty)
        let update = try Self.problems(
            d, #"{"aps":{"timestamp":1700000000,"event":"end","content-state":{"isListening":false,"claimCount":2.5}}}"#
        )
        #expect(
            update.map(\.message).first?.hasPrefix("aps.content-state.claimCount is number 2.5") == true, "\(update)")
    }

    @Test("OrderAttributes: an enum's String raw values; an unknown raw value is named with the cases")
    func orderAttributes() throws {
        let d = try Self.describe("OrderAttributes")
        let status = ActivityAttributesDescription.FieldType.enumeration(
            name: "Status", raw: .string,
            values: ["shippingbox.fill", "person.bust", "takeoutbag.and.cup.and.straw.fill"])
        #expect(d.contentState == [.init("status", status)])
        #expect(d.attributes == [.init("orderNumber", .int), .init("orderItems", .string)])
        #expect(
            try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"status":"person.bust"}}}"#)
                .isEmpty)
        // The case's name is not its raw value.
        let bad = try Self.problems(
            d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"status":"progress"}}}"#)
        #expect(bad.count == 1)
        #expect(bad.first?.message.contains("'progress', which is not a case of Status") == true, "\(bad)")
    }

    @Test("GenericAttributes: typealias ContentState = State, [String: String]")
    func genericAttributes() throws {
        let d = try Self.describe("GenericAttributes")
        #expect(d.contentState == [.init("values", .dictionary(.string))])
        #expect(d.attributes == [.init("id", .string), .init("staticValues", .dictionary(.string))])
        #expect(
            try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"values":{"a":"1"}}}}"#)
                .isEmpty)
        let bad = try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"values":{"a":1}}}}"#)
        #expect(bad.map(\.message).first?.hasPrefix("aps.content-state.values.a is number") == true, "\(bad)")
    }

    @Test("two ActivityAttributes types in a file: named one is read; ClosedRange<Date> is [lower, upper]")
    func pizzaDelivery() throws {
        #expect(throws: KKPushError.self) { try Self.describe("PizzaDeliveryAttributes") }
        let d = try Self.describe("PizzaDeliveryAttributes", name: "PizzaDeliveryAttributes")
        #expect(d.contentState == [.init("name", .string), .init("estimatedDeliveryTime", .range(.date))])
        // `let id: String` has no value: decoded.
        #expect(d.attributes == [.init("numberOfPizzas", .int), .init("id", .string)])
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1,"event":"update","content-state":{"name":"Anna","estimatedDeliveryTime":[785000000,785001800]}}}"#
            ).isEmpty)
        let bad = try Self.problems(
            d,
            #"{"aps":{"timestamp":1,"event":"update","content-state":{"name":"Anna","estimatedDeliveryTime":{"lowerBound":1,"upperBound":2}}}}"#
        )
        #expect(bad.count == 1 && bad[0].message.contains("[lower, upper]"), "\(bad)")
        let ad = try Self.describe("PizzaDeliveryAttributes", name: "PizzaAdAttributes_")
        #expect(ad.contentState == [.init("adName", .string), .init("showTime", .date)])
    }

    @Test("types declared in another file: refused, naming the field and the type")
    func otherFilesTypes() throws {
        let error = #expect(throws: KKPushError.self) { try Self.describe("DeliveryAttributes") }
        #expect(error?.code == .activityAttributesSource)
        #expect(
            error?.message.contains("DeliveryAttributes.delivery has the type Delivery") == true,
            "\(String(describing: error))"
        )
    }

    @Test("what the reader does not follow is refused by name; nothing to read is refused")
    func refusals() throws {
        let cases: [(String, String)] = [
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s: Kind } var x: Int }\nenum Kind: Codable { case a(Int) }",
                "no String or Int raw type"
            ),
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s: Int; enum CodingKeys: String, CodingKey { case s = \"S\" } } }",
                "its own CodingKeys"
            ),
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s = 3 } }",
                "no type annotation"
            ),
            ("struct A: ActivityAttributes { var x: Int }", "no ContentState"),
            ("struct A { var x: Int }", "no struct conforming to ActivityAttributes"),
            ("struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s: Int ", "never closed"),
            ("", "no struct conforming"),
        ]
        for (source, expected) in cases {
            let error = #expect(throws: KKPushError.self) { try ActivityAttributesSource.describe(source) }
            #expect(error?.message.contains(expected) == true, "\(source): \(String(describing: error))")
        }
    }

    @Test("skipped: computed and static properties, methods, inits; a let with a value; Int enums count up")
    func skipped() throws {
        let source = """
            struct Score: Codable, Hashable { var home: Int; var away: Int }
            enum Period: Int, Codable { case first = 1, second, extra = 10, penalties }
            struct MatchAttributes: ActivityAttributes {
                public struct ContentState: Codable, Hashable {
                    var score: Score
                    var period: Period
                    var scorers: [String]?
                    var total: Int { score.home + score.away }
                    static var preview = ContentState(score: .init(home: 0, away: 0), period: .first, scorers: nil)
                    var note: String = "" { didSet { } }
                    func text() -> String { "\\(score.home)-\\(score.away)" }
                }
                let kind = "football"
                var home: String, away: String
                init(home: String, away: String) { self.home = home; self.away = away }
            }
            """
        let d = try ActivityAttributesSource.describe(source)
        let score = ActivityAttributesDescription.FieldType.object(
            name: "Score", fields: [.init("home", .int), .init("away", .int)])
        #expect(
            d.contentState == [
                .init("score", score),
                .init("period", .enumeration(name: "Period", raw: .int, values: ["1", "2", "10", "11"])),
                .init("scorers", .optional(.array(.string))), .init("note", .string),
            ])
        #expect(d.attributes == [.init("home", .string), .init("away", .string)])
        let bad = try Self.problems(
            d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"score":{"home":1},"period":3,"note":""}}}"#)
        #expect(Set(bad.map { String($0.message.prefix(34)) }).count == 2, "\(bad)")
        #expect(bad.contains { $0.message.hasPrefix("aps.content-state.score.away is missing") })
        #expect(bad.contains { $0.message.hasPrefix("aps.content-state.period is '3'") })
    }

    @Test("the JSON description round-trips; a broken one is refused naming the path")
    func jsonForm() throws {
        for file in ["HoldThatThoughtAttributes", "OrderAttributes", "GenericAttributes"] {
            let d = try Self.describe(file)
            #expect(try ActivityAttributesDescription(json: try JSONValue.parse(d.json.encoded())) == d)
        }
        let d = try Self.describe("PizzaDeliveryAttributes", name: "PizzaDeliveryAttributes")
        #expect(try ActivityAttributesDescription(json: d.json) == d)
        let broken: [(String, String)] = [
            (#"{"name":"A","content_state":[{"name":"x","type":"Integer"}]}"#, "content_state[0].type"),
            (#"{"name":"A","date_decoding":"iso8601"}"#, "date_decoding"),
            (#"{"attributes":[]}"#, "the top level"),
            (#"{"name":"A","attributes":[{"name":"x","type":{"enum":"E","raw":"Double","values":[]}}]}"#, ".raw"),
        ]
        for (text, path) in broken {
            let error = #expect(throws: KKPushError.self) {
                try ActivityAttributesDescription(json: try JSONValue.parse(text))
            }
            #expect(error?.code == .activityAttributesInvalid)
            #expect(error?.message.contains(path) == true, "\(text): \(String(describing: error))")
        }
    }
}
