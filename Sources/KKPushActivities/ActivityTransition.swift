import Foundation
public import KKPushCore

/// The one state machine of an activity: every path (a planned push's answer, the app's report, the sweep) asks it
/// what an event does to an activity's state, and no other code changes a state.
///
/// | from \ event | update token | start rejected | end accepted | token gone | app: ended | app: dismissed | stale timeout | dismissal passed |
/// |---|---|---|---|---|---|---|---|---|
/// | requested | active | requested | — | — | ended | dismissed | stale | — |
/// | active | active | — | ended | dismissed | ended | dismissed | — | — |
/// | stale | active | — | — | — | ended | dismissed | — | — |
/// | ended | ended | — | ended | dismissed | ended | dismissed | — | dismissed |
/// | dismissed | — | — | — | — | — | dismissed | — | — |
///
/// (— : the event does not apply; the state is kept and the caller reports it.) A stale activity whose token comes
/// back late is `active` after all (the device did start it); a dismissed one is final.
public enum ActivityTransition {
    /// What happened to an activity.
    public enum Event: Sendable, Hashable {
        /// Its update token was reported (first time or rotated).
        case updateTokenReported
        /// APNs rejected its start push (the start can be planned again under the same key).
        case startRejected
        /// APNs accepted an end push.
        case endAccepted
        /// APNs answered 410/`BadDeviceToken` for its update token: the activity is gone from the device.
        case updateTokenGone
        /// The app reported it ended.
        case appReportedEnded
        /// The app reported it dismissed.
        case appReportedDismissed
        /// The stale timeout passed after APNs accepted its start, with no update token.
        case staleTimeout
        /// The dismissal date of its end passed (or 4 hours after the end without one).
        case dismissalPassed
    }

    /// The state after `event` in `state`, or nil when the event does not apply to that state (the state is kept).
    public static func next(from state: ActivityState, on event: Event) -> ActivityState? {
        switch (state, event) {
        case (.requested, .updateTokenReported), (.active, .updateTokenReported), (.stale, .updateTokenReported):
            .active
        case (.ended, .updateTokenReported): .ended
        case (.requested, .startRejected): .requested
        case (.active, .endAccepted), (.ended, .endAccepted): .ended
        case (.active, .updateTokenGone), (.ended, .updateTokenGone): .dismissed
        case (.requested, .appReportedEnded), (.active, .appReportedEnded), (.stale, .appReportedEnded),
            (.ended, .appReportedEnded):
            .ended
        case (.requested, .appReportedDismissed), (.active, .appReportedDismissed), (.stale, .appReportedDismissed),
            (.ended, .appReportedDismissed), (.dismissed, .appReportedDismissed):
            .dismissed
        case (.requested, .staleTimeout): .stale
        case (.ended, .dismissalPassed): .dismissed
        default: nil
        }
    }

    /// Whether an update or end may be sent in `state`: nil when it may (the activity is `active`), else the
    /// refusal for activity `key` (`activity-no-update-token` or `activity-ended`), naming the key and the fix.
    public static func refusal(sending event: LiveActivityEventName, in state: ActivityState, key: String)
        -> KKPushError?
    {
        switch state {
        case .active: return nil
        case .requested, .stale:
            let why =
                state == .requested
                ? "its start was sent but the app has not reported the activity's update token yet"
                : "its start went stale: no update token came back after APNs accepted it, the device probably never started it"
            return KKPushError(
                code: .activityNoUpdateToken,
                message:
                    "The activity '\(key)' has no update token, so its \(event.rawValue) has nowhere to go: \(why).",
                fix:
                    "Wait for the app to report the activity's update token (activity_tokens with activity_key \"\(key)\" on its token update), then send the \(event.rawValue) again; a start carries input-push-token 1 so the device sends it."
            )
        case .ended, .dismissed:
            return KKPushError(
                code: .activityEnded,
                message:
                    "The activity '\(key)' is \(state.rawValue): an \(event.rawValue) after the end does nothing on the device.",
                fix: "Start a new activity under a new key (activityKey) to show it again.")
        }
    }
}

/// The events a planned push can carry that ``ActivityTransition/refusal(sending:in:key:)`` judges.
public enum LiveActivityEventName: String, Sendable, Hashable {
    /// An update.
    case update
    /// An end.
    case end
}
