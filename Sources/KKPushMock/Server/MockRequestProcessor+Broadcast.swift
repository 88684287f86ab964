import Foundation
import KKPushCore

/// A broadcast or channel-management answer: status, `apns-request-id`, extra headers, body.
struct ChannelAnswer: Sendable {
    var status: Int
    /// The APNs reason of an error (its body is `{"reason": …}`).
    var reason: APNsReason?
    var requestID: String
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    /// `broadcast`, `create`, `read`, `delete`, `list` (the metric's label), or `unknown`.
    var operation: String
}

/// Broadcast sends (`POST /4/broadcasts/apps/<bundleId>` on the APNs listeners) and channel management
/// (`/1/apps/<bundleId>/channels` and `/all-channels` on the management listeners), §9.
///
/// The broadcast endpoint's order (Apple says only: authentication, then channel validation, then
/// delivery; the rest is kkpush's choice). The first failure answers:
/// 1. **Route**: `404 BadPath` (a path other than `/4/broadcasts/apps/<bundleId>`), `405 MethodNotAllowed`.
/// 2. **Authentication**, as for device pushes (certificate: `BadCertificate`,
///    `BadCertificateEnvironment`, `403 TopicMismatch` when the certificate does not name the bundle;
///    token: `MissingProviderToken`, `InvalidProviderToken`, `ExpiredProviderToken`, ...).
/// 3. **Bundle id**: `400 TopicDisallowed` for a suffixed bundle id.
/// 4. **Headers** (``BroadcastRules/checkBroadcastHeaders(requestID:channelID:pushType:priority:expiration:)``):
///    `BadMessageId` (`apns-request-id`), `MissingChannelId`, `BadChannelId`, `MissingPushType`,
///    `InvalidPushType` (anything but `liveactivity`, compared case-insensitively), `BadPriority`,
///    `BadExpirationDate` (not whole non-negative seconds).
/// 5. **Channel**: `400 ChannelNotRegistered` (not in this environment for this app),
///    `400 BadExpirationDate` (nonzero expiration on a storage-policy-0 channel).
/// 6. **Payload**: `PayloadEmpty`, `413 PayloadTooLarge` (over 5120 bytes), `BadRequestPayload` (not a
///    JSON object with an `aps` object).
/// 7. **Delivery**: `200` with `apns-request-id` (echoed lowercase, or new; no `apns-unique-id`), a copy
///    to every subscribed device in the delivery log; on a storage-policy-1 channel the message is kept
///    for late subscribers for 8 hours, or until a nonzero `apns-expiration` if sooner.
///
/// Management: route (`404 BadPath`, `405 MethodNotAllowed`), authentication, `TopicDisallowed`,
/// `BadMessageId`, then per operation: create `BadRequestParams` (body), `CannotCreateChannelConfig`
/// (the limit) → `201` with `apns-channel-id`; read/delete `MissingChannelId`, `BadChannelId`,
/// `ChannelNotRegistered` → `200` JSON / `204`; list → `200 {"channels": [...]}`.
/// Faults do not act on these requests.
extension MockRequestProcessor {
    /// True if the request is for the broadcast API: every request on a management listener, and
    /// `/4/...` on an APNs listener (one byte comparison on the device path).
    func isBroadcastAPI(path: String) -> Bool {
        management || path.utf8.starts(with: "/4/".utf8)
    }

    /// Judges a broadcast or channel-management request.
    func judgeBroadcastAPI(
        _ received: ReceivedRequest, authorization: String?, auth: inout ConnectionAuthentication,
        ids: inout RequestIDGenerator
    ) -> Outcome {
        let given = received.value(of: BroadcastHeader.requestID)
        let requestID =
            (given.flatMap { APNsRequestRules.isCanonicalUUID($0) ? $0.lowercased() : nil }) ?? ids.next()
        var operation = "unknown"
        func fail(_ status: Int, _ reason: APNsReason) -> Outcome {
            .channel(ChannelAnswer(status: status, reason: reason, requestID: requestID, operation: operation))
        }
        func fail(_ r: APNsRejection) -> Outcome { fail(r.status, r.reason) }

        // 1. Route.
        var path = received.path
        if let q = path.firstIndex(of: "?") { path = String(path[..<q]) }
        let bundleID: String
        if management {
            guard path.hasPrefix(BroadcastRules.channelPathPrefix) else { return fail(404, .badPath) }
            let rest = path.dropFirst(BroadcastRules.channelPathPrefix.count).split(
                separator: "/", omittingEmptySubsequences: false)
            guard rest.count == 2, !rest[0].isEmpty else { return fail(404, .badPath) }
            bundleID = String(rest[0])
            switch (rest[1], received.method) {
            case ("channels", "POST"): operation = "create"
            case ("channels", "GET"): operation = "read"
            case ("channels", "DELETE"): operation = "delete"
            case ("all-channels", "GET"): operation = "list"
            case ("channels", _), ("all-channels", _): return fail(405, .methodNotAllowed)
            default: return fail(404, .badPath)
            }
        } else {
            guard path.hasPrefix(BroadcastRules.broadcastPathPrefix) else { return fail(404, .badPath) }
            let rest = path.dropFirst(BroadcastRules.broadcastPathPrefix.count)
            guard !rest.isEmpty, !rest.contains("/") else { return fail(404, .badPath) }
            bundleID = String(rest)
            guard received.method == "POST" else { return fail(405, .methodNotAllowed) }
            operation = "broadcast"
        }

        // 2. Authentication.
        let now = state.clock.now()
        switch auth.mode {
        case .certificate(let cert):
            guard let cert else { return fail(403, .badCertificate) }
            if !cert.environments.contains(environment) { return fail(403, .badCertificateEnvironment) }
            if !cert.topics.isEmpty, !cert.topics.contains(bundleID), !BroadcastRules.hasSuffix(bundleID) {
                return fail(403, .topicMismatch)
            }
        case .token:
            if let reason = auth.authenticate(
                authorization: authorization, environment: environment, state: state, now: now, maxAge: maxAge,
                futureSkew: futureSkew, updateInterval: updateInterval)
            {
                return fail(reason.status, reason)
            }
        }

        // 3. Bundle id.
        if let r = BroadcastRules.checkBundleID(bundleID) { return fail(r) }

        if management {
            if let r = BroadcastRules.checkRequestID(given) { return fail(r) }
            return manage(
                operation: operation, bundleID: bundleID, received: received, requestID: requestID, fail: fail)
        }

        // 4. Headers.
        let channelID = received.value(of: BroadcastHeader.channelID)
        let expirationText = received.value(of: APNsHeader.expiration)
        if let r = BroadcastRules.checkBroadcastHeaders(
            requestID: given, channelID: channelID, pushType: received.value(of: APNsHeader.pushType),
            priority: received.value(of: APNsHeader.priority), expiration: expirationText)
        {
            return fail(r)
        }
        // 5. Channel.
        guard let channelID,
            let channel = state.channels.channel(environment: environment, bundleID: bundleID, id: channelID)
        else { return fail(400, .channelNotRegistered) }
        let expiration = expirationText.flatMap { Int64($0) } ?? 0
        let policy = ChannelStoragePolicy(rawValue: channel.storagePolicy) ?? .noMessageStored
        if let r = BroadcastRules.checkExpiration(expiration, policy: policy) { return fail(r) }
        // 6. Payload.
        if let r = BroadcastRules.checkPayload(received.body) { return fail(r) }

        // 7. Delivery.
        let priority = received.value(of: APNsHeader.priority).flatMap { Int($0) } ?? 10
        let payload = String(decoding: received.body, as: UTF8.self)
        var stored: StoredBroadcast? = nil
        if policy == .mostRecentMessageStored {
            var until = now.addingTimeInterval(BroadcastRules.storedMessageLifetime)
            if expiration > 0 { until = min(until, Date(timeIntervalSince1970: TimeInterval(expiration))) }
            if until > now {
                stored = StoredBroadcast(
                    requestID: requestID, priority: priority, expiration: expiration, payload: payload, expiresAt: until
                )
            }
        }
        let subscribers = state.channels.broadcast(id: channelID, stored: stored)
        deliverBroadcast(
            to: subscribers, channel: channel, requestID: requestID, priority: priority, expiration: expiration,
            payload: payload, now: now)
        return .channel(ChannelAnswer(status: 200, reason: nil, requestID: requestID, operation: operation))
    }

    /// A copy of a broadcast to each of `tokens`, in the delivery log and to the simulated devices.
    func deliverBroadcast(
        to tokens: [String], channel: MockChannel, requestID: String, priority: Int, expiration: Int64,
        payload: String, now: Date
    ) {
        let warnings = state.decodeWarnings(pushType: PushType.liveactivity.rawValue, payload: Array(payload.utf8))
        // A Live Activity update: the device side reads only its push type.
        let traits = PushTraits(visible: false, contentAvailable: false, mutableContent: false)
        for token in tokens {
            state.deliver(traits: traits) { sequence in
                var n = DeliveredNotification(
                    sequence: sequence, time: now, environment: channel.environment, token: token,
                    topic: channel.bundleID, pushType: "liveactivity", priority: priority, expiration: expiration,
                    collapseID: nil, apnsID: requestID, apnsUniqueID: nil, payload: payload)
                n.channelID = channel.id
                n.warnings = warnings
                return n
            }
        }
        state.metrics.countBroadcastDeliveries(environment: channel.environment, count: tokens.count)
    }

    private func manage(
        operation: String, bundleID: String, received: ReceivedRequest, requestID: String,
        fail: (Int, APNsReason) -> Outcome
    ) -> Outcome {
        func ok(_ status: Int, headers: [(String, String)] = [], body: [UInt8] = []) -> Outcome {
            .channel(
                ChannelAnswer(
                    status: status, reason: nil, requestID: requestID, headers: headers, body: body,
                    operation: operation))
        }
        switch operation {
        case "create":
            guard let policy = BroadcastRules.parseCreateBody(received.body) else {
                return fail(400, .badRequestParams)
            }
            switch state.channels.create(
                environment: environment, bundleID: bundleID, policy: policy, limit: maxChannels)
            {
            case .created(let id): return ok(201, headers: [(BroadcastHeader.channelID, id)])
            case .limitReached: return fail(400, .cannotCreateChannelConfig)
            }
        case "list":
            let ids = state.channels.list(environment: environment, bundleID: bundleID)
            let body = JSONValue.object(["channels": .array(ids.map { .string($0) })]).encoded()
            return ok(200, headers: [("content-type", "application/json")], body: body)
        default:
            let id = received.value(of: BroadcastHeader.channelID)
            if let r = BroadcastRules.checkChannelID(id) { return fail(r.status, r.reason) }
            guard let id, let channel = state.channels.channel(environment: environment, bundleID: bundleID, id: id)
            else { return fail(400, .channelNotRegistered) }
            if operation == "delete" {
                _ = state.channels.delete(environment: environment, bundleID: bundleID, id: id)
                return ok(204)
            }
            let body = JSONValue.object([
                "message-storage-policy": .int(channel.storagePolicy),
                "push-type": .string(BroadcastRules.channelPushType),
            ]).encoded()
            return ok(200, headers: [("content-type", "application/json")], body: body)
        }
    }
}
