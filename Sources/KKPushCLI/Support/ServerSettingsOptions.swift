import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KantineKoning

/// The server's APNs settings, `APNS_FORCE_ENV` and the legacy `APNS_ENV`, the same flags and the same
/// default in every command that resolves an APNs environment (`env resolve`, `diagnose`, `token verify`,
/// `backend serve`).
///
/// Default: both are read from this process's environment, as the backend reads them on the server (run
/// kkpush there and it sees what the backend sees); `--apns-force-env` and `--apns-env` win over the
/// environment, and `--ignore-process-env` stops reading it. An empty value (`--apns-env ''`) models a
/// variable set to the empty string.
///
/// Older spellings still work, hidden from the help: `--force-env` (for `--apns-force-env`),
/// `--server-apns-env` (for `--apns-env`) and `--from-process-env` (now the default; accepted and ignored).
struct ServerSettingsOptions: ParsableArguments {
    @Option(
        name: .customLong("apns-force-env"),
        help:
            "The server's APNS_FORCE_ENV (sandbox|production; other values are ignored, as on the server). Default: $APNS_FORCE_ENV."
    )
    var apnsForceEnv: String?

    @Option(
        name: .customLong("apns-env"), help: "The server's legacy APNS_ENV (sandbox|production). Default: $APNS_ENV.")
    var apnsEnv: String?

    @Flag(
        name: .customLong("ignore-process-env"),
        help: "Do not read APNS_FORCE_ENV and APNS_ENV from this process's environment.")
    var ignoreProcessEnv = false

    @Option(
        name: .customLong("force-env"), help: ArgumentHelp("The old name of --apns-force-env.", visibility: .hidden))
    var forceEnvAlias: String?

    @Option(
        name: .customLong("server-apns-env"), help: ArgumentHelp("The old name of --apns-env.", visibility: .hidden))
    var serverApnsEnvAlias: String?

    @Flag(
        name: .customLong("from-process-env"),
        help: ArgumentHelp("Reading the process environment is the default now.", visibility: .hidden))
    var fromProcessEnvAlias = false

    /// The environment variables read (unless `--ignore-process-env`).
    static let variables = [ServerAPNsSettings.forceVariable, ServerAPNsSettings.legacyVariable]

    func validate() throws {
        if apnsForceEnv != nil, forceEnvAlias != nil {
            throw ValidationError("Give --apns-force-env once (--force-env is its old name).")
        }
        if apnsEnv != nil, serverApnsEnvAlias != nil {
            throw ValidationError("Give --apns-env once (--server-apns-env is its old name).")
        }
        if ignoreProcessEnv, fromProcessEnvAlias {
            throw ValidationError("Give --ignore-process-env or --from-process-env, not both.")
        }
    }

    /// `--apns-force-env` (or its old name).
    var forceEnv: String? { apnsForceEnv ?? forceEnvAlias }
    /// `--apns-env` (or its old name).
    var legacyEnv: String? { apnsEnv ?? serverApnsEnvAlias }

    /// Whether a setting was given on the command line, or will be read from `environment`.
    func isGiven(environment: [String: String] = CommandIO.current.environment) -> Bool {
        forceEnv != nil || legacyEnv != nil
            || (!ignoreProcessEnv && Self.variables.contains { !(environment[$0] ?? "").isEmpty })
    }

    /// The settings: the process environment's (unless `--ignore-process-env`), then the flags.
    func settings(environment: [String: String] = CommandIO.current.environment) -> ServerAPNsSettings {
        var settings = ignoreProcessEnv ? ServerAPNsSettings() : ServerAPNsSettings.from(environment: environment)
        if let forceEnv { settings.forceEnv = forceEnv }
        if let legacyEnv { settings.legacyAPNSEnv = legacyEnv }
        return settings
    }
}
