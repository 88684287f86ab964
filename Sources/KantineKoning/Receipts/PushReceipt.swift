public import Foundation
public import KKPushCore
public import KantineKoningReceipts

/// What the app did with a push it received, as its receipt says: `refreshed` (the app's code ran and refreshed the
/// diensten), `shown` (the Notification Service Extension ran; the app's own code did not) or `dropped`. The app
/// side's type (KantineKoningReceipts), so both ends spell it alike.
public typealias PushReceiptHandling = ReceiptHandling

/// The receipt contract: what the Kantine Koning app posts to its backend when a push reaches the phone, from its
/// Notification Service Extension (alerts with `mutable-content: 1`) or its push handler (background pushes with
/// `content-available: 1`), with the enrollment's device JWT as for the token update.
///
/// `POST /api/mobile/v1/push-receipts`, `Authorization: Bearer <signedDeviceToken>`, a JSON object:
/// - `apns_id`: the push's `apns-id` (a UUID; on iOS the notification request's identifier), and/or
/// - `push_id`: the backend's own id of the push, carried in the payload under ``payloadKey`` (`kk_push_id`):
///   the one id a background push's handler can read (its `userInfo` has no apns-id). At least one of the two.
/// - `received_at`: when the push arrived (ISO 8601), required.
/// - `handled`: `refreshed`, `shown` or `dropped` (``PushReceiptHandling``), required.
/// - `handled_at` (ISO 8601, not before `received_at`), `handler` (``handlers``), `app_version`, `build`:
///   optional.
///
/// An unknown field is a warning, not an error (an app newer than its backend keeps working); a bad field is
/// `receipt-invalid`, naming it.
public struct PushReceipt: Sendable, Equatable {
    /// The route the app posts a receipt to.
    public static let path = AppPushReceipt.path
    /// The payload key of the backend's push id (a top-level key of the payload, beside `aps`).
    public static let payloadKey = AppPushReceipt.payloadKey
    /// The code paths a receipt may name: where on the phone the push was handled.
    public static let handlers = ["service-extension", "background-handler", "will-present", "on-open"]
    /// The fields of the contract.
    public static let fields: Set<String> = [
        "apns_id", "push_id", "received_at", "handled", "handled_at", "handler", "app_version", "build",
    ]
    /// The longest `push_id`, `app_version` or `build` taken.
    public static let maximumFieldLength = 128
    /// How far ahead of the backend's clock `received_at` may be (the phone's clock drifts). A choice: Apple gives
    /// no figure; five minutes covers a phone without network time and refuses a date typed wrong.
    public static let clockSkew: TimeInterval = 300

    public var apnsID: String?
    public var pushID: String?
    public var receivedAt: Date
    public var handled: PushReceiptHandling
    public var handledAt: Date?
    public var handler: String?
    public var appVersion: String?
    public var build: String?

    public init(
        apnsID: String? = nil, pushID: String? = nil, receivedAt: Date, handled: PushReceiptHandling,
        handledAt: Date? = nil, handler: String? = nil, appVersion: String? = nil, build: String? = nil
    ) {
        self.apnsID = apnsID
        self.pushID = pushID
        self.receivedAt = receivedAt
        self.handled = handled
        self.handledAt = handledAt
        self.handler = handler
        self.appVersion = appVersion
        self.build = build
    }

    /// The receipt as the app posts it.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "received_at": .string(Enrollment.formatDate(receivedAt)), "handled": .string(handled.rawValue),
        ]
        if let apnsID { object["apns_id"] = .string(apnsID) }
        if let pushID { object["push_id"] = .string(pushID) }
        if let handledAt { object["handled_at"] = .string(Enrollment.formatDate(handledAt)) }
        if let handler { object["handler"] = .string(handler) }
        if let appVersion { object["app_version"] = .string(appVersion) }
        if let build { object["build"] = .string(build) }
        return .object(object)
    }

    /// A receipt read from a request body, with its warnings (unknown fields).
    public struct Parsed: Sendable, Equatable {
        public var receipt: PushReceipt
        public var warnings: [String]
    }

    /// Reads and checks a receipt body; `now` is the backend's clock. Throws `receipt-invalid` naming the field.
    public static func parse(_ bytes: [UInt8], now: Date) throws(KKPushError) -> Parsed {
        let example =
            #"{"apns_id": "…", "received_at": "2027-01-15T09:30:00Z", "handled": "refreshed"}"#
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw invalid(
                "The receipt is not valid JSON: \(error.message)", fix: "Send a JSON object such as \(example).")
        }
        guard let object = value.objectValue else {
            throw invalid(
                "The receipt is \(value.jsonTypePhrase); a JSON object was expected.",
                fix: "Send a JSON object such as \(example).")
        }
        func string(_ name: String, limit: Int = maximumFieldLength) throws(KKPushError) -> String? {
            guard let field = object[name], field != .null else { return nil }
            guard let text = field.stringValue else {
                throw invalid("The receipt's \(name) is \(field.jsonTypePhrase); expected a string.", field: name)
            }
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { throw invalid("The receipt's \(name) is an empty string.", field: name) }
            if trimmed.utf8.count > limit {
                throw invalid("The receipt's \(name) is \(trimmed.utf8.count) bytes; at most \(limit).", field: name)
            }
            return trimmed
        }
        func date(_ name: String) throws(KKPushError) -> Date? {
            guard let text = try string(name, limit: 64) else { return nil }
            guard let date = Enrollment.parseDate(text) else {
                throw invalid(
                    "The receipt's \(name) '\(text)' is not an ISO 8601 time.", field: name,
                    fix: "Send \(name) as, for example, 2027-01-15T09:30:00Z.")
            }
            return date
        }
        let apnsID = try string("apns_id", limit: 36)
        if let apnsID, UUID(uuidString: apnsID) == nil {
            throw invalid(
                "The receipt's apns_id '\(apnsID)' is not a UUID (an apns-id is 8-4-4-4-12 hex digits).",
                field: "apns_id",
                fix: "Send the notification request's identifier, or leave apns_id out and send push_id.")
        }
        let pushID = try string("push_id")
        if apnsID == nil, pushID == nil {
            throw invalid(
                "The receipt names no push: it has neither apns_id nor push_id.", field: "apns_id",
                fix:
                    "Send apns_id (the notification request's identifier) or push_id (the payload's \(payloadKey)).")
        }
        guard let receivedAt = try date("received_at") else {
            throw invalid(
                "The receipt's received_at is missing.", field: "received_at",
                fix: "Send received_at, when the push arrived, as for example 2027-01-15T09:30:00Z.")
        }
        if receivedAt.timeIntervalSince(now) > clockSkew {
            throw invalid(
                "The receipt's received_at \(Enrollment.formatDate(receivedAt)) is after the backend's time \(Enrollment.formatDate(now)).",
                field: "received_at", fix: "Send the time the push arrived, from the phone's clock.")
        }
        let words = PushReceiptHandling.allCases.map(\.rawValue).joined(separator: ", ")
        guard let handledText = try string("handled", limit: 32) else {
            throw invalid("The receipt's handled is missing.", field: "handled", fix: "Send handled: one of \(words).")
        }
        guard let handled = PushReceiptHandling(rawValue: handledText) else {
            throw invalid(
                "The receipt's handled '\(handledText)' is not one of \(words).", field: "handled",
                fix: "Send handled: one of \(words).")
        }
        let handledAt = try date("handled_at")
        if let handledAt, handledAt < receivedAt {
            throw invalid(
                "The receipt's handled_at \(Enrollment.formatDate(handledAt)) is before its received_at \(Enrollment.formatDate(receivedAt)).",
                field: "handled_at", fix: "Send handled_at at or after received_at, or leave it out.")
        }
        let handler = try string("handler", limit: 32)
        if let handler, !handlers.contains(handler) {
            throw invalid(
                "The receipt's handler '\(handler)' is not one of \(handlers.joined(separator: ", ")).",
                field: "handler", fix: "Send one of \(handlers.joined(separator: ", ")), or leave handler out.")
        }
        let receipt = PushReceipt(
            apnsID: apnsID?.lowercased(), pushID: pushID, receivedAt: receivedAt, handled: handled,
            handledAt: handledAt, handler: handler, appVersion: try string("app_version"), build: try string("build"))
        let unknown = object.keys.filter { !fields.contains($0) }.sorted()
        let warnings =
            unknown.isEmpty
            ? []
            : [
                "Ignored unknown field\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")) (the receipt's fields are \(fields.sorted().joined(separator: ", ")))."
            ]
        return Parsed(receipt: receipt, warnings: warnings)
    }

    static func invalid(_ message: String, field: String? = nil, fix: String? = nil) -> KKPushError {
        KKPushError(
            code: .receiptInvalid, message: message,
            fix: fix
                ?? "Send \(field.map { "\($0) as a non-empty string" } ?? "a JSON object") as the push receipt contract says: apns_id or push_id, received_at, handled; optional handled_at, handler, app_version, build."
        )
    }

    /// The push id a payload carries under ``payloadKey`` (a string, or a whole number written as one); nil
    /// if it carries none.
    public static func pushID(inPayload payload: [UInt8]) -> String? {
        guard let object = (try? JSONValue.parse(payload))?.objectValue, let value = object[payloadKey] else {
            return nil
        }
        switch value {
        case .string(let text): return text.isEmpty ? nil : text
        case .int(let n): return String(n)
        default: return nil
        }
    }
}
