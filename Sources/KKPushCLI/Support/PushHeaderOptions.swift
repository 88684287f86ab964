import ArgumentParser

/// The APNs request headers a push's flags set besides its topic: `--push-type`, `--priority`, `--expiration`,
/// `--collapse-id`, declared here once for `send` and `send-batch` (the same flags, help and parsing in both). The
/// topic stays each command's own: its default differs (`send` reads an `.apns` file's bundle first).
struct PushHeaderOptions: ParsableArguments {
    @Option(name: .customLong("push-type"), help: "apns-push-type (default: from the payload).") var pushType: String?
    @Option(parsing: .unconditional, help: "apns-priority: 10, 5 or 1 (default: 10, or 5 for background).")
    var priority: Int?
    @Option(parsing: .unconditional, help: "apns-expiration: UNIX seconds (0 = try once).") var expiration: Int?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id (at most 64 bytes).") var collapseID: String?
}
