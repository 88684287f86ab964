package import ArgumentParser
package import KKPushCore

/// Checks of numeric flags, for `validate()`: NaN, infinities, negative and out-of-range values get a
/// `ValidationError` naming the flag and the range it accepts (exit 64), never a trap later on.
package enum NumericFlags {
    /// `value` must be a finite number of seconds in `range` (`unit` for other units, e.g. minutes).
    package static func seconds(_ value: Double, flag: String, in range: ClosedRange<Double>, unit: String = "seconds")
        throws
    {
        guard InputNumbers.isSeconds(value, in: range) else {
            throw ValidationError(
                "\(flag) \(InputNumbers.text(value)) is out of range: give a number of \(unit) from \(InputNumbers.describe(range))."
            )
        }
    }

    /// `value`, if given, must be a number of seconds in `range`.
    package static func seconds(_ value: Double?, flag: String, in range: ClosedRange<Double>, unit: String = "seconds")
        throws
    {
        if let value { try seconds(value, flag: flag, in: range, unit: unit) }
    }

    /// `value`, if given, must be a whole number in `range`.
    package static func integer<T: BinaryInteger>(
        _ value: T?, flag: String, in range: ClosedRange<T>, unit: String = ""
    ) throws {
        guard let value, !range.contains(value) else { return }
        let what = unit.isEmpty ? "a whole number" : "a whole number of \(unit)"
        throw ValidationError(
            "\(flag) \(value) is out of range: give \(what) from \(range.lowerBound) to \(range.upperBound).")
    }

    /// `value`, if given, must be a UNIX time kkpush accepts (``InputNumbers/unixSeconds``).
    package static func unixTime<T: BinaryInteger>(_ value: T?, flag: String) throws {
        guard let value else { return }
        guard let v = Int64(exactly: value), InputNumbers.unixSeconds.contains(v) else {
            throw ValidationError(
                "\(flag) \(value) is not a UNIX time kkpush accepts: give whole seconds from \(InputNumbers.unixSecondsDescription)."
            )
        }
    }
}

/// `--threads` beside `--max-connections`: each loop thread needs a connection of its own.
package enum LoopThreadFlags {
    /// `threads`, if given, must be 1...16 and, when `--max-connections` is given too, no more than it.
    package static func check(_ threads: Int?, maxConnections: Int?) throws {
        try NumericFlags.integer(threads, flag: "--threads", in: 1...16)
        if let threads, let maxConnections, threads > maxConnections {
            throw ValidationError(
                "--threads \(threads) is more than --max-connections \(maxConnections): each thread drives connections of its own. Give --max-connections \(threads) or more, or fewer threads."
            )
        }
    }
}
