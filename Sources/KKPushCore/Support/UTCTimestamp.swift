public import Foundation

/// `YYYY-MM-DDTHH:MM:SSZ`, the one date form the backend writes, formatted and parsed by arithmetic
/// (days from the civil calendar, proleptic Gregorian, as ISO 8601 has it).
///
/// Foundation's `ISO8601FormatStyle` goes through `Calendar` for every date; the app decodes two dates
/// per shift on every refresh, and in a 1,000-device refresh burst that was a quarter of its decoding.
/// Other ISO 8601 forms (offsets, fractions, lowercase) are left to Foundation: ``parse(_:)`` returns nil.
/// So are years before 1600 (Foundation's calendar is Julian before October 1582; this arithmetic is
/// proleptic Gregorian, and the two would disagree) and after 9999.
public enum UTCTimestamp {
    /// `date` in the form, for years 1600 to 9999; nil outside them.
    public static func format(_ date: Date) -> String? {
        let t = date.timeIntervalSince1970
        // Years 1600 to 9999 lie well within ±1e12 s; anything beyond (infinite, or Int64's edges, where
        // the conversion would trap) is outside the form.
        guard t.isFinite, abs(t) < 1e12 else { return nil }
        let seconds = Int64(t.rounded(.down))
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (y, m, d) = civil(fromDays: days)
        guard (1600...9999).contains(y) else { return nil }
        var bytes = [UInt8](repeating: 0, count: 20)
        func put(_ value: Int64, _ at: Int, _ width: Int) {
            var v = value
            for i in stride(from: at + width - 1, through: at, by: -1) {
                bytes[i] = UInt8(48 + v % 10)
                v /= 10
            }
        }
        put(y, 0, 4)
        bytes[4] = UInt8(ascii: "-")
        put(m, 5, 2)
        bytes[7] = UInt8(ascii: "-")
        put(d, 8, 2)
        bytes[10] = UInt8(ascii: "T")
        put(rest / 3600, 11, 2)
        bytes[13] = UInt8(ascii: ":")
        put(rest % 3600 / 60, 14, 2)
        bytes[16] = UInt8(ascii: ":")
        put(rest % 60, 17, 2)
        bytes[19] = UInt8(ascii: "Z")
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The date `text` names if it is exactly the form with a valid date and time (seconds 0 to 59);
    /// nil otherwise.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
                b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ at: Int, _ width: Int) -> Int64? {
                var v: Int64 = 0
                for i in at..<(at + width) {
                    let c = b[i]
                    guard c >= 48, c <= 57 else { return nil }
                    v = v * 10 + Int64(c - 48)
                }
                return v
            }
            guard let y = number(0, 4), let m = number(5, 2), let d = number(8, 2), let hh = number(11, 2),
                let mm = number(14, 2), let ss = number(17, 2),
                y >= 1600, (1...12).contains(m), d >= 1, d <= daysIn(month: m, year: y), hh <= 23, mm <= 59, ss <= 59
            else { return nil }
            let seconds = days(fromCivil: y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
    }

    private static func daysIn(month m: Int64, year y: Int64) -> Int64 {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil and civil_from_days (public domain algorithms).
    static func days(fromCivil year: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
