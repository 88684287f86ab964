import ArgumentParser
import Foundation
import KKPushActivities
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem

/// `kkpush activity`: Live Activities from start to end through the activity registry.
struct ActivityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity",
        abstract:
            "Start, update and end Live Activities through the activity registry: idempotent starts by key, the device's start budget, updates routed to the current update token.",
        discussion: """
            The registry (--registry: an SQLite file or a postgres:// URL, default $KKPUSH_ACTIVITY_REGISTRY) holds per \
            device and attributes type the push-to-start token and its rotations, and per activity its key, state \
            (requested, active, ended, dismissed, stale) and update token. A start with a key the registry knows sends \
            nothing and shows the first activity. At most --budget-count starts per device in --budget-window seconds \
            (default 10 in 3600: Apple's "about 10", Apple Developer Forums thread 799505; the window is kkpush's \
            choice); past it a start is deferred with the time the budget frees or refused (--over-budget refuse), \
            exit 1 either way: nothing was sent. Each push's APNs answer is recorded in the registry.
            """,
        subcommands: [
            ActivityStartCommand.self, ActivityUpdateCommand.self, ActivityEndCommand.self, ActivityReportCommand.self,
            ActivityListCommand.self, ActivityInspectCommand.self, ActivitySweepCommand.self,
        ])

    /// The library's API names in this command's flags: the registry's errors name them in parentheses.
    static let words = FlagWords(flags: [
        "activityKey": "--activity-key", "startBudgetCount": "--budget-count", "startBudgetWindow": "--budget-window",
        "staleTimeout": "--stale-timeout", "overBudget": "--over-budget", "pushToStartToken": "--push-to-start-token",
        "attributesType": "--attributes-type", "attributes": "--attributes", "registry": "--registry",
        "device": "--device",
    ])

    /// Runs `body` with this command's words in its errors (then the common ones, when reported).
    static func mappingWords<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as KKPushError {
            throw words.apply(error)
        }
    }
}

/// `--registry` and the settings the registry plans by, declared once for every `activity` subcommand.
struct ActivityRegistryOptions: ParsableArguments {
    static let environmentVariable = "KKPUSH_ACTIVITY_REGISTRY"

    @Option(
        help: ArgumentHelp(
            "The activity registry: an SQLite file (created if missing) or a postgres:// URL (kkpush's own tables, created on first use); default: $KKPUSH_ACTIVITY_REGISTRY.",
            valueName: "path|url"))
    var registry: String?
    @Option(
        name: .customLong("budget-count"),
        help:
            "Starts per device allowed within --budget-window: Apple's \"about 10\" (Apple Developer Forums thread 799505)."
    )
    var budgetCount: Int = ActivityRegistrySettings.defaultStartBudgetCount
    @Option(
        name: .customLong("budget-window"),
        help: "The start budget's window in seconds: an hour is kkpush's choice (Apple gives no window length).")
    var budgetWindow: Double = ActivityRegistrySettings.defaultStartBudgetWindow
    @Option(
        name: .customLong("stale-timeout"),
        help:
            "Seconds after APNs accepted a start within which the activity's update token must come back, else the activity is stale and its push-to-start token suspect (120 s is kkpush's choice)."
    )
    var staleTimeout: Double = ActivityRegistrySettings.defaultStaleTimeout

    func validate() throws {
        try NumericFlags.integer(budgetCount, flag: "--budget-count", in: 1...10_000)
        try NumericFlags.seconds(budgetWindow, flag: "--budget-window", in: 1...604_800)
        try NumericFlags.seconds(staleTimeout, flag: "--stale-timeout", in: 1...86_400)
    }

    var settings: ActivityRegistrySettings {
        ActivityRegistrySettings(
            startBudgetCount: budgetCount, startBudgetWindow: budgetWindow, staleTimeout: staleTimeout)
    }

    /// Opens the registry, runs `body`, closes it.
    func withRegistry<T>(_ body: (any ActivityRegistry) async throws -> T) async throws -> T {
        let env = CommandIO.current.environment[Self.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        guard let location = registry ?? env else {
            throw KKPushError(
                code: .activityInputInvalid, message: "No activity registry given.",
                fix: "Pass --registry with an SQLite file or a postgres:// URL, or set \(Self.environmentVariable).")
        }
        let registry = try await ActivityRegistries.open(
            location, settings: settings, origin: self.registry != nil ? "--registry" : Self.environmentVariable)
        do {
            let result = try await body(registry)
            await registry.close()
            return result
        } catch {
            await registry.close()
            throw error
        }
    }
}

/// The JSON value of a flag (`--attributes`, `--content-state`): inline JSON, or `@FILE`.
enum ActivityJSONFlag {
    static func parse(_ text: String, flag: String) throws -> JSONValue {
        var source = text
        if text.hasPrefix("@") {
            let bytes = try InputFile.read(String(text.dropFirst()), what: "JSON", label: flag, maximumSize: 1 << 20)
            source = String(decoding: bytes, as: UTF8.self)
        }
        do {
            return try JSONValue.parse(source)
        } catch {
            throw KKPushError(
                code: .activityInputInvalid, message: "\(flag) is not JSON: \(error.message)",
                fix: "Give \(flag) as a JSON value, e.g. '{\"signedUp\":3}', or @FILE.")
        }
    }

    /// `--title`/`--body` as an alert (nil when neither is given).
    static func alert(title: String?, body: String?) -> APSAlert? {
        guard title != nil || body != nil else { return nil }
        return .fields(APSAlert.Fields(title: title, body: body))
    }
}
