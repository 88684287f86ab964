package import Foundation
package import KKPushCore
package import KantineKoning

/// Reads the app's push receipts for `diagnose`: the backend's `GET /admin/receipts` answer
/// (`{"receipts": [...]}`), one receipt object, or JSON lines of receipts (one object a line, as a backend logs them).
/// Each needs `handled` (`refreshed`, `shown`, `dropped`) and `apns_id` or `push_id`; `received_at`, `handled_at`,
/// `handler` and `device_token` are read when there. Other fields (the listing's `tenant_slug`, `recorded_at`, …)
/// are ignored.
///
/// A file rather than a live lookup (choice, as for the delivery record): the receipts are evidence that can be kept
/// with a bug report and read again, and diagnose needs no connection to the backend.
package enum ReceiptReading {
    /// Reads `bytes` (from `label`, for messages); `apnsID` is the push's apns-id when told apart from its record.
    package static func read(_ bytes: [UInt8], label: String, apnsID: String? = nil) throws
        -> DiagnosisFacts.ReceiptEvidence
    {
        var objects: [(line: Int?, value: JSONValue)] = []
        if let whole = try? JSONValue.parse(bytes) {
            if let list = whole["receipts"]?.arrayValue {
                objects = list.map { (nil, $0) }
            } else if whole.objectValue != nil {
                objects = [(nil, whole)]
            } else if let list = whole.arrayValue {
                objects = list.map { (nil, $0) }
            } else {
                throw shape(label, "is \(whole.jsonTypePhrase), not receipts")
            }
        } else {
            // JSON lines: every line that is not blank is one receipt.
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                guard let value = try? JSONValue.parse(Array(line.utf8)) else {
                    throw shape(label, "line \(index + 1) is not JSON")
                }
                objects.append((index + 1, value))
            }
        }
        var receipts: [DiagnosisFacts.ReceiptEvidence.Receipt] = []
        for (position, (line, value)) in objects.enumerated() {
            let place = line.map { "line \($0)" } ?? "receipt \(position + 1)"
            guard value.objectValue != nil else { throw shape(label, "\(place) is not a JSON object") }
            let apnsID = value["apns_id"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            let pushID: String? =
                switch value["push_id"] {
                case .string(let text)? where !text.isEmpty: text
                case .int(let n)?: String(n)
                default: nil
                }
            guard apnsID != nil || pushID != nil else { throw shape(label, "\(place) has neither apns_id nor push_id") }
            let words = DiagnosisFacts.ReceiptEvidence.Receipt.handlingNames
            guard let text = value["handled"]?.stringValue,
                let handled = DiagnosisFacts.ReceiptEvidence.Receipt.handling(named: text)
            else {
                throw shape(label, "\(place) has no handled of \(words)")
            }
            func date(_ name: String) throws -> Date? {
                guard let text = value[name]?.stringValue else { return nil }
                guard let date = Enrollment.parseDate(text) else {
                    throw shape(label, "\(place)'s \(name) '\(text)' is not an ISO 8601 time")
                }
                return date
            }
            receipts.append(
                .init(
                    apnsID: apnsID, pushID: pushID, receivedAt: try date("received_at"), handled: handled,
                    handledAt: try date("handled_at"), handler: value["handler"]?.stringValue,
                    deviceToken: value["device_token"]?.stringValue))
        }
        return DiagnosisFacts.ReceiptEvidence(
            receipts: receipts, apnsID: apnsID, source: "the app's receipts (\(label))")
    }

    static func shape(_ label: String, _ what: String) -> KKPushError {
        KKPushError(
            code: .receiptsShape, message: "\(label) \(what).",
            fix:
                "Give the backend's receipts: the JSON of its GET /admin/receipts, one receipt object, or JSON lines of receipts (each with handled and apns_id or push_id)."
        )
    }
}
