import Foundation
import KKPushCore
import Logging

/// How the mock judges one request: the same stages, in the same order, for every listener.
///
/// The validation order (the first failure answers):
/// 1. **Route and method** (shared ``APNsRequestRules/checkRequestLine(_:)``): `404 BadPath`,
///    `405 MethodNotAllowed`, `400 MissingDeviceToken`.
/// 2. **Faults**: a fault matching the token, the topic or every request acts here (close, reset,
///    stall, fixed answer; a delay postpones whatever answer follows; GOAWAY counts the stream, or
///    with `after_streams` 0 refuses it before it is judged).
/// 3. **Header syntax** (shared, same call as 1): `DuplicateHeaders`, `BadMessageId`, `BadPriority`,
///    `BadExpirationDate`, `BadCollapseId`, `InvalidPushType`.
/// 4. **Authentication** (the mock's):
///    - certificate connections: `403 BadCertificate` (unreadable certificate),
///      `403 BadCertificateEnvironment` (certificate not for this listener's environment);
///      `authorization` is ignored;
///    - token connections: `403 MissingProviderToken` (no `authorization: bearer <token>`),
///      `403 InvalidProviderToken` (undecodable, unknown key id, team id not the key's, bad
///      signature — raw r‖s and DER both accepted — or another team than the connection's first),
///      `403 UnrelatedKeyIdInToken` (a key id other than the connection's first),
///      `403 BadEnvironmentKeyIdInToken` (the key is limited to the other environment),
///      `403 ExpiredProviderToken` (`iat` more than an hour ago by the mock's clock),
///      `429 TooManyProviderTokenUpdates` (a new token less than 20 minutes after the connection
///      first used the previous one). A verified token is cached per connection; later requests
///      with it only have its age checked.
/// 5. **Topic and token format** (shared ``APNsRequestRules/checkTopicAndToken(_:topicRequired:allowedTopics:usingCertificate:)``):
///    `MissingTopic`, `BadTopic`, `BadDeviceToken` (format); then `400 TopicDisallowed` when the
///    connection's key lists topics (a topic-specific key) and the request's topic is none of them
///    nor a suffixed topic of one.
/// 6. **Device registry** (the mock's): `400 BadDeviceToken` (the token belongs to the other
///    environment, or is unknown in strict mode), `410 Unregistered`/`ExpiredToken` with
///    `timestamp` (ms), `400 DeviceTokenNotForTopic`.
/// 7. **Payload** (shared ``APNsRequestRules/checkPayload(_:)``): `PayloadEmpty`, `413 PayloadTooLarge`,
///    `PayloadEmpty` for a body that is not a JSON object.
///
/// Then `200` with `apns-id` (echoed, lowercased, or new) and, on the sandbox listener only,
/// `apns-unique-id`; the notification is logged (`received`) and the device side's rules decide what becomes of it
/// (``MockState/Inner/accept(_:traits:now:metrics:)``): delivered to its device, stored while it is offline, held,
/// deferred or discarded, each state in the entry's history.
struct MockRequestProcessor: Sendable {
    let environment: APNsEnvironment
    let state: MockState
    let maxAge: TimeInterval
    let futureSkew: TimeInterval
    let updateInterval: TimeInterval
    /// True on a channel-management listener (`/1/apps/...` only).
    var management = false
    /// The most channels per app and environment (``MockServerConfiguration/maxChannelsPerApp``).
    var maxChannels = BroadcastRules.channelLimit

    /// The outcome of one request.
    enum Outcome {
        case accepted(apnsID: String, uniqueID: String?)
        case rejected(status: Int, reason: APNsReason, apnsID: String, timestamp: Int64?)
        case close
        case reset
        case stall
        /// Silent from now on: nothing read, nothing written, the connection left open.
        case blackHole
        /// A broadcast or channel-management answer (``MockRequestProcessor/judgeBroadcastAPI(_:authorization:auth:ids:)``).
        case channel(ChannelAnswer)
    }

    /// What stage 1 decided: either an answer, or the parsed request to go on with.
    struct Routed {
        var request: NotificationRequest
        var faults: [MockFault]
    }

    /// Stages 1 to 3: route, faults, header syntax.
    /// `idleMilliseconds`: how long the connection sat idle before this request (nil: its first).
    func route(_ received: ReceivedRequest, ids: inout RequestIDGenerator, idleMilliseconds: Int? = nil) -> (
        routed: Routed?, outcome: Outcome?, delayMs: Int, goAways: [MockFault], injected: Bool
    ) {
        let (request, check) = APNsRequestRules.checkRequestLine(received)
        // Stage-1 failures come before faults (there may be no token to match faults on).
        if let rejection = check.rejection, Self.isRouteReason(rejection.reason) {
            return (
                nil,
                reject(
                    rejection.status, rejection.reason,
                    apnsID: Self.echoedID(received.value(ofLowercase: APNsHeader.id), ids: &ids)), 0, [], false
            )
        }
        let faults = state.matchingFaults(idleMilliseconds: idleMilliseconds) {
            (Self.token(of: received.path), received.value(ofLowercase: APNsHeader.topic))
        }
        var delay = 0
        var goAways: [MockFault] = []
        var answer: Outcome? = nil
        // Faults that act on this request, for kkpush_mock_faults_fired_total (a goaway counts when its
        // GOAWAY is sent: APNsConnectionHandler).
        var fired: [String] = []
        for fault in faults {
            switch fault.kind {
            case .closeConnection, .resetConnection, .stall, .blackHole:
                state.metrics.faultFired(fault.kind.metricName)
                if case .closeConnection = fault.kind { return (nil, .close, 0, [], true) }
                if case .resetConnection = fault.kind { return (nil, .reset, 0, [], true) }
                if case .blackHole = fault.kind { return (nil, .blackHole, 0, [], true) }
                return (nil, .stall, 0, [], true)
            case .delay(let ms):
                delay = max(delay, ms)
                fired.append("delay")
            case .goAway: goAways.append(fault)
            case .respond(let status, let reason):
                if answer == nil {
                    answer = reject(
                        status, reason, apnsID: Self.echoedID(received.value(ofLowercase: APNsHeader.id), ids: &ids))
                    fired.append("respond")
                }
            }
        }
        for kind in fired { state.metrics.faultFired(kind) }
        if let answer { return (nil, answer, delay, goAways, true) }
        if let rejection = check.rejection {
            return (
                nil,
                reject(
                    rejection.status, rejection.reason,
                    apnsID: Self.echoedID(received.value(ofLowercase: APNsHeader.id), ids: &ids)), delay, goAways, false
            )
        }
        guard let request else {
            return (nil, reject(400, .badPath, apnsID: ids.next()), delay, goAways, false)
        }
        return (Routed(request: request, faults: faults), nil, delay, goAways, false)
    }

    /// Stages 4 to 7 and the answer.
    func judge(
        _ request: NotificationRequest, authorization: String?, auth: inout ConnectionAuthentication,
        ids: inout RequestIDGenerator, memo: inout PayloadVerdictMemo
    ) -> Outcome {
        let apnsID = Self.echoedID(request.apnsID, ids: &ids)
        let now = state.clock.now()

        // Stage 4: authentication.
        var allowedTopics: Set<String>? = nil
        var topicRequired = true
        let usingCertificate: Bool
        switch auth.mode {
        case .certificate(let cert):
            usingCertificate = true
            guard let cert else { return reject(403, .badCertificate, apnsID: apnsID) }
            if !cert.environments.contains(environment) {
                return reject(403, .badCertificateEnvironment, apnsID: apnsID)
            }
            allowedTopics = cert.topics
            topicRequired = cert.topics.count != 1
        case .token:
            usingCertificate = false
            if let reason = auth.authenticate(
                authorization: authorization, environment: environment, state: state, now: now, maxAge: maxAge,
                futureSkew: futureSkew, updateInterval: updateInterval)
            {
                return reject(reason.status, reason, apnsID: apnsID)
            }
        }

        // Stage 5: topic and token format.
        let topicCheck = APNsRequestRules.checkTopicAndToken(
            request, topicRequired: topicRequired, allowedTopics: allowedTopics, usingCertificate: usingCertificate)
        if let r = topicCheck.rejection { return reject(r.status, r.reason, apnsID: apnsID) }
        let topic = (request.topic?.isEmpty == false ? request.topic : nil) ?? allowedTopics?.first ?? ""
        // A topic-specific key used for another topic: 400 TopicDisallowed (see the mock's docs for the choice).
        if let key = auth.current?.key, !key.allows(topic: topic) {
            return reject(400, .topicDisallowed, apnsID: apnsID)
        }
        let token = DeviceToken.canonical(request.deviceToken)

        // Stage 6: device registry.
        let (device, strict) = state.lookup(token)
        if let device {
            if device.environment != environment {
                return reject(400, .badDeviceToken, apnsID: apnsID)
            }
            if let at = device.unregisteredAt {
                let reason = device.unregisteredReason ?? .unregistered
                return reject(410, reason, apnsID: apnsID, timestamp: at.millisecondsSince1970)
            }
            // The app's own topics: its bundle id, alone or with a push-type suffix; an extension's bundle id
            // (`<bundle id>.widget`) is another app, whose tokens this device's are not.
            if let bundle = device.topic, !TopicScope.covers(bundleID: bundle, topic: topic) {
                return reject(400, .deviceTokenNotForTopic, apnsID: apnsID)
            }
        } else if strict {
            return reject(400, .badDeviceToken, apnsID: apnsID)
        }

        // Stage 7: payload.
        if let r = memo.checkPayload(request) { return reject(r.status, r.reason, apnsID: apnsID) }

        let uniqueID = environment == .sandbox ? ids.next() : nil
        let warnings = state.decodeWarnings(pushType: request.pushType?.rawValue, payload: request.payload)
        state.deliver(traits: memo.traits(request)) { sequence in
            var n = DeliveredNotification(
                sequence: sequence, time: now, environment: environment, token: token, topic: topic,
                pushType: request.pushType?.rawValue, priority: request.priority ?? 10,
                expiration: request.expiration.map(Int64.init), collapseID: request.collapseID, apnsID: apnsID,
                apnsUniqueID: uniqueID, payload: String(decoding: request.payload, as: UTF8.self))
            n.warnings = warnings
            return n
        }
        return .accepted(apnsID: apnsID, uniqueID: uniqueID)
    }

    private func reject(_ status: Int, _ reason: APNsReason, apnsID: String, timestamp: Int64? = nil) -> Outcome {
        .rejected(status: status, reason: reason, apnsID: apnsID, timestamp: timestamp)
    }

    static func isRouteReason(_ reason: APNsReason) -> Bool {
        reason == .badPath || reason == .methodNotAllowed || reason == .missingDeviceToken
    }

    /// The request's apns-id lowercased if it is a canonical UUID, else a new one.
    static func echoedID(_ id: String?, ids: inout RequestIDGenerator) -> String {
        if let id, APNsRequestRules.isCanonicalUUID(id) { return id.lowercased() }
        return ids.next()
    }

    /// The token part of a `/3/device/<token>` path, lowercased ("" if none).
    static func token(of path: String) -> String {
        let prefix = NotificationRequest.devicePathPrefix
        guard path.hasPrefix(prefix) else { return "" }
        return DeviceToken.canonical(String(path.dropFirst(prefix.count)))
    }
}

/// The shared payload rules' verdict on the connection's previous request, reused when the next
/// one has the same payload bytes, push type, priority and topic (everything
/// ``APNsRequestRules/checkPayload(_:)`` reads): a fan-out of one notification to many devices
/// is judged once per connection, not once per device. Comparing ~200 bytes is far cheaper than
/// parsing the JSON again.
struct PayloadVerdictMemo {
    private var payload: [UInt8] = []
    private var pushType: PushType? = nil
    private var priority: Int? = nil
    private var topic: String? = nil
    private var rejection: APNsRejection? = nil
    private var filled = false
    /// The device side's reading of the previous payload (``PushTraits``), reused for the same bytes.
    private var traitsPayload: [UInt8] = []
    private var traitsValue: PushTraits? = nil

    /// What the device reads of `request`'s payload: parsed once per distinct payload on a connection.
    mutating func traits(_ request: NotificationRequest) -> PushTraits {
        if let traitsValue, request.payload == traitsPayload { return traitsValue }
        let value = PushTraits(payload: request.payload)
        traitsPayload = request.payload
        traitsValue = value
        return value
    }

    /// The rejection of the shared payload rules for `request` (nil: accepted).
    mutating func checkPayload(_ request: NotificationRequest) -> APNsRejection? {
        if filled, request.pushType == pushType, request.priority == priority, request.topic == topic,
            request.payload == payload
        {
            return rejection
        }
        let verdict = APNsRequestRules.checkPayload(request).rejection
        payload = request.payload
        pushType = request.pushType
        priority = request.priority
        topic = request.topic
        rejection = verdict
        filled = true
        return verdict
    }
}
