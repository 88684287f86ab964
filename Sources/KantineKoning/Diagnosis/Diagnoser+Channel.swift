import Foundation
import KKPushCore

/// Rule 6 for a broadcast (`DiagnosisFacts.channel`): the broadcast's request by ``BroadcastRules`` (the rules
/// the client's pre-flight and the mock use), then what the channel-management hosts said of the channel.
extension Diagnoser {
    static func channelFindings(_ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?) -> [Finding] {
        guard let channel = f.channel else { return [] }
        var out: [Finding] = []
        let shortID = channel.id.count > 12 ? "\(channel.id.prefix(12))…" : channel.id

        // The bundle id: Apple's broadcast path takes the plain bundle id.
        if let topic = f.topic, !topic.isEmpty, BroadcastRules.checkBundleID(topic)?.reason == .topicDisallowed {
            let plain = baseBundleID(of: topic)
            out.append(
                Finding(
                    .error, DiagnosisCode.channelTopicSuffixed,
                    message: "The broadcast goes to \(quote(topic)), a bundle id with a push type's suffix.",
                    why:
                        "The broadcast path is /4/broadcasts/apps/<bundle id> with the plain bundle id; APNs answers 400 TopicDisallowed to a suffixed one (device pushes are the ones that need .push-type.liveactivity).",
                    fix: "Broadcast to the plain bundle id \(quote(plain)) as the topic (topic)."
                ))
        }
        // The id.
        if !BroadcastRules.isWellFormedChannelID(channel.id) {
            out.append(
                Finding(
                    .error, DiagnosisCode.channelIDInvalid,
                    message: "The channel id \(quote(channel.id)) is not base64.",
                    why: "APNs answers 400 BadChannelId to an apns-channel-id that is not the id it issued (base64).",
                    fix:
                        "Use the apns-channel-id the create answered, whole; listing the app's channels of the environment shows them (channelListCommand)."
                ))
        }
        // Headers and payload, as the broadcast pre-flight judges them.
        if let pushType = f.pushType, pushType.lowercased() != "liveactivity" {
            out.append(
                Finding(
                    .error, DiagnosisCode.requestInvalid,
                    message:
                        pushType.isEmpty
                        ? "The broadcast is sent without apns-push-type."
                        : "The broadcast is sent with apns-push-type \(quote(pushType)).",
                    why:
                        "Broadcasts carry Live Activity updates only: APNs answers 400 \(pushType.isEmpty ? "MissingPushType" : "InvalidPushType") unless apns-push-type is liveactivity.",
                    fix: "Send apns-push-type: liveactivity (a broadcast by channel id (channel) sets it)."))
        }
        if let r = BroadcastRules.checkPriorityAndExpiration(
            priority: f.priority.map(String.init), expiration: f.expiration.map(String.init))
        {
            out.append(
                Finding(
                    .error, DiagnosisCode.requestInvalid,
                    message: "A header value of the broadcast is refused: \(r.reason.rawValue).",
                    why: "APNs answers \(r) to this broadcast.", fix: r.reason.fix))
        }
        if let payload = f.payload, let r = BroadcastRules.checkPayload(payload) {
            out.append(
                Finding(
                    .error, DiagnosisCode.payloadInvalid,
                    message:
                        "The broadcast's payload is refused: \(r.reason.rawValue)\(r.reason == .payloadTooLarge ? " (\(payload.count) bytes; a broadcast takes at most \(BroadcastRules.payloadLimit))" : "").",
                    why: "APNs answers \(r) to this broadcast.", fix: r.reason.fix))
        }

        // The channel, as each environment's channel-management host has it (with --probe).
        let asked = [APNsEnvironment.sandbox, .production].compactMap { e in channel.answer(e).map { (e, $0) } }
        guard !asked.isEmpty else {
            if let expiration = f.expiration, expiration != 0 {
                out.append(
                    Finding(
                        .info, DiagnosisCode.channelExpirationNoStorage,
                        message:
                            "The broadcast has apns-expiration \(expiration); whether the channel takes it depends on its storage policy, which was not read.",
                        why:
                            "APNs answers 400 BadExpirationDate to a nonzero expiration on a channel created with message-storage-policy 0.",
                        fix:
                            "Probe APNs with the key (probe) to read the channel, or read channel \(channel.id) yourself (channelShowCommand)."
                    ))
            }
            return out
        }
        func exists(_ e: APNsEnvironment) -> Int? {
            if case .exists(let policy) = channel.answer(e) { return policy }
            return nil
        }
        func notThere(_ e: APNsEnvironment) -> Bool {
            if case .rejected(_, let reason) = channel.answer(e) { return reason == .channelNotRegistered }
            return false
        }
        for (e, answer) in asked {
            switch answer {
            case .failed(let message):
                out.append(
                    Finding(
                        .error, DiagnosisCode.probeInconclusiveNetwork,
                        message: "Reading the channel in \(e) got no answer: \(message)",
                        why: "Without the answer the diagnosis cannot say whether the channel exists there.",
                        fix:
                            "Check the network path to the channel-management host (port 2195 sandbox, 2196 production)."
                    ))
            case .rejected(let status, let reason) where status == 429 || status >= 500:
                out.append(
                    Finding(
                        .error, DiagnosisCode.probeInconclusiveAPNs,
                        message: "Reading the channel in \(e) was answered \(status) \(reason.rawValue).",
                        why: "APNs is throttling or unavailable: the channel could not be checked.",
                        fix: "Try again later."))
            case .rejected(let status, let reason) where reason != .channelNotRegistered:
                out.append(
                    Finding(
                        .error, DiagnosisCode.channelRejected,
                        message: "Reading the channel in \(e) was refused: \(status) \(reason.rawValue).",
                        why: reason.explanation, fix: reason.fix, confirmed: true))
            default: break
            }
        }
        let target = pushEnvironment ?? (asked.count == 1 ? asked[0].0 : nil)
        if let target {
            let other: APNsEnvironment = target == .sandbox ? .production : .sandbox
            if notThere(target), exists(other) != nil {
                out.append(
                    Finding(
                        .error, DiagnosisCode.channelOtherEnvironment,
                        message: "Channel \(shortID) exists in \(other), but the broadcast goes to \(target).",
                        why:
                            "Channels, like device tokens, belong to the environment they were created in; \(target)'s host answers 400 ChannelNotRegistered.",
                        fix:
                            "Broadcast to channel \(channel.id) through the \(other) host (env), or create a channel in \(target) and subscribe its devices there.",
                        confirmed: true))
            } else if notThere(target), channel.answer(other) == nil || notThere(other) {
                out.append(
                    Finding(
                        .error, DiagnosisCode.channelNotRegistered,
                        message:
                            "Channel \(shortID) does not exist in \(target)\(notThere(other) ? " nor in \(other)" : "").",
                        why:
                            "APNs answers 400 ChannelNotRegistered: the channel was deleted, belongs to another app (bundle id), or was never created.",
                        fix:
                            "Create it in \(target) (channelCreateCommand) and subscribe the Live Activities to the new id; listing \(target)'s channels shows the app's channels (channelListCommand).",
                        confirmed: true))
            } else if let policy = exists(target), policy == 0, let expiration = f.expiration, expiration != 0 {
                out.append(
                    Finding(
                        .error, DiagnosisCode.channelExpirationNoStorage,
                        message:
                            "Channel \(shortID) keeps no messages (message-storage-policy 0), but the broadcast has apns-expiration \(expiration).",
                        why:
                            "A No Message Stored channel delivers once, now: APNs answers 400 BadExpirationDate to a nonzero expiration.",
                        fix:
                            "Send apns-expiration 0 (or leave it out) on this channel, or create a channel with message-storage-policy 1 (storagePolicy) to keep the latest message for late subscribers.",
                        confirmed: true))
            }
        }
        return out
    }
}
