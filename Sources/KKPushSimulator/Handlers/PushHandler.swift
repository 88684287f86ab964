package import Foundation
import KKPushCore
package import KKPushMock
package import KantineKoning

/// A push as the simulated app received it from the mock APNs server.
package struct ReceivedPush: Sendable {
    /// The notification as the mock accepted and delivered it (with the time it accepted it).
    package var notification: DeliveredNotification
    /// What the payload means to the app.
    package var kind: KantineKoningPushKind
    /// When the app got it (by the app's clock, which is the mock's).
    package var receivedAt: Date

    /// Creates a received push, reading the payload as the app does.
    package init(notification: DeliveredNotification, receivedAt: Date) {
        self.notification = notification
        self.kind = KantineKoningPush.parse(Array(notification.payload.utf8))
        self.receivedAt = receivedAt
    }

    /// The time the mock accepted the push.
    package var acceptedAt: Date { notification.time }

    /// A short description: `dienst_update vvwilhelmus/vvwilhelmus-jo11-3-5`, `cta`, `unknown`.
    package var summary: String {
        switch kind {
        case .dienstUpdate(let tenant, let dienstID): "dienst_update \(tenant)/\(dienstID)"
        case .cta(let token, _): "cta \(Redaction.prefix(token))"
        case .unknown: "unknown push"
        }
    }
}

/// A call to action the app keeps until the user acts on it (the README's "pending CTA").
package struct PendingCTA: Sendable, Hashable {
    /// The CTA token from the deep link.
    package var token: String
    /// The deep link as received (`kantinekoning://cta/shift-volunteer?token=…`).
    package var link: String
    /// The `apns-id` of the push that carried it.
    package var apnsID: String
    /// When the app stored it.
    package var storedAt: Date

    /// Creates a pending CTA.
    package init(token: String, link: String, apnsID: String, storedAt: Date) {
        self.token = token
        self.link = link
        self.apnsID = apnsID
        self.storedAt = storedAt
    }
}

/// What one handler did with one push.
package enum HandlerOutcome: Sendable {
    /// The handler refreshed the diensten.
    case refreshed(RefreshResult)
    /// The handler stored a pending CTA.
    case storedCTA(PendingCTA)
    /// The handler had nothing to do with this push (and why).
    case skipped(String)

    /// The refresh, if this outcome is one.
    package var refresh: RefreshResult? {
        if case .refreshed(let r) = self { return r }
        return nil
    }
}

/// Something the app does when a push arrives. The app holds a list of handlers and runs each, in
/// order, for every push (so a CTA push both stores its CTA and refreshes the diensten).
package protocol PushHandler: Sendable {
    /// A short name for reports (`diensten-refresh`, `cta`, `primary-token-refresh`).
    var name: String { get }
    /// Handles `push` for `app`.
    func handle(_ push: ReceivedPush, in app: SimulatedApp) async -> HandlerOutcome
}

/// Everything the app's handlers did with one push.
package struct PushHandlingResult: Sendable {
    /// The app's name.
    package var app: String
    /// The push.
    package var push: ReceivedPush
    /// Each handler's name and outcome, in order.
    package var outcomes: [(handler: String, outcome: HandlerOutcome)]

    /// Creates a result.
    package init(app: String, push: ReceivedPush, outcomes: [(handler: String, outcome: HandlerOutcome)]) {
        self.app = app
        self.push = push
        self.outcomes = outcomes
    }

    /// The (first) refresh the push caused, if any.
    package var refresh: RefreshResult? { outcomes.lazy.compactMap(\.outcome.refresh).first }
}

/// Stores the pending CTA of a CTA push (`deep_link` = `kantinekoning://cta/shift-volunteer?token=…`).
package struct CTAHandler: PushHandler {
    /// `cta`.
    package let name = "cta"

    /// Creates the handler.
    package init() {}

    /// Stores the CTA of a CTA push; skips every other push.
    package func handle(_ push: ReceivedPush, in app: SimulatedApp) async -> HandlerOutcome {
        guard case .cta(let token, let url) = push.kind else { return .skipped("not a CTA push") }
        let cta = PendingCTA(token: token, link: url, apnsID: push.notification.apnsID, storedAt: app.clock.now())
        await app.storePendingCTA(cta)
        return .storedCTA(cta)
    }
}
