import Foundation
import KKPushAuth
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Fixtures and real clients (the curl binary) for the mock server's tests.
enum Fixtures {
    /// The repository's `Certificates/` folder, found from this file.
    static let certificates: String = Repository.certificates.path

    static func path(_ name: String) -> String { Repository.certificate(name) }

    static let teamID = "KKTEAM0001"
    static let bothKeyID = "KKTEST0001"
    static let sandboxOnlyKeyID = "KKTEST0002"
    static let topic = "nl.kantinekoning.app"
    static let payload = #"{"aps":{"alert":{"title":"Bestelling klaar","body":"Je tosti staat klaar"}}}"#

    static func privateKey(_ keyID: String) throws -> ES256PrivateKey {
        try ES256PrivateKey(contentsOfFile: path("AuthKey_\(keyID).p8"))
    }

    /// A provider token signed by the registered key `keyID` (raw r‖s signature).
    static func token(keyID: String = bothKeyID, teamID: String = teamID, issuedAt: Date) throws -> String {
        try ProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: privateKey(keyID))
    }

    /// The same token with a DER signature (as `openssl dgst -sign` makes, and Apple's own sample).
    static func derToken(keyID: String = bothKeyID, issuedAt: Date) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(
            Array(#"{"iss":"\#(teamID)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#.utf8))
        let signed = header + "." + claims
        let der = try privateKey(keyID).derSignature(for: Array(signed.utf8))
        return signed + "." + Base64URL.encode(der)
    }

    /// A configuration on ephemeral ports with the repository's certificates and a manual clock.
    static func configuration(clock: ManualWallClock = ManualWallClock(Date())) -> MockServerConfiguration {
        var c = MockServerConfiguration.forTests()
        c.certificatesDirectory = certificates
        c.clock = clock
        return c
    }

    static func randomToken() -> String { TestTokens.random() }
}

/// One HTTP request for curl.
struct CurlRequest {
    var url: String
    var method = "POST"
    var headers: [String] = []
    var body: String? = nil
    var extra: [String] = []
}

/// One curl answer: status (0 if none), response headers, body, whether the connection was new,
/// and the raw -w line.
struct CurlResponse {
    var status: Int
    var headers: [String: [String]]
    var body: String
    var newConnection: Bool

    func header(_ name: String) -> String? { headers[name.lowercased()]?.first }

    /// The `reason` of an error body.
    var reason: String? {
        guard let data = body.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["reason"] as? String
    }

    var timestamp: Int64? {
        guard let data = body.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (object["timestamp"] as? NSNumber)?.int64Value
    }
}

/// The result of running a process.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    /// True if the process had to be stopped at the time limit.
    var timedOut = false
}

enum Curl {
    static let marker = "@@KKPUSH-CURL@@"

    /// Runs `arguments` (bounded by `timeout` seconds) and collects its output.
    static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil, timeout: TimeInterval = 20)
        async throws -> ProcessResult
    {
        let output = try await runProcess(URL(fileURLWithPath: executable), arguments, stdin: stdin, timeout: timeout)
        return ProcessResult(
            status: output.status, stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self), timedOut: output.timedOut)
    }

    /// Sends `requests` with one curl process (so one HTTP/2 connection while the server allows it).
    static func send(
        _ requests: [CurlRequest], ca: String = Fixtures.path("ca.crt"), clientCert: String? = nil,
        maxTime: Int = 30
    ) async throws -> (responses: [CurlResponse], result: ProcessResult) {
        var args: [String] = []
        for (i, r) in requests.enumerated() {
            if i > 0 { args.append("--next") }
            args += ["--http2", "--cacert", ca, "-sS", "--max-time", String(maxTime), "-X", r.method]
            args += ["-w", "\n\(marker)%{http_code}|%{num_connects}|%{header_json}\(marker)\n"]
            if let clientCert {
                args += ["--cert", Fixtures.path("\(clientCert).crt"), "--key", Fixtures.path("\(clientCert).key")]
            }
            for h in r.headers { args += ["-H", h] }
            if let body = r.body { args += ["--data-binary", body] }
            args += r.extra
            args.append(r.url)
        }
        let result = try await run("/usr/bin/curl", args, timeout: TimeInterval(maxTime * requests.count + 10))
        var responses: [CurlResponse] = []
        var rest = Substring(result.stdout)
        while let start = rest.range(of: marker) {
            let body = String(rest[..<start.lowerBound]).trimmingCharacters(in: .newlines)
            let afterStart = rest[start.upperBound...]
            guard let end = afterStart.range(of: marker) else { break }
            let info = afterStart[..<end.lowerBound]
            rest = afterStart[end.upperBound...]
            let parts = info.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
            let status = Int(parts[0]) ?? 0
            let connects = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            var headers: [String: [String]] = [:]
            if parts.count > 2, let data = String(parts[2]).data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: [String]]
            {
                headers = object
            }
            responses.append(CurlResponse(status: status, headers: headers, body: body, newConnection: connects > 0))
        }
        return (responses, result)
    }

    /// A device push.
    static func push(
        _ endpoint: APNsEndpoint, token: String, authorization: String?, topic: String? = Fixtures.topic,
        pushType: String? = "alert", headers: [String] = [], body: String? = Fixtures.payload
    ) -> CurlRequest {
        var h: [String] = []
        if let authorization { h.append("authorization: bearer \(authorization)") }
        if let topic { h.append("apns-topic: \(topic)") }
        if let pushType { h.append("apns-push-type: \(pushType)") }
        return CurlRequest(url: endpoint.deviceURL(token: token), headers: h + headers, body: body)
    }

    /// One request, one connection.
    static func one(_ request: CurlRequest, clientCert: String? = nil, maxTime: Int = 30) async throws -> CurlResponse {
        let (responses, result) = try await send([request], clientCert: clientCert, maxTime: maxTime)
        guard let first = responses.first else {
            return CurlResponse(status: 0, headers: [:], body: result.stderr, newConnection: true)
        }
        if first.status == 0 && first.body.isEmpty {
            // No answer: what curl said instead, for the failure message.
            let stopped = result.timedOut ? " (stopped at the time limit)" : ""
            return CurlResponse(
                status: 0, headers: [:], body: "curl exit \(result.status)\(stopped): \(result.stderr)",
                newConnection: first.newConnection)
        }
        return first
    }
}
