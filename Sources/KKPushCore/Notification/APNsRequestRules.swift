/// The rules that make an APNs device-push request valid: one set of code, used twice.
///
/// The client runs ``preflight(_:authentication:)`` before it sends; the mock server runs the stages
/// one by one on what it received and answers with the first ``RequestCheck/rejection``. The order
/// (spec §11; Apple documents only authentication → token/topic → delivery, the rest is kkpush's
/// choice, consistent with Pushy's mock):
///
/// 1. Route and method — ``checkRequestLine(_:)``: `404 BadPath` (path not under `/3/device/`),
///    `405 MethodNotAllowed` (not POST), `400 MissingDeviceToken` (nothing after `/3/device/`).
/// 2. Header syntax — also ``checkRequestLine(_:)``: `DuplicateHeaders` (an `apns-*` header or
///    `authorization` repeated; other headers may repeat), `BadMessageId` (apns-id not a canonical
///    8-4-4-4-12 UUID, either case), `BadPriority` (not exactly `1`, `5` or `10`), `BadExpirationDate`
///    (not a non-negative decimal integer), `BadCollapseId` (more than 64 UTF-8 bytes),
///    `InvalidPushType` (not one of ``PushType/allCases``).
/// 3. Authentication — the mock's own (provider token or certificate), not here.
/// 4. Topic and token — ``checkTopicAndToken(_:topicRequired:allowedTopics:usingCertificate:)``:
///    `MissingTopic` → `BadTopic` (suffix must match the push type; for a certificate, the topic must be
///    one it covers) → `BadTopic` for a token-only push type (location, liveactivity) over a certificate
///    → `BadDeviceToken` (format only: hex, even length, 64–400 digits; whether the token belongs to the
///    environment and topic is the mock's device registry, which also answers 410 and
///    `DeviceTokenNotForTopic`). Warning: `token-uppercase` (accepted; APNs's examples are lowercase).
/// 5. Device registry — the mock's.
/// 6. Payload — ``checkPayload(_:)``: `PayloadEmpty` → `413 PayloadTooLarge` (4096 bytes, 5120 for voip)
///    → `PayloadEmpty` for a body that is not a JSON object (see below) → warnings only.
///
/// A body that is not a JSON object: what APNs answers is unconfirmed (spec §3.1: no documented reason
/// covers it). kkpush **rejects** it with `400 PayloadEmpty`, as APNSwift's test server does: the device
/// could not show or act on such a push, so a client must not be told it is fine.
///
/// `apns-priority: 10` on a background push: Apple calls it "an error" but what APNs answers is
/// unconfirmed (spec §3.5) and providers send it in practice, so kkpush **warns**
/// (`background-priority-10`) and the mock accepts it.
///
/// Every error in a ``RequestCheck`` has an APNs reason as its code (status from ``APNsReason``);
/// every warning is a kebab-case code of kkpush's own.
public enum APNsRequestRules {
    /// Headers that must not be repeated (`DuplicateHeaders`): the `apns-*` ones and `authorization`.
    public static func isUniqueHeader(_ name: String) -> Bool {
        var name = name
        // ASCII (every name on the wire): compared in place, without a lowercased copy; anything else as before.
        let ascii: Bool? = name.withUTF8 { bytes in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return nil }
            return bytes.hasASCIIPrefixIgnoringCase("apns-") || bytes.equalsASCIIIgnoringCase("authorization")
        }
        if let ascii { return ascii }
        let lower = name.lowercasedIfNeeded
        return lower.hasPrefix("apns-") || lower == APNsHeader.authorization
    }

    // MARK: Stage 1 and 2

    /// Stages 1 and 2, before authentication: `BadPath` → `MethodNotAllowed` → `MissingDeviceToken` →
    /// `DuplicateHeaders` → `BadMessageId` → `BadPriority` → `BadExpirationDate` → `BadCollapseId` →
    /// `InvalidPushType`. Every problem is reported; the rejection is the first.
    ///
    /// - Returns: the parsed request when there is no error in these stages (the token is not yet
    ///   checked for format: that is stage 4), and the verdict.
    public static func checkRequestLine(_ received: ReceivedRequest) -> (
        request: NotificationRequest?, check: RequestCheck
    ) {
        var check = RequestCheck()

        // Stage 1: route and method.
        var token: String? = nil
        let prefix = NotificationRequest.devicePathPrefix
        if received.path == prefix || received.path == devicePathWithoutSlash {
            token = ""
        } else if received.path.hasPrefix(prefix) {
            let rest = String(received.path.dropFirst(prefix.count))
            if endsBeforeToken(rest) {
                check.add(moreAfterToken(received.path))
            } else {
                token = rest
            }
        } else {
            check.add(
                Problem(
                    .error, code: .badPath,
                    message: "The path '\(shortened(received.path))' is not /3/device/<token>.",
                    fix: "Post to /3/device/<hex token>."))
        }
        if received.method != "POST" {
            check.add(
                Problem(
                    .error, code: .methodNotAllowed,
                    message: "The method is \(received.method.isEmpty ? "empty" : received.method), not POST.",
                    fix: "Send the push with POST."))
        }
        if token == "" { check.add(missingDeviceToken) }

        // Stage 2: header syntax.
        // A request has a handful of apns-* headers: compared pairwise, no dictionary to hash into.
        var unique: [String] = []
        unique.reserveCapacity(8)
        var repeatedNames: [String] = []
        for header in received.headers where isUniqueHeader(header.name) {
            if unique.contains(header.name) {
                if !repeatedNames.contains(header.name) { repeatedNames.append(header.name) }
            } else {
                unique.append(header.name)
            }
        }
        if !repeatedNames.isEmpty {
            let repeated = repeatedNames.sorted()
            check.add(
                Problem(
                    .error, code: .duplicateHeaders,
                    message: "The header\(repeated.count > 1 ? "s" : "") \(repeated.joined(separator: ", ")) "
                        + "\(repeated.count > 1 ? "are" : "is") sent more than once.",
                    fix: "Send each apns-* header once; check that default and per-push headers are not both added."))
        }
        let apnsID = received.value(ofLowercase: APNsHeader.id)
        if let apnsID, let problem = apnsIDProblem(apnsID) { check.add(problem) }
        let priorityText = received.value(ofLowercase: APNsHeader.priority)
        var priority: Int? = nil
        if let priorityText {
            if let value = parsePriority(priorityText) {
                priority = value
            } else {
                check.add(priorityProblem("'\(shortened(priorityText))'"))
            }
        }
        let expirationText = received.value(ofLowercase: APNsHeader.expiration)
        var expiration: Int? = nil
        if let expirationText {
            if let value = parseExpiration(expirationText) {
                expiration = value
            } else {
                check.add(expirationProblem("'\(shortened(expirationText))'"))
            }
        }
        let collapseID = received.value(ofLowercase: APNsHeader.collapseID)
        if let collapseID, let problem = collapseIDProblem(collapseID) { check.add(problem) }
        let pushTypeText = received.value(ofLowercase: APNsHeader.pushType)
        if let pushTypeText, let problem = pushTypeProblem(PushType(pushTypeText)) { check.add(problem) }

        guard check.rejection == nil, let token else { return (nil, check) }
        let request = NotificationRequest(
            deviceToken: token, topic: received.value(ofLowercase: APNsHeader.topic),
            pushType: pushTypeText.map { PushType(rawValue: $0) },
            priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID, payload: received.body)
        return (request, check)
    }

    /// The stage-1 errors of a typed request's device token (what ``checkRequestLine(_:)`` would find in its path,
    /// without rendering it): `BadPath` when the token holds `/`, `?` or `#`, `MissingDeviceToken` when it is empty.
    /// The method is always POST and a typed request cannot repeat a header.
    public static func checkDevicePath(_ deviceToken: String) -> RequestCheck {
        var check = RequestCheck()
        if deviceToken.isEmpty {
            check.add(missingDeviceToken)
        } else if endsBeforeToken(deviceToken) {
            check.add(moreAfterToken(NotificationRequest.devicePathPrefix + deviceToken))
        }
        return check
    }

    /// `/3/device` (no token, no slash), made once.
    static let devicePathWithoutSlash = String(NotificationRequest.devicePathPrefix.dropLast())

    /// Whether the path's rest after `/3/device/` holds more than a token.
    static func endsBeforeToken(_ rest: String) -> Bool {
        rest.containsUTF8Byte { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
    }

    static func moreAfterToken(_ path: String) -> Problem {
        Problem(
            .error, code: .badPath,
            message: "The path '\(shortened(path))' has more after the device token.",
            fix: "Post to /3/device/<hex token> with nothing after the token.")
    }

    static let missingDeviceToken = Problem(
        .error, code: .missingDeviceToken, message: "The path has no device token after /3/device/.",
        fix: "Put the app's hex device token in the path: /3/device/<token>.")

    /// The stage-2 errors of a typed request's header values (what ``checkRequestLine(_:)`` would find
    /// in them): `BadMessageId`, `BadPriority`, `BadExpirationDate`, `BadCollapseId`, `InvalidPushType`.
    public static func checkHeaderValues(_ request: NotificationRequest) -> RequestCheck {
        var check = RequestCheck()
        if let id = request.apnsID, let problem = apnsIDProblem(id) { check.add(problem) }
        if let priority = request.priority, !APNsPriority(priority).isValid {
            check.add(priorityProblem(String(priority)))
        }
        if let expiration = request.expiration, expiration < 0 { check.add(expirationProblem(String(expiration))) }
        if let collapseID = request.collapseID, let problem = collapseIDProblem(collapseID) { check.add(problem) }
        if let pushType = request.pushType, let problem = pushTypeProblem(pushType) { check.add(problem) }
        return check
    }

    // MARK: Stage 4

    /// Stage 4, after authentication: `MissingTopic` (when `topicRequired`) → `BadTopic` (the suffix must
    /// match the push type; with a certificate the topic must be in `allowedTopics`, when given) →
    /// `BadTopic` for a token-only push type over a certificate → `BadDeviceToken` (format only).
    ///
    /// - Parameters:
    ///   - topicRequired: true for provider tokens and certificates covering several topics.
    ///   - allowedTopics: the topics a certificate covers (nil: not checked, e.g. token auth).
    ///   - usingCertificate: true on a certificate (mTLS) connection.
    public static func checkTopicAndToken(
        _ request: NotificationRequest, topicRequired: Bool, allowedTopics: Set<String>?, usingCertificate: Bool
    ) -> RequestCheck {
        var check = RequestCheck()
        let pushType = request.pushType
        var topic = request.topic
        if topic?.isEmpty == true { topic = nil }
        var topicIsDefault = false
        if topic == nil {
            if topicRequired {
                check.add(
                    Problem(
                        .error, code: .missingTopic,
                        message: usingCertificate
                            ? "apns-topic is missing, and the certificate covers several topics."
                            : "apns-topic is missing; it is required with a provider token.",
                        fix: "Send apns-topic with the app's bundle id\(suffixHint(pushType))."))
            } else if let allowedTopics, allowedTopics.count == 1, let only = allowedTopics.first {
                topic = only
                topicIsDefault = true
            }
        }
        if let topic {
            // Made only when a problem is worded (not for every request the mock judges).
            func label() -> String {
                topicIsDefault
                    ? "The certificate's topic '\(topic)' (used as apns-topic is left out)"
                    : "apns-topic '\(shortened(topic))'"
            }
            if !isPlausibleTopic(topic) {
                check.add(
                    Problem(
                        .error, code: .badTopic,
                        message: "\(label()) is not a bundle id (letters, digits, '.', '-').",
                        fix: "Send the app's bundle id, for example com.example.app\(suffixHint(pushType))."))
            } else if let allowedTopics, !topicIsDefault, !allowedTopics.contains(topic) {
                check.add(
                    Problem(
                        .error, code: .badTopic,
                        message:
                            "\(label()) is not one of the certificate's topics (\(allowedTopics.sorted().joined(separator: ", "))).",
                        fix: "Use a topic the certificate covers, or the certificate of the app you push to."))
            } else if let pushType, let suffix = pushType.topicSuffix {
                if suffix.isEmpty {
                    if let implied = PushType.implied(byTopic: topic) {
                        check.add(
                            Problem(
                                .error, code: .badTopic,
                                message:
                                    "\(label()) ends in '\(implied.topicSuffix ?? "")', the suffix of \(implied) pushes, but apns-push-type is \(pushType).",
                                fix:
                                    "Use the plain bundle id as the topic for \(pushType) pushes, or apns-push-type \(implied)."
                            ))
                    }
                } else if !(topic.hasSuffix(suffix) && topic.count > suffix.count) {
                    check.add(
                        Problem(
                            .error, code: .badTopic,
                            message: "\(label()) lacks the '\(suffix)' suffix that \(pushType) pushes need.",
                            fix: "Send apns-topic \(pushType.topic(forBundleID: topic)) (bundle id + '\(suffix)')."))
                }
            }
        }
        if usingCertificate, let pushType, pushType.requiresTokenAuth {
            check.add(
                Problem(
                    .error, code: .badTopic,
                    message:
                        "\(pushType) pushes need provider-token authentication; this connection uses a certificate.",
                    fix: "Send \(pushType) pushes with a .p8 key (token authentication)."))
        }
        if !request.deviceToken.isEmpty {
            let formatErrors = DeviceToken.formatErrors(request.deviceToken)
            for problem in formatErrors { check.add(problem) }
            if formatErrors.isEmpty, request.deviceToken.containsUTF8Byte(where: { (0x41...0x46).contains($0) }) {
                check.add(DeviceToken.uppercaseProblem)
            }
        }
        return check
    }

    // MARK: Stage 6

    /// Stage 6: `PayloadEmpty` → `413 PayloadTooLarge` (limit by push type) → `PayloadEmpty` when the
    /// body is not a JSON object → warnings about the JSON and how it fits the headers (see
    /// ``PayloadRules``). Every problem is reported; the rejection is the first error.
    public static func checkPayload(_ request: NotificationRequest) -> RequestCheck {
        var check = RequestCheck()
        let size = request.payload.count
        if size == 0 {
            check.add(
                Problem(
                    .error, code: .payloadEmpty, message: "The payload is empty (0 bytes).",
                    fix: "Send a JSON object, at least {\"aps\":{}}."))
            if request.pushType == nil {
                check.add(pushTypeMissing(request))
            }
            return check
        }
        let limit = request.payloadLimit
        if size > limit {
            check.add(
                Problem(
                    .error, code: .payloadTooLarge,
                    message:
                        "The payload is \(size) bytes, over the \(limit)-byte limit for \(request.effectivePushType) pushes by \(size - limit).",
                    fix:
                        "Shorten the payload: drop custom keys, shorten texts, or send an id and let the app fetch the rest."
                ))
        }
        check.append(PayloadRules.check(request))
        return check
    }

    // MARK: Everything

    /// Every stage at once, for the client's pre-flight and `kkpush payload lint`: stages 1 and 2 on the
    /// request as it would be sent, stage 4 for `authentication`, stage 6. Every problem is reported;
    /// the rejection is the first error in stage order.
    public static func preflight(_ request: NotificationRequest, authentication: AuthenticationKind) -> RequestCheck {
        check(request, authentication: authentication, judging: .all)
    }

    /// The parts of a request a check knows, for ``check(_:authentication:judging:)``.
    public struct KnownParts: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The device token (stage 1's path, stage 4's format check).
        public static let deviceToken = KnownParts(rawValue: 1)
        /// `apns-topic` (stage 4: missing, suffix, certificate topics).
        public static let topic = KnownParts(rawValue: 2)
        /// The payload (stage 6).
        public static let payload = KnownParts(rawValue: 4)
        /// A whole request, as the client sends it.
        public static let all: KnownParts = [.deviceToken, .topic, .payload]
    }

    /// The pre-flight's stages on the parts of a request that are known: the header values always (stage 2:
    /// `apns-id`, `apns-priority`, `apns-expiration`, `apns-collapse-id`, `apns-push-type`); the path and
    /// token format (stages 1 and 4) when `known` has the device token; the topic rules (stage 4) when it has
    /// the topic (a missing topic is then judged too); the payload (stage 6) when it has the payload.
    /// ``preflight(_:authentication:)`` is this with ``KnownParts/all``; `kkpush diagnose` judges the
    /// request flags it was given with the same call, so both say the same about the same request.
    public static func check(
        _ request: NotificationRequest, authentication: AuthenticationKind, judging known: KnownParts
    ) -> RequestCheck {
        // The typed request is judged as it is: nothing is rendered to header text and parsed back.
        var check = known.contains(.deviceToken) ? checkDevicePath(request.deviceToken) : RequestCheck()
        check.append(checkHeaderValues(request))
        var stage4 = request
        if !known.contains(.deviceToken) { stage4.deviceToken = "" }
        if !known.contains(.topic) { stage4.topic = nil }
        switch authentication {
        case .token:
            check.append(
                checkTopicAndToken(
                    stage4, topicRequired: known.contains(.topic), allowedTopics: nil, usingCertificate: false))
        case .certificate(let topics):
            let required = known.contains(.topic) && (topics?.count ?? 1) > 1
            check.append(
                checkTopicAndToken(stage4, topicRequired: required, allowedTopics: topics, usingCertificate: true))
        }
        if known.contains(.payload) { check.append(checkPayload(request)) }
        return check
    }

    // MARK: Helpers

    /// The stage-6 warning for a request without `apns-push-type`.
    static func pushTypeMissing(_ request: NotificationRequest) -> Problem {
        Problem(
            .warning, code: .pushTypeMissing,
            message:
                "apns-push-type is not set; APNs then guesses (\(request.effectivePushType)), and watchOS requires it.",
            fix: "Send apns-push-type (alert for visible pushes, background for content-available-only ones).")
    }

    static func parsePriority(_ text: String) -> Int? {
        switch text {
        case "1": 1
        case "5": 5
        case "10": 10
        default: nil
        }
    }

    static func parseExpiration(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// True for a canonical 8-4-4-4-12 hex UUID (either case).
    public static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !Unicode.Scalar(byte).isHexDigit {
                return false
            }
        }
        return true
    }

    static func apnsIDProblem(_ id: String) -> Problem? {
        if isCanonicalUUID(id) { return nil }
        return Problem(
            .error, code: .badMessageId,
            message: "apns-id '\(shortened(id))' is not a canonical UUID (8-4-4-4-12 hex digits).",
            fix: "Send a UUID such as 123e4567-e89b-12d3-a456-4266554400a0, or leave apns-id out.")
    }

    static func priorityProblem(_ shown: String) -> Problem {
        Problem(
            .error, code: .badPriority,
            message: "apns-priority is \(shown); APNs accepts 1, 5 or 10.",
            fix: "Use 10 (immediate), 5 (power-considerate; required for background pushes) or 1.")
    }

    static func expirationProblem(_ shown: String) -> Problem {
        Problem(
            .error, code: .badExpirationDate,
            message: "apns-expiration is \(shown), not a UNIX time in whole seconds.",
            fix: "Send whole seconds since 1970 (UTC), or 0 to try delivery once.")
    }

    static func collapseIDProblem(_ id: String) -> Problem? {
        let bytes = id.utf8.count
        guard bytes > 64 else { return nil }
        return Problem(
            .error, code: .badCollapseId,
            message: "apns-collapse-id is \(bytes) bytes (UTF-8), over the 64-byte limit.",
            fix: "Shorten the collapse id to at most 64 bytes, for example a short key or a hash.")
    }

    static func pushTypeProblem(_ pushType: PushType) -> Problem? {
        if pushType.isKnown { return nil }
        return Problem(
            .error, code: .invalidPushType,
            message: "apns-push-type '\(shortened(pushType.rawValue))' is not a push type APNs knows.",
            fix: "Use one of: \(PushType.allCases.map(\.rawValue).joined(separator: ", ")).")
    }

    static func suffixHint(_ pushType: PushType?) -> String {
        guard let suffix = pushType?.topicSuffix, !suffix.isEmpty else { return "" }
        return " + '\(suffix)'"
    }

    /// True for a topic made of ASCII letters, digits, '.', '-' and '_' that does not start or end with '.'.
    static func isPlausibleTopic(_ topic: String) -> Bool {
        guard !topic.isEmpty, !topic.hasPrefix("."), !topic.hasSuffix("."), topic.utf8.count <= 255 else {
            return false
        }
        return topic.unicodeScalars.allSatisfy { scalar in
            switch scalar.value {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E, 0x2D, 0x5F: true
            default: false
            }
        }
    }

    /// `text` cut to 60 characters for messages.
    static func shortened(_ text: String) -> String {
        text.count <= 60 ? text : String(text.prefix(60)) + "…"
    }
}
