import KKPushCore

extension APNsReason {
    /// The reason's fix, with the `kkpush` commands that help with it (the library's fix names none).
    var commandLineFix: String {
        switch self {
        case .badDeviceToken:
            fix + " `kkpush build inspect` reads what the build is signed for; `kkpush diagnose --probe` asks APNs."
        default: fix
        }
    }
}
