import KKPushHTTP
import NIOHTTP1

/// The mock's web console: one page (`GET /`), its script (`GET /console.js`) and style sheet
/// (`GET /console.css`), all served by the admin API itself: no CDN, nothing external, works offline. The three
/// files are `Admin/Console/console.{html,js,css}`, embedded in the binary at build time (SwiftPM's
/// `embedInCode` rule: `PackageResources`), so a copied `kkpush` serves them with no resource bundle beside it.
///
/// The page shows the devices of both environments (mint, register, unregister), the delivery log live
/// (polled every second; filters by token, apns-id, apns-unique-id and topic), one token's history, the
/// faults (add, list, remove), the mock's clock, a "send a test push" form (`POST /send`), its saved pushes
/// (saved under a name, replayed to a device or a channel: `/saved-pushes`), and per delivery a "Download .apns"
/// link (`GET /deliveries/{sequence}/apns`, fetched with the admin token).
///
/// Safety: every value shown (payloads are user data) is put in the page with `textContent` and DOM
/// calls, never parsed as HTML; the `Content-Security-Policy` allows scripts, styles and requests from the
/// admin API's own origin only (no inline script, no `eval`), and no framing. The admin token, when the
/// mock has one, is typed into the page, kept in `sessionStorage` (never in a URL) and sent as
/// `Authorization: Bearer`.
enum MockConsole {
    /// One static file.
    struct File: Sendable {
        var contentType: String
        var body: [UInt8]

        func response() -> HTTPResponse {
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: contentType)
            headers.add(name: "content-security-policy", value: MockConsole.contentSecurityPolicy)
            headers.add(name: "x-content-type-options", value: "nosniff")
            headers.add(name: "referrer-policy", value: "no-referrer")
            headers.add(name: "x-frame-options", value: "DENY")
            headers.add(name: "cache-control", value: "no-store")
            return HTTPResponse(status: .ok, headers: headers, body: body)
        }
    }

    /// Scripts, styles, images and requests from the admin API's own origin only; no inline script, no
    /// plugins, no framing, forms post nowhere.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The console's files by path.
    static let files: [String: File] = [
        "/": File(contentType: "text/html; charset=utf-8", body: PackageResources.console_html),
        "/console.js": File(contentType: "text/javascript; charset=utf-8", body: PackageResources.console_js),
        "/console.css": File(contentType: "text/css; charset=utf-8", body: PackageResources.console_css),
    ]

}
