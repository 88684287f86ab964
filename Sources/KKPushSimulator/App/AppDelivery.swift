package import KKPushMock

/// One push delivered to a simulated phone, as iOS ran the app for it: the code that ran the diensten refresh, or
/// why none did (the mock's ``AppCodeRun`` note).
package struct AppDelivery: Sendable {
    /// The push's `apns-id`.
    package var apnsID: String
    /// What the push is to the app (`dienst_update vvwilhelmus/…`, `cta …`).
    package var summary: String
    /// The push type and priority as sent.
    package var pushType: String?
    package var priority: Int
    /// The app's state when it was delivered (nil: not recorded, a notification made by hand).
    package var appState: MockAppState?
    /// The code that ran the refresh: `will-present`, `background-handler`, `pushkit`, `did-receive (opened)`, or
    /// `receive` for a notification without an app-code record; nil: nothing ran (yet).
    package var ranBy: String?
    /// Whether the refresh ran and completed.
    package var refreshed: Bool
    /// An alert shown while the app was not in the foreground, waiting for the person to open it.
    package var waitsForOpen = false
    /// Why, in words (the device's rule).
    package var why: String
    /// The receipts the app posted for the push (none unless the app posts receipts, and none when no code ran).
    package var receipts: [Receipt] = []

    /// One receipt the app posted: what it said, from which handler, and the backend's refusal if it refused.
    package struct Receipt: Sendable, Hashable {
        /// `refreshed`, `shown` or `dropped`.
        package var handled: String
        /// `service-extension`, `background-handler`, `will-present` or `on-open`.
        package var handler: String
        /// Why the post failed (nil: the backend recorded it).
        package var error: String?
    }

    init(push: ReceivedPush, appState: MockAppState?, ranBy: String?, refreshed: Bool, why: String) {
        self.apnsID = push.notification.apnsID
        self.summary = push.summary
        self.pushType = push.notification.pushType
        self.priority = push.notification.priority
        self.appState = appState
        self.ranBy = ranBy
        self.refreshed = refreshed
        self.why = why
    }

    /// `refreshed by background-handler`, `waits for the person to open it`, `not run: …`.
    package var outcome: String {
        if let ranBy { return refreshed ? "refreshed by \(ranBy)" : "\(ranBy) ran; the refresh did not complete" }
        if waitsForOpen { return "shown, no app code: the refresh waits until the person opens it" }
        return "no app code ran: \(why)"
    }
}
