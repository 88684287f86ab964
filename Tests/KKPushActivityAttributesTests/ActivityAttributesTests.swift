import Foundation
import KKPushActivityAttributes
import KKPushCore
import KKPushTestSupport
import Testing

/// The fixtures of this target: `ActivityAttributes` files written for these tests the way apps write them.
let fixturesDirectory = Repository.file("Tests/KKPushActivityAttributesTests/.fixtures/activity-attributes")

/// Live Activities checked against the app's own types: `ActivityAttributes` structs (Swift source in
/// `.fixtures/activity-attributes/`, written the way apps write them) read into descriptions, and payloads that do
/// and do not decode against them, as the device's `JSONDecoder` (default strategies) would.
@Suite("ActivityAttributes: read from Swift source, payloads checked against them")
struct ActivityAttributesTests {
    static func file(_ name: String) throws -> ActivityAttributesSource.File {
        let url = fixturesDirectory.appendingPathComponent("\(name).swift.txt")
        return ActivityAttributesSource.File(
            name: "\(name).swift", text: try String(contentsOf: url, encoding: .utf8))
    }

    static func describe(_ files: String..., name: String? = nil) throws -> ActivityAttributesDescription {
        try ActivityAttributesSource.describe(try files.map(file), name: name)
    }

    static func problems(_ description: ActivityAttributesDescription, _ payload: String) throws -> [Problem] {
        description.problems(in: try Payload(parsing: payload))
    }

    @Test("ShiftTimer: Bool, String?, Int, Date; a start, updates that decode and that do not")
    func holdThatThought() throws {
        let d = try Self.describe("ShiftTimerAttributes")
        #expect(d.name == "ShiftTimerAttributes")
        #expect(d.attributes == [.init("shiftId", .string), .init("startTime", .date)])
        #expect(
            d.contentState == [
                .init("isRunning", .bool), .init("currentVolunteer", .optional(.string)), .init("handoverCount", .int),
            ])
        // A start that decodes: the Date as seconds since 2001-01-01, the optional left out.
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1700000000,"event":"start","attributes-type":"ShiftTimerAttributes","attributes":{"shiftId":"s1","startTime":785000000},"content-state":{"isRunning":true,"handoverCount":0},"alert":{"title":"x","body":"y"}}}"#
            ).isEmpty)
        // The wrong attributes-type, an ISO date, a missing key, 1 for a Bool: each named.
        let bad = try Self.problems(
            d,
            #"{"aps":{"timestamp":1700000000,"event":"start","attributes-type":"TimerAttributes","attributes":{"shiftId":"s1","startTime":"2026-01-01T00:00:00Z"},"content-state":{"isRunning":1},"alert":"x"}}"#
        )
        let messages = bad.map(\.message)
        #expect(bad.allSatisfy { $0.code.rawValue == "live-activity-would-not-decode" && $0.severity == .warning })
        #expect(messages.contains { $0.hasPrefix("aps.attributes-type is 'TimerAttributes'") }, "\(messages)")
        #expect(messages.contains { $0.hasPrefix("aps.attributes.startTime is the ISO 8601 date") })
        #expect(messages.contains { $0.hasPrefix("aps.content-state.isRunning is number") })
        #expect(messages.contains { $0.hasPrefix("aps.content-state.handoverCount is missing") })
        #expect(bad.count == 4, "\(messages)")
        // An update: content-state only; null for the optional decodes (decodeIfPresent), 2.5 for an Int does not.
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"isRunning":false,"currentVolunteer":null,"handoverCount":3}}}"#
            ).isEmpty)
        let update = try Self.problems(
            d,
            #"{"aps":{"timestamp":1700000000,"event":"end","content-state":{"isRunning":false,"handoverCount":2.5}}}"#
        )
        #expect(
            update.map(\.message).first?.hasPrefix("aps.content-state.handoverCount is number 2.5") == true, "\(update)"
        )
    }

    @Test("BarOrderAttributes: an enum's String raw values; an unknown raw value is named with the cases")
    func orderAttributes() throws {
        let d = try Self.describe("BarOrderAttributes")
        let status = ActivityAttributesDescription.FieldType.enumeration(
            name: "OrderStatus", raw: .string,
            values: ["cup.and.saucer.fill", "flame", "checkmark.circle.fill"])
        #expect(d.contentState == [.init("status", status)])
        #expect(d.attributes == [.init("orderNumber", .int), .init("items", .string)])
        #expect(
            try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"status":"flame"}}}"#)
                .isEmpty)
        // The case's name is not its raw value.
        let bad = try Self.problems(
            d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"status":"brewing"}}}"#)
        #expect(bad.count == 1)
        #expect(bad.first?.message.contains("'brewing', which is not a case of OrderStatus") == true, "\(bad)")
    }

    @Test("KeyValueAttributes: typealias ContentState = State, [String: String]")
    func genericAttributes() throws {
        let d = try Self.describe("KeyValueAttributes")
        #expect(d.contentState == [.init("values", .dictionary(.string))])
        #expect(d.attributes == [.init("activityId", .string), .init("labels", .dictionary(.string))])
        #expect(
            try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"values":{"a":"1"}}}}"#)
                .isEmpty)
        let bad = try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"values":{"a":1}}}}"#)
        #expect(bad.map(\.message).first?.hasPrefix("aps.content-state.values.a is number") == true, "\(bad)")
    }

    @Test("two ActivityAttributes types in a file: named one is read; ClosedRange<Date> is [lower, upper]")
    func matchDay() throws {
        #expect(throws: KKPushError.self) { try Self.describe("MatchDayAttributes") }
        let d = try Self.describe("MatchDayAttributes", name: "MatchDayAttributes")
        #expect(d.contentState == [.init("opponent", .string), .init("kickoffWindow", .range(.date))])
        // `let id: String` has no value: decoded.
        #expect(d.attributes == [.init("fieldNumber", .int), .init("id", .string)])
        #expect(
            try Self.problems(
                d,
                #"{"aps":{"timestamp":1,"event":"update","content-state":{"opponent":"VV Oranje","kickoffWindow":[785000000,785001800]}}}"#
            ).isEmpty)
        let bad = try Self.problems(
            d,
            #"{"aps":{"timestamp":1,"event":"update","content-state":{"opponent":"VV Oranje","kickoffWindow":{"lowerBound":1,"upperBound":2}}}}"#
        )
        #expect(bad.count == 1 && bad[0].message.contains("[lower, upper]"), "\(bad)")
        let ad = try Self.describe("MatchDayAttributes", name: "BarPromoAttributes_")
        #expect(ad.contentState == [.init("promoName", .string), .init("showTime", .date)])
    }

    @Test("types declared in another file: refused naming the file, line, field and type")
    func otherFilesTypes() throws {
        let error = #expect(throws: KKPushError.self) { try Self.describe("CateringAttributes") }
        #expect(error?.code.rawValue == "activity-attributes-source")
        #expect(
            error?.message.hasPrefix(
                "The Swift source 'CateringAttributes.swift' cannot be read as an ActivityAttributes type: line 13: CateringAttributes.order has the type CateringOrder, which none of the files given declares"
            ) == true, "\(String(describing: error))")
        // Attributes that use an enum of another file (as apps split them): refused alone, read with it.
        let attributes = ActivityAttributesSource.File(
            name: "DienstAttributes.swift",
            text: """
                import ActivityKit
                struct DienstAttributes: ActivityAttributes {
                    struct Style: Codable, Hashable { var fontSize: DienstFontSize }
                    public struct ContentState: Codable, Hashable {
                        var style: Style
                        var filled: Int
                        var needed: Double
                    }
                    var startDate: Date
                }
                """)
        let fontSizeFile = ActivityAttributesSource.File(
            name: "DienstFontSize.swift",
            text: "enum DienstFontSize: String, Codable, Hashable { case small, medium, large, extraLarge }")
        let alone = #expect(throws: KKPushError.self) { try ActivityAttributesSource.describe([attributes]) }
        #expect(
            alone?.message.contains("Style.fontSize has the type DienstFontSize") == true,
            "\(String(describing: alone))")
        let both = try ActivityAttributesSource.describe([attributes, fontSizeFile])
        #expect(both.attributes == [.init("startDate", .date)])
        let fontSize = ActivityAttributesDescription.FieldType.enumeration(
            name: "DienstFontSize", raw: .string, values: ["small", "medium", "large", "extraLarge"])
        #expect(
            both.contentState.first { $0.name == "style" }?.type
                == .object(name: "Style", fields: [.init("fontSize", fontSize)]))
        #expect(both.contentState.map(\.name) == ["style", "filled", "needed"])
        #expect(both.contentState.first { $0.name == "needed" }?.type == .double)
    }

    @Test("what the reader does not follow is refused by name, with the file and line; nothing to read is refused")
    func refusals() throws {
        let cases: [(String, String)] = [
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s: Kind } var x: Int }\nenum Kind: Codable { case a(Int) }",
                "line 2: A.ContentState.s is the enum Kind, whose case a has associated values"
            ),
            (
                "struct A: ActivityAttributes {\n struct ContentState: Codable, Hashable {\n var s: Int\n init(from decoder: Decoder) throws { s = 1 }\n }\n}",
                "line 4: A.ContentState has its own init(from:)"
            ),
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s = 3 } }",
                "the property s has no type annotation"
            ),
            ("struct A: ActivityAttributes { var x: Int }", "A has no ContentState"),
            ("struct A { var x: Int }", "no struct conforming to ActivityAttributes"),
            ("struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var s: Int ", "never closed"),
            ("", "no struct conforming"),
            (
                "struct A: ActivityAttributes {\n struct ContentState: Codable, Hashable {\n @Clamped var level: Int\n }\n}",
                "line 3: A.ContentState.level has the property wrapper @Clamped"
            ),
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var d: Data } }",
                "ContentState.d is Data"
            ),
            (
                "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var k: Kind } }\nenum Kind: Codable { case a, b }",
                "the enum Kind, which has no String or Int raw type"
            ),
        ]
        for (source, expected) in cases {
            let error = #expect(throws: KKPushError.self) {
                try ActivityAttributesSource.describe(source, sourceName: "App.swift")
            }
            #expect(error?.message.contains(expected) == true, "\(source): \(String(describing: error))")
            #expect(error?.message.contains("'App.swift'") == true, "\(String(describing: error))")
        }
    }

    @Test("generics refused by name: a generic ActivityAttributes, ContentState field or enum")
    func generics() throws {
        let cases: [(String, String)] = [
            (
                "struct Box<T: Codable & Hashable>: Codable, Hashable { var value: T }\nstruct A: ActivityAttributes {\n struct ContentState: Codable, Hashable { var box: Box<Int> }\n}",
                "line 3: A.ContentState.box has the generic type Box<Int>"
            ),
            (
                "struct A<T>: ActivityAttributes { struct ContentState: Codable, Hashable { var x: Int } var t: T }",
                "A is generic (A<T>)"
            ),
            (
                "struct Box<T: Codable & Hashable>: Codable, Hashable { var value: T }\nstruct A: ActivityAttributes {\n typealias IntBox = Box<Int>\n struct ContentState: Codable, Hashable { var box: IntBox }\n}",
                "ContentState.box has the generic type Box<Int>"
            ),
        ]
        for (source, expected) in cases {
            let error = #expect(throws: KKPushError.self) {
                try ActivityAttributesSource.describe(source, sourceName: "Generic.swift")
            }
            #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
            #expect(error?.message.contains("'Generic.swift'") == true)
        }
    }

    @Test("CodingKeys: a renamed case is the JSON key, a property without a case is not decoded")
    func codingKeys() throws {
        let source = """
            import ActivityKit
            struct MatchAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var homeScore: Int
                    var awayScore: Int
                    var kickoff: Date
                    var localNote: String = ""
                    enum CodingKeys: String, CodingKey {
                        case homeScore = "home_score", awayScore = "away_score"
                        case kickoff
                    }
                }
                let teamName: String
                private enum CodingKeys: String, CodingKey { case teamName = "team" }
            }
            """
        let d = try ActivityAttributesSource.describe(source, sourceName: "Match.swift")
        #expect(d.contentState == [.init("home_score", .int), .init("away_score", .int), .init("kickoff", .date)])
        #expect(d.attributes == [.init("team", .string)])
        let good =
            #"{"aps":{"timestamp":1,"event":"update","content-state":{"home_score":1,"away_score":0,"kickoff":800000000}}}"#
        #expect(try Self.problems(d, good).isEmpty)
        // The Swift name is not the key: the renamed keys are missing.
        let bad = try Self.problems(
            d,
            #"{"aps":{"timestamp":1,"event":"update","content-state":{"homeScore":1,"awayScore":0,"kickoff":800000000}}}"#
        )
        #expect(bad.map(\.message).filter { $0.contains("is missing") }.count == 2, "\(bad)")
        #expect(bad.contains { $0.message.hasPrefix("aps.content-state.home_score is missing") })
        // Foundation agrees: the renamed keys decode, the Swift names do not.
        #expect(try decodes(MatchState.self, good))
        #expect(try !decodes(MatchState.self, #"{"homeScore":1,"awayScore":0,"kickoff":800000000}"#, isPayload: false))

        // CodingKeys in an extension in another file, and an Int-raw CodingKeys (keys are the cases' names).
        let extended = try ActivityAttributesSource.describe([
            .init(
                name: "A.swift",
                text:
                    "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var a: Int; var b: Int } }"
            ),
            .init(
                name: "A+Keys.swift",
                text: "extension A.ContentState { enum CodingKeys: String, CodingKey { case a = \"alpha\" } }"),
        ])
        #expect(extended.contentState == [.init("alpha", .int)])
        let intKeys = try ActivityAttributesSource.describe(
            "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var a: Int\n enum CodingKeys: Int, CodingKey { case a = 3 } } }",
            sourceName: "A.swift")
        #expect(intKeys.contentState == [.init("a", .int)])
    }

    @Test("Foundation's type aliases and module-qualified names read as the JSON types they are")
    func typeAliases() throws {
        let source = """
            struct TimerAttributes: ActivityKit.ActivityAttributes {
                public struct ContentState: Codable, Hashable {
                    var elapsed: TimeInterval
                    var paused: Foundation.TimeInterval?
                    var scale: CGFloat
                    var dose: Decimal
                    var count: Swift.Int32
                    var title: Swift.String
                    var ends: Foundation.Date
                    var tags: Set<String>
                    var bounds: Range<Double>
                    var heading: CLLocationDirection
                    var id: Foundation.UUID
                }
            }
            """
        let d = try ActivityAttributesSource.describe(source, sourceName: "Timer.swift")
        #expect(
            d.contentState == [
                .init("elapsed", .double), .init("paused", .optional(.double)), .init("scale", .double),
                .init("dose", .double), .init("count", .int), .init("title", .string), .init("ends", .date),
                .init("tags", .array(.string)), .init("bounds", .range(.double)), .init("heading", .double),
                .init("id", .uuid),
            ])
        #expect(d.name == "TimerAttributes")
    }

    @Test("several files: types and conformances of other files and extensions; aliases at any level")
    func severalFiles() throws {
        let files: [ActivityAttributesSource.File] = [
            .init(
                name: "Attributes.swift",
                text: """
                    struct DienstAttributes {
                        typealias ContentState = DienstState
                        var club: Club
                    }
                    """),
            .init(
                name: "Models.swift",
                text: """
                    extension DienstAttributes: ActivityAttributes {}
                    struct DienstState: Codable, Hashable {
                        var open: Slots
                        var shift: DienstAttributes.Shift
                    }
                    typealias Slots = Int
                    """),
            .init(
                name: "Club.swift",
                text: """
                    struct Club: Codable, Hashable { var slug: String; var name: String }
                    extension DienstAttributes {
                        enum Shift: String, Codable, Hashable { case morning, evening = "avond" }
                    }
                    """),
        ]
        let d = try ActivityAttributesSource.describe(files)
        #expect(d.name == "DienstAttributes")
        #expect(
            d.attributes == [
                .init("club", .object(name: "Club", fields: [.init("slug", .string), .init("name", .string)]))
            ])
        #expect(
            d.contentState == [
                .init("open", .int),
                .init("shift", .enumeration(name: "Shift", raw: .string, values: ["morning", "avond"])),
            ])
        // Without the file that declares Club: refused, naming the file and line of the field.
        let error = #expect(throws: KKPushError.self) { try ActivityAttributesSource.describe(Array(files.prefix(2))) }
        #expect(
            error?.message.hasPrefix(
                "The Swift source 'Attributes.swift' cannot be read as an ActivityAttributes type: line 3: DienstAttributes.club has the type Club"
            ) == true, "\(String(describing: error))")
        // Nothing conforming in any file: every file named.
        let none = #expect(throws: KKPushError.self) {
            try ActivityAttributesSource.describe([
                .init(name: "A.swift", text: ""), .init(name: "B.swift", text: "struct B {}"),
            ])
        }
        #expect(none?.message.hasPrefix("The Swift sources 'A.swift', 'B.swift' cannot be read") == true)
    }

    @Test("#if in a type's body: the fields inside are not required; a top-level #if is read as written")
    func conditionalFields() throws {
        let source = """
            #if canImport(ActivityKit)
            import ActivityKit
            struct A: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var score: Int
                    #if DEBUG
                    var debugNote: String
                    #elseif os(iOS) && !targetEnvironment(macCatalyst)
                    var device: String?
                    #else
                    var other: Int
                    #endif
                    var half: Int
                }
            }
            #endif
            """
        let d = try ActivityAttributesSource.describe(source, sourceName: "A.swift")
        #expect(
            d.contentState == [
                .init("score", .int), .init("debugNote", .optional(.string)), .init("device", .optional(.string)),
                .init("other", .optional(.int)), .init("half", .int),
            ])
        #expect(
            try Self.problems(d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"score":1,"half":2}}}"#)
                .isEmpty)
        // Present, it is still checked.
        let bad = try Self.problems(
            d, #"{"aps":{"timestamp":1,"event":"update","content-state":{"score":1,"half":2,"other":"x"}}}"#)
        #expect(bad.count == 1 && bad[0].message.hasPrefix("aps.content-state.other is string"), "\(bad)")
    }

    @Test("comments, attributes, backticks, let x, y: Double, strings with interpolations anywhere")
    func syntaxAnywhere() throws {
        let source = #"""
            /* a block /* nested */ comment */ import ActivityKit
            @available(iOS 16.1, *) @MainActor
            public struct `Match`: /* conforms */ ActivityKit.ActivityAttributes, @unchecked Sendable {
                public struct ContentState: Codable, Hashable {
                    @available(*, deprecated, message: "use `score`") var `default`: Int
                    let x, y: Double  // both Double
                    var label: String = "\(1 + 2) \("}") {"  // an interpolation with quotes and braces
                    var raw: String = #"a " quote"#
                    var multi: String = """
                        var notAField: Int
                        """
                    var `var`: Bool
                    /// doc comment
                    var kind: Kind
                    static let preview = ContentState(default: 1, x: 0, y: 0, var: true, kind: .`default`)
                    var total: Double { x + y }
                }
                public enum Kind: String, Codable, Hashable { case `default` = "std", special }
                #Preview("x") { Text("var ghost: Int") }
            }
            """#
        let d = try ActivityAttributesSource.describe(source, sourceName: "Match.swift")
        #expect(d.name == "Match")
        #expect(
            d.contentState == [
                .init("default", .int), .init("x", .double), .init("y", .double), .init("label", .string),
                .init("raw", .string), .init("multi", .string), .init("var", .bool),
                .init("kind", .enumeration(name: "Kind", raw: .string, values: ["std", "special"])),
            ])
        #expect(d.attributes.isEmpty)
    }

    @Test("a widget, a view model and closures in the same file do not stop the reader; used, they are refused")
    func unrelatedDeclarations() throws {
        let source = """
            import ActivityKit
            import SwiftUI
            struct DeliveryAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable { var eta: Int }
                var order: String
            }
            struct DeliveryLiveActivity: Widget {
                var body: some WidgetConfiguration {
                    ActivityConfiguration(for: DeliveryAttributes.self) { context in Text("\\(context.state.eta)") }
                }
            }
            struct Model {
                var count = 0
                var onTap: @MainActor (Int) async throws -> Void = { _ in }
                var pair: (Int, Int)
                var (a, b) = (1, 2)
                var kind: any Hashable
                var type: Int.Type
            }
            """
        let d = try ActivityAttributesSource.describe(source, sourceName: "Delivery.swift")
        #expect(d.contentState == [.init("eta", .int)] && d.attributes == [.init("order", .string)])
        let used: [(String, String)] = [
            ("var count = 0", "line 4: A.ContentState: the property count has no type annotation"),
            (
                "var onTap: @MainActor (Int) async throws -> Void",
                "A.ContentState.onTap has the type a function type, which is not Codable"
            ),
            ("var pair: (Int, Int)", "A.ContentState.pair has the type a tuple type, which is not Codable"),
            ("var kind: any Hashable", "A.ContentState.kind has the type any Hashable, which is not Codable"),
            ("var (a, b) = (1, 2)", "A.ContentState: a tuple pattern"),
        ]
        for (field, expected) in used {
            let error = #expect(throws: KKPushError.self) {
                try ActivityAttributesSource.describe(
                    "struct A: ActivityAttributes {\n struct ContentState: Codable, Hashable {\n var x: Int\n \(field)\n }\n}",
                    sourceName: "A.swift")
            }
            #expect(error?.message.contains(expected) == true, "\(field): \(String(describing: error))")
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
        let d = try ActivityAttributesSource.describe(source, sourceName: "Match.swift")
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
        for file in ["ShiftTimerAttributes", "BarOrderAttributes", "KeyValueAttributes"] {
            let d = try Self.describe(file)
            #expect(try ActivityAttributesDescription(json: try JSONValue.parse(d.json.encoded())) == d)
        }
        let d = try Self.describe("MatchDayAttributes", name: "MatchDayAttributes")
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

/// `MatchAttributes.ContentState` of the CodingKeys test, as the app declares it, for Foundation's own decode.
struct MatchState: Codable, Hashable {
    var homeScore: Int
    var awayScore: Int
    var kickoff: Date
    var localNote: String = ""
    enum CodingKeys: String, CodingKey {
        case homeScore = "home_score"
        case awayScore = "away_score"
        case kickoff
    }
}

/// Whether Foundation's `JSONDecoder` (default strategies, as ActivityKit) decodes `T` from the payload's
/// `aps.content-state` (or from `json` itself when `isPayload` is false).
func decodes<T: Decodable>(_ type: T.Type, _ json: String, isPayload: Bool = true) throws -> Bool {
    try decoded(type, json, isPayload: isPayload) != nil
}

func decoded<T: Decodable>(_ type: T.Type, _ json: String, isPayload: Bool = true) throws -> T? {
    var data = Data(json.utf8)
    if isPayload {
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let aps = try #require(object["aps"] as? [String: Any])
        let state = try #require(aps["content-state"])
        data = try JSONSerialization.data(withJSONObject: state)
    }
    return try? JSONDecoder().decode(type, from: data)
}
