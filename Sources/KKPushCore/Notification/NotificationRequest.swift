/// What a provider sends to APNs for one device push: the token, the `apns-*` headers and the body.
///
/// The transport adds `authorization` (token auth) and the pseudo-headers; this type does no I/O.
public struct NotificationRequest: Sendable, Equatable {
    /// The device token, as hex (it becomes the path `/3/device/<token>`).
    public var deviceToken: String
    /// `apns-topic`: the bundle id plus the push type's suffix; nil to leave the header out.
    public var topic: String?
    /// `apns-push-type`; nil to leave the header out (APNs recommends always sending it).
    public var pushType: PushType?
    /// `apns-priority` (1, 5 or 10); nil to leave it out (APNs then uses 10).
    public var priority: Int?
    /// `apns-expiration`: UNIX time in seconds; 0 means "try once"; nil to leave it out.
    public var expiration: Int?
    /// `apns-collapse-id`: at most 64 bytes of UTF-8; nil to leave it out.
    public var collapseID: String?
    /// `apns-id`: a canonical UUID; nil to let APNs pick one.
    public var apnsID: String?
    /// The exact bytes of the JSON payload.
    public var payload: [UInt8]

    /// Creates a request; every header is left out unless given.
    public init(
        deviceToken: String, topic: String? = nil, pushType: PushType? = nil, priority: Int? = nil,
        expiration: Int? = nil, collapseID: String? = nil, apnsID: String? = nil, payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// The request path: `/3/device/<token>`.
    public var path: String { Self.devicePathPrefix + deviceToken }

    /// The path prefix of device pushes, `/3/device/`.
    public static let devicePathPrefix = "/3/device/"

    /// The `apns-*` headers that are set, with lowercase names, always in this order:
    /// `apns-id`, `apns-push-type`, `apns-topic`, `apns-priority`, `apns-expiration`, `apns-collapse-id`.
    /// No `authorization`: the transport adds it.
    public var headerFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let apnsID { fields.append((APNsHeader.id, apnsID)) }
        if let pushType { fields.append((APNsHeader.pushType, pushType.rawValue)) }
        if let topic { fields.append((APNsHeader.topic, topic)) }
        if let priority { fields.append((APNsHeader.priority, String(priority))) }
        if let expiration { fields.append((APNsHeader.expiration, String(expiration))) }
        if let collapseID { fields.append((APNsHeader.collapseID, collapseID)) }
        return fields
    }

    /// The push type APNs would go by: the header, else the one the topic's suffix implies, else alert.
    public var effectivePushType: PushType {
        if let pushType { return pushType }
        if let topic, let implied = PushType.implied(byTopic: topic) { return implied }
        return .alert
    }

    /// The payload limit for ``effectivePushType`` (4096 bytes; 5120 for voip).
    public var payloadLimit: Int { effectivePushType.payloadLimit }

    /// True when every header value, the token and the payload bytes are the same.
    public static func == (lhs: NotificationRequest, rhs: NotificationRequest) -> Bool {
        lhs.deviceToken == rhs.deviceToken && lhs.topic == rhs.topic && lhs.pushType == rhs.pushType
            && lhs.priority == rhs.priority && lhs.expiration == rhs.expiration && lhs.collapseID == rhs.collapseID
            && lhs.apnsID == rhs.apnsID && lhs.payload == rhs.payload
    }
}

/// The names of the APNs request headers, lowercase as HTTP/2 sends them.
public enum APNsHeader {
    /// `apns-id`.
    public static let id = "apns-id"
    /// `apns-push-type`.
    public static let pushType = "apns-push-type"
    /// `apns-topic`.
    public static let topic = "apns-topic"
    /// `apns-priority`.
    public static let priority = "apns-priority"
    /// `apns-expiration`.
    public static let expiration = "apns-expiration"
    /// `apns-collapse-id`.
    public static let collapseID = "apns-collapse-id"
    /// `authorization`.
    public static let authorization = "authorization"
}

/// A request as the mock server received it: method, path, every header (names lowercase, repeats
/// kept, so `DuplicateHeaders` can be detected) and the body.
public struct ReceivedRequest: Sendable {
    /// The `:method` pseudo-header, for example `POST`.
    public var method: String
    /// The `:path` pseudo-header, for example `/3/device/<token>`.
    public var path: String
    /// Every regular header in the order received, names lowercase, repeats kept.
    public var headers: [(name: String, value: String)]
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a received request (header names are lowercased).
    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers.map { (name: $0.name.lowercasedIfNeeded, value: $0.value) }
        self.body = body
    }

    /// The request `request` becomes on the wire: POST, its path, its headers (plus `authorization`
    /// when given) and its payload. Preflight checks go through this, so client and mock judge alike.
    public init(_ request: NotificationRequest, authorization: String? = nil) {
        var headers = request.headerFields
        if let authorization { headers.append((APNsHeader.authorization, authorization)) }
        self.init(method: "POST", path: request.path, headers: headers, body: request.payload)
    }

    /// The values of every header named `name` (compared lowercase), in order.
    public func values(of name: String) -> [String] {
        let key = name.lowercasedIfNeeded
        return headers.filter { $0.name == key }.map(\.value)
    }

    /// The first value of the header named `name`, if any.
    public func value(of name: String) -> String? {
        value(ofLowercase: name.lowercasedIfNeeded)
    }

    /// ``value(of:)`` for a name already in lowercase (the `APNsHeader` names): no lowercasing of the name first.
    package func value(ofLowercase name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}
