import Foundation
public import KKPushActivities
import KKPushAuth
public import KKPushCore
import KKPushHTTP
public import KKPushStore
public import KantineKoning
public import Logging
import NIOHTTP1

/// The routes of the simulated Kantine Koning backend (no I/O of its own beyond the store and the sender).
///
/// App API (Bearer: the enrollment's device JWT):
/// - `POST /api/mobile/v1/device/apns-token`: the token update (``TokenUpdate``); its `live_activity` tokens go to
///   the activity registry (``activities``) under the enrollment's key `<tenant>/<device_id>`, and the answer's
///   `live_activity` says what the registry did with them.
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
/// - `POST /api/mobile/v1/push-receipts` (``PushReceipt``): a push receipt → `{"status": "recorded", ...}`; 400
///   `receipt-invalid` naming the field. `GET /admin/receipts[?apns_id=][&push_id=]` lists them.
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
    /// The activity registry a token update's `live_activity` tokens are recorded in (nil: checked, not recorded).
    public var activities: (any ActivityRegistry)?

    /// The enrollment reconciliation route.
    public static let syncPath = "/api/mobile/v1/enrollments/sync"
    /// The backend's Prometheus metrics (`GET /metrics`).
    public var metrics: BackendMetrics
    /// The push receipts the app posted (`POST /api/mobile/v1/push-receipts`, ``PushReceipt``).
    public let receipts = PushReceiptBook()

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
        metrics: BackendMetrics = BackendMetrics(), activities: (any ActivityRegistry)? = nil
    ) {
        self.activities = activities
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
                    fix: "Use one of the backend's routes: /api/mobile/v1/… (BackendRouter lists them)."
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
                        error.code == .enrollmentNotFound
                        ? 404
                        : ["enrollments-json-invalid", "enrollment-invalid"].contains(error.code.rawValue)
                            ? 400 : error.code == .storeUnreachable ? 503 : 500
                    return BackendResponse.error(
                        status, code: error.code.rawValue, message: error.message, fix: error.fix ?? ""
                    ).http
                default:
                    return BackendResponse.error(
                        500, code: "internal", message: ErrorWords.describe(error), fix: "See the backend's log."
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
        route(.POST, PushReceipt.path) { r, _ in try await me.pushReceipt(r) }
        route(.GET, "/admin/receipts") { r, _ in await me.listReceipts(r) }
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
    func checkAdmin(_ request: BackendRequest) -> BackendResponse? {
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
                fix: "Send Authorization: Bearer <admin token> (the admin token the backend was started with).")
        }
        return nil
    }
}
