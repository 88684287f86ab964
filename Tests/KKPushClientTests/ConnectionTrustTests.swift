import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Testing

/// Sending when connections go bad: dead connections replaced, `possiblyDuplicated` exact, credential
/// failures named and not retried, every push exactly one outcome.
@Suite("APNsClient when connections go bad")
struct ConnectionTrustTests {
    /// Sends `count` pushes to distinct tokens and returns the results, each token's deliveries, and
    /// the wall time.
    static func batch(
        _ server: MockAPNsServer, _ client: APNsClient, count: Int
    ) async throws -> (results: [PushResult], deliveries: [String: Int], seconds: Double) {
        let tokens = (0..<count).map { i in String(format: "%064x", 0xA000_0000 + i) }
        let items = tokens.map {
            PushBatchItem(request: ClientFixtures.request($0), endpoint: server.sandboxEndpoint)
        }
        let collector = ResultCollector()
        let start = Date()
        await client.sendAll(items) { collector.add($0) }
        let seconds = Date().timeIntervalSince(start)
        var deliveries: [String: Int] = [:]
        for d in server.deliveries(limit: 1_000_000) { deliveries[d.token, default: 0] += 1 }
        return (collector.all, deliveries, seconds)
    }

    static func checkExactlyOneAndNoSilentDuplicate(
        _ results: [PushResult], _ deliveries: [String: Int], count: Int
    ) {
        #expect(results.count == count)
        #expect(Set(results.map(\.index)) == Set(0..<count))
        let silent = results.filter { (deliveries[$0.deviceToken] ?? 0) > 1 && !$0.outcome.possiblyDuplicated }
        #expect(
            silent.count == 0,
            "\(silent.count) delivered twice without the flag, e.g. \(silent.prefix(3).map { "\($0.index): \($0.outcome)" })"
        )
    }

    @Test("a stalled connection is found dead, closed, and its pushes go through on a new one", .timeSensitive)
    func stalledConnectionReplaced() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.strictDeviceTokens = false },
            client: { _, c in
                c.requestTimeout = .seconds(3)
                c.maxConnections = 1
            }
        ) { server, client in
            // The first request stalls its connection: the mock stops reading it, nothing is answered.
            try server.addFault(MockFault(kind: .stall, remaining: 1))
            let count = 600
            let (results, deliveries, seconds) = try await Self.batch(server, client, count: count)
            Self.checkExactlyOneAndNoSilentDuplicate(results, deliveries, count: count)
            #expect(
                results.allSatisfy { $0.outcome.isAccepted },
                "\(results.first { !$0.outcome.isAccepted }?.outcome as Any)")
            // One request timeout to find the dead connection, then the rest at full speed (a loose bound:
            // the suite runs tests in parallel on small machines).
            #expect(seconds < 3 * 8, "took \(seconds) s")
            // Only pushes that were on the stalled connection are flagged (at most its streams in flight,
            // and a few more if the retry's connection was slow too on a loaded machine).
            #expect(results.filter { $0.outcome.possiblyDuplicated }.count <= 2 * 100)
        }
    }

    @Test("an expired client certificate is a credential failure: named, not retried, not duplicated")
    func expiredCertificate() async throws {
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let credential = try ClientCredential.loadPKCS12(
                path: ClientFixtures.path("client-expired.p12"), password: "kkpush")
            var configuration = try ClientFixtures.clientConfiguration(server)
            configuration.credential = try .certificate(credential)
            let token = String(repeating: "ab", count: 32)
            let outcome = try await withAPNsClient(configuration: configuration) { client in
                await client.send(ClientFixtures.request(token), environment: .sandbox)
            }
            let failure = try #require(outcome.failure, "\(outcome)")
            #expect(failure.kind == .credential)
            #expect(failure.message.contains("certificate expired"))
            #expect(failure.message.contains(credential.info.commonName ?? "client certificate"))
            #expect(outcome.attempts == 1)
            #expect(!outcome.possiblyDuplicated)
            #expect(server.deliveries(token: token).isEmpty)
        }
    }

    @Test("a healthy server: every push accepted once, nothing retried, nothing flagged")
    func cleanRun() async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.strictDeviceTokens = false },
            client: { _, c in c.maxConnections = 1 }
        ) { server, client in
            // Past SwiftNIO's default of 200 resets per 30 s on one connection.
            let count = 3000
            let (results, deliveries, _) = try await Self.batch(server, client, count: count)
            Self.checkExactlyOneAndNoSilentDuplicate(results, deliveries, count: count)
            #expect(results.allSatisfy { $0.outcome.isAccepted })
            #expect(
                results.allSatisfy { $0.outcome.attempts == 1 },
                "\(results.filter { $0.outcome.attempts > 1 }.count) retried")
            #expect(!results.contains { $0.outcome.possiblyDuplicated })
            #expect(deliveries.count == count && deliveries.values.allSatisfy { $0 == 1 })
        }
    }

    @Test(
        "a delayed server that closes connections mid-flight: no push delivered twice without the flag",
        arguments: [100, nil])
    func closesUnderDelay(streams: Int?) async throws {
        try await ClientFixtures.withMockAndClient(
            mock: { $0.strictDeviceTokens = false },
            client: { _, c in c.maxInFlightPerConnection = streams }
        ) { server, client in
            try server.addFault(MockFault(kind: .delay(milliseconds: 20)))
            // Every 150th stream on a connection gets a GOAWAY; some get an abrupt close.
            try server.addFault(MockFault(kind: .goAway(afterStreams: 150, reason: .shutdown)))
            try server.addFault(
                MockFault(
                    scope: .token(String(format: "%064x", 0xA000_0000 + 400)), kind: .closeConnection, remaining: 1))
            let count = 1000
            let (results, deliveries, _) = try await Self.batch(server, client, count: count)
            Self.checkExactlyOneAndNoSilentDuplicate(results, deliveries, count: count)
            // With 100 streams a connection nearly every push gets through its four attempts. Following the server
            // (1000 streams), each GOAWAY leaves up to 850 delayed answers to write, which a debug mock in a
            // parallel run does not always write before it closes the connection: those pushes are cut, retried and
            // flagged, and some use up their attempts. The invariants above hold either way.
            if streams != nil { #expect(results.filter { $0.outcome.isAccepted }.count >= count - 5) }
        }
    }
}

@Suite("Retry-After")
struct RetryAfterTests {
    @Test("seconds and HTTP dates; anything else is ignored")
    func parse() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(RetryAfter.seconds("120", now: now) == 120)
        #expect(RetryAfter.seconds(" 0 ", now: now) == 0)
        #expect(RetryAfter.seconds("99999999", now: now) == 3600)
        #expect(RetryAfter.seconds("Tue, 14 Nov 2023 22:15:20 GMT", now: now) == 120)
        #expect(RetryAfter.seconds("Wed, 15 Nov 2023 00:13:20 GMT", now: now) == 3600)
        #expect(RetryAfter.seconds("Tue, 14 Nov 2023 22:13:30 GMT", now: now) == 10)
        #expect(RetryAfter.seconds("-5", now: now) == nil)
        #expect(RetryAfter.seconds("soon", now: now) == nil)
        #expect(RetryAfter.seconds("1e300", now: now) == nil)
    }
}
