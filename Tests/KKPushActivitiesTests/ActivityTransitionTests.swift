import KKPushActivities
import KKPushCore
import Testing

/// The state machine on its own: every (state, event) pair against the table in ActivityTransition's documentation.
@Suite("Activity transitions")
struct ActivityTransitionTests {
    typealias E = ActivityTransition.Event

    /// The table, written out: nil where the event does not apply.
    static let table: [ActivityState: [E: ActivityState]] = [
        .requested: [
            .updateTokenReported: .active, .startRejected: .requested, .appReportedEnded: .ended,
            .appReportedDismissed: .dismissed, .staleTimeout: .stale,
        ],
        .active: [
            .updateTokenReported: .active, .endAccepted: .ended, .updateTokenGone: .dismissed,
            .appReportedEnded: .ended, .appReportedDismissed: .dismissed,
        ],
        .stale: [.updateTokenReported: .active, .appReportedEnded: .ended, .appReportedDismissed: .dismissed],
        .ended: [
            .updateTokenReported: .ended, .endAccepted: .ended, .updateTokenGone: .dismissed,
            .appReportedEnded: .ended, .appReportedDismissed: .dismissed, .dismissalPassed: .dismissed,
        ],
        .dismissed: [.appReportedDismissed: .dismissed],
    ]

    static let events: [E] = [
        .updateTokenReported, .startRejected, .endAccepted, .updateTokenGone, .appReportedEnded,
        .appReportedDismissed, .staleTimeout, .dismissalPassed,
    ]

    @Test("every state and event as the table says", arguments: ActivityState.allCases)
    func everyPair(state: ActivityState) {
        for event in Self.events {
            #expect(
                ActivityTransition.next(from: state, on: event) == Self.table[state]?[event],
                "\(state) on \(event)")
        }
    }

    @Test("a dismissed activity never comes back, an ended one never becomes active")
    func finalStates() {
        for event in Self.events {
            let fromDismissed = ActivityTransition.next(from: .dismissed, on: event)
            #expect(fromDismissed == nil || fromDismissed == .dismissed)
            #expect(ActivityTransition.next(from: .ended, on: event) != .active)
        }
    }

    @Test("updates and ends go to active activities only, refused with the key and the fix otherwise")
    func refusals() throws {
        #expect(ActivityTransition.refusal(sending: .update, in: .active, key: "k") == nil)
        let requested = try #require(ActivityTransition.refusal(sending: .update, in: .requested, key: "dienst-1"))
        #expect(requested.code.rawValue == "activity-no-update-token")
        #expect(requested.message.contains("dienst-1"))
        #expect(requested.fix?.contains("activity_tokens") == true)
        let stale = try #require(ActivityTransition.refusal(sending: .end, in: .stale, key: "k"))
        #expect(stale.code.rawValue == "activity-no-update-token")
        for state in [ActivityState.ended, .dismissed] {
            let ended = try #require(ActivityTransition.refusal(sending: .end, in: state, key: "k"))
            #expect(ended.code.rawValue == "activity-ended")
            #expect(ended.message.contains(state.rawValue))
        }
    }
}
