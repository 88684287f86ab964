import Foundation
import KKPushCore

/// Rule 6: the request (header values, topic suffix, push type, payload).
extension Diagnoser {
    static func requestFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        let pushType: PushType? = f.pushType.flatMap { $0.isEmpty ? nil : PushType($0) }
        if let raw = f.pushType, raw.isEmpty {
            out.append(
                Finding(
                    .error, DiagnosisCode.pushTypeMissing, message: "The sender sends no apns-push-type.",
                    why:
                        "APNs requires it on watchOS and iOS 13+ may delay or drop pushes without it (background pushes especially).",
                    fix:
                        "Send apns-push-type: background for content-available pushes (priority 5), alert for visible ones."
                ))
        }
        // The request as far as it is known, judged by the same call as the client's pre-flight (and so
        // `kkpush send` and the mock): header values always, the topic when given, the payload when given.
        // The device token is judged above (`tokenFindings`), with where it came from.
        let topic = f.topic.flatMap { $0.isEmpty ? nil : $0 }
        var known: APNsRequestRules.KnownParts = []
        if topic != nil { known.insert(.topic) }
        if f.payload != nil { known.insert(.payload) }
        let request = NotificationRequest(
            deviceToken: "", topic: topic, pushType: pushType, priority: f.priority, expiration: f.expiration,
            collapseID: f.collapseID, payload: f.payload ?? [])
        let usingCertificate = f.certificate != nil && f.key == nil
        let check = APNsRequestRules.check(
            request, authentication: usingCertificate ? .certificate(topics: nil) : .token, judging: known)
        let topicCodes: Set<Problem.Code> = [.badTopic, .missingTopic]
        for p in check.problems where p.code != .pushTypeMissing {
            guard p.severity == .error else {
                out.append(
                    Finding(
                        p.severity, DiagnosisCode(p.code), message: p.message,
                        why: "APNs accepts it, but the device may not act on it.", fix: p.fix))
                continue
            }
            let code: DiagnosisCode
            if topicCodes.contains(p.code) {
                let tokenOnly = pushType?.requiresTokenAuth == true && p.message.contains("provider-token")
                code = tokenOnly ? DiagnosisCode.pushTypeAuth : DiagnosisCode.topicSuffix
            } else if isHeaderReason(p.code) {
                code = DiagnosisCode.requestInvalid
            } else {
                code = DiagnosisCode.payloadInvalid
            }
            let why =
                code == DiagnosisCode.pushTypeAuth
                ? "APNs accepts \(pushType.map { "\($0)" } ?? "these") pushes only with token-based authentication (a provider token signed with a .p8 key): on a certificate connection it answers \(APNsRejection(APNsReason(p.code.rawValue))), whatever topics the certificate covers."
                : "APNs answers \(APNsRejection(APNsReason(p.code.rawValue))) to this request."
            out.append(Finding(.error, code, message: p.message, why: why, fix: p.fix))
        }
        // A Live Activity payload the app's own types would not decode: APNs answers 200, the device drops it.
        if let description = f.activityAttributes, let bytes = f.payload, let payload = try? Payload(parsing: bytes) {
            for p in description.problems(in: payload) {
                // A misread date decodes (the device shows the wrong time); anything else is dropped on the device.
                let misread = p.code == .liveActivityDateMisread
                out.append(
                    Finding(
                        p.severity, DiagnosisCode(p.code),
                        message: misread
                            ? "Decodes on the device with the wrong date: \(p.message)"
                            : "Would not decode on the device: \(p.message)",
                        why: misread
                            ? "APNs accepts the push (200) and ActivityKit decodes it into the app's \(description.name) with its JSONDecoder, which reads a Date as seconds since 2001-01-01: a Unix time shows a date decades late."
                            : "APNs accepts the push (200) and delivers it, but ActivityKit decodes aps.attributes and aps.content-state into the app's \(description.name) with its JSONDecoder: a field it cannot decode makes the phone drop the update silently.",
                        fix: p.fix))
            }
        }
        if let topic, let bundle = f.tokenUpdate?.bundleID, baseBundleID(of: topic) != bundle {
            out.append(
                Finding(
                    .error, DiagnosisCode.tokenNotForTopic,
                    message:
                        "The token update says the token is for \(quote(bundle)), but pushes use topic \(quote(topic)).",
                    why: "APNs answers 400 DeviceTokenNotForTopic when the token's app is not the topic's.",
                    fix: "Push with apns-topic \(bundle) (plus the push type's suffix)."))
        }
        return out
    }

    /// True for the stage-2 reasons: a header value APNs refuses.
    static func isHeaderReason(_ code: Problem.Code) -> Bool {
        [Problem.Code.badMessageId, .badPriority, .badExpirationDate, .badCollapseId, .invalidPushType].contains(code)
    }
}
