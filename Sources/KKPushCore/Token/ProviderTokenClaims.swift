public import Foundation

// The provider token's model (spec §5.2): its claims, a token taken apart, and why one is refused. Signing and
// verifying (ES256 on OpenSSL) are KKPushAuth's; what a token says is the APNs model's.

/// The claims of a valid provider token.
public struct ProviderTokenClaims: Sendable, Equatable {
    /// The header's `kid`: the 10-character key id.
    public var keyID: String
    /// The `iss` claim: the 10-character team id.
    public var teamID: String
    /// The `iat` claim: when the token was issued (whole seconds).
    public var issuedAt: Date

    /// Creates claims.
    public init(keyID: String, teamID: String, issuedAt: Date) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }
}

/// A provider token taken apart without checking its signature (for `jwt decode` and diagnosis).
public struct DecodedProviderToken: Sendable, Equatable {
    /// The header object, for example `{"alg":"ES256","kid":"ABC123DEFG"}`.
    public var header: [String: JSONValue]
    /// The claims object, for example `{"iss":"DEF123GHIJ","iat":1700000000}`.
    public var claims: [String: JSONValue]
    /// The header's `alg`, if it is a string.
    public var alg: String? { header["alg"]?.stringValue }
    /// The header's `kid`, if it is a string.
    public var kid: String? { header["kid"]?.stringValue }
    /// The `iss` claim, if it is a string.
    public var iss: String? { claims["iss"]?.stringValue }
    /// The `iat` claim, if it is a JSON integer (nil for a string, a decimal or a missing claim).
    public var iat: Int? {
        if case .int(let value) = claims["iat"] { return value }
        return nil
    }
    /// The `iat` claim as a date, if it is an integer UNIX time from 1970 to 9999
    /// (``InputNumbers/unixSeconds``); nil otherwise, so no age is ever computed from an `iat` such as
    /// `-9223372036854775000` (`iat-out-of-range`).
    public var issuedAt: Date? { iat.flatMap { InputNumbers.date(unixSeconds: $0) } }
    /// The signature bytes (raw 64 bytes from kkpush; DER from some other signers).
    public var signature: [UInt8]
    /// `base64url(header).base64url(claims)`: the bytes the signature covers.
    public var signedPart: String

    /// Creates a decoded token from its parts.
    public init(header: [String: JSONValue], claims: [String: JSONValue], signature: [UInt8], signedPart: String) {
        self.header = header
        self.claims = claims
        self.signature = signature
        self.signedPart = signedPart
    }
}

/// The outcome of ``ProviderToken/verify(_:key:now:maxAge:allowedFutureSkew:)``.
public enum ProviderTokenVerification: Sendable, Equatable {
    /// The token is valid; its claims.
    case valid(ProviderTokenClaims)
    /// The token is invalid; why.
    case invalid(ProviderTokenFailure)

    /// True for ``valid(_:)``.
    public var isValid: Bool {
        if case .valid = self { return true }
        return false
    }

    /// The failure, if invalid.
    public var failure: ProviderTokenFailure? {
        if case .invalid(let failure) = self { return failure }
        return nil
    }
}

/// Why a provider token is invalid, and what APNs answers to it.
public struct ProviderTokenFailure: Sendable, Equatable, Error, CustomStringConvertible {
    /// A stable code: `malformed`, `wrong-alg`, `missing-kid`, `missing-claim`, `extra-claim`,
    /// `iat-not-integer`, `iat-out-of-range`, `bad-signature`, `iat-in-future` or `expired` (declared where they are
    /// found, in KKPushAuth): a token check reports it as a ``Problem`` with this code.
    public var code: Problem.Code
    /// What is wrong, naming the part of the token.
    public var message: String
    /// The reason APNs gives: ``APNsReason/expiredProviderToken`` for `expired`, otherwise
    /// ``APNsReason/invalidProviderToken``.
    public var apnsReason: APNsReason

    /// Creates a failure.
    public init(code: Problem.Code, message: String, apnsReason: APNsReason = .invalidProviderToken) {
        self.code = code
        self.message = message
        self.apnsReason = apnsReason
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
