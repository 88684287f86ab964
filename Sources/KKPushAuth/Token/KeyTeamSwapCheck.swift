import Foundation
public import KKPushCore

/// Detects the common mix-ups of key id and team id (both are 10-character strings), where they
/// are detectable: Apple names the key file `AuthKey_<KEYID>.p8`.
public struct KeyTeamSwapCheck {
    /// The key id in a file name of Apple's form `AuthKey_<KEYID>.p8`, nil for any other name.
    public static func keyID(fromFileName path: String) -> String? {
        let name = (path as NSString).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let id = String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
        return isWellFormedID(id) ? id : nil
    }

    /// True for 10 ASCII upper-case letters and digits, the form of Apple's key and team ids.
    public static func isWellFormedID(_ id: String) -> Bool {
        id.utf8.count == 10 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    /// Problems with the key id and team id given for `keyFile` (which may be nil, for a key from
    /// an environment variable):
    /// - `key-team-swapped` (warning): the team id is the file's key id, or key id equals team id;
    /// - `key-id-mismatch` (warning): the file is `AuthKey_X.p8` but the key id given is not X;
    /// - `key-id-format` / `team-id-format` (warning): not 10 upper-case letters and digits.
    ///
    /// `inToken` words them for a token's `kid` and `iss` (`jwt verify`), with fixes that sign a new
    /// token (`(jwtSignCommand)`, a command line's signing command); otherwise for the key id
    /// (`(keyID)`) and team id (`(teamID)`) the caller signs with, by API name.
    public static func check(keyFile: String?, keyID: String, teamID: String, inToken: Bool = false) -> [Problem] {
        var problems: [Problem] = []
        let fileKeyID = keyFile.flatMap(keyID(fromFileName:))
        let kidName = inToken ? "kid" : "key id"
        let issName = inToken ? "iss (team id)" : "team id"
        if let fileKeyID, teamID == fileKeyID {
            problems.append(
                Problem(
                    .warning, code: .keyTeamSwapped,
                    message:
                        "The \(issName) '\(teamID)' is the key id in the file name AuthKey_\(fileKeyID).p8; key id and team id look swapped (\(kidName) given: '\(keyID)').",
                    fix: inToken
                        ? "Sign a new token (jwtSignCommand) with the key AuthKey_\(fileKeyID).p8 (key), its key id \(fileKeyID) as kid (keyID) and your 10-character team id as iss (teamID); the team id is on developer.apple.com → Membership."
                        : "Use \(fileKeyID) as the key id (keyID) and your 10-character team id (developer.apple.com → Membership) as the team id (teamID)."
                ))
        } else if !keyID.isEmpty, keyID == teamID {
            problems.append(
                Problem(
                    .warning, code: .keyTeamSwapped,
                    message: "The \(kidName) and the \(issName) are both '\(keyID)'; one of them is wrong.",
                    fix:
                        "The key id is in the .p8 file name (AuthKey_<KEYID>.p8); the team id is on developer.apple.com → Membership."
                        + (inToken
                            ? " Sign a new token with both right (jwtSignCommand): the key id (keyID) and the team id (teamID)."
                            : "")))
        } else if let fileKeyID, keyID != fileKeyID {
            problems.append(
                Problem(
                    .warning, code: .keyIdMismatch,
                    message:
                        "The key file is AuthKey_\(fileKeyID).p8 but the \(kidName) given is '\(keyID)'; APNs will answer InvalidProviderToken.",
                    fix: inToken
                        ? "Sign a new token with kid \(fileKeyID) (jwtSignCommand) as the key id (keyID), or check it with the key file of '\(keyID)'."
                        : "Use \(fileKeyID) as the key id (keyID), or the key file that belongs to '\(keyID)'."))
        }
        if !isWellFormedID(keyID) {
            problems.append(
                Problem(
                    .warning, code: .keyIdFormat,
                    message:
                        "The \(kidName) '\(keyID)' is not 10 upper-case letters and digits, the form of Apple's key ids.",
                    fix: "Copy the key id from developer.apple.com → Keys, or from the file name AuthKey_<KEYID>.p8"
                        + (inToken ? ", and sign a new token with it (jwtSignCommand)." : ".")))
        }
        if !isWellFormedID(teamID) {
            problems.append(
                Problem(
                    .warning, code: .teamIdFormat,
                    message:
                        "The \(issName) '\(teamID)' is not 10 upper-case letters and digits, the form of Apple's team ids.",
                    fix: "Copy the team id from developer.apple.com → Membership"
                        + (inToken ? ", and sign a new token with it (jwtSignCommand)." : ".")))
        }
        return problems
    }
}
