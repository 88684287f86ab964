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
        /// The topic an `.apns` file's `Simulator Target Bundle` gives the push type judged (its bundle id, with the
        /// push type's suffix), if any.
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
                    .info, code: .pushTypeAssumed,
                    message: "No push type given (pushType); judged with push type \(type), as the payload reads.",
                    fix: "Give the push type (pushType) to judge it as another (and send apns-push-type \(type))."))
        }
        var usedPriority = priority
        if priority == nil, type == .background {
            usedPriority = 5
            check.problems.append(
                Problem(
                    .info, code: .priorityAssumed,
                    message: "No priority given (priority); judged with apns-priority 5, as background pushes need.",
                    fix: "Send it with apns-priority 5 (left out, APNs uses 10)."))
        }
        // An .apns file names the app's bundle id; a Live Activity or VoIP push goes to it with its suffix.
        let fileTopic = file.topic(for: type)
        let usedTopic = topic ?? fileTopic
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
            topic: usedTopic, fileTopic: fileTopic)
    }

    /// Lints a file's payload as a broadcast to a channel (`POST /4/broadcasts/apps/<bundleID>`): the
    /// broadcast endpoint's rules (``BroadcastRules``: `PayloadEmpty`, `413 PayloadTooLarge` over 5120 bytes,
    /// `BadRequestPayload` without an `aps` object, `TopicDisallowed` for a suffixed bundle id, `BadPriority`),
    /// then the Live Activity rules as warnings, and `broadcast-start` for a start (a channel carries updates
    /// and ends; push-to-start goes to each device's push-to-start token).
    public static func lintBroadcast(_ file: PayloadFile, bundleID: String? = nil, priority: Int? = nil) -> Result {
        var check = RequestCheck(problems: file.problems.filter { $0.severity != .error })
        func refuse(_ r: APNsRejection, _ message: String) {
            check.problems.append(Problem(.error, code: Problem.Code(r.reason), message: message, fix: r.reason.fix))
            if check.rejection == nil { check.rejection = r }
        }
        if let bundleID, let r = BroadcastRules.checkBundleID(bundleID) {
            refuse(r, "'\(bundleID)' is not a plain bundle id: a broadcast goes to /4/broadcasts/apps/<bundle id>.")
        }
        if let r = BroadcastRules.checkPriorityAndExpiration(priority: priority.map(String.init), expiration: nil) {
            refuse(r, "apns-priority \(priority.map(String.init) ?? "") is refused (1, 5 or 10).")
        }
        if let r = BroadcastRules.checkPayload(file.payload) {
            let message: String
            switch r.reason {
            case .payloadTooLarge:
                message =
                    "The payload is \(file.payload.count) bytes; a broadcast takes at most \(BroadcastRules.payloadLimit)."
            case .payloadEmpty: message = "The payload is empty."
            default: message = "The payload is not a JSON object with an 'aps' object."
            }
            refuse(r, message)
        }
        if let aps = (try? JSONValue.parse(file.payload))?.objectValue?["aps"]?.objectValue {
            let request = NotificationRequest(
                deviceToken: "", pushType: .liveactivity, priority: priority ?? 10, payload: file.payload)
            var live = RequestCheck()
            LiveActivityRules.check(aps, request: request, into: &live)
            let isStart = aps["event"]?.stringValue == LiveActivityEvent.start.rawValue
            // The device limit's note does not apply, nor what a start lacks (a broadcast cannot start one).
            check.problems += live.problems.filter {
                $0.code != .liveactivityBroadcastSize && !(isStart && $0.code == .liveactivityStartIncomplete)
            }
            if isStart {
                check.problems.append(
                    Problem(
                        .warning, code: .broadcastStart,
                        message:
                            "A broadcast carries a Live Activity start: channels update and end activities that subscribed to them; a start has nothing subscribed yet.",
                        fix:
                            "Send the start to each device's push-to-start token with \"input-push-channel\": \"<channel id>\", then broadcast updates and the end."
                    ))
            }
        }
        return Result(
            check: check, size: file.payload.count, limit: BroadcastRules.payloadLimit, pushType: .liveactivity,
            pushTypeAssumed: false, topic: bundleID, fileTopic: file.topic)
    }
}
