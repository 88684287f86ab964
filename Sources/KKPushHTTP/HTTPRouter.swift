import NIOCore
package import NIOHTTP1

/// A declarative router: routes are registered by method and path pattern, with `:name` segments as
/// path parameters (`router.delete("/devices/:token") { request in … request[parameter: "token"] … }`).
///
/// ``respond(to:)`` runs the prefix guards whose prefix the path starts with (the first answer they give
/// wins), then the route whose pattern and method match (routes are tried in the order they were
/// registered). A path some route matches with another method is ``methodNotAllowed`` (with an `Allow`
/// header); any other is ``notFound``. A handler's thrown error becomes ``errorResponse``'s answer.
package struct HTTPRouter: Sendable {
    /// A route's handler.
    package typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        var method: HTTPMethod
        var pattern: [Segment]
        var handler: Handler
    }

    private struct Guard: Sendable {
        var prefix: [String]
        var check: @Sendable (HTTPRequest) async -> HTTPResponse?
    }

    private var routes: [Route] = []
    private var guards: [Guard] = []

    /// The answer for a path no route matches.
    package var notFound: @Sendable (HTTPRequest) -> HTTPResponse
    /// The answer for a path that routes match with other methods only (given, sorted); the router adds
    /// the `Allow` header.
    package var methodNotAllowed: @Sendable (HTTPRequest, [HTTPMethod]) -> HTTPResponse
    /// The answer for an error a handler threw.
    package var errorResponse: @Sendable (HTTPRequest, any Error) -> HTTPResponse

    /// A router without routes; the default answers are bare statuses.
    package init(
        notFound: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { _ in HTTPResponse(status: .notFound) },
        methodNotAllowed: @escaping @Sendable (HTTPRequest, [HTTPMethod]) -> HTTPResponse = { _, _ in
            HTTPResponse(status: .methodNotAllowed)
        },
        errorResponse: @escaping @Sendable (HTTPRequest, any Error) -> HTTPResponse = { _, _ in
            HTTPResponse(status: .internalServerError)
        }
    ) {
        self.notFound = notFound
        self.methodNotAllowed = methodNotAllowed
        self.errorResponse = errorResponse
    }

    /// Registers `handler` for `method` on `pattern` (`/a/:name/b`; empty segments are ignored).
    package mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix(":") ? .parameter(String(part.dropFirst())) : .literal(String(part))
        }
        routes.append(Route(method: method, pattern: segments, handler: handler))
    }

    /// `GET pattern`.
    package mutating func get(_ pattern: String, _ handler: @escaping Handler) { on(.GET, pattern, handler) }
    /// `POST pattern`.
    package mutating func post(_ pattern: String, _ handler: @escaping Handler) { on(.POST, pattern, handler) }
    /// `DELETE pattern`.
    package mutating func delete(_ pattern: String, _ handler: @escaping Handler) { on(.DELETE, pattern, handler) }
    /// `PUT pattern`.
    package mutating func put(_ pattern: String, _ handler: @escaping Handler) { on(.PUT, pattern, handler) }

    /// Runs `check` before routing every request whose path starts with `prefix` ("/" or "": all); an
    /// answer it gives is sent instead (before 404 and 405 too).
    package mutating func guarding(_ prefix: String, _ check: @escaping @Sendable (HTTPRequest) async -> HTTPResponse?)
    {
        guards.append(Guard(prefix: prefix.split(separator: "/").map(String.init), check: check))
    }

    /// What the router answers for the path and method of `request`, without running a handler.
    package enum Match: Sendable {
        /// A route: its handler and the path parameters.
        case route(Handler, parameters: [String: String])
        /// Routes match the path with these methods only.
        case methodNotAllowed([HTTPMethod])
        /// No route matches the path.
        case notFound
    }

    /// Matches `method` and path `segments` (as ``HTTPRequest/segments``).
    package func match(_ method: HTTPMethod, _ segments: [String]) -> Match {
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Self.parameters(route.pattern, segments) else { continue }
            if route.method == method { return .route(route.handler, parameters: parameters) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if allowed.isEmpty { return .notFound }
        return .methodNotAllowed(allowed.sorted { $0.rawValue < $1.rawValue })
    }

    private static func parameters(_ pattern: [Segment], _ segments: [String]) -> [String: String]? {
        guard pattern.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (part, segment) in zip(pattern, segments) {
            switch part {
            case .literal(let text): if text != segment { return nil }
            case .parameter(let name): parameters[name] = segment
            }
        }
        return parameters
    }

    /// The answer to `request`.
    package func respond(to request: HTTPRequest) async -> HTTPResponse {
        let segments = request.segments
        for g in guards where segments.starts(with: g.prefix) {
            if let answer = await g.check(request) { return answer }
        }
        switch match(request.method, segments) {
        case .route(let handler, let parameters):
            var request = request
            request.parameters = parameters
            do {
                return try await handler(request)
            } catch {
                return errorResponse(request, error)
            }
        case .methodNotAllowed(let allowed):
            var answer = methodNotAllowed(request, allowed)
            answer.headers.replaceOrAdd(name: "allow", value: allowed.map(\.rawValue).joined(separator: ", "))
            return answer
        case .notFound:
            return notFound(request)
        }
    }
}
