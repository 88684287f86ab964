import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushQueue

/// The worker's claim-time decisions (``QueuePolicy``): shared send rates, a per-device cap, default quiet hours,
/// and how long idempotency keys are kept. The DocC article PushQueue explains each.
struct QueuePolicyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A send rate the whole fleet holds, repeatable: topic=TOPIC:N/s or credential=NAME:N/m (NAME: the row's credential column, default for rows without one). Its bucket lives in the database, shared by every worker; give every worker the same rates.",
            valueName: "scope=key:N/unit"))
    var rate: [String] = []
    @Option(
        name: .customLong("device-cap"),
        help: ArgumentHelp(
            "At most N pushes per device in PERIOD (units s, m, h, d: 3/1h). A row over it waits (scheduled, reason device-cap) or, when a newer push of the same kind for the device waits, ends collapsed.",
            valueName: "N/period"))
    var deviceCap: String?
    @Option(
        name: .customLong("quiet-hours"),
        help: ArgumentHelp(
            "The quiet window of rows without their own quiet_hours, in a named IANA time zone: ZONE=HH:MM-HH:MM (Europe/Amsterdam=22:00-07:00). A row in it waits until it ends (scheduled, reason quiet-hours); time-sensitive and critical pushes and Live Activity ends go through.",
            valueName: "zone=start-end"))
    var quietHours: String?
    @Option(
        name: .customLong("idempotency-retention"), parsing: .unconditional,
        help:
            "Days an ended row keeps its idempotency key (a repeat of it is not queued meanwhile); the worker clears older keys every hour, 1 to 3650."
    )
    var idempotencyRetention: Int = 30

    /// The policy the flags give (``validate()`` has refused an unreadable one).
    func policy() throws -> QueuePolicy {
        var policy = QueuePolicy()
        policy.rates = try rate.map { try QueueRate(parsing: $0, field: "rate") }
        policy.deviceCap = try deviceCap.map { try DeviceCap(parsing: $0, field: "deviceCap") }
        policy.quietHours = try quietHours.map { try QuietHours(parsing: $0, field: "quietHours") }
        policy.idempotencyRetention = Double(idempotencyRetention) * 86_400
        return policy
    }

    /// A rate, cap or window that cannot be read is a usage error naming its flag (exit 64).
    func validate() throws {
        try NumericFlags.integer(idempotencyRetention, flag: "--idempotency-retention", in: 1...3650)
        do {
            _ = try policy()
        } catch let error as KKPushError {
            throw ValidationError(FlagWords.common.apply("\(error.message) \(error.fix ?? "")"))
        }
    }
}
