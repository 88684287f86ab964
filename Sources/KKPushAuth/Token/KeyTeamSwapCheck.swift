import Foundation
import KKPushCore

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
    public static func check(keyFile: String?, keyID: String, teamID: String) -> [Problem] {
        var problems: [Problem] = []
        let fileKeyID = keyFile.flatMap(keyID(fromFileName:))
        if let fileKeyID, teamID == fileKeyID {
            problems.append(Problem(
                .warning, code: "key-team-swapped",
                message: "The team id '\(teamID)' is the key id in the file name AuthKey_\(fileKeyID).p8; key id and team id look swapped (key id given: '\(keyID)').",
                fix: "Use --key-id \(fileKeyID) and your 10-character team id (developer.apple.com → Membership) as --team-id."))
        } else if !keyID.isEmpty, keyID == teamID {
            problems.append(Problem(
                .warning, code: "key-team-swapped",
                message: "The key id and the team id are both '\(keyID)'; one of them is wrong.",
                fix: "The key id is in the .p8 file name (AuthKey_<KEYID>.p8); the team id is on developer.apple.com → Membership."))
        } else if let fileKeyID, keyID != fileKeyID {
            problems.append(Problem(
                .warning, code: "key-id-mismatch",
                message: "The key file is AuthKey_\(fileKeyID).p8 but the key id given is '\(keyID)'; APNs will answer InvalidProviderToken.",
                fix: "Use --key-id \(fileKeyID), or the key file that belongs to '\(keyID)'."))
        }
        if !isWellFormedID(keyID) {
            problems.append(Problem(
                .warning, code: "key-id-format",
                message: "The key id '\(keyID)' is not 10 upper-case letters and digits, the form of Apple's key ids.",
                fix: "Copy the key id from developer.apple.com → Keys, or from the file name AuthKey_<KEYID>.p8."))
        }
        if !isWellFormedID(teamID) {
            problems.append(Problem(
                .warning, code: "team-id-format",
                message: "The team id '\(teamID)' is not 10 upper-case letters and digits, the form of Apple's team ids.",
                fix: "Copy the team id from developer.apple.com → Membership."))
        }
        return problems
    }
}
