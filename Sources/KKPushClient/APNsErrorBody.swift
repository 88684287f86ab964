import Foundation
import KKPushCore

/// An APNs error answer as the client reads it: the status and the JSON body
/// `{"reason": "...", "timestamp": <ms since 1970>}` (timestamp with 410 only).
///
/// Outside input, so nothing in it is trusted: a body that is not JSON, not an object, or has no string
/// `reason` gets the reason `HTTP<status>`; a `timestamp` that is not a number of milliseconds between
/// 1970 and 9999 is dropped rather than turned into a date (a `1e300` used to trap when printed).
public enum APNsErrorBody {
    /// The latest timestamp accepted: 9999-12-31T23:59:59.999Z in milliseconds.
    public static let latestTimestampMilliseconds: Double = 253_402_300_799_999

    /// The rejection `status` with `body` describes.
    public static func rejection(status: Int, body: [UInt8], apnsID: String?) -> PushRejection {
        var reason: APNsReason? = nil
        var timestamp: Date? = nil
        if body.count <= 65_536, let object = (try? JSONValue.parse(body))?.objectValue {
            if case .string(let r) = object["reason"], !r.isEmpty, r.utf8.count <= 256 { reason = APNsReason(r) }
            timestamp = date(milliseconds: object["timestamp"])
        }
        return PushRejection(
            status: status, reason: reason ?? APNsReason("HTTP\(status)"), timestamp: timestamp, apnsID: apnsID)
    }

    /// A JSON number of milliseconds since 1970 as a date, if it is one in range.
    static func date(milliseconds value: JSONValue?) -> Date? {
        let ms: Double
        switch value {
        case .int(let i): ms = Double(i)
        case .double(let d): ms = d
        default: return nil
        }
        guard ms.isFinite, ms >= 0, ms <= latestTimestampMilliseconds else { return nil }
        return Date(timeIntervalSince1970: ms / 1000)
    }
}
