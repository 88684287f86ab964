package import Foundation
package import KKPushAuth
import KKPushCore
package import KantineKoning

/// A provider token a server sends, as `diagnose` weighs it: what APNs reads without the key (ES256, a `kid`, an
/// `iss`, an `iat` that is a time), and with the key, whether the signature holds. Age and clock skew are left to
/// the rules, which judge them against the diagnosis's own time.
package enum ProviderTokenInspection {
    /// What `token` says, and the first thing wrong with it for APNs, if any. `key`, when given, checks the signature
    /// only.
    package static func seen(_ token: String, key: ES256PrivateKey?, now: Date) -> DiagnosisFacts.ProviderTokenSeen {
        let decoded: DecodedProviderToken
        do {
            decoded = try ProviderToken.decode(token)
        } catch {
            return DiagnosisFacts.ProviderTokenSeen(kid: nil, iss: nil, issuedAt: nil, invalidReason: error.message)
        }
        let iatPresent = decoded.claims["iat"] != nil
        var seen = DiagnosisFacts.ProviderTokenSeen(
            kid: decoded.kid, iss: decoded.iss, issuedAt: decoded.issuedAt,
            iatNotInteger: iatPresent && decoded.iat == nil)
        if let iat = decoded.iat, decoded.issuedAt == nil {
            seen.invalidReason = "The iat claim \(iat) is not a UNIX time between 1970 and 9999."
        }
        // What APNs checks without the key: ES256, a kid and an iss, an iat.
        if decoded.alg != "ES256" {
            seen.invalidReason =
                "Its alg is \(decoded.alg.map { "'\($0)'" } ?? "missing"), not ES256 (is it another JWT, such as a device JWT?)."
        } else if decoded.kid == nil {
            seen.invalidReason = "Its header has no kid (the key id)."
        } else if decoded.iss == nil {
            seen.invalidReason = "Its claims have no iss (the team id)."
        } else if !iatPresent {
            seen.invalidReason = "Its claims have no iat (when it was issued)."
        }
        if let key {
            // Judge the signature only: age and clock are judged against `now` by the rules.
            if case .invalid(let failure) = ProviderToken.verify(
                token, key: key.publicKey, now: decoded.issuedAt ?? now),
                failure.code == .badSignature || failure.code == .wrongAlg
            {
                seen.invalidReason = failure.message
            }
        }
        return seen
    }
}
