import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@Suite("APNsClient against the mock server")
struct PushSendingAgainstMockTests {
    @Test("an accepted push carries apns-id (echoed) and apns-unique-id in sandbox")
    func accepted() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            var request = ClientFixtures.request(device.token)
            let id = UUID().uuidString.lowercased()
            request.apnsID = id
            let outcome = await client.send(request, environment: .sandbox)
            guard case .accepted(let apnsID, let unique) = outcome.result else {
                Issue.record("expected accepted, got \(outcome)")
                return
            }
            #expect(apnsID == id)
            #expect(unique != nil)
            #expect(outcome.attempts == 1)
            #expect(!outcome.possiblyDuplicated)
            #expect(outcome.duration > .zero)
            let delivered = server.deliveries(token: device.token)
            #expect(delivered.count == 1)
            #expect(delivered.first?.apnsID == id)
            #expect(delivered.first?.payload == String(decoding: ClientFixtures.payload, as: UTF8.self))
        }
    }

    @Test("a sandbox token sent to production is BadDeviceToken, with the explanation and fix")
    func wrongEnvironment() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .production)
            let rejection = try #require(outcome.rejection)
            #expect(rejection.status == 400)
            #expect(rejection.reason == .badDeviceToken)
            #expect(rejection.reason.explanation.isEmpty == false)
            #expect(rejection.reason.fix.isEmpty == false)
            #expect(outcome.attempts == 1)
        }
    }

    @Test("410 Unregistered carries the timestamp the mock set")
    func unregistered() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let when = Date(timeIntervalSince1970: 1_790_000_000.123)
            try server.unregister(token: device.token, at: when)
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            let rejection = try #require(outcome.rejection)
            #expect(rejection.status == 410)
            #expect(rejection.reason == .unregistered)
            let timestamp = try #require(rejection.timestamp)
            #expect(abs(timestamp.timeIntervalSince1970 - when.timeIntervalSince1970) < 0.002)
            #expect(outcome.attempts == 1)
        }
    }

    /// Requests APNs rejects, sent with pre-flight off so that the mock (the same rules) answers.
    static let badRequests: [(String, APNsReason, Int)] = [
        ("priority", .badPriority, 400),
        ("collapse", .badCollapseId, 400),
        ("apns-id", .badMessageId, 400),
        ("push-type", .invalidPushType, 400),
        ("no-topic", .missingTopic, 400),
        ("empty", .payloadEmpty, 400),
        ("large", .payloadTooLarge, 413),
        ("token", .badDeviceToken, 400),
        ("topic-suffix", .badTopic, 400),
    ]

    @Test("rejections the mock makes from the request itself", arguments: badRequests)
    func rejectedRequests(kind: String, reason: APNsReason, status: Int) async throws {
        try await ClientFixtures.withMockAndClient(client: { _, c in c.preflight = false }) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            var request = ClientFixtures.request(device.token)
            switch kind {
            case "priority": request.priority = 7
            case "collapse": request.collapseID = String(repeating: "x", count: 65)
            case "apns-id": request.apnsID = "not-a-uuid"
            case "push-type": request.pushType = PushType("bogus")
            case "no-topic": request.topic = nil
            case "empty": request.payload = []
            case "large":
                request.payload =
                    Array(#"{"aps":{"alert":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 4200)
                    + Array(#""}}"#.utf8)
            case "token": request.deviceToken = "abcd"
            case "topic-suffix": request.pushType = .voip
            default: Issue.record("unknown case \(kind)")
            }
            let outcome = await client.send(request, environment: .sandbox)
            let rejection = try #require(outcome.rejection, "\(kind): \(outcome)")
            // The mock and pre-flight share the rules: the answer is what pre-flight predicts.
            #expect(APNsRequestRules.preflight(request, authentication: .token).rejection?.reason == rejection.reason)
            #expect(rejection.reason == reason, "\(kind)")
            #expect(rejection.status == status, "\(kind)")
            #expect(outcome.attempts == 1)
            #expect(server.deliveries(token: device.token).isEmpty)
        }
    }

    @Test("pre-flight keeps a request APNs would reject on the machine", arguments: badRequests.prefix(4))
    func preflightBlocks(kind: String, reason: APNsReason, status: Int) async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            var request = ClientFixtures.request(device.token)
            switch kind {
            case "priority": request.priority = 7
            case "collapse": request.collapseID = String(repeating: "x", count: 65)
            case "apns-id": request.apnsID = "not-a-uuid"
            default: request.pushType = PushType("bogus")
            }
            let outcome = await client.send(request, environment: .sandbox)
            let failure = try #require(outcome.failure)
            #expect(failure.kind == .preflight)
            #expect(outcome.attempts == 0)
            #expect(outcome.problems.contains { $0.code.rawValue == reason.rawValue })
        }
    }

    @Test("auth rejections: no token, and a token from a key the mock does not know")
    func authRejections() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            var configuration = try ClientFixtures.clientConfiguration(server)
            configuration.credential = .none
            let missing = try await withAPNsClient(configuration: configuration) { client in
                await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            }
            #expect(missing.rejection?.reason == .missingProviderToken)
            #expect(missing.rejection?.status == 403)

            let unknownKey = try ES256PrivateKey.generate()
            configuration.credential = .token(
                ProviderTokenCache(
                    key: unknownKey, keyID: "KKTEST9999", teamID: ClientFixtures.teamID,
                    clock: ClientFixtures.MockClock(server: server)))
            let invalid = try await withAPNsClient(configuration: configuration) { client in
                await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            }
            #expect(invalid.rejection?.reason == .invalidProviderToken)
            #expect(invalid.rejection?.status == 403)
            #expect(invalid.attempts == 1)
        }
    }

    // Which statuses retry (429, 500, 503), the back-off and its limits are PushScheduler's, tested in
    // virtual time (ConnectionSchedulingTests); on the wire, one status, and the bound below with 503.
    @Test(
        "429 is retried with back-off until accepted",
        arguments: [(429, APNsReason.tooManyRequests)])
    func retriedUntilAccepted(status: Int, reason: APNsReason) async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(.failNext(2, status: status, reason: reason, scope: .token(device.token)))
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(outcome.isAccepted, "\(outcome)")
            #expect(outcome.attempts == 3)
            #expect(!outcome.possiblyDuplicated)
            #expect(server.deliveries(token: device.token).count == 1)
        }
    }

    @Test("retries are bounded: the last rejection is the outcome")
    func retriesBounded() async throws {
        try await ClientFixtures.withMockAndClient(client: { _, c in c.retry.maxAttempts = 3 }) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(.failNext(50, status: 503, scope: .token(device.token)))
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(outcome.rejection?.status == 503)
            #expect(outcome.rejection?.reason == .serviceUnavailable)
            #expect(outcome.attempts == 3)
        }
    }

    @Test("reasons that must not be retried are answered after one attempt")
    func notRetried() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(.failNext(1, status: 403, reason: .forbidden, scope: .token(device.token)))
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(outcome.rejection?.reason == .forbidden)
            #expect(outcome.attempts == 1)
        }
    }

    @Test("ExpiredProviderToken: a new token once, on a new connection, then accepted")
    func expiredProviderToken() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.providerTokenMaxAge = 1800 },
            client: { server, c in c.credential = .token(try ClientFixtures.tokenCache(server, reuseFor: 3600)) }
        ) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            let first = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(first.isAccepted, "\(first)")
            // The cache keeps its token for an hour; the mock calls it expired after 30 minutes.
            server.advanceClock(by: 2000)
            let second = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(second.isAccepted, "\(second)")
            #expect(second.attempts == 2)
            #expect(server.deliveries(token: device.token).count == 2)
        }
    }

    @Test("a stalled server ends in a timeout failure, not a hang", .timeSensitive)
    func stallTimesOut() async throws {
        try await ClientFixtures.withMockAndClient(
            client: { _, c in
                c.requestTimeout = .milliseconds(400)
                c.retry = .none
            }
        ) { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(MockFault(scope: .token(device.token), kind: .stall))
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            let failure = try #require(outcome.failure, "\(outcome)")
            #expect(failure.kind == .timeout)
            #expect(outcome.duration >= .milliseconds(350))
            #expect(outcome.duration < .seconds(5))
        }
    }

    @Test("a connection closed mid-request is retried and marked possibly duplicated")
    func closedConnectionRetried() async throws {
        try await ClientFixtures.withMockAndClient { server, client in
            let device = server.mintDevice(environment: .sandbox, topic: ClientFixtures.topic)
            try server.addFault(MockFault(scope: .token(device.token), kind: .closeConnection, remaining: 1))
            let outcome = await client.send(ClientFixtures.request(device.token), environment: .sandbox)
            #expect(outcome.isAccepted, "\(outcome)")
            #expect(outcome.attempts == 2)
            #expect(outcome.possiblyDuplicated)
        }
    }

    @Test("nothing listening: a connection failure after the bounded retries")
    func connectFailure() async throws {
        let port = try ClientFixtures.closedPort()
        let endpoint = APNsEndpoint(host: "127.0.0.1", port: port, caFile: ClientFixtures.path("ca.crt"))
        var configuration = APNsClientConfiguration(
            credential: .none, sandboxEndpoint: endpoint, productionEndpoint: endpoint, connectTimeout: .seconds(2),
            retry: ClientFixtures.fastRetry)
        configuration.retry.maxAttempts = 3
        let outcome = try await withAPNsClient(configuration: configuration) { client in
            await client.send(ClientFixtures.request(String(repeating: "ab", count: 32)), to: endpoint)
        }
        let failure = try #require(outcome.failure, "\(outcome)")
        #expect(failure.kind == .connection)
        #expect(failure.curlCode == 7)
        #expect(outcome.attempts == 3)
        #expect(!outcome.possiblyDuplicated)
    }

    @Test("the mock's CA is required: an untrusted server is a TLS failure")
    func untrustedServer() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            var endpoint = server.sandboxEndpoint
            endpoint.caFile = ClientFixtures.path("wwdr.crt")
            var configuration = try ClientFixtures.clientConfiguration(server)
            configuration.sandboxEndpoint = endpoint
            let outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(ClientFixtures.request(String(repeating: "ab", count: 32)), to: endpoint)
            }
            #expect(outcome.failure?.kind == .tls, "\(outcome)")
            #expect(outcome.attempts == 1)
        }
    }
}
