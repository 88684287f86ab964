import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Synchronization
import Testing

/// Fixtures for the client's tests: the repository's test keys and the in-process mock server.
enum ClientFixtures {
    /// The repository's `Certificates/` folder, found from this file.
    static let certificates: String = Repository.certificates.path

    static func path(_ name: String) -> String { Repository.certificate(name) }

    static let teamID = "KKTEAM0001"
    static let keyID = "KKTEST0001"
    static let topic = "nl.kantinekoning.app"
    static let payload = Array(#"{"aps":{"alert":{"title":"Bestelling klaar","body":"Je tosti staat klaar"}}}"#.utf8)

    /// The mock's clock as a `WallClock`, so provider tokens age with the mock.
    struct MockClock: WallClock {
        let server: MockAPNsServer
        func now() -> Date { server.now }
    }

    /// A token cache for the registered test key, on the mock's clock.
    static func tokenCache(_ server: MockAPNsServer, reuseFor: TimeInterval = 50 * 60) throws -> ProviderTokenCache {
        let key = try ES256PrivateKey(contentsOfFile: path("AuthKey_\(keyID).p8"))
        return ProviderTokenCache(
            key: key, keyID: keyID, teamID: teamID, clock: MockClock(server: server), reuseFor: reuseFor)
    }

    /// A mock configuration on ephemeral loopback ports with the repository's certificates.
    static func mockConfiguration() -> MockServerConfiguration {
        var c = MockServerConfiguration.forTests()
        c.certificatesDirectory = certificates
        c.clock = ManualWallClock(Date())
        return c
    }

    /// Small, fast retries for tests (milliseconds between attempts). The total is generous: the suite runs in
    /// parallel on 2 cores, and only tests marked `.timeSensitive` assert on time.
    static let fastRetry = APNsRetryPolicy(
        maxAttempts: 4, initialDelay: .milliseconds(5), maxDelay: .milliseconds(40), maxTotalTime: .seconds(120),
        jitter: 0.5)

    /// Time limits for tests that are not about time: a loaded machine makes a push slow, never failed. A test about
    /// timeouts sets its own and is marked `.timeSensitive`.
    static let connectTimeout: Duration = .seconds(30)
    static let requestTimeout: Duration = .seconds(60)

    /// A client configuration for the mock, with token auth.
    static func clientConfiguration(
        _ server: MockAPNsServer, cache: ProviderTokenCache? = nil, retry: APNsRetryPolicy = fastRetry,
        preflight: Bool = true
    ) throws -> APNsClientConfiguration {
        APNsClientConfiguration(
            credential: .token(try cache ?? tokenCache(server)), sandboxEndpoint: server.sandboxEndpoint,
            productionEndpoint: server.productionEndpoint, connectTimeout: connectTimeout,
            requestTimeout: requestTimeout, retry: retry, preflight: preflight)
    }

    /// A request for `token` with the usual alert headers.
    static func request(
        _ token: String, topic: String? = topic, pushType: PushType? = .alert, priority: Int? = 10,
        payload: [UInt8] = payload
    ) -> NotificationRequest {
        NotificationRequest(deviceToken: token, topic: topic, pushType: pushType, priority: priority, payload: payload)
    }

    /// Runs `body` with a started mock and a client for it; shuts both down.
    static func withMockAndClient(
        mock: (inout MockServerConfiguration) -> Void = { _ in },
        client: (MockAPNsServer, inout APNsClientConfiguration) throws -> Void = { _, _ in },
        _ body: (MockAPNsServer, APNsClient) async throws -> Void
    ) async throws {
        var mockConfiguration = mockConfiguration()
        mock(&mockConfiguration)
        try await withMockServer(configuration: mockConfiguration) { server in
            var configuration = try clientConfiguration(server)
            try client(server, &configuration)
            try await withAPNsClient(configuration: configuration) { apns in
                try await body(server, apns)
            }
        }
    }

    /// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed).
    static func closedPort() throws -> Int { try freeLoopbackPort() }
}

/// Collects batch results from the loop thread.
final class ResultCollector: Sendable {
    private let results = Mutex<[PushResult]>([])
    func add(_ result: PushResult) { results.withLock { $0.append(result) } }
    var all: [PushResult] { results.withLock { $0 } }
}
