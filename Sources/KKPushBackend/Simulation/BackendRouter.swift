import Foundation
import KKPushAuth
import KKPushCore
import KKPushHTTP
import KantineKoning
import Logging
import NIOHTTP1

/// One HTTP request as the simulated backend sees it.
public struct BackendRequest: Sendable {
    /// `GET`, `POST`, ...
    public var method: String
    /// The path without the query.
    public var path: String
    /// The query parameters (the last value wins).
    public var query: [String: String]
    /// The `Authorization` header, if any.
    public var authorization: String?
    /// The `Origin` header, if any (browsers send it; the admin API refuses such requests).
    public var origin: String?
    /// The body.
    public var body: Data

    /// Creates a request; `target` is the path with an optional `?query`.
    public init(
        method: String, target: String, authorization: String? = nil, origin: String? = nil, body: Data = Data()
    ) {
        self.method = method.uppercased()
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = parts.first.map(String.init) ?? "/"
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
                let raw = kv.count > 1 ? String(kv[1]).replacingOccurrences(of: "+", with: " ") : ""
                query[key] = raw.removingPercentEncoding ?? raw
            }
        }
        self.query = query
        self.authorization = authorization
        self.origin = origin
        self.body = body
    }

    /// The request as the HTTP server read it.
    init(_ request: HTTPRequest) {
        method = request.method.rawValue
        path = request.path
        query = request.query
        authorization = request.headers.first(name: "authorization")
        origin = request.headers.first(name: "origin")
        body = Data(request.body)
    }

    /// The request as the router reads it.
    var http: HTTPRequest {
        var headers = HTTPHeaders()
        if let authorization { headers.add(name: "authorization", value: authorization) }
        if let origin { headers.add(name: "origin", value: origin) }
        var request = HTTPRequest(method: HTTPMethod(rawValue: method), uri: path, headers: headers, body: Array(body))
        request.query = query
        return request
    }
}

/// One HTTP response of the simulated backend: a status and a JSON body.
public struct BackendResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The JSON body.
    public var body: Data
    /// The `Retry-After` header in seconds (the sync throttle's 429), if any.
    public var retryAfter: Int?

    /// Creates a response.
    public init(status: Int, body: Data, retryAfter: Int? = nil) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
    }

    /// A response with a JSON value (compact, sorted keys: ``JSONValue/encoded()``).
    static func json(_ status: Int, _ value: JSONValue) -> BackendResponse {
        BackendResponse(status: status, body: Data(value.encoded()))
    }

    /// A response with a JSON object.
    static func json(_ status: Int, _ object: [String: JSONValue]) -> BackendResponse {
        json(status, .object(object))
    }

    /// `{"error": {"code", "message", "fix"}}` (plus `problems` if given).
    static func error(_ status: Int, code: String, message: String, fix: String, problems: [Problem] = [])
        -> BackendResponse
    {
        var object: [String: JSONValue] = [
            "error": .object(["code": .string(code), "message": .string(message), "fix": .string(fix)])
        ]
        if !problems.isEmpty { object["problems"] = .array(problems.map(problemValue)) }
        return json(status, object)
    }

    static func error(_ status: Int, _ problem: Problem) -> BackendResponse {
        error(status, code: problem.code, message: problem.message, fix: problem.fix)
    }

    /// The answer as the HTTP server writes it.
    var http: HTTPResponse {
        var headers = HTTPHeaders()
        if let retryAfter { headers.add(name: "Retry-After", value: String(retryAfter)) }
        return HTTPResponse(status: HTTPResponseStatus(statusCode: status), headers: headers, body: Array(body))
    }
}

func problemValue(_ p: Problem) -> JSONValue {
    .object([
        "severity": .string(p.severity.rawValue), "code": .string(p.code), "message": .string(p.message),
        "fix": .string(p.fix),
    ])
}

extension JSONValue {
    /// A string, or `null` for nil.
    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    /// An array of strings.
    static func strings(_ list: [String]) -> JSONValue { .array(list.map(JSONValue.string)) }
}

/// The routes of the simulated Kantine Koning backend (no I/O of its own beyond the store and the sender).
///
/// App API (Bearer: the enrollment's device JWT):
/// - `POST /api/mobile/v1/device/apns-token`: the token update (``TokenUpdate``).
/// - `GET /api/mobile/v1/diensten?tenant=<slug>[&past_days=365][&future_days=60]`: the enrollment's
///   teams' diensten starting in the window; 401 for a missing, malformed, badly signed or expired JWT or
///   one of an earlier generation of its enrollment (`jwt-superseded`: issued before a revoke or
///   re-enrollment), 403 for a JWT of another tenant or a revoked enrollment.
/// - `GET /api/mobile/v1/tenant?tenant=<slug>`: the tenant info refresh (`{"tenant": {"slug", "name",
///   "teams", "enrollment_open", "season_ended"}}`).
/// - `POST /api/mobile/v1/enrollments/sync` `{"enrollments": [{"tenant_slug", "role", "team_codes",
///   "hardware_identifier"}], "superseded_device_tokens"?}`: enrollment reconciliation within the caller's
///   hardware identifier → `{"synced": true, "cleanup_summary": {"enrollments_revoked", "teams_removed"}, ...}`;
///   400 naming the field for a bad body, 429 (`Retry-After`) within an hour of the phone's last sync.
///
/// Admin API (loopback only; refused with 403 if the request has an `Origin` header, as browsers send;
/// if an admin token is configured, `Authorization: Bearer <admin token>`):
/// - `POST /admin/enrollments` `{"tenant_slug", "team_codes", "role", "hardware_identifier",
///   "device_id"?, "is_test_user"?, "team_manager_email"?}` → `201 {"enrollment", "signed_device_token"}`;
///   an existing `device_id` is re-enrolled (its generation goes up, its older JWTs are refused).
/// - `GET /admin/enrollments` → the export array; `POST /admin/enrollments/import` (an array, all or
///   nothing) → `{"imported"}`.
/// - `POST /admin/enrollments/<tenant>/<device_id>/revoke` (the generation goes up too).
/// - `POST /admin/diensten/<id>` `{"volunteers"?, "start_time"?, "end_time"?, "location"?, "title"?}`: changes
///   the dienst and sends the dienst-update push to its team's devices; `{"dienst", "fan_out"}`.
/// - `GET /admin/tenants`; `POST /admin/tenants/<slug>` `{"name"?, "teams"?, "enrollment_open"?, "season_ended"?}`.
/// - `GET /healthz`.
public struct BackendRouter: Sendable {
    /// The enrollments.
    public var store: any EnrollmentStore
    /// The diensten.
    public var diensten: DienstStore
    /// The JWT signer/verifier.
    public var jwt: DeviceJWT
    /// Who sends pushes (nil: the admin dienst change answers without pushing, and says so).
    public var sender: (any PushSender)?
    /// The server's `APNS_FORCE_ENV` / `APNS_ENV`.
    public var settings: ServerAPNsSettings
    /// The app's bundle id (the push topic, and the expected `bundle_id`).
    public var bundleID: String
    /// The admin token, if the admin API requires one.
    public var adminToken: String?
    /// The clock.
    public var clock: any WallClock
    /// Where to log.
    public var logger: Logger
    /// The tenants (name, teams, enrollment_open, season_ended).
    public var tenants: TenantDirectory
    /// The once-an-hour limit of enrollment syncs per hardware identifier.
    public var syncThrottle: SyncThrottle

    /// The enrollment reconciliation route.
    public static let syncPath = "/api/mobile/v1/enrollments/sync"
    /// The backend's Prometheus metrics (`GET /metrics`).
    public var metrics: BackendMetrics

    /// The default window: 365 days back.
    public static let defaultPastDays = 365
    /// The default window: 60 days ahead.
    public static let defaultFutureDays = 60
    /// The largest window accepted either way.
    public static let maximumWindowDays = 3650

    /// Creates a router.
    public init(
        store: any EnrollmentStore, diensten: DienstStore, jwt: DeviceJWT, sender: (any PushSender)?,
        settings: ServerAPNsSettings = ServerAPNsSettings(), bundleID: String = TokenUpdate.defaultBundleID,
        adminToken: String? = nil, clock: any WallClock,
        logger: Logger = Logger(label: "kkpush.backend", factory: { _ in SwiftLogNoOpLogHandler() }),
        tenants: TenantDirectory = TenantDirectory(), syncThrottle: SyncThrottle = SyncThrottle(),
        metrics: BackendMetrics = BackendMetrics()
    ) {
        self.metrics = metrics
        self.store = store
        self.diensten = diensten
        self.jwt = jwt
        self.sender = sender
        self.settings = settings
        self.bundleID = bundleID
        self.adminToken = adminToken
        self.clock = clock
        self.logger = logger
        self.tenants = tenants
        self.syncThrottle = syncThrottle
    }

    /// Handles one request (the server's answers without a socket: tests and the fuzz target).
    public func handle(_ request: BackendRequest) async -> BackendResponse {
        let answer = await respond(to: request.http)
        return BackendResponse(
            status: Int(answer.status.code), body: Data(answer.body),
            retryAfter: answer.headers.first(name: "retry-after").flatMap { Int($0) })
    }

    /// The answer to one request as the HTTP server read it.
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        await routes().respond(to: request)
    }

    /// The routes: app API, then the admin API behind its guard (checked before 404 and 405 too).
    func routes() -> HTTPRouter {
        var router = HTTPRouter(
            notFound: { request in
                BackendResponse.error(
                    404, code: "not-found", message: "No route for \(request.method.rawValue) \(request.path).",
                    fix: "See `kkpush backend serve --help` for the routes."
                ).http
            },
            methodNotAllowed: { request, allowed in
                let methods = allowed.map(\.rawValue).joined(separator: " or ")
                return BackendResponse.error(
                    405, code: "method-not-allowed",
                    message: "\(request.path) does not take \(request.method.rawValue); it takes \(methods).",
                    fix: "Send \(methods) \(request.path)."
                ).http
            },
            errorResponse: { _, error in
                switch error {
                case let error as ResponseError:
                    return error.response.http
                case let error as KKPushError:
                    // The database down (PostgreSQL restarting): 503, and the store reconnects by itself.
                    let status =
                        error.code == "enrollment-not-found"
                        ? 404
                        : ["enrollments-json-invalid", "enrollment-invalid"].contains(error.code)
                            ? 400 : error.code == "store-unreachable" ? 503 : 500
                    return BackendResponse.error(
                        status, code: error.code.rawValue, message: error.message, fix: error.fix ?? ""
                    ).http
                default:
                    return BackendResponse.error(
                        500, code: "internal", message: "\(error)", fix: "See the backend's log."
                    ).http
                }
            })
        let me = self
        func route(
            _ method: HTTPMethod, _ pattern: String,
            _ handler: @escaping @Sendable (BackendRequest, HTTPRequest) async throws -> BackendResponse
        ) {
            router.on(method, pattern) { request in try await handler(BackendRequest(request), request).http }
        }
        route(.GET, "/healthz") { _, _ in .json(200, ["status": .string("ok")]) }
        route(.POST, "/api/mobile/v1/device/apns-token") { r, _ in
            let answer: BackendResponse
            do {
                answer = try await me.tokenUpdate(r)
            } catch {
                me.metrics.tokenUpdate(status: 500)
                throw error
            }
            me.metrics.tokenUpdate(status: answer.status)
            return answer
        }
        route(.GET, "/api/mobile/v1/diensten") { r, _ in try await me.listDiensten(r) }
        route(.GET, "/api/mobile/v1/tenant") { r, _ in try await me.tenantInfo(r) }
        route(.POST, Self.syncPath) { r, _ in try await me.syncEnrollments(r) }
        router.guarding("/admin") { request in me.checkAdmin(BackendRequest(request))?.http }
        // The metrics are behind the admin API's guard too (no Origin; the admin token if one is set).
        router.guarding("/metrics") { request in me.checkAdmin(BackendRequest(request))?.http }
        router.get("/metrics") { _ in HTTPResponse.metrics(me.metrics.exposition()) }
        route(.GET, "/admin/enrollments") { _, _ in
            BackendResponse(status: 200, body: try await me.metrics.timed("export") { try await me.store.exportJSON() })
        }
        route(.POST, "/admin/enrollments") { r, _ in try await me.enroll(r) }
        route(.POST, "/admin/enrollments/import") { r, _ in
            let incoming = try EnrollmentJSON.decode(r.body, source: "The import body")
            let replaced = try await me.metrics.timed("existing") { try await me.store.existing(among: incoming) }
            try await me.metrics.timed("upsert") { try await me.store.upsert(contentsOf: incoming) }
            return .json(
                200, ["imported": .int(incoming.count), "replaced": .strings(replaced.map { $0.id.description })])
        }
        route(.POST, "/admin/enrollments/:tenant/:device/revoke") { _, h in
            let (tenant, device) = (h[parameter: "tenant"], h[parameter: "device"])
            try await me.metrics.timed("revoke") {
                try await me.store.revoke(deviceID: device, tenant: tenant, at: me.clock.now())
            }
            return .json(200, ["revoked": .string("\(tenant)/\(device)")])
        }
        route(.GET, "/admin/diensten") { _, _ in
            .json(200, ["diensten": .array(await me.diensten.all().map(\.jsonValue))])
        }
        route(.POST, "/admin/diensten/:id") { r, h in try await me.changeDienst(id: h[parameter: "id"], r) }
        route(.GET, "/admin/tenants") { _, _ in .json(200, ["tenants": .array(me.tenants.all().map(\.jsonValue))]) }
        route(.POST, "/admin/tenants/:tenant") { r, h in me.changeTenant(h[parameter: "tenant"], r) }
        return router
    }

    /// The admin API's guard: 403 for a request from a web page (an `Origin` header), 401 without the
    /// admin token (if one is configured); nil lets the request through.
    private func checkAdmin(_ request: BackendRequest) -> BackendResponse? {
        if request.origin != nil {
            return .error(
                403, code: "admin-origin",
                message:
                    "Admin requests with an Origin header (from a web page) are refused: a page in a browser could otherwise change the backend through its loopback port.",
                fix: "Call the admin API from curl, a script or kkpush, without an Origin header.")
        }
        guard let adminToken else { return nil }
        let given = request.authorization.map(TokenUpdateVerifier.stripBearerPrefix)
        guard let given, HMACSHA256.constantTimeEqual(Array(given.utf8), Array(adminToken.utf8)) else {
            return .error(
                401, code: "admin-unauthorized", message: "The admin API needs the admin token.",
                fix: "Send Authorization: Bearer <admin token> (the --admin-token the backend was started with).")
        }
        return nil
    }

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
            let status = error.code == "jwt-wrong-tenant" ? 403 : 401
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

    private func tokenUpdate(_ request: BackendRequest) async throws -> BackendResponse {
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
                422, code: first?.code ?? "token-update-invalid",
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
        return .json(
            200,
            [
                "status": .string("ok"), "device_id": .string(stored.deviceID),
                "tenant_slug": .string(stored.tenantSlug),
                "apns_environment": .optional(report.resolvedEnvironment?.rawValue),
                "replaced_token": .bool(previous != nil && previous != update.token),
                "problems": .array(report.problems.map(problemValue)),
            ])
    }

    // MARK: - Diensten

    private func listDiensten(_ request: BackendRequest) async throws -> BackendResponse {
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

    // MARK: - Admin

    private func enroll(_ request: BackendRequest) async throws -> BackendResponse {
        let example =
            "{\"tenant_slug\": \"vvwilhelmus\", \"team_codes\": [\"JO11-3\"], \"role\": \"member\", \"hardware_identifier\": \"<UUID>\"}"
        var body: JSONBody
        switch JSONBody.parse(request.body, what: "The enrollment body", example: example) {
        case .failure(let e): return e.response
        case .success(let b): body = b
        }
        body.checkKnown([
            "tenant_slug", "team_codes", "role", "hardware_identifier", "device_id", "is_test_user",
            "team_manager_email", "replace",
        ])
        let tenant = body.string("tenant_slug", required: true, example: "\"vvwilhelmus\"")
        if let tenant, let problem = EnrollmentIdentifiers.problem(tenant, field: "tenant_slug") {
            body.problems.append(problem)
        }
        let hardware = body.string("hardware_identifier", required: true, example: "identifierForVendor's UUID string")
        let roleText = body.string("role", required: true, example: "\"manager\" or \"member\"")
        let teams = body.stringArray("team_codes", required: true, example: "[\"JO11-3\"]")
        if let teams, let problem = EnrollmentIdentifiers.teamCodesProblem(teams, field: "team_codes") {
            body.problems.append(problem)
        }
        let deviceIDGiven = body.string(
            "device_id", required: false, example: "\"dev-1234\", or leave it out for a new one")
        if let deviceIDGiven, let problem = EnrollmentIdentifiers.problem(deviceIDGiven, field: "device_id") {
            body.problems.append(problem)
        }
        let isTestUser = body.bool("is_test_user") ?? false
        let replace = body.bool("replace") ?? false
        let email = body.string("team_manager_email", required: false, example: "\"jan@example.nl\" (managers only)")
        var problems = body.problems
        let role = roleText.flatMap(EnrollmentRole.init(rawValue:))
        if let roleText, role == nil {
            problems.append(
                Problem(
                    .error, code: "invalid-role", message: "role \"\(roleText)\" is not one of: manager, member.",
                    fix: "Send role \"manager\" or \"member\"."))
        }
        if let hardware, UUID(uuidString: hardware) == nil {
            problems.append(
                Problem(
                    .error, code: "hardware-identifier-not-uuid",
                    message: "hardware_identifier \"\(hardware)\" is not a UUID.",
                    fix: "Send identifierForVendor's UUID string, nothing concatenated."))
        }
        if let email,
            let problem = EnrollmentEmail.problem(
                email, role: role, field: "team_manager_email", roleField: "role \"manager\"")
        {
            problems.append(problem)
        }
        if role == .manager && (email ?? "").isEmpty {
            problems.append(
                Problem(
                    .warning, code: "manager-without-email",
                    message: "A manager enrollment without team_manager_email.",
                    fix: "Send the manager's verified e-mail."))
        }
        guard !problems.hasErrors, let tenant, let hardware, let role, let teams else {
            return .error(
                problems.errors.first?.code == "wrong-type" ? 400 : 422,
                code: problems.errors.first?.code ?? "invalid", message: problems.errors.first?.message ?? "",
                fix: problems.errors.first?.fix ?? "", problems: problems)
        }
        let deviceID = deviceIDGiven ?? "dev-" + UUID().uuidString.lowercased().prefix(12)
        let requested = Enrollment(
            deviceID: deviceID, tenantSlug: tenant, teamCodes: teams, role: role, hardwareIdentifier: hardware,
            isTestUser: isTestUser, status: .active, teamManagerEmail: email, updatedAt: clock.now())
        // One change: replacing an existing device_id (only with "replace": true) bumps its generation (its
        // older JWTs are refused from then on), and the JWT is signed with it before the write commits.
        let jwt = self.jwt
        let outcome: EnrollOutcome
        do {
            let store = self.store
            outcome = try await metrics.timed("enroll") {
                try await store.enroll(requested, replacing: replace) { try jwt.issue(for: $0) }
            }
        } catch let exists as EnrollmentExistsError {
            return .error(
                409, code: "enrollment-exists",
                message: "Enrollment \(exists.existing.id) already exists (\(exists.held)); nothing was changed.",
                fix:
                    "Send \"replace\": true to replace it (its apns_token, build_environment and app_version are cleared until the app's next token update, and its older JWTs are refused), or leave out device_id for a new enrollment."
            )
        }
        let enrollment = outcome.enrollment
        logger.info(
            "enrolled",
            metadata: [
                "enrollment": "\(enrollment.id)", "jwt": "\(DeviceJWT.redacted(outcome.token))",
                "replaced": "\(outcome.replaced != nil)",
            ])
        var answer: [String: JSONValue] = [
            "enrollment": JSONWriter.value(enrollment), "signed_device_token": .string(outcome.token),
            "problems": .array(problems.map(problemValue)), "replaced": outcome.replaced.map(JSONWriter.value) ?? .null,
        ]
        if outcome.replaced != nil {
            answer["note"] = .string("Replaced the enrollment \(enrollment.id) that had the same device_id.")
        }
        return .json(201, answer)
    }

    private func changeDienst(id: String, _ request: BackendRequest) async throws -> BackendResponse {
        guard var dienst = await diensten.dienst(id: id) else {
            return .error(
                404, code: "dienst-not-found", message: "No dienst '\(id)'.", fix: "GET /admin/diensten lists them.")
        }
        var body = JSONBody(object: [:])
        if !request.body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            let example =
                "{\"volunteers\": [\"Jan\"], \"start_time\": \"2027-03-01T09:00:00Z\", \"end_time\": ..., \"location\": ..., \"title\": ...}"
            switch JSONBody.parse(request.body, what: "The dienst change", example: example) {
            case .failure(let e): return e.response
            case .success(let b): body = b
            }
        }
        body.checkKnown(["volunteers", "start_time", "end_time", "location", "title"])
        if let names = body.stringArray(
            "volunteers", required: false, example: "[\"Jan\", \"Piet\"] ([] for none)", allowEmpty: true)
        {
            body.problems += Dienst.volunteerProblems(names)
            dienst.volunteers = names.map { $0.trimmingWhitespace() }
        }
        for (key, path) in [("start_time", \Dienst.startTime), ("end_time", \Dienst.endTime)] {
            guard let text = body.string(key, required: false, example: "\"2027-03-01T09:00:00Z\"") else { continue }
            if let date = Enrollment.parseDate(text) {
                dienst[keyPath: path] = date
            } else {
                body.problems.append(
                    Problem(
                        .error, code: "invalid-\(key.replacingOccurrences(of: "_", with: "-"))",
                        message: "\(key) \"\(text)\" is not an ISO 8601 date.",
                        fix: "Send, for example, \"2027-03-01T09:00:00Z\"."))
            }
        }
        if let location = body.string("location", required: false, example: "\"Sportpark\"") {
            dienst.location = location
        }
        if let title = body.string("title", required: false, example: "\"Kantinedienst\"") { dienst.title = title }
        var problems = body.problems
        if !problems.hasErrors, dienst.endTime <= dienst.startTime {
            problems.append(
                Problem(
                    .error, code: "dienst-ends-before-start", message: "end_time is not after start_time.",
                    fix: "Give an end after the start."))
        }
        if problems.hasErrors {
            return .error(
                problems.errors[0].code == "wrong-type" ? 400 : 422, code: problems.errors[0].code,
                message: problems.errors[0].message, fix: problems.errors[0].fix, problems: problems)
        }
        await diensten.put(dienst)
        guard let sender else {
            return .json(
                200,
                [
                    "dienst": dienst.jsonValue, "fan_out": .null,
                    "note": .string("No push sender configured: no pushes were sent."),
                ])
        }
        let fanOut = TeamFanOut(
            store: store, sender: sender, settings: settings, clock: clock, logger: logger, metrics: metrics)
        let bundleID = self.bundleID
        let tenant = dienst.tenantSlug
        let dienstID = dienst.id
        let report = try await fanOut.send(tenant: tenant, team: dienst.teamCode) { token in
            // Validated above (seed and stored ids); a failure here falls back to an empty payload that
            // the client's pre-flight rejects, which is reported per device.
            (try? KantineKoningPush.dienstUpdateRequest(
                deviceToken: token, bundleID: bundleID, tenant: tenant, dienstID: dienstID))
                ?? NotificationRequest(deviceToken: token, topic: bundleID, payload: [])
        }
        return .json(200, ["dienst": dienst.jsonValue, "fan_out": fanOutValue(report)])
    }
}

func fanOutValue(_ report: FanOutReport) -> JSONValue {
    .object([
        "tenant": .string(report.tenant), "team_code": .string(report.team),
        "enrollments": .int(report.enrollmentCount),
        "pushes": .int(report.deliveries.count), "accepted": .int(report.accepted), "rejected": .int(report.rejected),
        "failed": .int(report.failed),
        "deliveries": .array(
            report.deliveries.map { d -> JSONValue in
                var o: [String: JSONValue] = [
                    "token": .string(d.token), "environment": .string(d.environment.rawValue),
                    "device_ids": .strings(d.deviceIDs),
                    "result": .string(d.delivery.label), "cleared_enrollments": .int(d.clearedEnrollments),
                    "problems": .array(d.problems.map(problemValue)),
                ]
                switch d.delivery {
                case .accepted(let id): o["apns_id"] = .optional(id)
                case .rejected(let status, let reason, let timestamp):
                    o["status"] = .int(status)
                    o["reason"] = .string(reason.rawValue)
                    o["timestamp"] = .optional(timestamp.map(Enrollment.formatDate))
                case .failed(let message): o["message"] = .string(message)
                }
                return .object(o)
            }),
    ])
}
