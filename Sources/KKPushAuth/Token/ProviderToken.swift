public import Foundation
public import KKPushCore
import Synchronization

/// Signs, decodes and verifies APNs provider tokens (spec §5.2): ES256 JWTs with header
/// `{"alg":"ES256","kid":KEY_ID}` and claims `{"iss":TEAM_ID,"iat":SECONDS}`.
public enum ProviderToken {
    /// The claims a provider token carries; anything else is `extra-claim`.
    public static let allowedClaims: Set<String> = ["iss", "iat"]

    /// Signs a provider token. `issuedAt` is truncated to whole seconds; the signature is the raw
    /// 64-byte `r‖s`. The JSON is written by kkpush's JSON encoder (strings escaped), never by
    /// interpolating the ids into text. Throws `jwt-iat-out-of-range` for an `issuedAt` before 1970 or
    /// after 9999.
    public static func sign(keyID: String, teamID: String, issuedAt: Date, key: ES256PrivateKey) throws -> String {
        guard let unix = InputNumbers.unixSeconds(of: issuedAt) else {
            throw KKPushError(
                code: .jwtIatOutOfRange,
                message:
                    "The issue time \(InputNumbers.text(issuedAt.timeIntervalSince1970)) is not a UNIX time from 1970 to 9999.",
                fix: "Give iat as whole seconds from \(InputNumbers.unixSecondsDescription) (default: now).")
        }
        let iat = Int(unix)
        var token = encodedHeader(keyID: keyID)
        token.reserveCapacity(token.count + 160)
        token.append(UInt8(ascii: "."))
        // {"iat":<integer>,"iss":<JSON string>}: the same bytes JSONValue.object([...]).encoded()
        // writes (sorted keys), without building a dictionary per token.
        var claims: [UInt8] = Array(#"{"iat":"#.utf8)
        claims.reserveCapacity(48)
        JSONValue.int(iat).write(to: &claims)
        claims += Array(#","iss":"#.utf8)
        JSONValue.writeString(teamID, to: &claims)
        claims.append(UInt8(ascii: "}"))
        Base64URL.encode(claims, into: &token)
        let signature = try key.signature(for: token)
        token.append(UInt8(ascii: "."))
        Base64URL.encode(signature, into: &token)
        return String(decoding: token, as: UTF8.self)
    }

    /// The last header encoded, `base64url({"alg":"ES256","kid":KEY_ID})`: a process signs with few
    /// key ids, so this saves re-encoding the same header for every token.
    private static let lastHeader = Mutex<(keyID: String, encoded: [UInt8])?>(nil)

    static func encodedHeader(keyID: String) -> [UInt8] {
        if let cached = lastHeader.withLock({ $0 }), cached.keyID == keyID { return cached.encoded }
        var encoded: [UInt8] = []
        Base64URL.encode(JSONValue.object(["alg": .string("ES256"), "kid": .string(keyID)]).encoded(), into: &encoded)
        lastHeader.withLock { $0 = (keyID, encoded) }
        return encoded
    }

    /// Takes a token apart without verifying it. Throws ``ProviderTokenFailure`` with code
    /// `malformed` when it is not three base64url parts with JSON objects in the first two.
    public static func decode(_ token: String) throws(ProviderTokenFailure) -> DecodedProviderToken {
        var text = token.trimmingWhitespace()
        if text.lowercased().hasPrefix("bearer ") { text = String(text.dropFirst(7)).trimmingWhitespace() }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed(
                "The token has \(parts.count) part\(parts.count == 1 ? "" : "s"); a JWT has three, separated by dots.")
        }
        func object(_ part: Substring, _ name: String) throws(ProviderTokenFailure) -> [String: JSONValue] {
            guard let bytes = Base64URL.decode(part) else {
                throw .malformed("The token's \(name) is not base64url.")
            }
            guard let value = try? JSONValue.parse(bytes) else {
                throw .malformed("The token's \(name) is not JSON.")
            }
            guard let members = value.objectValue else {
                throw .malformed("The token's \(name) is \(value.jsonTypePhrase), not an object.")
            }
            return members
        }
        let header = try object(parts[0], "header")
        let claims = try object(parts[1], "claims")
        guard let signature = Base64URL.decode(parts[2]), !signature.isEmpty else {
            throw .malformed("The token's signature is empty or not base64url.")
        }
        return DecodedProviderToken(
            header: header, claims: claims, signature: signature, signedPart: "\(parts[0]).\(parts[1])")
    }

    /// Verifies a token as APNs would: structure, `alg`, `kid`, exactly the claims `iss` and `iat`,
    /// `iat` an integer, the signature (raw or DER) against `key`, `iat` not more than
    /// `allowedFutureSkew` ahead of `now` and not older than `maxAge`.
    public static func verify(
        _ token: String, key: ES256PublicKey, now: Date, maxAge: TimeInterval = 3600,
        allowedFutureSkew: TimeInterval = 60
    ) -> ProviderTokenVerification {
        let decoded: DecodedProviderToken
        do {
            decoded = try decode(token)
        } catch {
            return .invalid(error)
        }
        switch decoded.header["alg"] {
        case .string("ES256"): break
        case .string(let other):
            return .invalid(
                .init(code: .wrongAlg, message: "The header's alg is '\(other)'; APNs accepts only ES256."))
        case nil:
            return .invalid(.init(code: .wrongAlg, message: "The header has no alg; APNs needs \"alg\":\"ES256\"."))
        case let other?:
            return .invalid(
                .init(
                    code: .wrongAlg,
                    message: "The header's alg is \(other.jsonTypePhrase), not the string \"ES256\"."))
        }
        guard let kid = decoded.kid, !kid.isEmpty else {
            return .invalid(
                .init(
                    code: .missingKid,
                    message: "The header has no kid (string): APNs needs the key id to find the key."))
        }
        guard let iss = decoded.iss, !iss.isEmpty else {
            let what = decoded.claims["iss"] == nil ? "no iss claim" : "an iss that is not a non-empty string"
            return .invalid(
                .init(code: .missingClaim, message: "The claims have \(what): APNs needs the team id as iss."))
        }
        guard let iatValue = decoded.claims["iat"] else {
            return .invalid(
                .init(code: .missingClaim, message: "The claims have no iat: APNs needs the issue time in seconds."))
        }
        let extra = decoded.claims.keys.filter { !allowedClaims.contains($0) }.sorted()
        if !extra.isEmpty {
            return .invalid(
                .init(
                    code: .extraClaim,
                    message:
                        "The claims have \(extra.map { "'\($0)'" }.joined(separator: ", ")) besides iss and iat; a provider token carries only those two."
                ))
        }
        guard let iat = decoded.iat else {
            return .invalid(
                .init(
                    code: .iatNotInteger,
                    message:
                        "The iat claim is \(iatValue.jsonTypePhrase)\(iatValue == .null ? "" : " (\(iatValue))"), not an integer number of seconds."
                )
            )
        }
        guard key.isValidSignature(decoded.signature, for: Array(decoded.signedPart.utf8)) else {
            return .invalid(
                .init(
                    code: .badSignature,
                    message:
                        "The \(decoded.signature.count)-byte signature does not verify with the given public key (wrong key for kid '\(kid)', or the token was altered)."
                ))
        }
        guard let issued = decoded.issuedAt else {
            return .invalid(
                .init(
                    code: .iatOutOfRange,
                    message: "The iat claim \(iat) is not a UNIX time from 1970 to 9999."))
        }
        let age = now.timeIntervalSince(issued)
        if age < -allowedFutureSkew {
            return .invalid(
                .init(
                    code: .iatInFuture,
                    message:
                        "The iat is \(wholeSeconds(-age)) s in the future (allowed: \(wholeSeconds(allowedFutureSkew)) s). Check the clock of the machine that signed it."
                ))
        }
        if age > maxAge {
            return .invalid(
                .init(
                    code: .expired,
                    message:
                        "The token is \(wholeSeconds(age)) s old; APNs accepts tokens up to \(wholeSeconds(maxAge)) s old.",
                    apnsReason: .expiredProviderToken))
        }
        return .valid(ProviderTokenClaims(keyID: kid, teamID: iss, issuedAt: issued))
    }
}

/// Seconds as whole-number text for messages, without trapping on any double (`Int(_:)` would).
func wholeSeconds(_ seconds: Double) -> String {
    InputNumbers.text(seconds.rounded(.towardZero))
}

extension ProviderTokenFailure {
    /// A `malformed` failure.
    static func malformed(_ message: String) -> ProviderTokenFailure {
        ProviderTokenFailure(code: .malformed, message: message)
    }
}
