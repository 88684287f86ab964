internal import CCurl
import Foundation
public import KKPushCore

/// APNs's answer to a broadcast or channel-management request.
public struct BroadcastResponse: Sendable, Equatable {
    /// The HTTP status (201 create, 200 read/list/broadcast, 204 delete; 4xx/5xx with a reason).
    public var status: Int
    /// `apns-request-id` of the answer.
    public var requestID: String?
    /// `apns-channel-id` of a create's answer.
    public var channelID: String?
    /// The error reason, if the request was refused.
    public var reason: APNsReason?
    /// A read's storage policy.
    public var storagePolicy: ChannelStoragePolicy?
    /// A read's push type (`LiveActivity`).
    public var pushType: String?
    /// A list's channel ids.
    public var channels: [String]?
    /// The answer body as received.
    public var body: [UInt8]

    /// True for a 2xx answer.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// Broadcast sends and channel management (§9): one libcurl easy transfer per request, HTTP/2 over TLS,
/// on a thread of its own. Authentication is the configuration's credential: the same provider-token
/// source as the client's sends (its JWT, renewed once after `ExpiredProviderToken`), or a client
/// certificate. Pre-flight uses ``BroadcastRules``, the rules the mock judges by.
public final class APNsBroadcastClient: Sendable {
    /// The credential, timeouts and proxy used.
    public let configuration: APNsClientConfiguration

    /// Creates a client; throws if libcurl cannot be set up or lacks HTTP/2.
    public init(configuration: APNsClientConfiguration) throws {
        guard Libcurl.globalInit() else {
            throw KKPushError(code: .curlGlobalInit, message: "curl_global_init failed.")
        }
        try LibcurlInfo.current.requireAPNsSupport()
        self.configuration = configuration
    }

    /// Creates, reads, deletes or lists channels at `endpoint` (Apple's
    /// ``APNsEndpoint/channelManagement(_:)`` or a stand-in).
    public func perform(_ request: ChannelRequest, at endpoint: APNsEndpoint) async throws -> BroadcastResponse {
        try await exchange(
            method: request.operation.method, url: endpoint.baseURL + request.path, headers: request.headerFields,
            body: request.body, caFile: endpoint.caFile)
    }

    /// Sends a broadcast to `endpoint` (an APNs host: Apple's ``APNsEndpoint/apple(_:port:)``, or a stand-in).
    /// Throws ``KKPushError`` `broadcast-preflight` if APNs would reject it by ``BroadcastRules``
    /// (unless `preflight` is off in the configuration).
    public func broadcast(_ request: BroadcastRequest, to endpoint: APNsEndpoint) async throws -> BroadcastResponse {
        if configuration.preflight {
            let problems = BroadcastRules.preflight(request)
            if let first = problems.first {
                throw KKPushError(
                    code: .broadcastPreflight,
                    message: "Not sent: APNs would reject this broadcast with \(first.code). \(first.message)",
                    fix: first.fix)
            }
        }
        return try await exchange(
            method: "POST", url: endpoint.baseURL + request.path, headers: request.headerFields,
            body: request.payload, caFile: endpoint.caFile)
    }

    private func exchange(
        method: String, url: String, headers: [(name: String, value: String)], body: [UInt8], caFile: String?
    ) async throws -> BroadcastResponse {
        var bearer: String? = nil
        if case .token(let source) = configuration.credential.storage {
            do {
                bearer = try source.currentBearer().value
            } catch {
                throw KKPushError(
                    code: .broadcastTransport, message: "No provider token: \(ErrorWords.describe(error)).",
                    fix: "Check the key file, key id and team id.")
            }
        }
        var response = try await perform(
            method: method, url: url, headers: headers, body: body, caFile: caFile, bearer: bearer)
        if response.reason == .expiredProviderToken, case .token(let source) = configuration.credential.storage,
            let old = bearer
        {
            try? source.refreshBearer(afterExpired: old)
            if let fresh = try? source.currentBearer().value, fresh != old {
                response = try await perform(
                    method: method, url: url, headers: headers, body: body, caFile: caFile, bearer: fresh)
            }
        }
        return response
    }

    private func perform(
        method: String, url: String, headers: [(name: String, value: String)], body: [UInt8], caFile: String?,
        bearer: String?
    ) async throws -> BroadcastResponse {
        var lines = headers.map { "\($0.name): \($0.value)" }
        if let bearer { lines.append("authorization: bearer \(bearer)") }
        lines.append("Accept:")
        if body.isEmpty { lines.append("Content-Type:") }
        let settings = EasyExchange.Settings(
            method: method, url: url, headerLines: lines, body: body, caFile: caFile,
            connectTimeoutMS: Int(configuration.connectTimeout.milliseconds),
            timeoutMS: Int(configuration.requestTimeout.milliseconds),
            proxy: configuration.proxyURL, credential: configuration.credential.storage)
        let raw: EasyExchange.Raw = try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try EasyExchange.run(settings) })
            }
            thread.name = "kkpush-broadcast"
            thread.start()
        }
        var out = BroadcastResponse(
            status: raw.status, requestID: raw.headers["apns-request-id"], channelID: raw.headers["apns-channel-id"],
            body: raw.body)
        let object = (try? JSONValue.parse(raw.body))?.objectValue
        if !out.isSuccess {
            out.reason =
                object?["reason"]?.stringValue.map(APNsReason.init(rawValue:)) ?? APNsReason("HTTP\(raw.status)")
        } else if let object {
            if case .int(let p) = object["message-storage-policy"] {
                out.storagePolicy = ChannelStoragePolicy(rawValue: p)
            }
            out.pushType = object["push-type"]?.stringValue
            out.channels = object["channels"]?.arrayValue?.compactMap(\.stringValue)
        }
        return out
    }
}

/// One blocking libcurl easy transfer (run on its own thread).
enum EasyExchange {
    struct Settings: @unchecked Sendable {
        var method: String
        var url: String
        var headerLines: [String]
        var body: [UInt8]
        var caFile: String?
        var connectTimeoutMS: Int
        var timeoutMS: Int
        var proxy: String?
        var credential: APNsCredential.Storage
    }

    struct Raw: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    final class Buffers {
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var upload: [UInt8] = []
        var offset = 0
    }

    static func run(_ s: Settings) throws -> Raw {
        guard let easy = curl_easy_init() else {
            throw KKPushError(code: .broadcastTransport, message: "curl_easy_init failed.")
        }
        defer { curl_easy_cleanup(easy) }
        let buffers = Buffers()
        buffers.upload = s.body
        let me = Unmanaged.passUnretained(buffers).toOpaque()
        func check(_ rc: CURLcode) throws {
            guard rc == CURLE_OK else {
                throw KKPushError(
                    code: .broadcastTransport, message: "libcurl: \(String(cString: curl_easy_strerror(rc))).")
            }
        }
        try check(kk_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        try check(kk_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, kk_curl_http_version_2tls()))
        try check(kk_curl_easy_setopt_long(easy, CURLOPT_SSLVERSION, kk_curl_sslversion_tlsv1_2()))
        try check(kk_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, s.connectTimeoutMS)))
        try check(kk_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, s.timeoutMS)))
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(kk_curl_error_size()))
        errorBuffer.initialize(to: 0)
        defer { errorBuffer.deallocate() }
        try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        try s.url.withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_URL, $0)) }
        try s.method.withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, $0)) }
        if s.method == "POST" {
            try check(kk_curl_easy_setopt_long(easy, CURLOPT_POST, 1))
            try check(kk_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(s.body.count)))
            try check(kk_curl_easy_setopt_data_callback(easy, CURLOPT_READFUNCTION, easyReadCallback))
            try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_READDATA, me))
        }
        try check(kk_curl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, easyWriteCallback))
        try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me))
        try check(kk_curl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, easyHeaderCallback))
        try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, me))
        if let caFile = s.caFile {
            try caFile.withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_CAINFO, $0)) }
        }
        if let proxy = s.proxy {
            try proxy.withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_PROXY, $0)) }
            if proxy.lowercased().hasPrefix("http") {
                try check(kk_curl_easy_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1))
            }
        }
        var blobs: [UnsafeMutableRawPointer] = []
        defer { for b in blobs { b.deallocate() } }
        if case .certificate(let cert, let key, _) = s.credential {
            for (option, bytes) in [(CURLOPT_SSLCERT_BLOB, cert), (CURLOPT_SSLKEY_BLOB, key)] {
                let p = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
                blobs.append(p)
                bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
                var blob = curl_blob(data: p, len: bytes.count, flags: UInt32(CURL_BLOB_COPY))
                try check(kk_curl_easy_setopt_ptr(easy, option, &blob))
            }
            try "PEM".withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_SSLCERTTYPE, $0)) }
            try "PEM".withCString { try check(kk_curl_easy_setopt_ptr(easy, CURLOPT_SSLKEYTYPE, $0)) }
        }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for line in s.headerLines { list = curl_slist_append(list, line) }
        defer { curl_slist_free_all(list) }
        try check(kk_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list))

        let rc = curl_easy_perform(easy)
        guard rc == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            throw KKPushError(
                code: .broadcastTransport,
                message:
                    "The request to \(s.url) failed: \(detail.isEmpty ? String(cString: curl_easy_strerror(rc)) : detail).",
                fix: "Check the host and port (url), the CA file (caFile) and the network.")
        }
        var status = 0
        _ = kk_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return Raw(status: status, headers: buffers.headers, body: buffers.body)
    }
}

private let easyWriteCallback: kk_curl_data_callback = { data, size, count, user in
    let n = size * count
    guard let user, let data else { return n }
    let b = Unmanaged<EasyExchange.Buffers>.fromOpaque(user).takeUnretainedValue()
    guard b.body.count + n <= 1 << 20 else { return 0 }
    b.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: n))
    return n
}

private let easyHeaderCallback: kk_curl_data_callback = { data, size, count, user in
    let n = size * count
    guard let user, let data else { return n }
    let b = Unmanaged<EasyExchange.Buffers>.fromOpaque(user).takeUnretainedValue()
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].trimmingWhitespace().lowercased()
        let value = line[line.index(after: colon)...].trimmingWhitespace()
        b.headers[name] = value
    }
    return n
}

private let easyReadCallback: kk_curl_data_callback = { data, size, count, user in
    guard let user, let data else { return 0 }
    let b = Unmanaged<EasyExchange.Buffers>.fromOpaque(user).takeUnretainedValue()
    let n = min(size * count, b.upload.count - b.offset)
    guard n > 0 else { return 0 }
    b.upload.withUnsafeBytes { src in
        UnsafeMutableRawPointer(data).copyMemory(from: src.baseAddress! + b.offset, byteCount: n)
    }
    b.offset += n
    return n
}
