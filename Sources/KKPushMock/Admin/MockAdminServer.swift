import KKPushCore
import KKPushHTTP
import Logging
import NIOCore

/// The mock's admin API: plain HTTP/1.1 on 127.0.0.1 (another address only with an admin token), its
/// own port, JSON in and out (snake_case).
///
/// Guards: a request with an `Origin` header (sent by browsers) other than the admin API's own (its web
/// console) is refused with 403, so another web page cannot drive the mock through its fixed loopback port; with an admin token configured, every
/// request needs `Authorization: Bearer <token>` (else 401); bodies are capped at 1 MiB (413);
/// `POST /keys` reads a `file` only from inside the certificates folder.
///
/// Endpoints:
/// - `GET /health` → `{"status":"ok","deliveries":N,"now_ms":T}`
/// - `GET /keys` → `{"keys":[{"key_id","team_id","environments","topics"}]}` (empty: both environments, any
///   topic); `POST /keys` `{"key_id","team_id","pem" | "file","environments":["sandbox"],"topics":[...]}` →
///   register a provider key (environments empty or absent: both; `file` relative to, and inside,
///   the certificates folder)
/// - `GET /devices`, `POST /devices` `{"environment","topic"}` → mint a simulated device
///   (`{"token","environment","topic"}`); with `"token"` → register that token
/// - `DELETE /devices/<token>[?timestamp_ms=T&reason=Unregistered|ExpiredToken]` → unregister: pushes
///   get `410` with that timestamp (default: now)
/// - `GET /devices/<token>/notifications?after=N&wait_ms=W&limit=L` → the token's notifications
///   with sequence > N; if none, waits up to W ms (at most 60000) for one (long-poll). Answers
///   `{"notifications":[...],"last_sequence":S}`.
/// - `GET /log?apns_id=&apns_unique_id=&token=&topic=&channel_id=&limit=&after=&before=` and
///   `GET /rejections?token=&reason=&status=&limit=&after=&before=` → one page, oldest first:
///   `{"notifications" | "rejections":[...],"limit","total","truncated","next_after","next_before",
///   "oldest_sequence","newest_sequence","capacity","dropped","missed" (with after)}`: the newest `limit`
///   (default 1000, at most 100000) matching entries, or with `after` the oldest above that sequence, with
///   `before` the newest below it (``RingLog/page(after:before:limit:where:)``)
/// - `GET /` (the web console, ``MockConsole``), `GET /console.js`, `GET /console.css`: served without the
///   admin token (they hold no data; the page asks for the token and sends it with every call)
/// - `POST /send` `{"environment","token","topic","push_type","priority","collapse_id","payload" (JSON text)}`
///   → the console's test push, sent by the configured ``TestPushSender`` (501 without one) to the mock's own
///   listener: `{"status","http_status","reason","apns_id","apns_unique_id","explanation","fix",...}`
/// - `GET /deliveries/<sequence>/apns` → the delivery as an Xcode Simulator `.apns` file (``SimulatorPushFile``:
///   `Simulator Target Bundle` and the payload as delivered), an attachment; 404 for a sequence not in the log
/// - `GET /saved-pushes`, `POST /saved-pushes` `{"name","topic","push_type","priority","collapse_id","payload"}`,
///   `DELETE /saved-pushes/<name>`, `POST /saved-pushes/<name>/send` `{"environment","token" | "channel_id"}` →
///   the console's saved pushes (kept for the server's life, and in ``MockServerConfiguration/savedPushesFile``),
///   replayed like `POST /send` (to a channel: one broadcast to the topic's bundle id)
/// - `GET /faults`, `POST /faults` (one fault or a list: `{"kind":"respond|delay|goaway|close|reset|stall|blackhole",
///   "status","reason","delay_ms","after_streams","token" | "topic","count","skip"}`), `DELETE /faults`,
///   `DELETE /faults/<id>`
/// - `POST /reset` → forget devices, faults, the log, expired tokens and the clock offset (keys stay)
/// - `GET /clock`, `POST /clock` `{"advance_seconds":N}` → move the mock's clock (`{"now_ms":T}`)
/// - `POST /restart` → ``MockAPNsServer/restart()``: every APNs connection ends (graceful GOAWAY),
///   both APNs listeners listen again on the same ports; state kept. Answers when done:
///   `{"status":"restarted","sandbox_port":P,"production_port":Q}`
/// - `POST /tokens/expire` → ``MockAPNsServer/expireProviderTokens()``: every provider token seen so
///   far gets `ExpiredProviderToken` from now on (`{"expired":N}`)
/// - `GET /metrics` → the mock's Prometheus metrics (``MockMetrics``), in the text exposition format
///   (`text/plain; version=0.0.4`); behind the same guards as every admin endpoint (the admin token if one
///   is configured)
///
/// A notification is `{"sequence","time" (ms),"environment","token","topic","push_type","priority",
/// "expiration","collapse_id","apns_id","apns_unique_id","payload" (the JSON text), "warnings" (with
/// ``MockServerConfiguration/activityAttributes``: why the device would not decode a Live Activity push)}`. Errors answer
/// 400/401/403/404/405/413 with `{"error":{"code","message","fix"}}`.
enum MockAdminServer {
    static func bind(
        host: String, port: Int, state: MockState, hooks: AdminHooks, policy: AdminPolicy,
        logger: Logger
    ) async throws -> HTTP1Server {
        let api = MockAdminAPI(state: state, hooks: hooks, policy: policy, logger: logger)
        do {
            return try await HTTP1Server.start(
                HTTP1Server.Configuration(
                    host: host, port: port, maximumBody: MockAdminAPI.maximumBody, backlog: 256,
                    threadName: "kkpush.admin"),
                logger: logger
            ) { request in await api.respond(to: request) }
        } catch {
            throw BindFailure.error(
                host: host, port: port, what: "the admin API", hostParameter: "adminHost",
                portAdvice: "Choose another admin port (0 picks a free one) or stop what is using it.", error: error)
        }
    }
}

/// The old name of the admin API's request-target reader (kept for its tests).
enum AdminHandler {
    /// The path and query parameters of `uri` (``HTTPRequest/split(_:)``).
    static func split(_ uri: String) -> (String, [String: String]) {
        let (path, query) = HTTPRequest.split(uri)
        return (path, query)
    }
}
