import Foundation
import KKPushBackend
import KKPushCore
import KantineKoning


/// One answer of the simulated backend: the HTTP status and the JSON body.
public struct BackendHTTPResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The body as received.
    public var body: Data

    /// Creates a response.
    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    /// The body as a JSON object (empty if it is not one).
    public var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:]
    }

    /// The backend's error (`{"error": {"code", "message", "fix"}}`), if the body has one.
    public var error: KKPushError? {
        guard let e = object["error"] as? [String: Any], let code = e["code"] as? String else { return nil }
        return KKPushError(code: code, message: e["message"] as? String ?? "", fix: e["fix"] as? String)
    }

    /// True for 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// What the backend answered to one token update.
public struct TokenUpdateAnswer: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The environment the backend resolved for the enrollment (`apns_environment`), on success.
    public var apnsEnvironment: APNsEnvironment?
    /// True if the backend replaced an older token.
    public var replacedToken: Bool
    /// The backend's error, if it refused the update.
    public var error: KKPushError?
    /// The problems (warnings and errors) the backend reported.
    public var problemCodes: [String]
}

/// One push of a backend fan-out as the admin API reports it.
public struct FanOutDeliverySummary: Sendable, Hashable, Decodable {
    /// The device token pushed to.
    public var token: String
    /// The environment the backend sent it to.
    public var environment: APNsEnvironment
    /// The enrollments sharing the token.
    public var deviceIDs: [String]
    /// `accepted`, `rejected` or `failed`.
    public var result: String
    /// For rejections: the HTTP status.
    public var status: Int?
    /// For rejections: APNs' reason.
    public var reason: String?
    /// For failures: what happened.
    public var message: String?
    /// How many enrollments had the token cleared (410).
    public var clearedEnrollments: Int
    /// The `apns-id` of an accepted push.
    public var apnsID: String?
    /// The codes of the environment-resolution warnings for this push.
    public var problemCodes: [String]
    /// The messages of those warnings.
    public var problemMessages: [String]

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
    public init(from decoder: any Decoder) throws {
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
    public var isAccepted: Bool { result == "accepted" }
}

/// What the backend did when a dienst changed: the dienst as stored and the fan-out to its team.
public struct DienstChangeResult: Sendable {
    /// The dienst after the change.
    public var dienst: Dienst
    /// The tenant of the fan-out.
    public var tenant: String
    /// The team of the fan-out.
    public var team: String
    /// One entry per distinct device token pushed to.
    public var deliveries: [FanOutDeliverySummary]

    /// How many pushes APNs accepted.
    public var accepted: Int { deliveries.filter(\.isAccepted).count }
}

/// The app's HTTP client for the simulated backend (HTTP/1.1 over loopback), with the
/// admin calls the simulation uses to enroll devices and change diensten.
public struct BackendAPI: Sendable {
    /// `http://127.0.0.1:<port>`.
    public let baseURL: String
    private let http: LoopbackHTTPClient

    /// Creates a client for the backend at `baseURL` (`http://127.0.0.1:<port>`), with `threads`
    /// keep-alive connections at most at once (each on a thread of its own).
    ///
    /// Every simulated phone shares these connections, so their number is how many phones can be
    /// talking to the backend at the same moment. With 12, a 1,000-phone refresh burst queued here:
    /// p99 push-to-refresh 120 to 190 ms with the same total work; with 32 it measured 25 to 65 ms, and
    /// 64 was no better.
    public init(baseURL: String, threads: Int = 32, timeout: TimeInterval = 15) throws {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        guard let url = URL(string: self.baseURL), url.scheme == "http", let host = url.host, let port = url.port else {
            throw KKPushError(
                code: "simulate-backend-url", message: "'\(baseURL)' is not http://<host>:<port>.",
                fix: "Give the simulated backend's base URL, for example http://127.0.0.1:4000.")
        }
        http = LoopbackHTTPClient(host: host, port: port, threads: threads, timeout: timeout)
    }

    /// Sends one request; throws `simulate-backend-unreachable` if there is no HTTP answer.
    public func send(_ method: String, _ target: String, bearer: String? = nil, body: Data? = nil) async throws
        -> BackendHTTPResponse
    {
        var headers: [(String, String)] = []
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let response = try await http.send(method: method, target: target, headers: headers, body: body)
        return BackendHTTPResponse(status: response.status, body: response.body)
    }

    /// `POST /admin/enrollments`: enrolls a device and returns the enrollment and its signed device JWT.
    public func enroll(
        tenant: String, teams: [String], role: EnrollmentRole, hardwareIdentifier: UUID, email: String? = nil,
        isTestUser: Bool = false
    ) async throws -> (enrollment: Enrollment, signedDeviceToken: String) {
        var object: [String: Any] = [
            "tenant_slug": tenant, "team_codes": teams, "role": role.rawValue,
            "hardware_identifier": hardwareIdentifier.uuidString, "is_test_user": isTestUser,
        ]
        if let email { object["team_manager_email"] = email }
        let response = try await send("POST", "/admin/enrollments", body: try JSONSerialization.data(withJSONObject: object))
        guard response.status == 201, let jwt = response.object["signed_device_token"] as? String,
            let enrollmentObject = response.object["enrollment"],
            let data = try? JSONSerialization.data(withJSONObject: enrollmentObject),
            let enrollment = try? JSONDecoder().decode(Enrollment.self, from: data)
        else {
            throw Self.failure("enroll \(tenant) \(teams.joined(separator: ","))", response)
        }
        return (enrollment, jwt)
    }

    /// `POST /api/mobile/v1/device/apns-token` with `bearer` (the enrollment's own JWT).
    public func updateToken(_ update: TokenUpdate, bearer: String) async throws -> TokenUpdateAnswer {
        let response = try await send("POST", TokenUpdate.path, bearer: bearer, body: try update.jsonData())
        let object = response.object
        let problems = (object["problems"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
        return TokenUpdateAnswer(
            status: response.status,
            apnsEnvironment: (object["apns_environment"] as? String).flatMap(APNsEnvironment.init(rawValue:)),
            replacedToken: object["replaced_token"] as? Bool ?? false, error: response.isSuccess ? nil : response.error,
            problemCodes: problems)
    }

    /// `GET /api/mobile/v1/diensten?tenant=<slug>` with `bearer`: the diensten, or the backend's error.
    public func diensten(tenant: String, bearer: String) async throws -> (status: Int, diensten: [Dienst], error: KKPushError?) {
        let plain = tenant.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        let slug = plain ? tenant : tenant.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? tenant
        let response = try await send("GET", "/api/mobile/v1/diensten?tenant=\(slug)", bearer: bearer)
        guard response.isSuccess else { return (response.status, [], response.error) }
        // kkpush's own JSON parser and Dienst(json:), not JSONDecoder: this runs on every refresh.
        let unreadable = KKPushError(
            code: "diensten-unreadable", message: "The diensten answer for \(tenant) is not the documented JSON.",
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

    /// `GET /admin/diensten`: every dienst of the backend.
    public func allDiensten() async throws -> [Dienst] {
        let response = try await send("GET", "/admin/diensten")
        struct Body: Decodable { var diensten: [Dienst] }
        guard response.isSuccess, let body = try? JSONDecoder().decode(Body.self, from: response.body) else {
            throw Self.failure("list diensten", response)
        }
        return body.diensten
    }

    /// `GET /admin/enrollments`: every enrollment as the backend stores it.
    public func allEnrollments() async throws -> [Enrollment] {
        let response = try await send("GET", "/admin/enrollments")
        guard response.isSuccess, let list = try? JSONDecoder().decode([Enrollment].self, from: response.body) else {
            throw Self.failure("list enrollments", response)
        }
        return list
    }

    /// `POST /admin/diensten/<id>` with new volunteers: the backend stores the change and pushes the
    /// dienst update to the team's devices; returns the fan-out.
    public func changeDienst(id: String, volunteers: [String]) async throws -> DienstChangeResult {
        let body = try JSONSerialization.data(withJSONObject: ["volunteers": volunteers])
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
                code: "simulate-no-push-sender", message: "The backend changed dienst \(id) but sent no pushes.",
                fix: "Start the backend with a push sender (the simulation does).")
        }
        return DienstChangeResult(
            dienst: decoded.dienst, tenant: fanOut.tenant, team: fanOut.team_code, deliveries: fanOut.deliveries)
    }

    static func failure(_ what: String, _ response: BackendHTTPResponse) -> KKPushError {
        let e = response.error
        return KKPushError(
            code: "simulate-backend-refused",
            message: "The backend refused to \(what): HTTP \(response.status)\(e.map { " \($0.code): \($0.message)" } ?? "").",
            fix: e?.fix ?? "See the backend's answer.")
    }
}
