import KKPushCore
import Testing

@Suite("APNs endpoints")
struct EndpointTests {
    @Test func appleHosts() {
        #expect(APNsEndpoint.sandbox.host == "api.sandbox.push.apple.com")
        #expect(APNsEndpoint.production.host == "api.push.apple.com")
        #expect(APNsEndpoint.apple(.production, port: 2197).baseURL == "https://api.push.apple.com:2197")
        #expect(APNsEndpoint.sandbox.isApple)
    }

    @Test(
        "Custom endpoints parse from URLs",
        arguments: [
            ("https://127.0.0.1:2197", "127.0.0.1", 2197),
            ("https://localhost", "localhost", 443),
            ("https://[::1]:8443/3/device/x", "::1", 8443),
            ("https://api.push.apple.com:2197", "api.push.apple.com", 2197),
        ])
    func parse(url: String, host: String, port: Int) throws {
        let e = try APNsEndpoint.parse(url: url, caFile: "/tmp/ca.crt")
        #expect(e.host == host)
        #expect(e.port == port)
        #expect(e.caFile == "/tmp/ca.crt")
    }

    @Test(
        "Bad URLs are errors that name the problem",
        arguments: [
            ("http://127.0.0.1:2197", "endpoint-scheme"), ("https://127.0.0.1:99999", "endpoint-port"),
            ("https://:443", "endpoint-host"), ("https://host:abc", "endpoint-port"),
        ])
    func badURLs(url: String, code: String) {
        #expect { try APNsEndpoint.parse(url: url) } throws: { ($0 as? KKPushError)?.code.rawValue == code }
    }

    @Test func lenientEnvironmentNames() {
        #expect(APNsEnvironment(lenient: " Sandbox ") == .sandbox)
        #expect(APNsEnvironment(lenient: "development") == .sandbox)
        #expect(APNsEnvironment(lenient: "PRODUCTION") == .production)
        #expect(APNsEnvironment(lenient: "staging") == nil)
    }
}

@Suite("APNs reasons")
struct ReasonTests {
    @Test("Every documented reason has a status, explanation and fix", arguments: APNsReason.allKnown)
    func documented(_ reason: APNsReason) {
        #expect([400, 403, 404, 405, 410, 413, 429, 500, 503].contains(reason.status))
        #expect(!reason.explanation.isEmpty)
        #expect(!reason.fix.isEmpty)
    }

    @Test func unknownReasonKept() {
        let r = APNsReason("SomethingNew")
        #expect(!r.isKnown)
        #expect(r.rawValue == "SomethingNew")
        #expect(r.status == 0)
    }

    @Test func retryable() {
        #expect(APNsReason.tooManyRequests.isRetryable)
        #expect(APNsReason.serviceUnavailable.isRetryable)
        #expect(!APNsReason.badDeviceToken.isRetryable)
        #expect(!APNsReason.unregistered.isRetryable)
    }
}
