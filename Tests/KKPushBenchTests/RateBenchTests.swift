import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

@testable import KKPushBench

/// `bench`'s rate benchmark against the in-process mock: what its report says was in flight is what the client's
/// connections carried (issue #64: `bench -c 1000` used to say "100 on the connection" whatever the server allowed).
@Suite("The rate benchmark against the mock")
struct RateBenchTests {
    /// Runs `count` pushes through `RateBench` against a mock whose every answer waits 300 ms (so that what the
    /// client keeps in flight is in flight at once), with `configure` applied to the client's configuration.
    static func run(count: Int, configure: (inout APNsClientConfiguration) -> Void) async throws -> RateBench.Result {
        var mock = MockServerConfiguration.forTests()
        mock.certificatesDirectory = Repository.certificates.path
        mock.faults = [MockFault(kind: .delay(milliseconds: 300))]
        return try await withMockServer(configuration: mock) { server in
            let key = try ES256PrivateKey(contentsOfFile: Repository.certificate("AuthKey_KKTEST0001.p8"))
            var configuration = APNsClientConfiguration(
                credential: .token(ProviderTokenCache(key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001")),
                sandboxEndpoint: server.sandboxEndpoint, productionEndpoint: server.sandboxEndpoint,
                connectTimeout: .seconds(30), requestTimeout: .seconds(60), maxConnections: 1, retry: .none)
            configure(&configuration)
            let device = server.mintDevice(environment: .sandbox, topic: "nl.kantinekoning.app")
            let request = NotificationRequest(
                deviceToken: device.token, topic: "nl.kantinekoning.app", pushType: .alert, priority: 10,
                expiration: 0, payload: Array(#"{"aps":{"alert":"Dienst"}}"#.utf8))
            return try await RateBench.run(
                PushBatchItem(request: request, endpoint: server.sandboxEndpoint), count: count,
                configuration: configuration)
        }
    }

    @Test("-c 1000 without a cap: the report says the connection carried more than 100, as many as -c allows")
    func reportsWhatWasUsed() async throws {
        let result = try await Self.run(count: 3000) {
            $0.inFlightMemoryBudget = 1000 * APNsClientConfiguration.bytesPerStream
        }
        #expect(result.accepted == 3000, "\(result.firstProblem ?? "")")
        let report = RateBenchReport(result, sent: 3000, requestedInFlight: 1000, perConnectionCap: nil, threads: 1)
        #expect(report.usage.peakStreamsPerConnection > 100 && report.usage.peakStreamsPerConnection <= 1000)
        #expect(report.usage.connectionsOpened == 1)
        #expect(
            report.textLines[0].contains(
                "1000 requested in flight: at most \(report.usage.peakStreamsPerConnection) on a connection (as many as the server allowed, within 1000 a connection), 1 connection"
            ), "\(report.textLines[0])")
    }

    @Test("--max-in-flight 40: exactly 40 on the connection")
    func explicitCap() async throws {
        let result = try await Self.run(count: 400) { $0.maxInFlightPerConnection = 40 }
        #expect(result.accepted == 400, "\(result.firstProblem ?? "")")
        #expect(result.usage.peakStreamsPerConnection == 40 && result.usage.connectionsOpened == 1)
    }
}
