public import Foundation
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
        error(status, code: problem.code.rawValue, message: problem.message, fix: problem.fix)
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
        "severity": .string(p.severity.rawValue), "code": .string(p.code.rawValue), "message": .string(p.message),
        "fix": .string(p.fix),
    ])
}

extension JSONValue {
    /// A string, or `null` for nil.
    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    /// An array of strings.
    static func strings(_ list: [String]) -> JSONValue { .array(list.map(JSONValue.string)) }
}
