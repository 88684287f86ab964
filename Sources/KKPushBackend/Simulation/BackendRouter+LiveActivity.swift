import Foundation
import KKPushActivities
import KKPushCore
import KantineKoning
import Logging

// The token update's `live_activity` tokens (``LiveActivityTokens``, the contract's home) fed to the activity registry.

extension BackendRouter {
    /// The device the registry knows an enrollment's phone by: the enrollment's key, `<tenant>/<device_id>`. Per
    /// enrollment rather than per phone because each tenant's backend knows only its own enrollments: the same
    /// push-to-start token reported to two tenants is two devices of two registries.
    static func activityDevice(_ enrollment: Enrollment) -> String { enrollment.id.description }

    /// Records `live` for `enrollment` at `now` in the registry, the activities the app started itself under `topic`
    /// (the app's bundle id), and the answer's `live_activity` object: what the
    /// registry did with each entry (never a whole token). Without a registry: `{"recorded": false, "reason"}` (the
    /// tokens were checked, not kept; said, never dropped silently). A registry that fails is a 503
    /// (`activity-registry-failed`): the app sends its token update again, and the device token's update, already
    /// stored, is the same the second time.
    func recordLiveActivity(_ live: LiveActivityTokens, enrollment: Enrollment, topic: String, at now: Date) async
        -> Result<JSONValue, ResponseError>
    {
        guard let activities else {
            logger.warning(
                "live_activity not recorded: no activity registry", metadata: ["enrollment": "\(enrollment.id)"])
            return .success(
                .object([
                    "recorded": .bool(false),
                    "reason": .string(
                        "This backend has no activity registry: the Live Activity tokens were checked, not recorded."),
                ]))
        }
        let report = ActivityTokenReport(
            pushToStartTokens: live.pushToStartTokens.map {
                PushToStartTokenReport(attributesType: $0.attributesType, token: $0.token)
            },
            activityTokens: live.activityTokens.map {
                ActivityUpdateTokenReport(
                    activityKey: $0.activityKey, activityID: $0.activityID, attributesType: $0.attributesType,
                    token: $0.token)
            },
            activityStates: live.activityStates.map {
                ActivityStateReport(activityKey: $0.activityKey, state: $0.state == .ended ? .ended : .dismissed)
            }, source: "app", topic: topic)
        let device = Self.activityDevice(enrollment)
        let result: ActivityReportResult
        do {
            result = try await activities.recordReport(report, device: device, at: now)
        } catch {
            let words = (error as? KKPushError)?.message ?? "\(error)"
            logger.error(
                "live_activity not recorded", metadata: ["enrollment": "\(enrollment.id)", "error": "\(words)"])
            return .failure(
                ResponseError(
                    .error(
                        503, code: KKPushError.Code.activityRegistryFailed.rawValue,
                        message: "The Live Activity tokens could not be recorded: \(words)",
                        fix: "Send the token update again; the backend keeps the device token either way.")))
        }
        let rotations: [JSONValue] = zip(report.pushToStartTokens, result.rotations).map { entry, rotation in
            var object: [String: JSONValue] = [
                "attributes_type": .string(entry.attributesType), "outcome": .string(rotation.outcome.rawValue),
            ]
            if let reason = rotation.reason { object["reason"] = .string(reason) }
            return .object(object)
        }
        logger.info(
            "live_activity recorded",
            metadata: [
                "enrollment": "\(enrollment.id)", "push_to_start": "\(result.rotations.count)",
                "activities": "\(result.activities.count)", "ignored": "\(result.ignored.count)",
            ])
        return .success(
            .object([
                "recorded": .bool(true), "device": .string(device), "push_to_start_tokens": .array(rotations),
                "activities": .array(
                    result.activities.map {
                        .object(["activity_key": .string($0.key), "state": .string($0.state.rawValue)])
                    }),
                "ignored": .strings(result.ignored),
            ]))
    }
}
