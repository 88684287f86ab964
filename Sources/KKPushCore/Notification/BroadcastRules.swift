public import Foundation

/// A broadcast channel's message storage policy (`message-storage-policy`), fixed at creation.
public enum ChannelStoragePolicy: Int, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `0`, No Message Stored: a higher publishing budget, for frequent updates; only `apns-expiration: 0`.
    case noMessageStored = 0
    /// `1`, Most Recent Message Stored: the latest message is kept up to 8 hours for late subscribers.
    case mostRecentMessageStored = 1

    public var description: String {
        switch self {
        case .noMessageStored: "0 (No Message Stored)"
        case .mostRecentMessageStored: "1 (Most Recent Message Stored)"
        }
    }
}

/// The channel-management operations of Apple's broadcast API (`/1/apps/<bundleId>/...`).
public enum ChannelOperation: String, Sendable, CaseIterable {
    case create, read, delete
    case listAll = "list"

    /// The HTTP method Apple documents.
    public var method: String {
        switch self {
        case .create: "POST"
        case .read, .listAll: "GET"
        case .delete: "DELETE"
        }
    }

    /// The status of success: 201 create, 200 read and list, 204 delete.
    public var successStatus: Int {
        switch self {
        case .create: 201
        case .read, .listAll: 200
        case .delete: 204
        }
    }
}

/// One channel-management request: its method, path, headers and body as Apple documents them (§9.1).
public struct ChannelRequest: Sendable, Equatable {
    public var operation: ChannelOperation
    /// The plain bundle id (no suffix).
    public var bundleID: String
    /// `apns-channel-id` (read and delete).
    public var channelID: String?
    /// The storage policy (create).
    public var storagePolicy: ChannelStoragePolicy?
    /// `apns-request-id` (a lowercase UUID), if any.
    public var requestID: String?

    public init(
        operation: ChannelOperation, bundleID: String, channelID: String? = nil,
        storagePolicy: ChannelStoragePolicy? = nil, requestID: String? = nil
    ) {
        self.operation = operation
        self.bundleID = bundleID
        self.channelID = channelID
        self.storagePolicy = storagePolicy
        self.requestID = requestID
    }

    public static func create(bundleID: String, storagePolicy: ChannelStoragePolicy) -> ChannelRequest {
        ChannelRequest(operation: .create, bundleID: bundleID, storagePolicy: storagePolicy)
    }
    public static func read(bundleID: String, channelID: String) -> ChannelRequest {
        ChannelRequest(operation: .read, bundleID: bundleID, channelID: channelID)
    }
    public static func delete(bundleID: String, channelID: String) -> ChannelRequest {
        ChannelRequest(operation: .delete, bundleID: bundleID, channelID: channelID)
    }
    public static func listAll(bundleID: String) -> ChannelRequest {
        ChannelRequest(operation: .listAll, bundleID: bundleID)
    }

    /// `/1/apps/<bundleId>/channels`, or `/all-channels` to list.
    public var path: String {
        "/1/apps/\(bundleID)/" + (operation == .listAll ? "all-channels" : "channels")
    }

    /// The headers (without `authorization`).
    public var headerFields: [(name: String, value: String)] {
        var h: [(name: String, value: String)] = []
        if let channelID, operation == .read || operation == .delete {
            h.append((BroadcastHeader.channelID, channelID))
        }
        if let requestID { h.append((BroadcastHeader.requestID, requestID)) }
        if operation == .create { h.append(("content-type", "application/json")) }
        return h
    }

    /// The body: create's `{"message-storage-policy": n, "push-type": "LiveActivity"}`, else empty.
    public var body: [UInt8] {
        guard operation == .create else { return [] }
        let policy = storagePolicy?.rawValue ?? 0
        return Array(#"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#.utf8)
    }

    public static func == (a: ChannelRequest, b: ChannelRequest) -> Bool {
        a.operation == b.operation && a.bundleID == b.bundleID && a.channelID == b.channelID
            && a.storagePolicy == b.storagePolicy && a.requestID == b.requestID
    }
}

/// A broadcast send: `POST /4/broadcasts/apps/<bundleId>` (§9.2), plain bundle id, no `apns-topic`.
public struct BroadcastRequest: Sendable, Equatable {
    /// The plain bundle id.
    public var bundleID: String
    /// `apns-channel-id`.
    public var channelID: String
    /// `apns-priority`: 10, 5 or 1.
    public var priority: Int
    /// `apns-expiration` (0 on a No Message Stored channel).
    public var expiration: Int
    /// `apns-request-id`, if any (a UUID).
    public var requestID: String?
    /// The Live Activity update or end payload.
    public var payload: [UInt8]

    public init(
        bundleID: String, channelID: String, priority: Int = 10, expiration: Int = 0, requestID: String? = nil,
        payload: [UInt8]
    ) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
        self.payload = payload
    }

    /// `/4/broadcasts/apps/<bundleId>`.
    public var path: String { BroadcastRules.broadcastPathPrefix + bundleID }

    /// The headers (without `authorization`): the push type is sent as `liveactivity`.
    public var headerFields: [(name: String, value: String)] {
        var h: [(name: String, value: String)] = [
            (BroadcastHeader.channelID, channelID), (APNsHeader.pushType, "liveactivity"),
            (APNsHeader.priority, String(priority)), (APNsHeader.expiration, String(expiration)),
        ]
        if let requestID { h.append((BroadcastHeader.requestID, requestID)) }
        h.append(("content-type", "application/json"))
        return h
    }

    /// The request as the server receives it.
    public func received(authorization: String? = nil) -> ReceivedRequest {
        var h = headerFields
        if let authorization { h.append((APNsHeader.authorization, authorization)) }
        return ReceivedRequest(method: "POST", path: path, headers: h, body: payload)
    }
}

/// The header names of the broadcast API.
public enum BroadcastHeader {
    /// `apns-channel-id`: a channel's base64 id.
    public static let channelID = "apns-channel-id"
    /// `apns-request-id`: a UUID, echoed (or made) in every answer.
    public static let requestID = "apns-request-id"
}

extension APNsEnvironment {
    /// Apple's channel-management host: `api-manage-broadcast[.sandbox].push.apple.com`.
    public var channelManagementHost: String {
        self == .sandbox ? "api-manage-broadcast.sandbox.push.apple.com" : "api-manage-broadcast.push.apple.com"
    }
    /// Apple's channel-management port: 2195 (sandbox), 2196 (production).
    public var channelManagementPort: Int { self == .sandbox ? 2195 : 2196 }
}

extension APNsEndpoint {
    /// Apple's channel-management endpoint for `environment` (§1.3).
    public static func channelManagement(_ environment: APNsEnvironment) -> APNsEndpoint {
        APNsEndpoint(
            host: environment.channelManagementHost, port: environment.channelManagementPort, environment: environment)
    }
}

/// The broadcast and channel rules shared by the client's pre-flight and the mock (§9). Each check
/// answers the first rejection in its group, nil when the request passes.
///
/// Documented by Apple: the reasons and statuses (A9), the 10,000-channel limit, the 5120-byte
/// payload, `BadExpirationDate` for a nonzero expiration on a No Message Stored channel,
/// `TopicDisallowed` for a suffixed bundle id. kkpush's choices: the order within a group, the
/// push type compared case-insensitively, a channel id must be non-empty base64 (`BadChannelId`).
public enum BroadcastRules {
    /// `/4/broadcasts/apps/`.
    public static let broadcastPathPrefix = "/4/broadcasts/apps/"
    /// `/1/apps/`.
    public static let channelPathPrefix = "/1/apps/"
    /// The largest broadcast payload, 5120 bytes.
    public static let payloadLimit = 5120
    /// Apple's limit on channels per app per environment.
    public static let channelLimit = 10_000
    /// How long a policy-1 channel keeps its latest message: 8 hours.
    public static let storedMessageLifetime: TimeInterval = 8 * 3600
    /// The push type a channel is created with (`push-type` in the create body).
    public static let channelPushType = "LiveActivity"

    /// True if `bundleID` carries a push-type suffix (`.push-type.liveactivity`, `.voip`, ...).
    public static func hasSuffix(_ bundleID: String) -> Bool {
        let lower = bundleID.lowercased()
        return lower.contains(".push-type.") || lower.hasSuffix(".voip") || lower.hasSuffix(".complication")
            || lower.hasSuffix(".pushkit.fileprovider")
    }

    /// The bundle id a broadcast (or a channel-management request) goes to for the topic or bundle id given: the
    /// one rule `channel`, `send` to a channel and `send-batch`'s channel lines apply, so they agree.
    ///
    /// - A plain bundle id: itself, nothing to say.
    /// - A Live Activity topic (`<bundle id>.push-type.liveactivity`, what the app's own Live Activity pushes use):
    ///   the same app, and a broadcast is always a Live Activity push, so the suffix is dropped and a warning
    ///   (`broadcast-topic-suffix-dropped`) says so; APNs would answer `400 TopicDisallowed` to the suffixed id.
    /// - Any other push-type suffix (`.voip`, `.complication`, `.pushkit.fileprovider`, another `.push-type.`):
    ///   another push type's topic, which a broadcast cannot use: the given value and the error
    ///   `TopicDisallowed` (every command refuses it before sending, exit 1 as for every pre-flight refusal).
    public static func broadcastBundleID(forTopic topic: String) -> (bundleID: String, problem: Problem?) {
        guard hasSuffix(topic) else { return (topic, nil) }
        let liveActivity = PushType.liveactivity
        if let suffix = liveActivity.topicSuffix, topic.lowercased().hasSuffix(suffix), topic.count > suffix.count {
            let bundleID = String(topic.dropLast(suffix.count))
            if !bundleID.isEmpty, !hasSuffix(bundleID) {
                return (
                    bundleID,
                    Problem(
                        .warning, code: .broadcastTopicSuffixDropped,
                        message:
                            "'\(topic)' is the app's Live Activity topic; a broadcast goes to the plain bundle id, so it is sent to '\(bundleID)' (APNs answers 400 TopicDisallowed to the suffixed one).",
                        fix: "Give the plain bundle id \(bundleID) for broadcasts and channels.")
                )
            }
        }
        return (
            topic,
            Problem(
                .error, code: .topicDisallowed,
                message:
                    "'\(topic)' carries another push type's suffix: a broadcast goes to /4/broadcasts/apps/<bundle id> and APNs answers 400 TopicDisallowed.",
                fix: "Give the app's plain bundle id (without .voip, .complication or .push-type.*).")
        )
    }

    /// The bundle id in the path: empty or with a character that is not a bundle id's → `BadPath`;
    /// a push-type suffix → `TopicDisallowed`.
    public static func checkBundleID(_ bundleID: String) -> APNsRejection? {
        guard !bundleID.isEmpty,
            bundleID.utf8.allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E
                    || $0 == 0x2D || $0 == 0x5F
            })
        else { return APNsRejection(status: 404, reason: .badPath) }
        if hasSuffix(bundleID) { return APNsRejection(status: 400, reason: .topicDisallowed) }
        return nil
    }

    /// True for non-empty standard base64 (with `=` padding to a multiple of 4) that decodes.
    public static func isWellFormedChannelID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 256, id.utf8.count % 4 == 0 else { return false }
        return Data(base64Encoded: id) != nil
    }

    /// `apns-channel-id`: absent or empty → `MissingChannelId`, not base64 → `BadChannelId`.
    public static func checkChannelID(_ id: String?) -> APNsRejection? {
        guard let id, !id.isEmpty else { return APNsRejection(status: 400, reason: .missingChannelId) }
        return isWellFormedChannelID(id) ? nil : APNsRejection(status: 400, reason: .badChannelId)
    }

    /// `apns-request-id`: a UUID if present (any case) → else `BadMessageId`.
    public static func checkRequestID(_ id: String?) -> APNsRejection? {
        guard let id else { return nil }
        return APNsRequestRules.isCanonicalUUID(id) ? nil : APNsRejection(status: 400, reason: .badMessageId)
    }

    /// The broadcast's headers, in this order: `apns-request-id` (`BadMessageId`), `apns-channel-id`
    /// (`MissingChannelId`, `BadChannelId`), `apns-push-type` (`MissingPushType`, `InvalidPushType`
    /// unless `liveactivity` in any case), `apns-priority` (`BadPriority` unless 10, 5 or 1),
    /// `apns-expiration` (`BadExpirationDate` unless whole non-negative seconds).
    public static func checkBroadcastHeaders(
        requestID: String?, channelID: String?, pushType: String?, priority: String?, expiration: String?
    ) -> APNsRejection? {
        if let r = checkRequestID(requestID) { return r }
        if let r = checkChannelID(channelID) { return r }
        guard let pushType, !pushType.isEmpty else { return APNsRejection(status: 400, reason: .missingPushType) }
        if pushType.lowercased() != "liveactivity" { return APNsRejection(status: 400, reason: .invalidPushType) }
        return checkPriorityAndExpiration(priority: priority, expiration: expiration)
    }

    /// The last two header checks of ``checkBroadcastHeaders(requestID:channelID:pushType:priority:expiration:)``:
    /// `apns-priority` (`BadPriority` unless 10, 5 or 1) and `apns-expiration` (`BadExpirationDate` unless whole
    /// non-negative seconds); nil for a header left out.
    public static func checkPriorityAndExpiration(priority: String?, expiration: String?) -> APNsRejection? {
        if let priority, !["10", "5", "1"].contains(priority) {
            return APNsRejection(status: 400, reason: .badPriority)
        }
        if let expiration, Int64(expiration).map({ $0 < 0 }) ?? true {
            return APNsRejection(status: 400, reason: .badExpirationDate)
        }
        return nil
    }

    /// A nonzero expiration on a No Message Stored channel → `BadExpirationDate` (Apple, A9).
    public static func checkExpiration(_ expiration: Int64, policy: ChannelStoragePolicy) -> APNsRejection? {
        policy == .noMessageStored && expiration != 0 ? APNsRejection(status: 400, reason: .badExpirationDate) : nil
    }

    /// The payload: empty → `PayloadEmpty`, over 5120 bytes → `413 PayloadTooLarge`, not a JSON object
    /// with an `aps` object → `BadRequestPayload`.
    public static func checkPayload(_ payload: [UInt8]) -> APNsRejection? {
        if payload.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return APNsRejection(status: 400, reason: .payloadEmpty)
        }
        if payload.count > payloadLimit { return APNsRejection(status: 413, reason: .payloadTooLarge) }
        guard let object = (try? JSONValue.parse(payload))?.objectValue, object["aps"]?.objectValue != nil else {
            return APNsRejection(status: 400, reason: .badRequestPayload)
        }
        return nil
    }

    /// A create body: JSON `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`, both required
    /// (push type compared case-insensitively) → the policy, or nil: `400 BadRequestParams`.
    public static func parseCreateBody(_ body: [UInt8]) -> ChannelStoragePolicy? {
        guard let object = (try? JSONValue.parse(body))?.objectValue, object.count == 2,
            case .int(let number) = object["message-storage-policy"],
            let policy = ChannelStoragePolicy(rawValue: number),
            let pushType = object["push-type"]?.stringValue, pushType.lowercased() == "liveactivity"
        else { return nil }
        return policy
    }

    /// Pre-flight of a broadcast before it is sent (client side): every check the request alone
    /// allows, as problems with their reason as code.
    public static func preflight(_ request: BroadcastRequest) -> [Problem] {
        var problems: [Problem] = []
        func add(_ r: APNsRejection?, _ message: String) {
            if let r {
                problems.append(Problem(.error, code: Problem.Code(r.reason), message: message, fix: r.reason.fix))
            }
        }
        add(
            checkBundleID(request.bundleID),
            "The bundle id '\(request.bundleID)' is not a plain bundle id (a broadcast takes no suffix).")
        add(
            checkBroadcastHeaders(
                requestID: request.requestID, channelID: request.channelID, pushType: "liveactivity",
                priority: String(request.priority), expiration: String(request.expiration)),
            "The broadcast's headers would be rejected.")
        add(checkPayload(request.payload), "The payload would be rejected.")
        return problems
    }
}
