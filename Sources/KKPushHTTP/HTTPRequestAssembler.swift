import NIOCore
import NIOHTTP1

/// Collects one request's parts (head, body chunks, end) into an ``HTTPRequest``, the body kept up to a limit:
/// past it the body is dropped and the request flagged ``HTTPRequest/bodyTooLarge``, so each server writes its own
/// 413. The one assembly of ``HTTP1Server`` and ``HTTP1Exchange``.
struct HTTPRequestAssembler {
    /// What one part completed.
    enum Step {
        /// The request is not complete yet.
        case more
        /// A whole request, with its head (for the version and keep-alive).
        case request(HTTPRequest, HTTPRequestHead)
        /// An end with no head before it.
        case endWithoutHead
    }

    let maximumBody: Int
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(maximumBody: Int) { self.maximumBody = maximumBody }

    mutating func add(_ part: HTTPServerRequestPart) -> Step {
        switch part {
        case .head(let h):
            head = h
            body.removeAll(keepingCapacity: true)
            tooLarge = false
        case .body(let chunk):
            if tooLarge { return .more }
            if body.count + chunk.readableBytes > maximumBody {
                tooLarge = true
                body = []
            } else {
                body += chunk.readableBytesView
            }
        case .end:
            guard let request = head else { return .endWithoutHead }
            head = nil
            return .request(
                HTTPRequest(
                    method: request.method, uri: request.uri, headers: request.headers, body: body,
                    bodyTooLarge: tooLarge, version: request.version),
                request)
        }
        return .more
    }
}
