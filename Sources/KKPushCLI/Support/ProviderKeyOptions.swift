import ArgumentParser
import Foundation
import KKPushCLISupport

/// The provider key (token-based authentication), the same three flags and defaults in every command
/// that signs with it (`send`, `send-batch`, `diagnose`, `jwt sign`): `--key` (default `$APNS_KEY_PATH`,
/// else `$APNS_KEY` holding the PEM itself), `--key-id` (default `$APNS_KEY_ID`) and `--team-id` (default
/// `$APNS_TEAM_ID`).
struct ProviderKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("key"),
        help: "The provider key (.p8). Default: $APNS_KEY_PATH, else $APNS_KEY (the PEM itself).")
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The key's 10-character Key ID. Default: $APNS_KEY_ID.")
    var keyIDFlag: String?

    @Option(name: .customLong("team-id"), help: "The 10-character Team ID. Default: $APNS_TEAM_ID.")
    var teamIDFlag: String?

    /// `--key-id`, else `$APNS_KEY_ID`.
    func keyID(environment: [String: String] = CommandIO.current.environment) -> String? {
        keyIDFlag ?? environment["APNS_KEY_ID"]
    }

    /// `--team-id`, else `$APNS_TEAM_ID`.
    func teamID(environment: [String: String] = CommandIO.current.environment) -> String? {
        teamIDFlag ?? environment["APNS_TEAM_ID"]
    }

    /// The signing key: `--key`, `$APNS_KEY_PATH` or `$APNS_KEY`; nil if none.
    func signingKey(warn: Bool = true) throws -> Secrets.SigningKey? {
        try Secrets.signingKey(flag: keyFile, warn: warn)
    }
}
