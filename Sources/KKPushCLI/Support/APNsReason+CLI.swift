import KKPushCore

extension APNsReason {
    /// The reason's fix, with the `kkpush` commands that help with it (the library's fix names none).
    var commandLineFix: String {
        switch self {
        case .badDeviceToken:
            fix + " `kkpush build inspect` reads what the build is signed for; `kkpush diagnose --probe` asks APNs."
        case .channelNotRegistered:
            fix
                + " `kkpush channel list --env <the other environment>` shows whether the channel was made there; `kkpush channel list` shows this environment's."
        case .badExpirationDate:
            fix
                + " For a broadcast, `kkpush channel show --channel ID` shows the channel's storage policy: with 0, send --expiration 0 (or leave it out), or create a channel with --storage-policy 1."
        case .topicDisallowed:
            fix + " For `send --channel` and `kkpush channel`, give --topic / --bundle-id without any suffix."
        case .cannotCreateChannelConfig:
            fix + " `kkpush channel list` shows them; `kkpush channel delete --channel ID` removes one."
        default: fix
        }
    }
}
