public import Foundation
public import KKPushCore
public import KantineKoning

/// Checks a token update together with its bearer token: the one place `kkpush token verify` and the
/// simulated backend both go through.
///
/// Bearer problems: `jwt-malformed`, `jwt-unsupported-alg`, `jwt-bad-signature`, `jwt-expired`,
/// `jwt-not-yet-valid`, `jwt-wrong-tenant` (as ``DeviceJWT`` throws them), `jwt-unverified` (warning: no
/// secret, the signature was not checked), then ``DeviceClaims/problems(against:)`` against the enrollment
/// (with `jwt-superseded` for a JWT of an earlier generation of it), then ``TokenUpdateRules``.
public struct TokenUpdateVerifier: Sendable {
    /// The signer/verifier with the backend's secret; nil to decode bearers without checking signatures.
    public var jwt: DeviceJWT?
    /// The clock for expiry when there is no secret.
    public var clock: any WallClock

    /// Creates a verifier.
    public init(jwt: DeviceJWT?, clock: any WallClock = SystemWallClock()) {
        self.jwt = jwt
        self.clock = jwt?.clock ?? clock
    }

    /// The bearer's claims (nil if it cannot be decoded) and its problems.
    public func bearerProblems(_ bearer: String, expectedTenant: String?) -> (
        claims: DeviceClaims?, problems: [Problem]
    ) {
        let token = Self.stripBearerPrefix(bearer)
        var problems: [Problem] = []
        var claims: DeviceClaims?
        if let jwt {
            do {
                claims = try jwt.verify(token, tenant: expectedTenant)
            } catch let error as KKPushError {
                problems.append(error.backendProblem)
                claims = try? DeviceJWT.decodeUnverified(token)
            } catch {
                problems.append(
                    Problem(
                        .error, code: .jwtMalformed, message: ErrorWords.describe(error),
                        fix: "Send the JWT the backend issued.")
                )
            }
        } else {
            do {
                let decoded = try DeviceJWT.decodeUnverified(token)
                claims = decoded
                problems.append(
                    Problem(
                        .warning, code: .jwtUnverified,
                        message: "The bearer's signature was not checked (no secret given).",
                        fix:
                            "Give the backend's signing secret (secret) or KKPUSH_BACKEND_SECRET to check the signature."
                    ))
                if TimeInterval(decoded.expiresAt) <= clock.now().timeIntervalSince1970 {
                    let expired = Date(timeIntervalSince1970: TimeInterval(decoded.expiresAt))
                    problems.append(
                        Problem(
                            .error, code: .jwtExpired,
                            message: "The device JWT expired at \(Enrollment.formatDate(expired)).",
                            fix: "Re-enroll the device (the backend answers 401 to expired tokens)."))
                }
                if let expectedTenant, expectedTenant != decoded.tenantSlug {
                    problems.append(
                        Problem(
                            .error, code: .jwtWrongTenant,
                            message: "The device JWT is for tenant '\(decoded.tenantSlug)', not '\(expectedTenant)'.",
                            fix:
                                "Send this tenant's own enrollment JWT (tenant.signedDeviceToken), never one primary token for every tenant."
                        ))
                }
            } catch let error as KKPushError {
                problems.append(error.backendProblem)
            } catch {
                problems.append(
                    Problem(
                        .error, code: .jwtMalformed, message: ErrorWords.describe(error),
                        fix: "Send the JWT the backend issued.")
                )
            }
        }
        return (claims, problems)
    }

    /// Checks `body` (and `bearer`, if given) and returns the report: bearer problems first, then the body's.
    ///
    /// - Parameters:
    ///   - expectedTenant: the tenant the update is for (a bearer of another tenant is `jwt-wrong-tenant`);
    ///     defaults to the enrollment's tenant.
    ///   - enrollment: the enrollment, if known; otherwise `lookup` is asked with the bearer's claims.
    public func verify(
        body: Data, bearer: String?, expectedTenant: String? = nil, enrollment: Enrollment? = nil,
        knownEnvironment: APNsEnvironment? = nil, settings: ServerAPNsSettings = ServerAPNsSettings(),
        expectedBundleID: String? = TokenUpdate.defaultBundleID, isTestUser: Bool = false,
        lookup: (@Sendable (EnrollmentKey) async throws -> Enrollment?)? = nil
    ) async -> TokenUpdateReport {
        var problems: [Problem] = []
        var claims: DeviceClaims?
        var enrollment = enrollment
        if let bearer {
            let result = bearerProblems(bearer, expectedTenant: expectedTenant ?? enrollment?.tenantSlug)
            claims = result.claims
            problems += result.problems
            if enrollment == nil, let claims, let lookup {
                do {
                    enrollment = try await lookup(claims.enrollmentKey)
                    if enrollment == nil {
                        problems.append(
                            Problem(
                                .error, code: .enrollmentNotFound,
                                message:
                                    "The bearer names enrollment \(claims.enrollmentKey), which the backend does not have.",
                                fix: "Enroll the device again; its enrollment was deleted or never stored."))
                    }
                } catch {
                    problems.append(
                        Problem(
                            .error, code: .enrollmentLookupFailed,
                            message:
                                "Looking up enrollment \(claims.enrollmentKey) failed: \(ErrorWords.describe(error))",
                            fix: "Check the enrollment database."))
                }
            }
        }
        let context = TokenUpdateContext(
            knownEnvironment: knownEnvironment, enrollment: enrollment, claims: claims, settings: settings,
            expectedBundleID: expectedBundleID, isTestUser: isTestUser)
        var report = TokenUpdateRules.check(body: body, context: context)
        // The verifier already reported a wrong tenant from the signature check; keep one.
        let seen = Set(problems.map(\.code))
        report.problems =
            problems + report.problems.filter { !(seen.contains($0.code) && $0.code == .jwtWrongTenant) }
        return report
    }

    /// `Bearer xyz` → `xyz`; anything else unchanged.
    public static func stripBearerPrefix(_ value: String) -> String {
        let t = value.trimmingWhitespace()
        if t.lowercased().hasPrefix("bearer ") { return String(t.dropFirst(7)).trimmingWhitespace() }
        return t
    }
}
