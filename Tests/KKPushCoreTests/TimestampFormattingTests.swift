import Foundation
import KKPushCore
import PropertyBased
import Testing

@Suite("UTC timestamps without a formatter")
struct TimestampFormattingTests {
    static let foundation = Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!)

    @Test("format and parse agree with Foundation's ISO 8601 for any whole second in years 1970 to 9999")
    func agreesWithFoundation() async {
        await propertyCheck(count: 2000, input: Gen.int(in: 0...253_402_300_799)) { seconds in
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let text = UTCTimestamp.format(date)
            #expect(text == date.formatted(Self.foundation))
            #expect(text.flatMap(UTCTimestamp.parse) == date)
        }
    }

    @Test("before 1970, leap days, the first and the last supported second")
    func edges() throws {
        for text in [
            "1969-12-31T23:59:59Z", "2000-02-29T12:00:00Z", "2024-02-29T00:00:00Z", "1600-01-01T00:00:00Z",
            "1811-06-30T12:34:56Z", "9999-12-31T23:59:59Z",
        ] {
            let parsed = try #require(UTCTimestamp.parse(text), "\(text)")
            #expect(parsed == (try Date(text, strategy: Self.foundation)))
            #expect(UTCTimestamp.format(parsed) == text)
        }
    }

    @Test(
        "anything else is not the form: nil, so Enrollment.parseDate falls back to Foundation",
        arguments: [
            "", "2027-01-15", "2027-01-15T09:30:00", "2027-01-15T09:30:00+01:00", "2027-01-15T09:30:00.5Z",
            "2027-13-01T00:00:00Z", "2027-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2027-01-32T00:00:00Z",
            "2027-01-15T24:00:00Z", "2027-01-15T09:60:00Z", "2027-01-15T09:30:60Z", "2027-01-15t09:30:00z",
            "2O27-01-15T09:30:00Z", "0000-01-01T00:00:00Z", "1582-10-15T00:00:00Z",
        ])
    func rejects(text: String) {
        #expect(UTCTimestamp.parse(text) == nil)
    }
}
