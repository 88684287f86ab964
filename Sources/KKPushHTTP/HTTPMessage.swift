package import Foundation
package import KKPushCore
import NIOCore
package import NIOHTTP1

/// One HTTP/1.1 request as a route handler sees it: the whole body read (up to the server's limit).
package struct HTTPRequest: Sendable {
    /// `GET`, `POST`, ...
    package var method: HTTPMethod
    /// The request target as sent: the path with an optional `?query`.
    package var uri: String
    /// The path without the query.
    package var path: String
    /// The query parameters: names and values percent-decoded (`+` is a space in values), the last
    /// value of a repeated name wins, a piece without `=` has the value "".
    package var query: [String: String]
    /// The headers.
    package var headers: HTTPHeaders
    /// The body (empty if there was none, or if it was over the server's limit: see ``bodyTooLarge``).
    package var body: [UInt8]
    /// True if the body was over the server's ``HTTP1Server/Configuration/maximumBody`` (its bytes
    /// were dropped): the handler answers 413 in its own words.
    package var bodyTooLarge: Bool
    /// The HTTP version (the answer uses the same).
    package var version: HTTPVersion
    /// The path parameters of the route that matched (`:token` in `/devices/:token`), percent-decoded.
    package var parameters: [String: String] = [:]

    /// Creates a request; `uri` is the path with an optional `?query`.
    package init(
        method: HTTPMethod, uri: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        bodyTooLarge: Bool = false, version: HTTPVersion = .http1_1
    ) {
        self.method = method
        self.uri = uri
        (path, query) = Self.split(uri)
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.version = version
    }

    /// The path's segments: empty ones dropped (`//a/` is `a`), each percent-decoded (an id sent as
    /// `%2D` matches its stored form).
    package var segments: [String] {
        path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
    }

    /// The path parameter `name` of the matched route ("" if the route has none such).
    package subscript(parameter name: String) -> String { parameters[name] ?? "" }

    /// The path and the query parameters of a request target.
    package static func split(_ uri: String) -> (path: String, query: [String: String]) {
        guard let q = uri.firstIndex(of: "?") else { return (uri, [:]) }
        var query: [String: String] = [:]
        for pair in uri[uri.index(after: q)...].split(separator: "&") {
            // Empty pieces kept: `?=` has an empty key, not no key (kv[0] always exists).
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
            let raw = kv.count > 1 ? String(kv[1]).replacingOccurrences(of: "+", with: " ") : ""
            query[key] = raw.removingPercentEncoding ?? raw
        }
        return (String(uri[..<q]), query)
    }
}

/// One HTTP/1.1 answer: a status, headers and the whole body. The server adds `content-length` and
/// `connection`; `content-type` is `application/json` unless a handler sets another.
package struct HTTPResponse: Sendable {
    /// The status.
    package var status: HTTPResponseStatus
    /// The headers.
    package var headers: HTTPHeaders
    /// The body.
    package var body: [UInt8]

    /// Creates a response.
    package init(status: HTTPResponseStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON answer: `value` written by ``JSONWriter``.
    package static func json(_ value: some Encodable, status: HTTPResponseStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, body: JSONWriter.encode(value))
    }

    /// A JSON answer: `value` written as compact text with sorted keys (``JSONValue/encoded()``).
    package static func json(_ value: JSONValue, status: HTTPResponseStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, body: value.encoded())
    }
}

/// The one way the HTTP servers write JSON from `Encodable` values: `JSONEncoder` with sorted keys and
/// unescaped slashes, compact (the same text ``JSONValue/encoded()`` writes for the same tree).
package enum JSONWriter {
    /// The encoder configuration (a new encoder each call: `JSONEncoder` is not `Sendable`).
    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The JSON text of `value` (`{}` if it cannot be encoded: a non-finite number).
    package static func encode(_ value: some Encodable) -> [UInt8] {
        (try? Array(encoder().encode(value))) ?? Array("{}".utf8)
    }

    /// `value` as a ``JSONValue`` tree (`null` if it cannot be encoded), to put inside a larger answer.
    package static func value(_ value: some Encodable) -> JSONValue {
        (try? JSONValue.parse(encode(value))) ?? .null
    }
}

extension HTTPResponse {
    /// The content type of the Prometheus text exposition format (version 0.0.4).
    package static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A `GET /metrics` answer: `exposition` (the Prometheus text format, as a collector registry emits it)
    /// with its content type.
    package static func metrics(_ exposition: [UInt8]) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: prometheusContentType)
        headers.add(name: "cache-control", value: "no-store")
        return HTTPResponse(status: .ok, headers: headers, body: exposition)
    }
}
