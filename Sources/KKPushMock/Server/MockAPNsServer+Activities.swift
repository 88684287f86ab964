public import KKPushCore

extension MockAPNsServer {
    // MARK: Live Activities on the device side

    /// Marks `token`, a push-to-start token, stale on its device (the app was reinstalled, or
    /// `pushToStartTokenUpdates` gave the app a new token), or current again with `stale: false`: APNs still answers
    /// 200 to a Live Activity push on a stale token, and the device side discards it
    /// (`discarded: stale-push-to-start-token`). Returns the device's state; throws if the mock does not know the
    /// token.
    @discardableResult
    public func markPushToStartStale(token: String, stale: Bool = true) throws -> MockDeviceState {
        guard let result = state.setPushToStartStale(token: token, stale: stale) else {
            throw Self.unknownToken(token)
        }
        return result
    }

    /// The Live Activities the starts to push-to-start token `token` created on its device, oldest first (empty if
    /// the mock does not know the token).
    public func activities(pushToStartToken token: String) -> [MockActivity] {
        state.deviceState(token: token)?.activities ?? []
    }
}
