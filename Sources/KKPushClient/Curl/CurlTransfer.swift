internal import CCurl
import Foundation
import KKPushCore

/// A libcurl header list, freed when the last transfer using it lets go.
final class CurlHeaderList {
    let list: UnsafeMutablePointer<curl_slist>?

    init(lines: [String]) throws {
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for line in lines {
            guard let next = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw KKPushError(code: .curlOutOfMemory, message: "libcurl could not build a header list.")
            }
            list = next
        }
        self.list = list
    }

    deinit { if let list { curl_slist_free_all(list) } }
}

/// The header fields that are the same for many requests; the key of the header-list cache.
struct HeaderKey: Hashable {
    var topic: String?
    var pushType: String?
    var priority: Int?
    var expiration: Int?
    var generation: Int
}

/// One reusable libcurl easy handle with its buffers: the owner of the `CURL*`.
/// Only the loop thread touches it.
final class CurlTransfer {
    private(set) var easy: UnsafeMutableRawPointer
    var job: Job?
    var headers: CurlHeaderList?
    var caFile: String?
    var body: [UInt8] = []
    var apnsID: String?
    var apnsUniqueID: String?
    /// True once the whole body of the current send was handed to libcurl (so it may be on the wire).
    var bodyHandedOver = false
    /// Sends of the current attempt (libcurl's `CURLOPT_PREREQFUNCTION` calls).
    var sends = 0
    var resendRefused = false
    /// The last send went on a connection kkpush had already shut down: it cannot have reached the server.
    var sentOnDeadConnection = false
    var localPort = 0
    /// The number of the connection the last send went on (``ClientConnections/Connection/number``).
    var connection: Int?
    var sentNanos: UInt64 = 0
    var retryAfter: Double?
    /// libcurl's own re-sends over this handle's life. libcurl counts them per handle
    /// (`state.retrycount`) and resets the count only in `curl_easy_reset`, so a reused handle that
    /// saw five refused streams over thousands of pushes fails the next one with "Connection died,
    /// tried 5 times before giving up" (curl error 55). The handle is made anew before that.
    private var lifetimeResends = 0
    private var payloadCount = 0
    private var readOffset = 0
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var postBuffer: UnsafeMutableRawPointer
    private var postCapacity: Int
    private var urlBuffer: UnsafeMutablePointer<UInt8>
    private var urlCapacity = 512
    private let settings: EasySettings
    /// The endpoint's URL, parsed once (`CURLU *`), and the prefix it was parsed from.
    private var parsedURL: OpaquePointer?
    private var parsedPrefix: [UInt8]?
    /// Where the path starts in `urlBuffer` (after the scheme, host and port of the prefix).
    private var pathStart = 0
    private var usingHandle = false

    struct EasySettings {
        var connectTimeoutMS: Int
        var requestTimeoutMS: Int
        /// Seconds a connection may sit idle and still be reused (`CURLOPT_MAXAGE_CONN`).
        var idleReuseSeconds: Int = 118
        var proxyURL: String?
        /// The environment's proxy settings, read once (used when `proxyURL` is nil).
        var environmentProxy = EnvironmentProxy()
        var certificatePEM: [UInt8]?
        var privateKeyPEM: [UInt8]?
        /// The loop's connections, told of every socket opened and closed, and of what each attempt does.
        var connections: ClientConnections
    }

    init(settings: EasySettings) throws {
        self.settings = settings
        postCapacity = 5120
        postBuffer = UnsafeMutableRawPointer.allocate(byteCount: postCapacity, alignment: 16)
        urlBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: urlCapacity)
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(kk_curl_error_size()) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(kk_curl_error_size()) + 1)
        guard let e = curl_easy_init() else {
            postBuffer.deallocate()
            urlBuffer.deallocate()
            errorBuffer.deallocate()
            throw KKPushError(code: .curlInit, message: "curl_easy_init failed (out of memory?).")
        }
        easy = e
        body.reserveCapacity(256)
        do {
            try configure()
        } catch {
            curl_easy_cleanup(easy)
            postBuffer.deallocate()
            urlBuffer.deallocate()
            errorBuffer.deallocate()
            throw error
        }
    }

    deinit {
        curl_easy_cleanup(easy)
        if let parsedURL { curl_url_cleanup(parsedURL) }
        postBuffer.deallocate()
        urlBuffer.deallocate()
        errorBuffer.deallocate()
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        let rc = kk_curl_easy_setopt_long(easy, option, value)
        guard rc == CURLE_OK else { throw Self.setoptError(option, rc) }
    }

    private func set(_ option: CURLoption, string: String) throws {
        let rc = string.withCString { kk_curl_easy_setopt_ptr(easy, option, $0) }
        guard rc == CURLE_OK else { throw Self.setoptError(option, rc) }
    }

    private func setBlob(_ option: CURLoption, _ bytes: [UInt8]) throws {
        let rc = bytes.withUnsafeBytes { raw -> CURLcode in
            var blob = curl_blob(
                data: UnsafeMutableRawPointer(mutating: raw.baseAddress), len: raw.count, flags: UInt32(CURL_BLOB_COPY))
            return withUnsafeMutablePointer(to: &blob) { kk_curl_easy_setopt_ptr(easy, option, $0) }
        }
        guard rc == CURLE_OK else { throw Self.setoptError(option, rc) }
    }

    static func setoptError(_ option: CURLoption, _ rc: CURLcode) -> KKPushError {
        KKPushError(
            code: .curlSetopt,
            message: "libcurl refused option \(option.rawValue): \(String(cString: curl_easy_strerror(rc))).",
            fix: "This libcurl may be too old (the client needs 7.71 or later with HTTP/2).",
            underlying: KKPushError.Cause("CURLcode \(rc.rawValue)"))
    }

    private func configure() throws {
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_HTTP_VERSION, kk_curl_http_version_2tls())
        try set(CURLOPT_PIPEWAIT, 1)
        try set(CURLOPT_SSLVERSION, kk_curl_sslversion_tlsv1_2())
        try set(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMS)
        try set(CURLOPT_TIMEOUT_MS, settings.requestTimeoutMS)
        try set(CURLOPT_MAXAGE_CONN, settings.idleReuseSeconds)
        try set(CURLOPT_TCP_NODELAY, 1)
        var rc = kk_curl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_WRITEFUNCTION, rc) }
        rc = kk_curl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_HEADERFUNCTION, rc) }
        // The body goes through a read callback, not CURLOPT_POSTFIELDS: for post fields libcurl
        // re-sends a request on its own after a connection failure without asking anyone; with a read
        // callback it must first call the seek callback, where kkpush decides (see `seek`).
        try set(CURLOPT_POST, 1)
        rc = kk_curl_easy_setopt_data_callback(easy, CURLOPT_READFUNCTION, curlReadCallback)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_READFUNCTION, rc) }
        rc = kk_curl_easy_setopt_seek_callback(easy, curlSeekCallback)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_SEEKFUNCTION, rc) }
        rc = kk_curl_easy_setopt_prereq_callback(easy, curlPrereqCallback)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_PREREQFUNCTION, rc) }
        rc = kk_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_ERRORBUFFER, rc) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        for option in [
            CURLOPT_WRITEDATA, CURLOPT_HEADERDATA, CURLOPT_PRIVATE, CURLOPT_READDATA, CURLOPT_SEEKDATA,
            CURLOPT_PREREQDATA,
        ] {
            let rc = kk_curl_easy_setopt_ptr(easy, option, me)
            guard rc == CURLE_OK else { throw Self.setoptError(option, rc) }
        }
        rc = kk_curl_easy_setopt_sockopt_callback(easy, clientConnectionOpened)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_SOCKOPTFUNCTION, rc) }
        rc = kk_curl_easy_setopt_closesocket_callback(easy, clientConnectionClosed)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_CLOSESOCKETFUNCTION, rc) }
        for option in [CURLOPT_SOCKOPTDATA, CURLOPT_CLOSESOCKETDATA] {
            let rc = kk_curl_easy_setopt_ptr(easy, option, settings.connections.userdata)
            guard rc == CURLE_OK else { throw Self.setoptError(option, rc) }
        }
        if let proxy = settings.proxyURL {
            try set(CURLOPT_PROXY, string: proxy)
            if proxy.lowercased().hasPrefix("http") { try set(CURLOPT_HTTPPROXYTUNNEL, 1) }
        } else {
            try set(CURLOPT_PROXY, string: settings.environmentProxy.proxy)
        }
        try set(CURLOPT_NOPROXY, string: settings.environmentProxy.noProxy)
        if let cert = settings.certificatePEM, let key = settings.privateKeyPEM {
            try set(CURLOPT_SSLCERTTYPE, string: "PEM")
            try setBlob(CURLOPT_SSLCERT_BLOB, cert)
            try set(CURLOPT_SSLKEYTYPE, string: "PEM")
            try setBlob(CURLOPT_SSLKEY_BLOB, key)
        }
    }

    /// Recreates the easy handle from scratch (to go back to the system CA store).
    private func recreate() throws {
        guard let e = curl_easy_init() else {
            throw KKPushError(code: .curlInit, message: "curl_easy_init failed (out of memory?).")
        }
        curl_easy_cleanup(easy)
        easy = e
        caFile = nil
        usingHandle = false
        try configure()
    }

    /// The transfer that owns `easy` (from `CURLOPT_PRIVATE`).
    static func owner(of easy: UnsafeMutableRawPointer) -> CurlTransfer? {
        var raw: UnsafeMutableRawPointer? = nil
        guard kk_curl_easy_getinfo_ptr(easy, CURLINFO_PRIVATE, &raw) == CURLE_OK, let raw else { return nil }
        return Unmanaged<CurlTransfer>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Points the handle at `job`'s request: URL, headers, body. `headers` stays alive until the
    /// transfer ends.
    func prepare(_ job: Job, headers: CurlHeaderList, urlPrefix: [UInt8]) throws {
        if lifetimeResends >= 4 {
            try recreate()
            lifetimeResends = 0
        }
        let endpointCA = job.request.endpoint.caFile
        if endpointCA != caFile {
            if let endpointCA {
                try set(CURLOPT_CAINFO, string: endpointCA)
                caFile = endpointCA
            } else {
                try recreate()
            }
        }
        // The URL is built in a buffer of our own (libcurl copies it): no string per request.
        let token = job.request.deviceToken.utf8
        let length = urlPrefix.count + token.count
        if length + 1 > urlCapacity {
            urlBuffer.deallocate()
            urlCapacity = length + 1
            urlBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: urlCapacity)
        }
        urlPrefix.withUnsafeBufferPointer { urlBuffer.update(from: $0.baseAddress!, count: $0.count) }
        let copied = token.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let base = bytes.baseAddress else { return true }
            (urlBuffer + urlPrefix.count).update(from: base, count: bytes.count)
            return true
        }
        if copied == nil {
            var i = urlPrefix.count
            for byte in token {
                urlBuffer[i] = byte
                i += 1
            }
        }
        urlBuffer[length] = 0
        try setURL(prefix: urlPrefix, plainToken: job.request.plainToken)
        let rc = kk_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headers.list)
        guard rc == CURLE_OK else { throw Self.setoptError(CURLOPT_HTTPHEADER, rc) }
        let payload = job.request.payload
        if payload.count > postCapacity {
            postBuffer.deallocate()
            postCapacity = payload.count
            postBuffer = UnsafeMutableRawPointer.allocate(byteCount: postCapacity, alignment: 16)
        }
        payload.withUnsafeBytes { raw in
            if let base = raw.baseAddress, raw.count > 0 { postBuffer.copyMemory(from: base, byteCount: raw.count) }
        }
        try set(CURLOPT_POSTFIELDSIZE, payload.count)
        payloadCount = payload.count
        readOffset = 0
        try set(CURLOPT_FRESH_CONNECT, job.freshConnect ? 1 : 0)
        self.headers = headers
        self.job = job
        body.removeAll(keepingCapacity: true)
        apnsID = nil
        apnsUniqueID = nil
        bodyHandedOver = false
        sends = 0
        resendRefused = false
        sentOnDeadConnection = false
        localPort = 0
        connection = nil
        sentNanos = 0
        retryAfter = nil
        errorBuffer[0] = 0
    }

    /// Hands libcurl the URL in `urlBuffer`. A plain token (ASCII letters and digits, every token APNs
    /// can accept) goes as a path on a parsed URL handle (`CURLOPT_CURLU`): libcurl then copies the
    /// handle instead of parsing the whole URL for every push. Any other token goes as the URL text, so
    /// libcurl judges it exactly as it would any URL.
    private func setURL(prefix: [UInt8], plainToken: Bool) throws {
        if plainToken, let handle = urlHandle(for: prefix) {
            let rc = curl_url_set(
                handle, CURLUPART_PATH, UnsafeRawPointer(urlBuffer + pathStart).assumingMemoryBound(to: CChar.self), 0)
            if rc == CURLUE_OK {
                let rcU = kk_curl_easy_setopt_ptr(easy, CURLOPT_CURLU, UnsafeRawPointer(handle))
                guard rcU == CURLE_OK else { throw Self.setoptError(CURLOPT_CURLU, rcU) }
                usingHandle = true
                return
            }
        }
        if usingHandle {
            let rcU = kk_curl_easy_setopt_ptr(easy, CURLOPT_CURLU, nil)
            guard rcU == CURLE_OK else { throw Self.setoptError(CURLOPT_CURLU, rcU) }
            usingHandle = false
        }
        let rcURL = kk_curl_easy_setopt_ptr(easy, CURLOPT_URL, urlBuffer)
        guard rcURL == CURLE_OK else { throw Self.setoptError(CURLOPT_URL, rcURL) }
    }

    /// The URL handle parsed from `prefix` (the endpoint's base URL and `/3/device/`), made once per
    /// endpoint; nil if libcurl cannot parse it (then the URL goes as text and libcurl reports it).
    private func urlHandle(for prefix: [UInt8]) -> OpaquePointer? {
        if let handle = parsedURL, parsedPrefix == prefix { return handle }
        if parsedURL == nil { parsedURL = curl_url() }
        guard let handle = parsedURL else { return nil }
        parsedPrefix = nil
        let rc = String(decoding: prefix, as: UTF8.self).withCString { curl_url_set(handle, CURLUPART_URL, $0, 0) }
        guard rc == CURLUE_OK else { return nil }
        var path: UnsafeMutablePointer<CChar>? = nil
        guard curl_url_get(handle, CURLUPART_PATH, &path, 0) == CURLUE_OK, let path else { return nil }
        let pathBytes = Array(UnsafeRawBufferPointer(start: path, count: strlen(path)))
        curl_free(path)
        // The path must be the prefix's tail ("/3/device/" after the base URL's own path, if any), byte for
        // byte; if libcurl normalised it, the URL goes as text instead.
        guard pathBytes.count <= prefix.count, prefix.suffix(pathBytes.count).elementsEqual(pathBytes) else {
            return nil
        }
        pathStart = prefix.count - pathBytes.count
        parsedPrefix = prefix
        return handle
    }

    /// What libcurl says about the attempt that just ended with `code`.
    func result(code: CURLcode) -> AttemptResult {
        var status = 0
        _ = kk_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = kk_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        var sent = 0
        _ = kk_curl_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &sent)
        let message = code == CURLE_OK ? "" : String(cString: curl_easy_strerror(code))
        let detail = code == CURLE_OK ? "" : String(cString: errorBuffer)
        let codeClass = CurlCodeClass(code)
        return AttemptResult(
            curlCode: Int(code.rawValue), curlMessage: message, transport: codeClass.transport,
            isHTTP1: version == CURL_HTTP_VERSION_1_0 || version == CURL_HTTP_VERSION_1_1, status: status,
            requestBytesSent: sent, detail: detail, bodySent: bodyHandedOver && !sentOnDeadConnection, sends: sends,
            resendRefused: resendRefused, localPort: localPort, connection: connection, sentNanos: sentNanos,
            retryAfter: retryAfter,
            apnsID: apnsID, apnsUniqueID: apnsUniqueID, body: body)
    }

    /// Lets go of the job and the headers after the attempt ended.
    func reset() {
        _ = takeJob()
    }

    /// Lets go of the headers after the attempt ended, and hands the job over (moved out, not copied).
    func takeJob() -> Job? {
        if sends > 1 { lifetimeResends += sends - 1 }
        headers = nil
        bodyHandedOver = false
        return job.take()
    }

    fileprivate func appendHeader(_ bytes: UnsafeRawBufferPointer) {
        // Only the status line ("h"), apns-* ("a") and retry-after ("r") matter: the rest end here.
        guard let first = bytes.first, first | 0x20 == 0x68 || first | 0x20 == 0x61 || first | 0x20 == 0x72 else {
            return
        }
        if Self.hasPrefix(bytes, Self.statusLinePrefix) {
            // The first answer bytes: the connection is alive.
            settings.connections.answered(port: localPort, at: monotonicNanos())
            return
        }
        // Three response headers matter: apns-id, apns-unique-id and retry-after (compared without allocating).
        let name: Int
        let nameLength: Int
        if Self.hasPrefix(bytes, Self.apnsIDName) {
            name = 0
            nameLength = Self.apnsIDName.count
        } else if Self.hasPrefix(bytes, Self.apnsUniqueIDName) {
            name = 1
            nameLength = Self.apnsUniqueIDName.count
        } else if Self.hasPrefix(bytes, Self.retryAfterName) {
            name = 2
            nameLength = Self.retryAfterName.count
        } else {
            return
        }
        var start = nameLength
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A || bytes[end - 1] == 0x20 { end -= 1 }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        switch name {
        case 0: apnsID = value
        case 1: apnsUniqueID = value
        default: retryAfter = RetryAfter.seconds(value, now: Date())
        }
    }

    private static let statusLinePrefix = Array("http/".utf8)
    private static let apnsIDName = Array("apns-id:".utf8)
    private static let apnsUniqueIDName = Array("apns-unique-id:".utf8)
    private static let retryAfterName = Array("retry-after:".utf8)

    // MARK: The body and re-sends

    /// libcurl asks for body bytes.
    fileprivate func read(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        let n = min(capacity, payloadCount - readOffset)
        if n > 0 {
            UnsafeMutableRawPointer(buffer).copyMemory(from: postBuffer + readOffset, byteCount: n)
            readOffset += n
        }
        if readOffset >= payloadCount { bodyHandedOver = true }
        return n
    }

    /// libcurl is about to send the request (again): on which connection.
    fileprivate func prereq(localPort port: Int) {
        if sends > 0 { settings.connections.attemptEnded(port: localPort) }
        sends += 1
        readOffset = 0
        bodyHandedOver = false
        localPort = Int(port)
        sentNanos = monotonicNanos()
        (sentOnDeadConnection, connection) = settings.connections.attemptStarted(port: localPort)
    }

    /// libcurl wants to send the body again (a send on a connection kkpush had shut down never reached the
    /// server, so its re-send is safe too). It asks only after body bytes were sent, when it retries
    /// on a new connection by itself (`Curl_retry_request`): after `REFUSED_STREAM` (the server says it
    /// did not process the stream: a GOAWAY below it, or a refusal), or after a reused connection failed
    /// before any answer byte. The first is safe; the second may deliver twice. libcurl records a
    /// failure in the error buffer for the second (a receive error) and none for the first, so an empty
    /// buffer lets the re-send go ahead, and anything else refuses it: the transfer then fails with
    /// `CURLE_SEND_FAIL_REWIND`, and the loop retries it, flagged as possibly duplicated.
    fileprivate func seek(offset: Int64) -> Int32 {
        guard offset == 0 else { return kk_curl_seekfunc_fail() }
        if errorBuffer[0] == 0 || sentOnDeadConnection {
            readOffset = 0
            bodyHandedOver = false
            return kk_curl_seekfunc_ok()
        }
        resendRefused = true
        return kk_curl_seekfunc_fail()
    }

    /// True if `bytes` starts with `prefix` (lowercase ASCII), ignoring case.
    private static func hasPrefix(_ bytes: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        guard bytes.count >= prefix.count else { return false }
        for i in 0..<prefix.count where bytes[i] | 0x20 != prefix[i] && bytes[i] != prefix[i] { return false }
        return true
    }

    fileprivate func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // APNs error bodies are tiny; anything past 64 KiB is not APNs.
        guard body.count + bytes.count <= 65_536 else { return false }
        body.append(contentsOf: bytes)
        return true
    }
}

private let curlReadCallback: kk_curl_data_callback = { data, size, count, user in
    guard let user, let data else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.read(into: data, capacity: size * count)
}

private let curlSeekCallback: kk_curl_seek_callback = { user, offset, _ in
    guard let user else { return kk_curl_seekfunc_fail() }
    return Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().seek(offset: Int64(offset))
}

private let curlPrereqCallback: kk_curl_prereq_callback = { user, _, _, _, localPort in
    if let user { Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue().prereq(localPort: Int(localPort)) }
    return kk_curl_prereqfunc_ok()
}

private let curlWriteCallback: kk_curl_data_callback = { data, size, count, user in
    let n = size * count
    guard let user, let data else { return n }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    return transfer.appendBody(UnsafeRawBufferPointer(start: data, count: n)) ? n : 0
}

private let curlHeaderCallback: kk_curl_data_callback = { data, size, count, user in
    let n = size * count
    guard let user, let data else { return n }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(user).takeUnretainedValue()
    transfer.appendHeader(UnsafeRawBufferPointer(start: data, count: n))
    return n
}
