package import Foundation
package import KKPushCore
package import KantineKoning

/// Reads a push's delivery record from the mock APNs server's delivery log: the answer of its admin API's
/// `GET /log?apns_id=ID` (`{"notifications": [...]}`) or one entry of it, as JSON. The mock's words (`state`,
/// `history`, `app_code`) become ``DiagnosisFacts/DeliveryRecord``; the push's headers and payload in the entry
/// stand in for the ones not given otherwise.
///
/// A file rather than a live lookup (choice): the record is evidence that can be kept with a bug report and read
/// again, and diagnose needs no connection to the mock.
package enum DeliveryRecordReading {
    /// The record and the push as the log has it.
    package struct Read: Sendable {
        package var record: DiagnosisFacts.DeliveryRecord
        package var pushType: String?
        package var priority: Int?
        package var expiration: Int?
        package var collapseID: String?
        package var payload: [UInt8]?
    }

    /// Reads `bytes` (from `label`, for messages); `apnsID` picks the entry when the answer holds several.
    package static func read(_ bytes: [UInt8], label: String, apnsID: String? = nil) throws -> Read {
        guard let json = try? JSONValue.parse(bytes) else { throw shape(label, "is not JSON") }
        var entries = json["notifications"]?.arrayValue ?? (json.objectValue != nil ? [json] : [])
        if let id = apnsID?.lowercased() {
            entries = entries.filter { $0["apns_id"]?.stringValue?.lowercased() == id }
        }
        guard let entry = entries.last else {
            throw shape(
                label,
                apnsID == nil
                    ? "holds no delivery-log entry" : "holds no delivery-log entry for apns-id \(apnsID ?? "")")
        }
        guard let id = entry["apns_id"]?.stringValue, let state = entry["state"]?.stringValue else {
            throw shape(label, "has an entry without apns_id and state")
        }
        let history = (entry["history"]?.arrayValue ?? []).compactMap { step in
            step["state"]?.stringValue.map {
                DiagnosisFacts.DeliveryRecord.Step(state: $0, detail: step["detail"]?.stringValue)
            }
        }
        let code = entry["app_code"]
        let record = DiagnosisFacts.DeliveryRecord(
            apnsID: id, state: state, history: history,
            runs: (code?["runs"]?.arrayValue ?? []).compactMap(\.stringValue),
            onOpen: code?["on_open"]?.boolValue ?? false,
            appState: code?["app_state"]?.stringValue.flatMap(DiagnosisFacts.AppState.init(rawValue:)),
            source: "the mock's delivery log (\(label))")
        return Read(
            record: record, pushType: entry["push_type"]?.stringValue, priority: entry["priority"]?.intValue,
            expiration: entry["expiration"]?.intValue, collapseID: entry["collapse_id"]?.stringValue,
            payload: entry["payload"]?.stringValue.map { Array($0.utf8) })
    }

    static func shape(_ label: String, _ what: String) -> KKPushError {
        KKPushError(
            code: .deliveryRecordShape, message: "\(label) \(what).",
            fix:
                "Give the mock's delivery-log answer for the push: the JSON of its admin API's GET /log?apns_id=ID, or one entry of it."
        )
    }
}
