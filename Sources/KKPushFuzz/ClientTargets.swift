import Foundation
import KKPushClient
import KKPushCore

/// Targets of KKPushClient: what comes back from APNs (or whatever answers in its place).
enum ClientTargets {
    static let all: [FuzzTarget] = [apnsAnswer]

    /// An APNs error answer. Input: two bytes of HTTP status (big-endian), the `retry-after` header value
    /// up to a line feed, then the body. The rejection is then shown as `send` and `send-batch` show it.
    static let apnsAnswer = FuzzTarget(
        name: "apns-answer", maxLength: 4096,
        summary:
            "APNsErrorBody.rejection(status:body:) incl. 410 timestamps, RetryAfter.seconds, and their output forms"
    ) { bytes in
        guard bytes.count >= 2 else { return }
        let status = Int(bytes[0]) << 8 | Int(bytes[1])
        let (header, body) = splitFirstLine(Array(bytes.dropFirst(2)))
        let rejection = APNsErrorBody.rejection(
            status: status, body: body, apnsID: "F6A1A5C4-0E4B-4C3D-9F2A-1B2C3D4E5F60")
        _ = rejection.description
        _ = rejection.reason.explanation
        _ = rejection.reason.fix
        _ = rejection.reason.isRetryable
        if let timestamp = rejection.timestamp {
            // `send --json` and `send-batch` print milliseconds, `send` an ISO 8601 date.
            _ = Int64((timestamp.timeIntervalSince1970 * 1000).rounded())
            _ = ISO8601DateFormatter().string(from: timestamp)
            _ = UTCTimestamp.format(timestamp)
        }
        if let seconds = RetryAfter.seconds(text(header), now: FuzzFixtures.now) {
            fuzzCheck(seconds >= 0 && seconds <= RetryAfter.ceiling, "retry-after outside 0...ceiling: \(seconds)")
        }
    }
}
