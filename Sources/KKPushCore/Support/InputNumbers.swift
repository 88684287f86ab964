public import Foundation

/// Numbers from outside kkpush (flags, config files, JSON claims) checked before they become
/// integers, durations or dates.
///
/// `Int64(Double.nan)`, `Int(1e300)`, `Duration.milliseconds(Int64(x * 1000))` and date arithmetic on
/// `Int64.min` trap; a user's typo or a peer's token must give a clear error instead. Everything that
/// converts an outside number goes through here, so the checks and their wording are the same everywhere.
public enum InputNumbers {
    /// The UNIX times kkpush accepts from outside: 1970-01-01T00:00:00Z through 9999-12-31T23:59:59Z.
    public static let unixSeconds: ClosedRange<Int64> = 0...253_402_300_799

    /// `unixSeconds` as text for messages: `0 (1970) to 253402300799 (9999-12-31)`.
    public static let unixSecondsDescription = "0 (1970-01-01) to 253402300799 (9999-12-31)"

    /// True if `value` is finite (not NaN, not ±infinity) and inside `range`.
    public static func isSeconds(_ value: Double, in range: ClosedRange<Double>) -> Bool {
        value.isFinite && range.contains(value)
    }

    /// `seconds` as a `Duration` in whole milliseconds, or nil unless it is a finite number of seconds in
    /// `range`. `range` must lie within ±1e9 seconds (about 31 years), so the conversion cannot overflow.
    public static func duration(seconds: Double, in range: ClosedRange<Double>) -> Duration? {
        precondition(range.lowerBound >= -1e9 && range.upperBound <= 1e9, "duration range beyond ±1e9 s")
        guard isSeconds(seconds, in: range) else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The date `unix` seconds name, or nil outside ``unixSeconds``.
    public static func date(unixSeconds unix: Int64) -> Date? {
        unixSeconds.contains(unix) ? Date(timeIntervalSince1970: TimeInterval(unix)) : nil
    }

    /// The date `unix` seconds name, or nil outside ``unixSeconds``.
    public static func date(unixSeconds unix: Int) -> Date? {
        date(unixSeconds: Int64(unix))
    }

    /// `date` as whole UNIX seconds (rounded down), or nil if it is not within ``unixSeconds``.
    public static func unixSeconds(of date: Date) -> Int64? {
        let t = date.timeIntervalSince1970.rounded(.down)
        guard t.isFinite, t >= Double(unixSeconds.lowerBound), t <= Double(unixSeconds.upperBound) else { return nil }
        return Int64(t)
    }

    /// `value` as an `Int`, or nil for NaN, infinities and anything beyond ±2^53 (where doubles stop
    /// being exact). For messages and JSON built from a double that is not already range-checked.
    public static func exactInt(_ value: Double) -> Int? {
        guard value.isFinite, abs(value) <= 9_007_199_254_740_992 else { return nil }
        return Int(value)
    }

    /// `low...high` as text, without a trailing `.0` on whole numbers: `0.001 to 3600`.
    public static func describe(_ range: ClosedRange<Double>) -> String {
        "\(text(range.lowerBound)) to \(text(range.upperBound))"
    }

    /// A double as short text: `30` for 30.0, `0.5` for 0.5, `nan`, `inf`.
    public static func text(_ value: Double) -> String {
        if let i = exactInt(value), Double(i) == value { return String(i) }
        return "\(value)"
    }
}
