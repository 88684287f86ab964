public import Foundation
import KKPushAuth
public import KKPushCore
public import KantineKoning
import Synchronization

/// Signs and verifies enrollment device JWTs: HS256 (HMAC-SHA256 through OpenSSL) over ``DeviceClaims``.
///
/// Header `{"alg":"HS256","typ":"JWT"}`; claims as ``DeviceClaims`` documents; JSON built by `JSONEncoder`
/// (never string interpolation), `iat`/`exp` as integers; the signature compared in constant time.
///
/// Verification errors (``KKPushError/code``): `jwt-malformed` (not three base64url parts of JSON, or
/// claims missing), `jwt-unsupported-alg` (not HS256), `jwt-bad-signature`, `jwt-expired`,
/// `jwt-not-yet-valid` (`iat` in the future beyond the leeway), `jwt-wrong-tenant`.
public struct DeviceJWT: Sendable {
    /// The default lifetime of an issued token: 365 days.
    public static let defaultLifetime: TimeInterval = 365 * 24 * 60 * 60
    /// The shortest secret accepted, in bytes.
    public static let minimumSecretLength = 16

    private let secret: [UInt8]
    /// The clock that decides `iat` and expiry.
    public let clock: any WallClock
    /// How long issued tokens are valid.
    public let lifetime: TimeInterval
    /// Clock skew tolerated on `exp` and `iat`, in seconds.
    public let leeway: TimeInterval
    /// Tokens whose signature this verifier has checked, by their exact text (see ``verify(_:tenant:)``).
    private let verified = VerifiedTokens()

    /// Creates a signer/verifier. Throws `jwt-secret-empty`, `jwt-secret-short` (under 16 bytes), or
    /// `jwt-lifetime` (`lifetime` not a finite number of seconds from 1 to ``DeviceClaims/maximumLifetime``,
    /// or `leeway` not from 0 to a day).
    public init(
        secret: String, clock: any WallClock = SystemWallClock(), lifetime: TimeInterval = DeviceJWT.defaultLifetime,
        leeway: TimeInterval = 60
    ) throws {
        let bytes = Array(secret.utf8)
        guard !bytes.isEmpty else { throw KKPushErrorFactory.emptySecret() }
        guard bytes.count >= Self.minimumSecretLength else {
            throw KKPushError(
                code: .jwtSecretShort,
                message:
                    "The device-JWT secret is \(bytes.count) bytes; HS256 needs at least \(Self.minimumSecretLength) (32 recommended).",
                fix: "Use a random secret of 32 bytes or more, for example: openssl rand -hex 32")
        }
        guard InputNumbers.isSeconds(lifetime, in: 1...DeviceClaims.maximumLifetime) else {
            throw KKPushError(
                code: .jwtLifetime,
                message: "The device-JWT lifetime \(InputNumbers.text(lifetime)) s is out of range.",
                fix:
                    "Give a lifetime from 1 s to \(Int(DeviceClaims.maximumLifetime / 86_400)) days (default 365 days)."
            )
        }
        guard InputNumbers.isSeconds(leeway, in: 0...86_400) else {
            throw KKPushError(
                code: .jwtLifetime,
                message: "The device-JWT clock leeway \(InputNumbers.text(leeway)) s is out of range.",
                fix: "Give a leeway from 0 to 86400 s (default 60).")
        }
        self.secret = bytes
        self.clock = clock
        self.lifetime = lifetime
        self.leeway = leeway
    }

    /// Signs `claims` as a compact JWT.
    public func sign(_ claims: DeviceClaims) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = try encoder.encode(Header(alg: "HS256", typ: "JWT"))
        let body = try encoder.encode(claims)
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(body)
        let mac = try HMACSHA256.mac(key: secret, data: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(mac)
    }

    /// Issues a token for `enrollment`, valid from now for ``lifetime``.
    public func issue(for enrollment: Enrollment) throws -> String {
        try sign(DeviceClaims(enrollment: enrollment, issuedAt: clock.now(), lifetime: lifetime))
    }

    /// Verifies `token` (signature, expiry, and the tenant if given) and returns its claims.
    ///
    /// A token whose exact text already passed the signature check is not decoded and checked again
    /// (every app sends the same JWT on every refresh): its claims come from a bounded cache. Expiry,
    /// `iat` and the tenant are checked on every call.
    public func verify(_ token: String, tenant: String? = nil) throws -> DeviceClaims {
        let claims: DeviceClaims
        if let known = verified.claims(for: token) {
            claims = known
        } else {
            let (decoded, signingInput, signature) = try Self.split(token)
            let expected = try HMACSHA256.mac(key: secret, data: Array(signingInput.utf8))
            guard HMACSHA256.constantTimeEqual(expected, signature) else {
                throw KKPushError(
                    code: .jwtBadSignature,
                    message:
                        "The device JWT's signature does not match this backend's secret (token \(Self.redacted(token))).",
                    fix:
                        "The token was signed by another backend or secret, or altered: re-enroll the device, or check the signing secret (secret)."
                )
            }
            verified.remember(token, decoded)
            claims = decoded
        }
        let now = clock.now().timeIntervalSince1970
        if TimeInterval(claims.expiresAt) + leeway <= now {
            let expired = Date(timeIntervalSince1970: TimeInterval(claims.expiresAt))
            throw KKPushError(
                code: .jwtExpired,
                message: "The device JWT expired at \(Enrollment.formatDate(expired)).",
                fix: "Re-enroll the device (the backend answers 401 to expired tokens).")
        }
        if TimeInterval(claims.issuedAt) - leeway > now {
            throw KKPushError(
                code: .jwtNotYetValid,
                message: "The device JWT's iat \(claims.issuedAt) is in the future.",
                fix: "Check the backend's clock.")
        }
        if let tenant, tenant != claims.tenantSlug {
            throw KKPushError(
                code: .jwtWrongTenant,
                message: "The device JWT is for tenant '\(claims.tenantSlug)', not '\(tenant)'.",
                fix:
                    "Send this tenant's own enrollment JWT (tenant.signedDeviceToken), never one primary token for every tenant."
            )
        }
        return claims
    }

    /// Decodes a token's claims without checking its signature or expiry (for reports without a secret).
    public static func decodeUnverified(_ token: String) throws -> DeviceClaims {
        try split(token).claims
    }

    /// The first 12 characters of a token and `…`, for logs.
    public static func redacted(_ token: String) -> String {
        token.count <= 12 ? token : String(token.prefix(12)) + "…"
    }

    struct Header: Codable {
        var alg: String
        var typ: String?
    }

    private static func split(_ token: String) throws -> (
        claims: DeviceClaims, signingInput: String, signature: [UInt8]
    ) {
        let trimmed = token.trimmingWhitespace()
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false)
        func malformed(_ why: String) -> KKPushError {
            KKPushError(
                code: .jwtMalformed, message: "The device JWT is malformed: \(why).",
                fix:
                    "Send the signedDeviceToken exactly as the backend issued it: three base64url parts joined by dots, after 'Bearer '."
            )
        }
        guard parts.count == 3 else { throw malformed("it has \(parts.count) part(s), not 3") }
        guard let headerData = Base64URL.decode(parts[0]).map({ Data($0) }),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else { throw malformed("the header is not base64url JSON") }
        guard header.alg == "HS256" else {
            throw KKPushError(
                code: .jwtUnsupportedAlg,
                message: "The device JWT's alg is '\(header.alg)'; this backend signs and accepts HS256 only.",
                fix: "Use the token the backend issued; never accept 'none' or another algorithm.")
        }
        guard let claimsData = Base64URL.decode(parts[1]).map({ Data($0) }) else {
            throw malformed("the claims are not base64url")
        }
        let claims: DeviceClaims
        do {
            claims = try JSONDecoder().decode(DeviceClaims.self, from: claimsData)
        } catch {
            throw malformed(
                "the claims lack device_id, tenant_slug, team_codes, role, iat or exp, or have the wrong types")
        }
        // Range-checked before any date is made of them (an exp of -9223372036854775808 used to reach
        // date formatting).
        let range = InputNumbers.unixSeconds
        guard range.contains(Int64(claims.issuedAt)), range.contains(Int64(claims.expiresAt)) else {
            throw malformed("iat \(claims.issuedAt) or exp \(claims.expiresAt) is not a UNIX time from 1970 to 9999")
        }
        guard let signature = Base64URL.decode(parts[2]) else { throw malformed("the signature is not base64url") }
        return (claims, String(parts[0]) + "." + String(parts[1]), Array(signature))
    }
}

extension KKPushError {
    /// This error as a problem of a check (severity error).
    var backendProblem: Problem {
        Problem(.error, code: Problem.Code(code), message: message, fix: fix ?? "")
    }
}

/// Signature-checked tokens and their claims, at most ``limit`` (forgotten all at once when full).
final class VerifiedTokens: Sendable {
    static let limit = 10_000
    private let entries = Mutex<[String: DeviceClaims]>([:])

    func claims(for token: String) -> DeviceClaims? { entries.withLock { $0[token] } }

    func remember(_ token: String, _ claims: DeviceClaims) {
        entries.withLock {
            if $0.count >= Self.limit { $0.removeAll(keepingCapacity: true) }
            $0[token] = claims
        }
    }
}

enum KKPushErrorFactory {
    static func emptySecret() -> KKPushError {
        KKPushError(
            code: .jwtSecretEmpty, message: "The device-JWT secret is empty.",
            fix:
                "Give the backend's signing secret (secret) or KKPUSH_BACKEND_SECRET: 16 bytes or more, 32 recommended."
        )
    }
}
