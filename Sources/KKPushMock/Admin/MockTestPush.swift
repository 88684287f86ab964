public import Foundation
public import KKPushCore

/// One "send a test push" of the web console (`POST /send`): what to send, and to which of the mock's own
/// listeners. The mock does not send it itself: a ``MockServerConfiguration/testPushSender`` does, with a
/// real APNs client (`kkpush mock serve` supplies one built on KKPushClient, the code `kkpush send` runs).
public struct TestPushRequest: Sendable, Hashable {
    /// The environment to send to.
    public var environment: APNsEnvironment
    /// The mock's own listener of that environment (its host, port and the CA to trust).
    public var endpoint: APNsEndpoint
    /// The device token (as typed; the client normalises nothing, pre-flight is off).
    public var token: String
    /// `apns-topic`.
    public var topic: String
    /// `apns-push-type` (nil: alert).
    public var pushType: String?
    /// `apns-priority` (nil: 10, or 5 for background).
    public var priority: Int?
    /// `apns-collapse-id`, if any.
    public var collapseID: String?
    /// The payload's bytes (JSON text as typed).
    public var payload: [UInt8]
    /// A broadcast channel id: send a broadcast to the channel (of the bundle id in `topic`) instead of a device
    /// push to `token` (a saved push replayed to a channel).
    public var channelID: String?

    /// Creates a request.
    public init(
        environment: APNsEnvironment, endpoint: APNsEndpoint, token: String, topic: String, pushType: String? = nil,
        priority: Int? = nil, collapseID: String? = nil, payload: [UInt8], channelID: String? = nil
    ) {
        self.channelID = channelID
        self.environment = environment
        self.endpoint = endpoint
        self.token = token
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
    }
}

/// What a test push got: APNs's (the mock's) answer, or why there was none.
public struct TestPushAnswer: Sendable, Hashable {
    /// `accepted`, `rejected` or `failed` (no usable answer).
    public var status: String
    /// The HTTP status (nil when the push failed without an answer).
    public var httpStatus: Int?
    /// The answer's `reason` (rejected), or the failure's kind (failed).
    public var reason: String?
    /// The answer's `apns-id`.
    public var apnsID: String?
    /// The answer's `apns-unique-id` (accepted, sandbox).
    public var apnsUniqueID: String?
    /// The 410 answer's `timestamp`.
    public var timestamp: Date?
    /// Why there was no answer (failed).
    public var error: String?
    /// How long it took, in milliseconds.
    public var durationMilliseconds: Double

    /// Creates an answer.
    public init(
        status: String, httpStatus: Int? = nil, reason: String? = nil, apnsID: String? = nil,
        apnsUniqueID: String? = nil, timestamp: Date? = nil, error: String? = nil, durationMilliseconds: Double = 0
    ) {
        self.status = status
        self.httpStatus = httpStatus
        self.reason = reason
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.timestamp = timestamp
        self.error = error
        self.durationMilliseconds = durationMilliseconds
    }
}

/// Sends a console's test push through a real APNs client to the mock's own listener.
public typealias TestPushSender = @Sendable (TestPushRequest) async -> TestPushAnswer
