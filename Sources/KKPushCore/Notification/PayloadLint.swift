/// `kkpush payload lint`: a payload file judged as APNs would judge it, without a device token or credential.
///
/// Runs the rules that do not need a token or authentication: the header values given
/// (``APNsRequestRules/checkHeaderValues(_:)``), the topic against the push type when a topic is known
/// (from `--topic` or an `.apns` file), and the payload stage (``APNsRequestRules/checkPayload(_:)``).
/// When no push type is given, the one the payload reads as is assumed (info `push-type-assumed`),
/// rather than warning `push-type-missing` about a flag; likewise a background push without
/// a priority is judged at priority 5 (info `priority-assumed`).
public enum PayloadLint {
    /// The verdict of a lint.
    public struct Result: Sendable, Equatable {
        /// The file's notes followed by the rules' problems; errors are exactly APNs rejections.
        public var check: RequestCheck
        /// The size in bytes of what would be sent.
        public var size: Int
        /// The payload limit for the push type.
        public var limit: Int
        /// The push type judged against (given or assumed).
        public var pushType: PushType
        /// True if the push type was assumed from the payload.
        public var pushTypeAssumed: Bool
        /// The topic used (given, or from an `.apns` file), if any.
        public var topic: String?
        /// The topic that came from an `.apns` file's `Simulator Target Bundle`, if any.
        public var fileTopic: String?

        /// True when APNs would accept it (warnings allowed).
        public var isValid: Bool { check.isValid }
    }

    /// Lints a file's payload with the given header values (nil: not given).
    public static func lint(_ file: PayloadFile, pushType: PushType? = nil, topic: String? = nil, priority: Int? = nil)
        -> Result
    {
        var check = RequestCheck(problems: file.problems.filter { $0.severity != .error })
        let assumed = pushType == nil
        let parsed = file.parsed ?? (try? Payload(parsing: file.payload))  // a PayloadFile made from bytes, not read
        let type = pushType ?? (parsed?.suggestedPushType ?? .alert)
        if assumed {
            check.problems.append(
                Problem(
                    .info, code: "push-type-assumed",
                    message: "No push type given (pushType); judged with push type \(type), as the payload reads.",
                    fix: "Give the push type (pushType) to judge it as another (and send apns-push-type \(type))."))
        }
        var usedPriority = priority
        if priority == nil, type == .background {
            usedPriority = 5
            check.problems.append(
                Problem(
                    .info, code: "priority-assumed",
                    message: "No priority given (priority); judged with apns-priority 5, as background pushes need.",
                    fix: "Send it with apns-priority 5 (left out, APNs uses 10)."))
        }
        let usedTopic = topic ?? file.topic
        let request = NotificationRequest(
            deviceToken: "", topic: usedTopic, pushType: type, priority: usedPriority, payload: file.payload)
        check.append(APNsRequestRules.checkHeaderValues(request))
        if usedTopic != nil {
            check.append(
                APNsRequestRules.checkTopicAndToken(
                    request, topicRequired: false, allowedTopics: nil, usingCertificate: false))
        }
        check.append(APNsRequestRules.checkPayload(request))
        return Result(
            check: check, size: file.payload.count, limit: type.payloadLimit, pushType: type, pushTypeAssumed: assumed,
            topic: usedTopic, fileTopic: file.topic)
    }
}
