import Foundation
import KKPushCore
import KKPushStore
import KantineKoning
import Logging

/// Enrollment reconciliation (`POST /api/mobile/v1/enrollments/sync`), the tenant info refresh
/// (`GET /api/mobile/v1/tenant`) and the admin tenant change (`POST /admin/tenants/<slug>`).
extension BackendRouter {
    /// `GET /api/mobile/v1/tenant?tenant=<slug>` with that tenant's JWT: `{"tenant": {...}}`.
    func tenantInfo(_ request: BackendRequest) async throws -> BackendResponse {
        guard let slug = request.query["tenant"], !slug.isEmpty else {
            return .error(
                400, code: "missing-tenant", message: "The query lacks tenant=<slug>.",
                fix: "Call /api/mobile/v1/tenant?tenant=<slug> with that tenant's own JWT.")
        }
        switch try await authenticate(request, tenant: slug) {
        case .failure(let e): return e.response
        case .success: break
        }
        guard let info = tenants.get(slug) else {
            return .error(
                404, code: "tenant-not-found", message: "The backend has no tenant info for '\(slug)'.",
                fix: "Add it with POST /admin/tenants/\(slug).")
        }
        return .json(200, ["tenant": info.jsonValue])
    }

    /// `POST /admin/tenants/<slug>` `{"name"?, "teams"?, "enrollment_open"?, "season_ended"?}`: creates or
    /// changes a tenant; answers it.
    func changeTenant(_ slug: String, _ request: BackendRequest) -> BackendResponse {
        if let problem = EnrollmentIdentifiers.problem(slug, field: "The tenant slug") {
            return .error(400, problem)
        }
        var body = JSONBody(object: [:])
        if !request.body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            let example =
                "{\"enrollment_open\": false, \"season_ended\": true, \"name\": \"VV Wilhelmus\", \"teams\": [\"JO11-3\"]}"
            switch JSONBody.parse(request.body, what: "The tenant change", example: example) {
            case .failure(let e): return e.response
            case .success(let b): body = b
            }
        }
        body.checkKnown(["name", "teams", "enrollment_open", "season_ended"])
        var info = tenants.info(slug)
        if let name = body.string("name", required: false, example: "\"VV Wilhelmus\"") { info.name = name }
        if let teams = body.stringArray("teams", required: false, example: "[\"JO11-3\"]", allowEmpty: true) {
            info.teams = teams
        }
        if let open = body.bool("enrollment_open") { info.enrollmentOpen = open }
        if let ended = body.bool("season_ended") { info.seasonEnded = ended }
        if body.problems.hasErrors {
            let first = body.problems.errors[0]
            return .error(
                400, code: first.code.rawValue, message: first.message, fix: first.fix, problems: body.problems)
        }
        tenants.put(info)
        return .json(200, ["tenant": info.jsonValue, "problems": .array(body.problems.map(problemValue))])
    }

    /// A refused sync body: 400 `{"synced": false, "error": {"code", "field", "message", "fix"}}`.
    static func syncRefused(_ e: SyncBodyError) -> BackendResponse {
        .json(
            400,
            [
                "synced": .bool(false),
                "error": .object([
                    "code": .string(e.code), "field": .string(e.field), "message": .string(e.message),
                    "fix": .string(e.fix),
                ]),
            ])
    }

    /// `POST /api/mobile/v1/enrollments/sync`: revokes (or trims) the caller's phone's enrollments that the
    /// app no longer lists. See README, "Enrollment reconciliation".
    func syncEnrollments(_ request: BackendRequest) async throws -> BackendResponse {
        let caller: Enrollment
        switch try await authenticate(request, tenant: nil) {
        case .failure(let e): return e.response
        case .success(let pair): caller = pair.1
        }
        let body: SyncBody
        switch SyncBodyParser.parse(request.body, callerHardware: caller.hardwareIdentifier) {
        case .failure(let e): return Self.syncRefused(e)
        case .success(let b): body = b
        }
        // The caller's own enrollment must be listed: its JWT proves the app still has it.
        guard
            body.entries.contains(where: {
                $0.tenantSlug == caller.tenantSlug && $0.role == caller.role
                    && !Set($0.teamCodes).isDisjoint(with: caller.teamCodes)
            })
        else {
            return Self.syncRefused(
                SyncBodyError(
                    code: "caller-not-listed", field: "enrollments",
                    message:
                        "enrollments does not list the caller's own enrollment (\(caller.tenantSlug) \(caller.role.rawValue) \(caller.teamCodes.joined(separator: ", "))), whose JWT authorizes this sync; the app still has it, so the list is incomplete. Nothing changed.",
                    fix:
                        "List every enrollment the app has, or sync with the JWT of an enrollment the list holds (after the tenant info refresh)."
                ))
        }
        // The superseded JWTs: enrollments of this app on an earlier identifierForVendor.
        var scope = [caller.hardwareIdentifier.lowercased()]
        var supersededNotes: [JSONValue] = []
        for (i, token) in body.supersededTokens.enumerated() {
            let field = "superseded_device_tokens[\(i)]"
            switch try await authenticate(
                BackendRequest(method: "POST", target: "/", authorization: "Bearer \(token)"), tenant: nil)
            {
            case .failure(let e):
                let error = (try? JSONValue.parse(Array(e.response.body)))?["error"]
                let code = error?["code"]?.stringValue ?? "jwt-invalid"
                if ["enrollment-revoked", "jwt-superseded"].contains(code) {
                    // Already revoked (an earlier sync, or the admin): nothing left to do for it.
                    supersededNotes.append(
                        .object(["field": .string(field), "note": .string("already revoked or superseded (\(code))")]))
                    continue
                }
                return Self.syncRefused(
                    SyncBodyError(
                        code: "superseded-token-invalid", field: field,
                        message:
                            "\(field) is refused (\(code)): \(error?["message"]?.stringValue ?? ""). Nothing changed.",
                        fix:
                            "Send only the signedDeviceTokens this app received for its earlier identifierForVendor, or leave the field out."
                    ))
            case .success(let pair):
                let hw = pair.1.hardwareIdentifier.lowercased()
                if !scope.contains(hw) { scope.append(hw) }
                supersededNotes.append(
                    .object([
                        "field": .string(field), "enrollment": .string(pair.1.id.description),
                        "hardware_identifier": .string(pair.1.hardwareIdentifier),
                    ]))
            }
        }
        let now = clock.now()
        // The store keeps the last sync (a restarted backend remembers it); the in-process throttle makes the
        // claim atomic between two requests of one phone at once.
        let stored = try await store.lastSync(hardwareIdentifier: caller.hardwareIdentifier)
        let inProcess = syncThrottle.lastSync(caller.hardwareIdentifier)
        let previous = stored ?? inProcess
        var throttledUntil = stored.map { $0.addingTimeInterval(SyncThrottle.interval) }.flatMap { now < $0 ? $0 : nil }
        if throttledUntil == nil { throttledUntil = syncThrottle.claim(caller.hardwareIdentifier, now: now) }
        if let next = throttledUntil {
            let wait = max(1, Int(next.timeIntervalSince(now).rounded(.up)))
            return BackendResponse(
                status: 429,
                body: Data(
                    JSONValue.object([
                        "synced": .bool(false), "throttled": .bool(true), "retry_after_seconds": .int(wait),
                        "next_sync_after": .string(Enrollment.formatDate(next)),
                        "error": .object([
                            "code": .string("sync-throttled"), "field": .string(""),
                            "message": .string(
                                "This phone (\(caller.hardwareIdentifier)) synced its enrollments at \(Enrollment.formatDate(previous ?? now)); syncs are limited to one an hour per hardware identifier. Nothing changed."
                            ),
                            "fix": .string("Sync again after \(Enrollment.formatDate(next)) (Retry-After: \(wait) s)."),
                        ]),
                    ]).encoded()),
                retryAfter: wait)
        }
        do {
            try await store.recordSync(hardwareIdentifier: caller.hardwareIdentifier, at: now)
            var active: [Enrollment] = []
            for hw in scope {
                active += try await store.find(hardwareIdentifier: hw).filter { $0.status == .active }
            }
            let tenants = self.tenants
            let plan = ReconcilePlan.make(active: active, entries: body.entries) { tenants.info($0) }
            var revoked: [JSONValue] = []
            var trimmed: [JSONValue] = []
            var kept: [JSONValue] = []
            var protected: [JSONValue] = []
            var teamsRemoved = 0
            func describe(_ e: Enrollment) -> [String: JSONValue] {
                [
                    "tenant_slug": .string(e.tenantSlug), "device_id": .string(e.deviceID),
                    "role": .string(e.role.rawValue),
                    "team_codes": .strings(e.teamCodes), "hardware_identifier": .string(e.hardwareIdentifier),
                ]
            }
            for (e, action) in plan.items {
                switch action {
                case .keep:
                    kept.append(.object(describe(e)))
                case .protected(let reason):
                    var o = describe(e)
                    o["reason"] = .string(reason)
                    protected.append(.object(o))
                case .revoke:
                    try await store.revoke(deviceID: e.deviceID, tenant: e.tenantSlug, at: now)
                    revoked.append(.object(describe(e)))
                case .removeTeams(let removed):
                    // Read again just before writing, so a token update in between is kept.
                    guard var fresh = try await store.get(deviceID: e.deviceID, tenant: e.tenantSlug),
                        fresh.status == .active
                    else { continue }
                    fresh.teamCodes = fresh.teamCodes.filter { !removed.contains($0) }
                    if fresh.teamCodes.isEmpty {
                        try await store.revoke(deviceID: e.deviceID, tenant: e.tenantSlug, at: now)
                        revoked.append(.object(describe(e)))
                        continue
                    }
                    fresh.updatedAt = Enrollment.wholeSeconds(now)
                    try await store.upsert(fresh)
                    teamsRemoved += removed.count
                    var o = describe(fresh)
                    o["removed_team_codes"] = .strings(removed)
                    trimmed.append(.object(o))
                }
            }
            logger.info(
                "enrollments synced",
                metadata: [
                    "hardware_identifier": "\(caller.hardwareIdentifier)", "revoked": "\(revoked.count)",
                    "teams_removed": "\(teamsRemoved)", "protected": "\(protected.count)",
                ])
            return .json(
                200,
                [
                    "synced": .bool(true),
                    "cleanup_summary": .object([
                        "enrollments_revoked": .int(revoked.count), "teams_removed": .int(teamsRemoved),
                    ]),
                    "hardware_identifier": .string(caller.hardwareIdentifier),
                    "scope": .strings(scope),
                    "revoked": .array(revoked), "trimmed": .array(trimmed), "kept": .array(kept),
                    "protected": .array(protected),
                    "unmatched": .array(
                        plan.unmatched.map {
                            .object([
                                "tenant_slug": .string($0.tenantSlug), "role": .string($0.role.rawValue),
                                "team_codes": .strings($0.teamCodes),
                                "note": .string(
                                    "no active enrollment of this tenant and role on this phone; a sync never enrolls"),
                            ])
                        }),
                    "superseded_device_tokens": .array(supersededNotes),
                    "next_sync_after": .string(Enrollment.formatDate(now.addingTimeInterval(SyncThrottle.interval))),
                    "problems": .array(body.warnings.map(problemValue)),
                ])
        } catch {
            // Nothing (or not everything) was written: the phone may try again at once.
            syncThrottle.release(caller.hardwareIdentifier, to: inProcess)
            try? await store.recordSync(hardwareIdentifier: caller.hardwareIdentifier, at: stored)
            throw error
        }
    }
}
