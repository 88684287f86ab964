import Foundation
import KKPushAuth
import KKPushCore
import KKPushHTTP
import KKPushStore
import KantineKoning
import Logging
import NIOHTTP1

/// The app's API: the bearer (device JWT) check, the token update, the diensten list.
extension BackendRouter {
    // MARK: - Bearer

    /// Verifies the request's bearer: `(claims, enrollment)` or the 401/403 response.
    func authenticate(_ request: BackendRequest, tenant: String?) async throws
        -> Result<(DeviceClaims, Enrollment), ResponseError>
    {
        guard let header = request.authorization, !header.trimmingWhitespace().isEmpty else {
            return .failure(
                ResponseError(
                    .error(
                        401, code: "jwt-missing", message: "The request has no Authorization header.",
                        fix: "Send Authorization: Bearer <this enrollment's signedDeviceToken>.")))
        }
        guard header.trimmingWhitespace().lowercased().hasPrefix("bearer ") else {
            return .failure(
                ResponseError(
                    .error(
                        401, code: "jwt-malformed", message: "The Authorization header is not 'Bearer <token>'.",
                        fix: "Send Authorization: Bearer <this enrollment's signedDeviceToken>.")))
        }
        let claims: DeviceClaims
        do {
            claims = try jwt.verify(TokenUpdateVerifier.stripBearerPrefix(header), tenant: tenant)
        } catch let error as KKPushError {
            let status = error.code == .jwtWrongTenant ? 403 : 401
            logger.info("bearer refused", metadata: ["code": "\(error.code)", "status": "\(status)"])
            return .failure(
                ResponseError(.error(status, code: error.code.rawValue, message: error.message, fix: error.fix ?? "")))
        }
        let store = self.store
        guard
            let enrollment = try await metrics.timed(
                "get",
                {
                    try await store.get(deviceID: claims.deviceID, tenant: claims.tenantSlug)
                })
        else {
            return .failure(
                ResponseError(
                    .error(
                        403, code: "enrollment-not-found",
                        message: "The JWT names enrollment \(claims.enrollmentKey), which this backend does not have.",
                        fix: "Enroll the device again.")))
        }
        if enrollment.status == .revoked {
            return .failure(
                ResponseError(
                    .error(
                        403, code: "enrollment-revoked", message: "Enrollment \(enrollment.id) is revoked.",
                        fix: "Enroll the device again (scan the club's QR code).")))
        }
        // A JWT of an earlier generation: issued before the enrollment was revoked or re-enrolled.
        if let superseded = claims.supersededProblem(against: enrollment) {
            logger.info("bearer refused", metadata: ["code": "\(superseded.code)", "status": "401"])
            return .failure(ResponseError(.error(401, superseded)))
        }
        return .success((claims, enrollment))
    }

    struct ResponseError: Error {
        var response: BackendResponse
        init(_ response: BackendResponse) { self.response = response }
    }

    // MARK: - Token update

    func tokenUpdate(_ request: BackendRequest) async throws -> BackendResponse {
        let (claims, enrollment): (DeviceClaims, Enrollment)
        switch try await authenticate(request, tenant: nil) {
        case .failure(let e): return e.response
        case .success(let pair): (claims, enrollment) = pair
        }
        let context = TokenUpdateContext(
            enrollment: enrollment, claims: claims, settings: settings, expectedBundleID: bundleID)
        let report = TokenUpdateRules.check(body: request.body, context: context)
        // The server's own overrides are reported, not held against the app.
        let blocking = report.problems.errors.filter { !TokenUpdateRules.serverSettingCodes.contains($0.code) }
        guard blocking.isEmpty, let update = report.update else {
            let first = blocking.first
            return .error(
                422, code: first?.code.rawValue ?? "token-update-invalid",
                message: first?.message ?? "The token update is invalid.", fix: first?.fix ?? "",
                problems: report.problems)
        }
        let previous = enrollment.apnsToken
        let (store, now) = (self.store, clock.now())
        let stored = try await metrics.timed("update_token") {
            try await store.updateToken(
                deviceID: enrollment.deviceID, tenant: enrollment.tenantSlug, token: update.token,
                buildEnvironment: update.buildEnvironment, apsEnvironment: update.apsEnvironment,
                appVersion: update.appVersion, at: now)
        }
        logger.info(
            "token update",
            metadata: [
                "enrollment": "\(stored.id)", "token": "\(DeviceToken.redacted(update.token))",
                "build_environment": "\(update.buildEnvironment)",
                "aps_environment": "\(update.apsEnvironment ?? "-")",
                "apns_environment": "\(report.resolvedEnvironment?.rawValue ?? "?")",
            ])
        // The Live Activity tokens, to the activity registry (BackendRouter+LiveActivity.swift). An activity the app
        // started itself is recorded under the app's bundle id: the update's bundle_id (checked above against this
        // backend's app), or this backend's app when the update leaves it out (the one app whose updates it takes).
        var live: JSONValue?
        if let tokens = update.liveActivity, !tokens.isEmpty {
            switch await recordLiveActivity(tokens, enrollment: stored, topic: update.bundleID ?? bundleID, at: now) {
            case .success(let value): live = value
            case .failure(let e): return e.response
            }
        }
        var answer: [String: JSONValue] = [
            "status": .string("ok"), "device_id": .string(stored.deviceID),
            "tenant_slug": .string(stored.tenantSlug),
            "apns_environment": .optional(report.resolvedEnvironment?.rawValue),
            "replaced_token": .bool(previous != nil && previous != update.token),
            "problems": .array(report.problems.map(problemValue)),
        ]
        if let live { answer["live_activity"] = live }
        return .json(200, answer)
    }

    // MARK: - Diensten

    func listDiensten(_ request: BackendRequest) async throws -> BackendResponse {
        guard let tenant = request.query["tenant"], !tenant.isEmpty else {
            return .error(
                400, code: "missing-tenant", message: "The query lacks tenant=<slug>.",
                fix: "Call /api/mobile/v1/diensten?tenant=<slug> with that tenant's own JWT.")
        }
        var claims: DeviceClaims
        switch try await authenticate(request, tenant: tenant) {
        case .failure(let e): return e.response
        case .success(let pair):
            claims = pair.0
            // A sync may have removed teams from the enrollment since the JWT was issued: only the teams
            // the enrollment still follows are served.
            claims.teamCodes = claims.teamCodes.filter { pair.1.teamCodes.contains($0) }
        }
        var days: [String: Int] = [:]
        for (name, fallback) in [("past_days", Self.defaultPastDays), ("future_days", Self.defaultFutureDays)] {
            guard let text = request.query[name] else {
                days[name] = fallback
                continue
            }
            guard let n = Int(text), (0...Self.maximumWindowDays).contains(n) else {
                return .error(
                    400, code: "invalid-\(name.replacingOccurrences(of: "_", with: "-"))",
                    message: "\(name) '\(text)' is not a whole number of days between 0 and \(Self.maximumWindowDays).",
                    fix: "Leave it out (default \(fallback)) or give, for example, \(name)=\(fallback).")
            }
            days[name] = n
        }
        let now = clock.now()
        let from = now.addingTimeInterval(-TimeInterval(days["past_days"]!) * 86_400)
        let to = now.addingTimeInterval(TimeInterval(days["future_days"]!) * 86_400)
        let list = await diensten.dienstenJSON(tenant: tenant, teams: Set(claims.teamCodes), from: from, to: to)
        return .json(
            200,
            [
                "tenant": .string(tenant), "team_codes": .strings(claims.teamCodes),
                "window": .object([
                    "from": .string(Enrollment.formatDate(from)), "to": .string(Enrollment.formatDate(to)),
                    "past_days": .int(days["past_days"]!), "future_days": .int(days["future_days"]!),
                ]),
                "diensten": .array(list),
            ])
    }
}
