public import Foundation
public import KKPushClient
public import KKPushCore

/// What became of one push the backend sent.
public enum PushDelivery: Sendable, Hashable {
    /// APNs accepted it.
    case accepted(apnsID: String?)
    /// APNs rejected it with a status and reason (and, for 410, the time the token became invalid).
    case rejected(status: Int, reason: APNsReason, timestamp: Date?)
    /// No usable answer (connection, TLS, timeout, pre-flight).
    case failed(message: String)

    /// `accepted`, `rejected` or `failed`.
    public var label: String {
        switch self {
        case .accepted: "accepted"
        case .rejected: "rejected"
        case .failed: "failed"
        }
    }

    /// True for `410 Unregistered` (or any 410): the token is no longer valid and must be cleared.
    public var isUnregistered: Bool {
        if case .rejected(let status, let reason, _) = self { return status == 410 || reason == .unregistered }
        return false
    }
}

/// Sends one notification to an APNs environment: the seam between the backend's fan-out and the client.
public protocol PushSender: Sendable {
    /// Sends `request` to `environment` and returns what happened (never throws).
    func send(_ request: NotificationRequest, to environment: APNsEnvironment) async -> PushDelivery
}

/// A ``PushSender`` over kkpush's ``APNsClient``: each environment goes to the client's configured
/// endpoint for it (Apple's hosts, or the mock server in tests).
public struct APNsClientPushSender: PushSender {
    /// The client (owned by the caller, who shuts it down).
    public let client: APNsClient

    /// Wraps a client.
    public init(client: APNsClient) { self.client = client }

    /// Sends through the client to its endpoint for `environment`.
    public func send(_ request: NotificationRequest, to environment: APNsEnvironment) async -> PushDelivery {
        let outcome = await client.send(request, environment: environment)
        switch outcome.result {
        case .accepted(let id, _): return .accepted(apnsID: id)
        case .rejected(let r): return .rejected(status: r.status, reason: r.reason, timestamp: r.timestamp)
        case .failed(let f): return .failed(message: f.description)
        }
    }
}
