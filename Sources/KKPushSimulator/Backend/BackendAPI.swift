package import Foundation
package import KKPushBackend
package import KKPushCore
import KKPushHTTP
package import KantineKoning

/// One answer of the simulated backend: the HTTP status and the JSON body.
package struct BackendHTTPResponse: Sendable {
    /// The HTTP status.
    package var status: Int
    /// The body as received.
    package var body: Data

    /// Creates a response.
    package init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    /// The body's members if it is a JSON object (empty otherwise).
    package var object: [String: JSONValue] {
        (try? JSONValue.parse(Array(body)))?.objectValue ?? [:]
    }

    /// The backend's error (`{"error": {"code", "message", "fix"}}`), if the body has one.
    package var error: KKPushError? {
        guard let e = object["error"], let code = e["code"]?.stringValue else { return nil }
        return KKPushError(
            code: KKPushError.Code(rawValue: code), message: e["message"]?.stringValue ?? "", fix: e["fix"]?.stringValue
        )
    }

    /// True for 2xx.
    package var isSuccess: Bool { (200..<300).contains(status) }
}

/// What the backend answered to one token update.
package struct TokenUpdateAnswer: Sendable {
    /// The HTTP status.
    package var status: Int
    /// The environment the backend resolved for the enrollment (`apns_environment`), on success.
    package var apnsEnvironment: APNsEnvironment?
    /// True if the backend replaced an older token.
    package var replacedToken: Bool
    /// The backend's error, if it refused the update.
    package var error: KKPushError?
    /// The problems (warnings and errors) the backend reported.
    package var problemCodes: [String]
}

/// One push of a backend fan-out as the admin API reports it.
package struct FanOutDeliverySummary: Sendable, Hashable, Decodable {
    /// The device token pushed to.
    package var token: String
    /// The environment the backend sent it to.
    package var environment: APNsEnvironment
    /// The enrollments sharing the token.
    package var deviceIDs: [String]
    /// `accepted`, `rejected` or `failed`.
    package var result: String
    /// For rejections: the HTTP status.
    package var status: Int?
    /// For rejections: APNs' reason.
    package var reason: String?
    /// For failures: what happened.
    package var message: String?
    /// How many enrollments had the token cleared (410).
    package var clearedEnrollments: Int
    /// The `apns-id` of an accepted push.
    package var apnsID: String?
    /// The codes of the environment-resolution warnings for this push.
    package var problemCodes: [String]
    /// The messages of those warnings.
    package var problemMessages: [String]

    enum CodingKeys: String, CodingKey {
        case token, environment, result, status, reason, message, problems
        case deviceIDs = "device_ids"
        case clearedEnrollments = "cleared_enrollments"
        case apnsID = "apns_id"
    }

    struct ProblemJSON: Decodable {
        var code: String
        var message: String
    }

    /// Decodes the admin API's JSON.
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        token = try c.decode(String.self, forKey: .token)
        environment = try c.decode(APNsEnvironment.self, forKey: .environment)
        deviceIDs = try c.decodeIfPresent([String].self, forKey: .deviceIDs) ?? []
        result = try c.decode(String.self, forKey: .result)
        status = try c.decodeIfPresent(Int.self, forKey: .status)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        message = try c.decodeIfPresent(String.self, forKey: .message)
        clearedEnrollments = try c.decodeIfPresent(Int.self, forKey: .clearedEnrollments) ?? 0
        apnsID = try c.decodeIfPresent(String.self, forKey: .apnsID)
        let problems = try c.decodeIfPresent([ProblemJSON].self, forKey: .problems) ?? []
        problemCodes = problems.map(\.code)
        problemMessages = problems.map(\.message)
    }

    /// True if APNs accepted the push.
    package var isAccepted: Bool { result == "accepted" }
}

/// What the backend did when a dienst changed: the dienst as stored and the fan-out to its team.
package struct DienstChangeResult: Sendable {
    /// The dienst after the change.
    package var dienst: Dienst
    /// The tenant of the fan-out.
    package var tenant: String
    /// The team of the fan-out.
    package var team: String
    /// One entry per distinct device token pushed to.
    package var deliveries: [FanOutDeliverySummary]

    /// How many pushes APNs accepted.
    package var accepted: Int { deliveries.filter(\.isAccepted).count }
}

/// The app's HTTP client for the simulated backend (HTTP/1.1 over loopback, ``HTTP1Client`` on SwiftNIO),
/// with the admin calls the simulation uses to enroll devices and change diensten.
package struct BackendAPI: Sendable {
    /// `http://127.0.0.1:<port>`.
    package let baseURL: String
    private let http: HTTP1Client

    /// Creates a client for the backend at `baseURL` (`http://127.0.0.1:<port>`), with `threads`
    /// keep-alive connections at most at once (the name is the old client's, which had a thread for each).
    ///
    /// Every simulated phone shares these connections, so their number is how many phones can be
    /// talking to the backend at the same moment. With 12, a 1,000-phone refresh burst queued here:
    /// p99 push-to-refresh 120 to 190 ms with the same total work; with 32 it measured 25 to 65 ms, and
    /// 64 was no better.
    package init(baseURL: String, threads: Int = 32, timeout: TimeInterval = 15) throws {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        guard let url = URL(string: self.baseURL), url.scheme == "http", let host = url.host, let port = url.port else {
            throw KKPushError(
                code: .simulateBackendUrl, message: "'\(baseURL)' is not http://<host>:<port>.",
                fix: "Give the simulated backend's base URL, for example http://127.0.0.1:4000.")
        }
        http = HTTP1Client(host: host, port: port, maximumConnections: threads, timeout: timeout)
    }

    /// Sends one request; throws `simulate-backend-unreachable` if there is no HTTP answer.
    package func send(_ method: String, _ target: String, bearer: String? = nil, body: Data? = nil) async throws
        -> BackendHTTPResponse
    {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        do {
            let response = try await http.send(
                method: method, target: target, headers: headers, body: body.map { Array($0) })
            return BackendHTTPResponse(status: response.status, body: Data(response.body))
        } catch {
            throw Self.failure(error, host: http.host, port: http.port, timeout: http.timeout)
        }
    }

    /// `POST /admin/enrollments`: enrolls a device and returns the enrollment and its signed device JWT.
    package func enroll(
        tenant: String, teams: [String], role: EnrollmentRole, hardwareIdentifier: UUID, email: String? = nil,
        isTestUser: Bool = false
    ) async throws -> (enrollment: Enrollment, signedDeviceToken: String) {
        var object: [String: JSONValue] = [
            "tenant_slug": .string(tenant), "team_codes": .array(teams.map(JSONValue.string)),
            "role": .string(role.rawValue),
            "hardware_identifier": .string(hardwareIdentifier.uuidString), "is_test_user": .bool(isTestUser),
        ]
        if let email { object["team_manager_email"] = .string(email) }
        let response = try await send("POST", "/admin/enrollments", body: Data(JSONValue.object(object).encoded()))
        let answer = response.object
        guard response.status == 201, let jwt = answer["signed_device_token"]?.stringValue,
            let enrollmentValue = answer["enrollment"],
            let enrollment = try? JSONDecoder().decode(Enrollment.self, from: Data(enrollmentValue.encoded()))
        else {
            throw Self.failure("enroll \(tenant) \(teams.joined(separator: ","))", response)
        }
        return (enrollment, jwt)
    }

    /// `POST /api/mobile/v1/device/apns-token` with `bearer` (the enrollment's own JWT).
    package func updateToken(_ update: TokenUpdate, bearer: String) async throws -> TokenUpdateAnswer {
        let response = try await send("POST", TokenUpdate.path, bearer: bearer, body: try update.jsonData())
        let object = response.object
        let problems = (object["problems"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
        var replaced = false
        if case .bool(let value) = object["replaced_token"] { replaced = value }
        return TokenUpdateAnswer(
            status: response.status,
            apnsEnvironment: object["apns_environment"]?.stringValue.flatMap(APNsEnvironment.init(rawValue:)),
            replacedToken: replaced, error: response.isSuccess ? nil : response.error,
            problemCodes: problems)
    }

    /// `GET /api/mobile/v1/diensten?tenant=<slug>` with `bearer`: the diensten, or the backend's error.
    package func diensten(tenant: String, bearer: String) async throws -> (
        status: Int, diensten: [Dienst], error: KKPushError?
    ) {
        let plain = tenant.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        let slug = plain ? tenant : tenant.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? tenant
        let response = try await send("GET", "/api/mobile/v1/diensten?tenant=\(slug)", bearer: bearer)
        guard response.isSuccess else { return (response.status, [], response.error) }
        // kkpush's own JSON parser and Dienst(json:), not JSONDecoder: this runs on every refresh.
        let unreadable = KKPushError(
            code: .dienstenUnreadable, message: "The diensten answer for \(tenant) is not the documented JSON.",
            fix: "Check the backend version.")
        guard let list = (try? JSONValue.parse(Array(response.body)))?["diensten"]?.arrayValue else {
            return (response.status, [], unreadable)
        }
        var diensten: [Dienst] = []
        diensten.reserveCapacity(list.count)
        for item in list {
            guard let dienst = Dienst(json: item) else { return (response.status, [], unreadable) }
            diensten.append(dienst)
        }
        return (response.status, diensten, nil)
    }

    /// `GET /api/mobile/v1/tenant?tenant=<slug>` with `bearer` (that tenant's JWT): the tenant info refresh.
    package func tenantInfo(tenant: String, bearer: String) async throws -> (
        status: Int, info: TenantInfo?, error: KKPushError?
    ) {
        let response = try await send("GET", "/api/mobile/v1/tenant?tenant=\(tenant)", bearer: bearer)
        guard response.isSuccess else { return (response.status, nil, response.error) }
        guard let t = response.object["tenant"], let slug = t["slug"]?.stringValue,
            let open = t["enrollment_open"]?.boolValue, let ended = t["season_ended"]?.boolValue
        else {
            return (
                response.status, nil,
                KKPushError(
                    code: .simulateBackendAnswer, message: "The tenant info for \(tenant) is not the documented JSON.",
                    fix: "Check the backend version.")
            )
        }
        let info = TenantInfo(
            slug: slug, name: t["name"]?.stringValue ?? slug,
            teams: (t["teams"]?.arrayValue ?? []).compactMap(\.stringValue), enrollmentOpen: open, seasonEnded: ended)
        return (response.status, info, nil)
    }

    /// `POST /api/mobile/v1/enrollments/sync` with `bearer`: the app's enrollments (and the JWTs it holds
    /// from an earlier identifierForVendor); the backend's answer as is.
    package func syncEnrollments(_ entries: [SyncEntry], supersededTokens: [String], bearer: String) async throws
        -> BackendHTTPResponse
    {
        var object: [String: JSONValue] = ["enrollments": .array(entries.map(\.jsonValue))]
        if !supersededTokens.isEmpty {
            object["superseded_device_tokens"] = .array(supersededTokens.map(JSONValue.string))
        }
        return try await send(
            "POST", BackendRouter.syncPath, bearer: bearer, body: Data(JSONValue.object(object).encoded()))
    }

    /// `GET /admin/diensten`: every dienst of the backend.
    package func allDiensten() async throws -> [Dienst] {
        let response = try await send("GET", "/admin/diensten")
        struct Body: Decodable { var diensten: [Dienst] }
        guard response.isSuccess, let body = try? JSONDecoder().decode(Body.self, from: response.body) else {
            throw Self.failure("list diensten", response)
        }
        return body.diensten
    }

    /// `GET /admin/enrollments`: every enrollment as the backend stores it.
    package func allEnrollments() async throws -> [Enrollment] {
        let response = try await send("GET", "/admin/enrollments")
        guard response.isSuccess, let list = try? JSONDecoder().decode([Enrollment].self, from: response.body) else {
            throw Self.failure("list enrollments", response)
        }
        return list
    }

    /// `POST /admin/diensten/<id>` with new volunteers: the backend stores the change and pushes the
    /// dienst update to the team's devices; returns the fan-out.
    package func changeDienst(id: String, volunteers: [String]) async throws -> DienstChangeResult {
        let body = Data(JSONValue.object(["volunteers": .array(volunteers.map(JSONValue.string))]).encoded())
        let response = try await send("POST", "/admin/diensten/\(id)", body: body)
        struct FanOut: Decodable {
            var tenant: String
            var team_code: String
            var deliveries: [FanOutDeliverySummary]
        }
        struct Body: Decodable {
            var dienst: Dienst
            var fan_out: FanOut?
        }
        guard response.isSuccess, let decoded = try? JSONDecoder().decode(Body.self, from: response.body) else {
            throw Self.failure("change dienst \(id)", response)
        }
        guard let fanOut = decoded.fan_out else {
            throw KKPushError(
                code: .simulateNoPushSender, message: "The backend changed dienst \(id) but sent no pushes.",
                fix: "Start the backend with a push sender (the simulation does).")
        }
        return DienstChangeResult(
            dienst: decoded.dienst, tenant: fanOut.tenant, team: fanOut.team_code, deliveries: fanOut.deliveries)
    }

    /// The app's words for a request that got no HTTP answer (the old blocking client's texts).
    static func failure(_ error: HTTP1ClientError, host: String, port: Int, timeout: TimeInterval) -> KKPushError {
        switch error {
        case .stopped:
            KKPushError(
                code: .simulateBackendUnreachable, message: "The backend client was stopped.",
                fix: "Send requests while the simulation runs.")
        case .notAnAddress:
            KKPushError(
                code: .simulateBackendHost, message: "'\(host)' is not an IP address.",
                fix: "The simulated backend listens on 127.0.0.1.")
        case .connect(let reason):
            KKPushError(
                code: .simulateBackendUnreachable, message: "HTTP to \(host):\(port) failed: connect (\(reason)).",
                fix: "Check that the simulated backend is running on http://\(host):\(port).")
        case .failed(let reason):
            KKPushError(
                code: .simulateBackendUnreachable, message: "HTTP to \(host):\(port) failed: \(reason).",
                fix: "Check that the simulated backend is running on http://\(host):\(port).")
        case .nothingBack:
            KKPushError(
                code: .simulateBackendAnswer, message: "The backend closed the connection without an answer.",
                fix: "Check that http://\(host):\(port) is the simulated backend.")
        case .tooLarge:
            KKPushError(
                code: .simulateBackendAnswer, message: "The backend's answer is larger than 16 MB.",
                fix: "Ask for a smaller window (past_days/future_days).")
        case .timeout:
            KKPushError(
                code: .simulateBackendTimeout,
                message:
                    "The simulated backend on \(host):\(port) did not answer within \(Int(timeout)) s (waiting for its answer).",
                fix:
                    "The machine is too slow or too busy for this many simulated phones: simulate fewer devices (devices), or build with -c release."
            )
        }
    }

    static func failure(_ what: String, _ response: BackendHTTPResponse) -> KKPushError {
        let e = response.error
        return KKPushError(
            code: .simulateBackendRefused,
            message:
                "The backend refused to \(what): HTTP \(response.status)\(e.map { " \($0.code): \($0.message)" } ?? "").",
            fix: e?.fix ?? "See the backend's answer.")
    }
}
