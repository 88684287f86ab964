import Foundation
import KKPushCore
import Testing

/// The content-state check against an ``ActivityAttributesDescription``, held against Foundation's own
/// `JSONDecoder` (default strategies, as ActivityKit decodes): what it refuses is named, and a Unix time in a `Date`,
/// which it decodes decades late, is named as such.
@Suite("ActivityAttributes description: the content-state check agrees with JSONDecoder")
struct ActivityAttributesDescriptionTests {
    /// The app's `ContentState`, as Swift declares it.
    struct ShiftState: Codable {
        var start: Date
        var window: ClosedRange<Int>
        var link: URL
        var slots: Range<Date>?
    }

    static let description = ActivityAttributesDescription(
        name: "ShiftAttributes", attributes: [],
        contentState: [
            .init("start", .date), .init("window", .range(.int)), .init("link", .url),
            .init("slots", .optional(.range(.date))),
        ])

    static func problems(_ state: String) throws -> [Problem] {
        description.problems(
            in: try Payload(parsing: #"{"aps":{"timestamp":1,"event":"update","content-state":\#(state)}}"#))
    }

    /// What Foundation decodes from `state`, or nil when it refuses.
    static func foundation(_ state: String) -> ShiftState? {
        try? JSONDecoder().decode(ShiftState.self, from: Data(state.utf8))
    }

    static let year2050 = Date(timeIntervalSince1970: 2_524_608_000)

    /// Checks `state` both ways: the check's verdict and Foundation's decode agree.
    func agree(_ state: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Problem] {
        let problems = try Self.problems(state)
        let refused = problems.contains { $0.code.rawValue == "live-activity-would-not-decode" }
        #expect(
            refused == (Self.foundation(state) == nil), "check: \(problems), JSONDecoder disagrees",
            sourceLocation: sourceLocation)
        return problems
    }

    @Test("a payload that decodes: no problem, and Foundation decodes it to the date meant")
    func decodes() throws {
        let state =
            #"{"start":799333200,"window":[1,3],"link":"https://kantinekoning.com/d/1","slots":[799333200,799336800]}"#
        #expect(try agree(state).isEmpty)
        let decoded = try #require(Self.foundation(state))
        #expect(decoded.start == Date(timeIntervalSince1970: 1_777_640_400))
        // Equal bounds are a range; null for the optional is nil.
        #expect(try agree(#"{"start":0,"window":[2,2],"link":"https://k.nl","slots":null}"#).isEmpty)
    }

    @Test("a Unix time in seconds in a Date: named, with the year it lands in and the number to send")
    func unixSeconds() throws {
        let problems = try agree(#"{"start":1777640400,"window":[1,3],"link":"https://k.nl"}"#)
        #expect(problems.count == 1, "\(problems)")
        let p = try #require(problems.first)
        #expect(p.code.rawValue == "live-activity-date-misread" && p.severity == .warning)
        #expect(p.message.hasPrefix("aps.content-state.start is 1777640400, a Unix time in seconds"), "\(p.message)")
        #expect(p.message.contains("the year 2057"), "\(p.message)")
        #expect(p.fix.contains("minus 978307200, here 799333200"), "\(p.fix)")
        // Foundation decodes it: in 2057, as the message says.
        let decoded = try #require(Self.foundation(#"{"start":1777640400,"window":[1,3],"link":"https://k.nl"}"#))
        #expect(decoded.start > Self.year2050)
        #expect(
            Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: decoded.start).year
                == 2057)
    }

    @Test("a Unix time in milliseconds in a Date (a range's bound too): named, with the fix")
    func unixMilliseconds() throws {
        let problems = try agree(
            #"{"start":1777640400000,"window":[1,3],"link":"https://k.nl","slots":[1777640400000,1777644000000]}"#)
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.allSatisfy { $0.code.rawValue == "live-activity-date-misread" })
        #expect(problems[0].message.contains("a Unix time in milliseconds"), "\(problems[0].message)")
        #expect(
            problems[0].fix.contains("(1777640400000 / 1000) minus 978307200, here 799333200"), "\(problems[0].fix)")
        #expect(problems.map(\.message).contains { $0.hasPrefix("aps.content-state.slots[1] is 1777644000000") })
        let decoded = try #require(Self.foundation(#"{"start":1777640400000,"window":[1,3],"link":"https://k.nl"}"#))
        #expect(decoded.start.timeIntervalSinceReferenceDate > 1e11)
    }

    @Test("an ISO 8601 string in a Date: refused (the default strategy reads a number), the number to send given")
    func iso8601() throws {
        for text in ["2026-05-01T14:30:00Z", "2026-05-01T16:30:00+02:00", "2026-05-01T14:30:00.000Z"] {
            let problems = try agree(#"{"start":"\#(text)","window":[1,3],"link":"https://k.nl"}"#)
            #expect(problems.count == 1, "\(problems)")
            let p = try #require(problems.first)
            #expect(p.message.hasPrefix("aps.content-state.start is the ISO 8601 date \"\(text)\""), "\(p.message)")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions =
                text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
            let seconds = try #require(formatter.date(from: text)).timeIntervalSinceReferenceDate
            #expect(p.fix.contains("as \(Int(seconds)) (seconds since 2001-01-01"), "\(p.fix) vs \(seconds)")
        }
        // Any other string: refused as before.
        let other = try agree(#"{"start":"today","window":[1,3],"link":"https://k.nl"}"#)
        #expect(other.count == 1 && other[0].message.hasPrefix("aps.content-state.start is string"), "\(other)")
    }

    @Test("a ClosedRange or Range whose lower bound is above its upper: refused, as its decoder throws")
    func reversedRanges() throws {
        let closed = try agree(#"{"start":0,"window":[3,1],"link":"https://k.nl"}"#)
        #expect(closed.count == 1, "\(closed)")
        #expect(
            closed.first?.message.hasPrefix("aps.content-state.window is [3, 1], whose lower bound is above its upper")
                == true, "\(closed)")
        let range = try agree(#"{"start":0,"window":[1,3],"link":"https://k.nl","slots":[799336800,799333200]}"#)
        #expect(
            range.count == 1 && range[0].message.hasPrefix("aps.content-state.slots is [799336800, 799333200]"),
            "\(range)")
    }

    @Test("an empty string for a URL: refused, as URL's decoder throws")
    func emptyURL() throws {
        let problems = try agree(#"{"start":0,"window":[1,3],"link":""}"#)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.message.hasPrefix("aps.content-state.link is the empty string") == true, "\(problems)")
        #expect(try agree(#"{"start":0,"window":[1,3],"link":5}"#).count == 1)
    }
}
