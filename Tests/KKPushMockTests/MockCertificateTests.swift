import Foundation
import KKPushCore
import KKPushMock
import Testing

@Suite("Client-certificate (mTLS) authentication")
struct MockCertificateTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var cert: String
        var environment: APNsEnvironment
        var topic: String?
        var status: Int
        var reason: String?
        var testDescription: String { "\(cert) → \(environment), topic \(topic ?? "-"): \(status) \(reason ?? "")" }
    }

    static let cases: [Case] = [
        Case(cert: "client-production", environment: .production, topic: Fixtures.topic, status: 200),
        Case(cert: "client-production", environment: .production, topic: nil, status: 200),
        Case(
            cert: "client-production", environment: .sandbox, topic: Fixtures.topic, status: 403,
            reason: "BadCertificateEnvironment"),
        Case(cert: "client-development", environment: .sandbox, topic: nil, status: 200),
        Case(
            cert: "client-development", environment: .production, topic: nil, status: 403,
            reason: "BadCertificateEnvironment"),
        Case(
            cert: "client-development", environment: .sandbox, topic: "com.other.app", status: 400, reason: "BadTopic"),
        Case(cert: "client-universal", environment: .sandbox, topic: Fixtures.topic, status: 200),
        Case(cert: "client-universal", environment: .production, topic: Fixtures.topic, status: 200),
        Case(cert: "client-universal", environment: .production, topic: nil, status: 400, reason: "MissingTopic"),
    ]

    @Test("Environment and topics come from the certificate", arguments: cases)
    func certificate(_ c: Case) async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let r = try await Curl.one(
                Curl.push(
                    server.endpoint(c.environment), token: Fixtures.randomToken(), authorization: nil, topic: c.topic),
                clientCert: c.cert)
            #expect(r.status == c.status)
            #expect(r.reason == c.reason)
            if c.status == 200 {
                #expect(server.deliveries().first?.topic == Fixtures.topic)
            }
        }
    }

    @Test("On a certificate connection the authorization header is ignored")
    func authorizationIgnored() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let r = try await Curl.one(
                Curl.push(server.productionEndpoint, token: Fixtures.randomToken(), authorization: "garbage"),
                clientCert: "client-production")
            #expect(r.status == 200)
        }
    }

    @Test("voip over a universal certificate; location needs a token")
    func pushTypes() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let voip = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil,
                    topic: Fixtures.topic + ".voip", pushType: "voip"),
                clientCert: "client-universal")
            #expect(voip.status == 200)
            let location = try await Curl.one(
                Curl.push(
                    server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil,
                    topic: Fixtures.topic + ".location-query", pushType: "location"),
                clientCert: "client-universal")
            #expect(location.status == 400)
            #expect(location.reason == "BadTopic")
        }
    }

    @Test("An expired certificate fails the TLS handshake; the server keeps serving")
    func expiredCertificate() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let r = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil),
                clientCert: "client-expired")
            #expect(r.status == 0)
            let ok = try await Curl.one(
                Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil),
                clientCert: "client-development")
            #expect(ok.status == 200)
        }
    }

    @Test("Optionally, BadCertificateEnvironment as a GOAWAY with JSON debug data")
    func goAwayOnEnvironment() async throws {
        var configuration = Fixtures.configuration()
        configuration.goAwayOnBadCertificateEnvironment = true
        try await withMockServer(configuration: configuration) { server in
            var request = Curl.push(server.sandboxEndpoint, token: Fixtures.randomToken(), authorization: nil)
            request.extra = ["-v"]
            let (responses, result) = try await Curl.send([request], clientCert: "client-production")
            #expect(responses.first?.status != 200)
            #expect(server.deliveries().isEmpty)
            #expect(result.status != 0)
        }
    }
}
