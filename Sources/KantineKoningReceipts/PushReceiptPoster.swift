public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// What the app did with a push, as its receipt says.
public enum ReceiptHandling: String, Sendable, CaseIterable, Codable {
    /// The app's code ran and refreshed the diensten.
    case refreshed
    /// The notification was shown (the Notification Service Extension ran; the app's code did not).
    case shown
    /// The push arrived and was dropped (unreadable, stale, not for this enrollment).
    case dropped
}

/// A push receipt as the app posts it to the Kantine Koning backend (`POST /api/mobile/v1/push-receipts`, with the
/// enrollment's device JWT as for the token update). The contract is the backend's (KantineKoning's `PushReceipt`);
/// the backend takes its route, payload key and handling from this library, so the two ends cannot drift apart, and an app needs nothing else of kkpush.
///
/// ## Usage in the app
///
/// In the Notification Service Extension (alerts sent with `mutable-content: 1`):
///
/// ```swift
/// import KantineKoningReceipts
///
/// override func didReceive(_ request: UNNotificationRequest,
///                          withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
///     let receipt = AppPushReceipt(userInfo: request.content.userInfo, requestIdentifier: request.identifier,
///                                  handled: .shown, handler: "service-extension")
///     Task {
///         _ = try? await PushReceiptPoster(backend: backendURL, deviceJWT: jwt).post(receipt)
///         contentHandler(request.content)
///     }
/// }
/// ```
///
/// In `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` (background pushes), after
/// `refreshDiensten()`: `AppPushReceipt(userInfo: userInfo, requestIdentifier: nil, handled: .refreshed,
/// handler: "background-handler")`. A background push's handler never sees the apns-id: the backend puts its own
/// id in the payload under ``payloadKey`` (`kk_push_id`), and the receipt carries that.
public struct AppPushReceipt: Sendable, Equatable {
    /// The route on the backend.
    public static let path = "/api/mobile/v1/push-receipts"
    /// The payload key of the backend's push id.
    public static let payloadKey = "kk_push_id"

    /// The push's apns-id (a UUID), if known.
    public var apnsID: String?
    /// The backend's push id from the payload, if it carries one.
    public var pushID: String?
    public var receivedAt: Date
    public var handled: ReceiptHandling
    public var handledAt: Date?
    /// `service-extension`, `background-handler`, `will-present` or `on-open`.
    public var handler: String?
    public var appVersion: String?
    public var build: String?

    public init(
        apnsID: String? = nil, pushID: String? = nil, receivedAt: Date = Date(), handled: ReceiptHandling,
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

    /// The receipt of a delivered notification: the push id from `userInfo` (``payloadKey``, a string or a whole
    /// number), the apns-id from `requestIdentifier` when it is a UUID (a remote notification's request identifier
    /// is the push's apns-id; a local notification's is not a UUID and is left out), the app version and build from
    /// `bundle`'s `CFBundleShortVersionString` and `CFBundleVersion`.
    public init(
        userInfo: [AnyHashable: Any], requestIdentifier: String?, handled: ReceiptHandling, handler: String? = nil,
        receivedAt: Date = Date(), handledAt: Date? = nil, bundle: Bundle = .main
    ) {
        var pushID: String?
        switch userInfo[Self.payloadKey] {
        case let text as String where !text.isEmpty: pushID = text
        case let number as Int: pushID = String(number)
        case let number as NSNumber: pushID = number.stringValue
        default: pushID = nil
        }
        self.init(
            apnsID: requestIdentifier.flatMap { UUID(uuidString: $0) != nil ? $0 : nil }, pushID: pushID,
            receivedAt: receivedAt, handled: handled, handledAt: handledAt, handler: handler,
            appVersion: bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String,
            build: bundle.object(forInfoDictionaryKey: "CFBundleVersion") as? String)
    }

    /// The JSON body: ISO 8601 times in UTC, absent fields left out.
    public func jsonData() throws -> Data {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var object: [String: String] = [
            "received_at": formatter.string(from: receivedAt), "handled": handled.rawValue,
        ]
        object["apns_id"] = apnsID
        object["push_id"] = pushID
        object["handled_at"] = handledAt.map(formatter.string(from:))
        object["handler"] = handler
        object["app_version"] = appVersion
        object["build"] = build
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }
}

/// The backend's answer to a receipt it recorded.
public struct PushReceiptAnswer: Sendable, Equatable {
    /// The push queue rows the backend marked (nil: it records receipts elsewhere).
    public var queueRows: Int?
    /// The backend's warnings (an unknown field).
    public var warnings: [String]
}

/// A receipt the backend refused or never answered: its HTTP status (nil: no answer), its error code, message and
/// fix (the backend's words: a refused field is named).
public struct PushReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int?
    public var code: String
    public var message: String
    public var fix: String

    public var description: String {
        "\(status.map { "HTTP \($0) " } ?? "")\(code): \(message)\(fix.isEmpty ? "" : " \(fix)")"
    }
}

/// Posts receipts to the backend with the enrollment's device JWT (never logged: ``PushReceiptError`` holds the
/// backend's words only). One attempt with a timeout (``timeout``, 10 s by default: a Notification Service Extension
/// has about 30 s in all); the caller decides whether to try again.
public struct PushReceiptPoster: Sendable {
    /// The backend's base URL (`https://…`; the route is appended).
    public var backend: URL
    public var deviceJWT: String
    public var timeout: TimeInterval

    public init(backend: URL, deviceJWT: String, timeout: TimeInterval = 10) {
        self.backend = backend
        self.deviceJWT = deviceJWT
        self.timeout = timeout
    }

    /// Posts `receipt`; the answer, or a ``PushReceiptError``.
    public func post(_ receipt: AppPushReceipt) async throws -> PushReceiptAnswer {
        guard receipt.apnsID != nil || receipt.pushID != nil else {
            throw PushReceiptError(
                status: nil, code: "receipt-invalid", message: "The receipt names no push: no apnsID and no pushID.",
                fix: "Give the notification request's identifier or the payload's \(AppPushReceipt.payloadKey).")
        }
        let base =
            backend.absoluteString.hasSuffix("/") ? String(backend.absoluteString.dropLast()) : backend.absoluteString
        guard let url = URL(string: base + AppPushReceipt.path) else {
            throw PushReceiptError(
                status: nil, code: "backend-url-invalid", message: "The backend URL \(base) is not a URL.",
                fix: "Give the backend's base URL, for example https://example.org.")
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(deviceJWT)", forHTTPHeaderField: "Authorization")
        request.httpBody = try receipt.jsonData()
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw PushReceiptError(
                status: nil, code: "backend-unreachable",
                message: "The receipt did not reach \(base): \(error.localizedDescription)",
                fix: "Check the network and the backend's URL; the receipt can be posted again.")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        guard status == 200 else {
            let error = object["error"] as? [String: Any] ?? object
            throw PushReceiptError(
                status: status, code: error["code"] as? String ?? "http-\(status)",
                message: error["message"] as? String ?? "The backend answered HTTP \(status).",
                fix: error["fix"] as? String ?? "")
        }
        return PushReceiptAnswer(
            queueRows: object["queue_rows"] as? Int, warnings: object["warnings"] as? [String] ?? [])
    }
}
