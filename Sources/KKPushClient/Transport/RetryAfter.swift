public import Foundation

/// The `retry-after` header (RFC 9110 §10.2.3): a delay in seconds or an HTTP date. APNs does not
/// document sending it; when a server (or a proxy in front of APNs) does, the client waits at least that
/// long before it retries a 429 or 503.
public enum RetryAfter {
    /// The most kkpush waits for, whatever the header says (the retry policy's total time caps it too).
    public static let ceiling: Double = 3600

    /// Seconds to wait, or nil if `value` is neither a non-negative number of seconds nor an HTTP date.
    public static func seconds(_ value: String, now: Date) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard let n = Double(trimmed), n.isFinite else { return nil }
            return min(n, ceiling)
        }
        // An HTTP date is printable ASCII; Foundation's DateFormatter traps on some other text (a combining
        // mark such as U+0323), and the value comes from whatever server answered.
        guard trimmed.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return min(max(0, date.timeIntervalSince(now)), ceiling)
    }
}
