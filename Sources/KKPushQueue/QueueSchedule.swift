package import Foundation
package import KKPushCore

// Scheduled sends and quiet hours (<doc:PushQueue#Scheduled-sends-and-quiet-hours>): a local send time in a named
// IANA time zone made an instant for `not_before`, and a quiet window ("22:00-07:00" in a club's zone) in which
// a row waits until the window ends, unless the push is time-critical. Pure functions of an injected `now`, so the
// daylight saving changes are tested without waiting for them.

/// A wall-clock time of a named IANA time zone made an instant, with one rule for the two hours a year that are
/// not one instant each.
///
/// - A time in the spring-forward gap (Europe/Amsterdam, 2026-03-29 02:30: the clocks jump from 02:00 to 03:00)
///   never happens: it becomes the first instant after the gap (03:00 CEST, 01:00 UTC). Chosen over "shift by
///   the gap's length" (03:30) because a push meant for "half past two" must not go out later than the first
///   moment the day has after it.
/// - A time in the autumn repeat (2026-10-25 02:30 happens twice, CEST then CET) becomes its first occurrence
///   (00:30 UTC): the earlier of the two, so a scheduled push never waits an extra hour.
package enum LocalTime {
    /// The zone named `identifier` (`Europe/Amsterdam`), or `queue-time-invalid` naming `field`.
    package static func zone(_ identifier: String, field: String) throws -> TimeZone {
        guard !identifier.isEmpty, let zone = TimeZone(identifier: identifier) else {
            throw KKPushError(
                code: .queueTimeInvalid,
                message: "The time zone '\(identifier)' (\(field)) is not an IANA time zone name this system knows.",
                fix:
                    "Give a name of the IANA time zone database such as Europe/Amsterdam (the tzdata package provides them)."
            )
        }
        return zone
    }

    /// The instant of the local time `text` (`2026-03-29 02:30`, `2026-03-29 02:30:15`, or with a `T`) in `zone`.
    package static func instant(_ text: String, in zone: TimeZone, field: String) throws -> Date {
        let parts = text.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == " " || $0 == "T" })
        let date = parts.first.map { $0.split(separator: "-", omittingEmptySubsequences: false) } ?? []
        let time = parts.count == 2 ? parts[1].split(separator: ":", omittingEmptySubsequences: false) : []
        let numbers = (date + time).map { Int($0) }
        guard parts.count == 2, date.count == 3, time.count == 2 || time.count == 3, !numbers.contains(nil),
            let components = Components(numbers.compactMap { $0 }), components.isValidDate
        else {
            throw KKPushError(
                code: .queueTimeInvalid,
                message: "The send time '\(text)' (\(field)) is not a local date and time YYYY-MM-DD HH:MM[:SS].",
                fix: "Give the club's local time, such as 2026-03-29 19:30, with its time zone (timeZone).")
        }
        return resolve(components, in: zone)
    }

    /// A local date and time, its fields checked only for their ranges.
    package struct Components: Sendable, Equatable {
        package var year, month, day, hour, minute, second: Int

        package init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int = 0) {
            (self.year, self.month, self.day) = (year, month, day)
            (self.hour, self.minute, self.second) = (hour, minute, second)
        }

        init?(_ numbers: [Int]) {
            guard numbers.count >= 5 else { return nil }
            self.init(
                year: numbers[0], month: numbers[1], day: numbers[2], hour: numbers[3], minute: numbers[4],
                second: numbers.count > 5 ? numbers[5] : 0)
        }

        var isValidDate: Bool {
            guard (1970...9999).contains(year), (1...12).contains(month), (0...23).contains(hour),
                (0...59).contains(minute), (0...59).contains(second)
            else { return false }
            let days = [
                31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30,
                31,
            ]
            return (1...days[month - 1]).contains(day)
        }

        /// The same wall-clock reading taken as UTC: the instant the offsets are subtracted from.
        var asUTC: Date {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let value = DateComponents(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
            return calendar.date(from: value) ?? Date(timeIntervalSince1970: 0)
        }
    }

    /// The instant of `local` in `zone`: its first occurrence, or the first instant after a gap.
    package static func resolve(_ local: Components, in zone: TimeZone) -> Date {
        let wall = local.asUTC
        // Each offset the zone has within a day of the reading; a candidate is valid when the zone has that offset
        // at the candidate itself.
        let offsets = Set([-86_400.0, 0, 86_400].map { zone.secondsFromGMT(for: wall.addingTimeInterval($0)) })
        let valid = offsets.map { wall.addingTimeInterval(-Double($0)) }
            .filter { zone.secondsFromGMT(for: $0) == Int(wall.timeIntervalSince($0)) }.sorted()
        if let first = valid.first { return first }
        // In a gap: the transition lies between the reading taken at the later offset and at the earlier one;
        // found to the second (bounded: 64 halvings of at most a day).
        let sorted = offsets.sorted()
        var low = wall.addingTimeInterval(-Double(sorted.last ?? 0))
        var high = wall.addingTimeInterval(-Double(sorted.first ?? 0))
        let before = zone.secondsFromGMT(for: low)
        for _ in 0..<64 where high.timeIntervalSince(low) > 0.5 {
            let middle = low.addingTimeInterval(high.timeIntervalSince(low) / 2)
            if zone.secondsFromGMT(for: middle) == before { low = middle } else { high = middle }
        }
        // Offsets change on whole seconds: the first second of the new offset.
        let second = Date(timeIntervalSince1970: high.timeIntervalSince1970.rounded(.down))
        return zone.secondsFromGMT(for: second) == before ? second.addingTimeInterval(1) : second
    }

    /// The local reading of `date` in `zone`.
    package static func components(of date: Date, in zone: TimeZone) -> Components {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return Components(
            year: c.year ?? 1970, month: c.month ?? 1, day: c.day ?? 1, hour: c.hour ?? 0, minute: c.minute ?? 0,
            second: c.second ?? 0)
    }

    /// The local date `days` after the local date of `local` (its time of day kept).
    static func adding(days: Int, to local: Components) -> Components {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let moved = calendar.date(byAdding: .day, value: days, to: local.asUTC) ?? local.asUTC
        return components(of: moved, in: calendar.timeZone)
    }
}

/// A quiet window in a named time zone: `Europe/Amsterdam=22:00-07:00` (the worker's `--quiet-hours`, a row's
/// `quiet_hours` column). A window whose start is after its end runs over midnight; start equal to end is refused
/// (it would be all day or never).
package struct QuietHours: Sendable, Equatable, CustomStringConvertible {
    package var zone: TimeZone
    /// Minutes after local midnight.
    package var start: Int
    package var end: Int

    /// Parses `ZONE=HH:MM-HH:MM`; `field` names the input in the error (`queue-quiet-hours-invalid`).
    package init(parsing text: String, field: String) throws {
        func invalid(_ why: String) -> KKPushError {
            KKPushError(
                code: .queueQuietHoursInvalid,
                message: "The quiet hours '\(text)' (\(field)) \(why).",
                fix:
                    "Give ZONE=HH:MM-HH:MM, such as Europe/Amsterdam=22:00-07:00 (an IANA time zone, then the window in its local time)."
            )
        }
        let halves = text.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
        guard halves.count == 2 else { throw invalid("are not ZONE=HH:MM-HH:MM") }
        guard let zone = TimeZone(identifier: String(halves[0])) else {
            throw invalid("name no IANA time zone this system knows ('\(halves[0])')")
        }
        let times = halves[1].split(separator: "-", omittingEmptySubsequences: false).map { Self.minutes(String($0)) }
        guard times.count == 2, let start = times[0], let end = times[1] else {
            throw invalid("do not give the window as HH:MM-HH:MM")
        }
        guard start != end else {
            throw invalid("start and end at the same time: the window would be empty or all day")
        }
        self.zone = zone
        self.start = start
        self.end = end
    }

    private static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
            (0...23).contains(h), (0...59).contains(m)
        else { return nil }
        return h * 60 + m
    }

    package var description: String {
        "\(zone.identifier)=\(String(format: "%02d:%02d", start / 60, start % 60))-\(String(format: "%02d:%02d", end / 60, end % 60))"
    }

    /// When the window that holds `now` ends (nil: `now` is outside it). The end is the next reading of the end
    /// time on the local clock: across a daylight saving change the window is longer or shorter by the hour the
    /// clocks moved, as the club lives it; an end time in a gap is the first instant after it (``LocalTime``).
    package func end(containing now: Date) -> Date? {
        let local = LocalTime.components(of: now, in: zone)
        let minute = local.hour * 60 + local.minute
        let inside = start < end ? (minute >= start && minute < end) : (minute >= start || minute < end)
        guard inside else { return nil }
        // Over midnight and before it: the window ends tomorrow; otherwise today.
        let day = start > end && minute >= start ? LocalTime.adding(days: 1, to: local) : local
        var ending = day
        (ending.hour, ending.minute, ending.second) = (end / 60, end % 60, 0)
        return LocalTime.resolve(ending, in: zone)
    }

    /// Whether a push goes through quiet hours: an `interruption-level` of `time-sensitive` or `critical` in its
    /// `aps`, or the end of a Live Activity (`liveactivity` with `aps.event` `end`). A payload that is not JSON
    /// is not time-critical.
    package static func isTimeCritical(pushType: String, payload: String) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let aps = object["aps"] as? [String: Any]
        else { return false }
        if let level = aps["interruption-level"] as? String, level == "time-sensitive" || level == "critical" {
            return true
        }
        return pushType == "liveactivity" && (aps["event"] as? String) == "end"
    }
}
