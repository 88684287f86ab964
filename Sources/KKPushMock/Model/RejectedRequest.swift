import Foundation
public import KKPushCore

/// A request the mock answered with an error: what Apple's answer was and what it was about, for the web
/// console and the admin API's `GET /rejections` (a push that did not arrive is what a user looks for).
public struct RejectedRequest: Sendable, Hashable, Codable {
    /// Position among the rejections, from 1, increasing (its own count, apart from the delivery log's).
    public var sequence: UInt64
    /// When the mock answered (by the mock's clock), milliseconds since 1970.
    public var time: Int64
    /// The environment (listener) it was sent to.
    public var environment: APNsEnvironment
    /// The HTTP status answered (400, 403, 405, 410, 413, 429, 500, 503).
    public var status: Int
    /// Apple's reason, as in the answer's body.
    public var reason: String
    /// The device token in the path, lowercase, if the path had one.
    public var token: String?
    /// The `apns-topic` header, if sent.
    public var topic: String?
    /// The `apns-push-type` header, if sent.
    public var pushType: String?
    /// The `apns-id` answered.
    public var apnsID: String
    /// True when an injected fault (`respond`) chose the answer, not the mock's checks.
    public var injected: Bool

    enum CodingKeys: String, CodingKey {
        case sequence, time, environment, status, reason, token, topic
        case pushType = "push_type"
        case apnsID = "apns_id"
        case injected
    }

    /// Creates a record.
    public init(
        sequence: UInt64, time: Int64, environment: APNsEnvironment, status: Int, reason: String, token: String?,
        topic: String?, pushType: String?, apnsID: String, injected: Bool
    ) {
        self.sequence = sequence
        self.time = time
        self.environment = environment
        self.status = status
        self.reason = reason
        self.token = token
        self.topic = topic
        self.pushType = pushType
        self.apnsID = apnsID
        self.injected = injected
    }
}
