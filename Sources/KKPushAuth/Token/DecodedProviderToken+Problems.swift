public import Foundation
public import KKPushCore

extension DecodedProviderToken {
    /// Apple's 20-minute minimum between token refreshes (spec §5.3).
    public static let minimumRefreshAge: TimeInterval = 20 * 60

    /// How old the token is at `now`, if its `iat` is an integer.
    public func age(now: Date) -> TimeInterval? {
        issuedAt.map { now.timeIntervalSince($0) }
    }

    /// What is wrong with, or worth knowing about, the token at `now`, without checking the
    /// signature (that needs the key: ``ProviderToken/verify(_:key:now:maxAge:allowedFutureSkew:)``).
    ///
    /// Errors: `wrong-alg`, `missing-kid`, `missing-claim`, `iat-not-integer`, `iat-out-of-range`,
    /// `iat-in-future`, `expired`. Warnings: `extra-claim`, `key-team-swapped`, `key-id-format`, `team-id-format`.
    /// Info: `too-young-to-refresh` (replacing it now risks `TooManyProviderTokenUpdates`).
    public func problems(now: Date, maxAge: TimeInterval = 3600, allowedFutureSkew: TimeInterval = 60) -> [Problem] {
        var problems: [Problem] = []
        if alg != "ES256" {
            problems.append(
                Problem(
                    .error, code: .wrongAlg,
                    message:
                        "The header's alg is \(header["alg"].map { "\($0)" } ?? "missing"); APNs accepts only \"ES256\".",
                    fix: "Sign with ES256 and put \"alg\":\"ES256\" in the header."))
        }
        if kid == nil || kid?.isEmpty == true {
            problems.append(
                Problem(
                    .error, code: .missingKid, message: "The header has no kid (string).",
                    fix: "Put the 10-character key id (from AuthKey_<KEYID>.p8) in the header as kid."))
        }
        if iss == nil || iss?.isEmpty == true {
            problems.append(
                Problem(
                    .error, code: .missingClaim, message: "The claims have no iss (string).",
                    fix: "Put the 10-character team id in the claims as iss."))
        }
        if claims["iat"] == nil {
            problems.append(
                Problem(
                    .error, code: .missingClaim, message: "The claims have no iat.",
                    fix: "Put the issue time as an integer number of seconds since 1970 in the claims as iat."))
        } else if iat == nil, let value = claims["iat"] {
            problems.append(
                Problem(
                    .error, code: .iatNotInteger,
                    message:
                        "The iat claim is \(value.jsonTypePhrase)\(value == .null ? "" : " (\(value))"), not an integer number of seconds.",
                    fix: "Send iat as a JSON integer, for example \"iat\":\(wholeSeconds(now.timeIntervalSince1970))."))
        } else if let iat, issuedAt == nil {
            problems.append(
                Problem(
                    .error, code: .iatOutOfRange,
                    message: "The iat claim \(iat) is not a UNIX time from 1970 to 9999.",
                    fix:
                        "Send iat as the issue time in whole seconds since 1970, for example \"iat\":\(wholeSeconds(now.timeIntervalSince1970))."
                ))
        }
        let extra = claims.keys.filter { !ProviderToken.allowedClaims.contains($0) }.sorted()
        if !extra.isEmpty {
            problems.append(
                Problem(
                    .warning, code: .extraClaim,
                    message: "The claims have \(extra.joined(separator: ", ")) besides iss and iat.",
                    fix: "Send only iss and iat (kid belongs in the header)."))
        }
        if let kid, let iss, !kid.isEmpty, kid == iss {
            problems.append(
                Problem(
                    .warning, code: .keyTeamSwapped,
                    message: "kid and iss are both '\(kid)'; one of them is not what it should be.",
                    fix: "kid is the key id (AuthKey_<KEYID>.p8), iss the team id (developer.apple.com → Membership)."))
        } else {
            if let kid, !kid.isEmpty, !KeyTeamSwapCheck.isWellFormedID(kid) {
                problems.append(
                    Problem(
                        .warning, code: .keyIdFormat,
                        message: "The kid '\(kid)' is not 10 upper-case letters and digits.",
                        fix: "Use the key id from developer.apple.com → Keys."))
            }
            if let iss, !iss.isEmpty, !KeyTeamSwapCheck.isWellFormedID(iss) {
                problems.append(
                    Problem(
                        .warning, code: .teamIdFormat,
                        message: "The iss '\(iss)' is not 10 upper-case letters and digits.",
                        fix: "Use the team id from developer.apple.com → Membership."))
            }
        }
        if let age = age(now: now) {
            if age < -allowedFutureSkew {
                problems.append(
                    Problem(
                        .error, code: .iatInFuture, message: "The iat is \(wholeSeconds(-age)) s in the future.",
                        fix: "Check the clock of the machine that signed it (NTP)."))
            } else if age > maxAge {
                problems.append(
                    Problem(
                        .error, code: .expired,
                        message:
                            "The token is \(wholeSeconds(age)) s old; APNs answers ExpiredProviderToken after \(wholeSeconds(maxAge)) s.",
                        fix: "Sign a new token; refresh every 20 to 60 minutes (kkpush's cache does this)."))
            } else if age < Self.minimumRefreshAge {
                problems.append(
                    Problem(
                        .info, code: .tooYoungToRefresh,
                        message:
                            "The token is \(wholeSeconds(max(age, 0))) s old; replacing it before \(Int(Self.minimumRefreshAge / 60)) minutes risks TooManyProviderTokenUpdates.",
                        fix: "Keep using it until it is at least 20 minutes old."))
            }
        }
        return problems
    }
}
