import Foundation
import KKPushAuth
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushTestSupport
import Synchronization
import Testing

/// Several apps, keys and teams from one sender (`ProviderClientRouter`) against the mock over TLS, and what the mock
/// answers keys used outside their scope, two teams on one connection, and token updates.
@Suite("Credential routing against the mock: teams, scoped keys, token updates")
struct CredentialRoutingMockTests {
    /// Runs `body` with a fresh fleet (TestCredentialFleet) and a mock that knows its keys (read from the fleet's
    /// key registry, environments and topics included).
    static func withFleetMock(_ body: (TestCredentialFleet, MockAPNsServer) async throws -> Void) async throws {
        let fleet = try await TestCredentialFleet.make()
        defer { fleet.remove() }
        try await withMockServer(configuration: ClientFixtures.mockConfiguration()) { server in
            let keys = try MockKey.loadRegistry(at: fleet.registryPath)
            #expect(keys.count == 5 && keys.contains { !$0.topics.isEmpty })
            for key in keys { try server.registerKey(key) }
            try await body(fleet, server)
        }
    }

    /// A router over the fleet's credentials file, its clients on `server` and the mock's clock.
    static func router(_ fleet: TestCredentialFleet, _ server: MockAPNsServer) throws -> ProviderClientRouter {
        var configuration = try ClientFixtures.clientConfiguration(server)
        configuration.credential = .none
        return ProviderClientRouter(
            credentials: try ProviderCredentialSet.load(path: fleet.credentialsPath), configuration: configuration,
            clock: ClientFixtures.MockClock(server: server))
    }

    /// A token source handing out the tokens given, the one at ``index`` (a test moves it).
    final class SwitchingTokens: BearerTokenSource {
        let tokens: [String]
        let index = Atomic<Int>(0)
        init(_ tokens: [String]) { self.tokens = tokens }
        func currentBearer() throws -> (value: String, generation: Int) {
            let i = index.load(ordering: .relaxed)
            return (tokens[i], i + 1)
        }
        func refreshBearer(afterExpired token: String) throws {}
    }

    /// A token of `key` issued at `date`.
    static func token(_ key: TestCredentialFleet.Key, at date: Date) throws -> String {
        try ProviderToken.sign(
            keyID: key.keyID, teamID: key.teamID, issuedAt: date, key: ES256PrivateKey(contentsOfFile: key.path))
    }

    /// A client sending with `source` over one connection.
    static func client(_ server: MockAPNsServer, source: any BearerTokenSource) throws -> APNsClient {
        var configuration = try ClientFixtures.clientConfiguration(server, retry: .none)
        configuration.credential = .token(source: source)
        configuration.maxConnections = 1
        return try APNsClient(configuration: configuration)
    }

    static func reason(_ outcome: PushOutcome) -> String {
        switch outcome.result {
        case .accepted: "accepted"
        case .rejected(let r): "\(r.status) \(r.reason.rawValue)"
        case .failed(let f): "failed \(f.kind.rawValue): \(f.message)"
        }
    }

    @Test("3 teams, 5 keys, 4 topics through one router: a client per credential, every push accepted")
    func fleetThroughRouter() async throws {
        try await Self.withFleetMock { fleet, server in
            let router = try Self.router(fleet, server)
            // Each topic 8 times by the file's choice, and the voetbal app 8 times through its second key by name.
            var sends: [(credential: String?, topic: String)] = []
            for topic in TestCredentialFleet.topics { sends += Array(repeating: (nil, topic), count: 8) }
            sends += Array(repeating: ("b2", "nl.voetbal.app"), count: 8)
            let tokens = TestTokens.random(sends.count)
            let outcomes = try await withThrowingTaskGroup(of: (String, String, PushOutcome).self) { group in
                for (i, send) in sends.enumerated() {
                    let (credential, client) = try router.client(
                        credential: send.credential, topic: send.topic, environment: .sandbox)
                    group.addTask {
                        let outcome = await client.send(
                            ClientFixtures.request(tokens[i], topic: send.topic), environment: .sandbox)
                        return (credential.name, send.topic, outcome)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            await router.shutdown()
            #expect(outcomes.count == sends.count)
            for (credential, topic, outcome) in outcomes {
                #expect(outcome.isAccepted, "\(credential) \(topic): \(Self.reason(outcome))")
            }
            #expect(router.clientNames == ["a1", "a2", "b1", "b2", "c1"])
            let used = Dictionary(grouping: outcomes, by: \.1).mapValues { Set($0.map(\.0)) }
            #expect(used["nl.kantinekoning.app"] == ["a1"] && used["nl.kantinekoning.kassa"] == ["a2"])
            #expect(used["nl.voetbal.app"] == ["b1", "b2"] && used["nl.hockey.app"] == ["c1"])
            #expect(server.deliveries(limit: 1000).count == sends.count)
        }
    }

    @Test("The mock refuses out-of-scope keys: other environment, other topic, a second team or key on a connection")
    func outOfScopeAnswers() async throws {
        try await Self.withFleetMock { fleet, server in
            let token = TestTokens.random(1)[0]
            // a2 is a sandbox key.
            let a2 = try Self.client(server, source: SwitchingTokens([Self.token(fleet.key("a2"), at: server.now)]))
            let production = await a2.send(
                ClientFixtures.request(token, topic: "nl.kantinekoning.kassa"), environment: .production)
            #expect(Self.reason(production) == "403 BadEnvironmentKeyIdInToken")
            await a2.shutdown()

            // a1 serves nl.kantinekoning.app and its suffixed topics only.
            let a1 = try Self.client(server, source: SwitchingTokens([Self.token(fleet.key("a1"), at: server.now)]))
            let other = await a1.send(ClientFixtures.request(token, topic: "nl.voetbal.app"), environment: .sandbox)
            #expect(Self.reason(other) == "400 TopicDisallowed")
            let voip = await a1.send(
                ClientFixtures.request(token, topic: "nl.kantinekoning.app.voip", pushType: .voip),
                environment: .sandbox)
            #expect(voip.isAccepted, "\(Self.reason(voip))")
            await a1.shutdown()

            // One connection: team A's token first, then team C's: refused, as APNs does.
            let teams = SwitchingTokens([
                try Self.token(fleet.key("a1"), at: server.now), try Self.token(fleet.key("c1"), at: server.now),
            ])
            let mixed = try Self.client(server, source: teams)
            let first = await mixed.send(ClientFixtures.request(token), environment: .sandbox)
            #expect(first.isAccepted, "\(Self.reason(first))")
            teams.index.store(1, ordering: .relaxed)
            let second = await mixed.send(ClientFixtures.request(token, topic: "nl.hockey.app"), environment: .sandbox)
            #expect(Self.reason(second) == "403 InvalidProviderToken")
            await mixed.shutdown()

            // One connection, two keys of one team: UnrelatedKeyIdInToken.
            let keys = SwitchingTokens([
                try Self.token(fleet.key("b1"), at: server.now), try Self.token(fleet.key("b2"), at: server.now),
            ])
            let related = try Self.client(server, source: keys)
            let b1 = await related.send(ClientFixtures.request(token, topic: "nl.voetbal.app"), environment: .sandbox)
            #expect(b1.isAccepted, "\(Self.reason(b1))")
            keys.index.store(1, ordering: .relaxed)
            let b2 = await related.send(ClientFixtures.request(token, topic: "nl.voetbal.app"), environment: .sandbox)
            #expect(Self.reason(b2) == "403 UnrelatedKeyIdInToken")
            await related.shutdown()
        }
    }

    @Test("TooManyProviderTokenUpdates counts per connection, from the token's first use on it (not its iat)")
    func tokenUpdatesPerConnection() async throws {
        try await Self.withFleetMock { fleet, server in
            let key = fleet.key("c1")
            let token = TestTokens.random(1)[0]
            // Minted at T0, first used on the connection at T0+46 min, replaced at T0+50 min: refused (pushy#931).
            let minted = server.now
            let first = try Self.token(key, at: minted)
            server.advanceClock(by: 46 * 60)
            let source = SwitchingTokens([first, try Self.token(key, at: server.now.addingTimeInterval(3 * 60))])
            let connection = try Self.client(server, source: source)
            let before = await connection.send(ClientFixtures.request(token), environment: .sandbox)
            #expect(before.isAccepted, "\(Self.reason(before))")
            server.advanceClock(by: 4 * 60)
            source.index.store(1, ordering: .relaxed)
            let update = await connection.send(ClientFixtures.request(token), environment: .sandbox)
            #expect(Self.reason(update) == "429 TooManyProviderTokenUpdates")
            // The same new token on a connection of its own is fine: the limit is not per key.
            let fresh = try Self.client(server, source: SwitchingTokens([source.tokens[1]]))
            let other = await fresh.send(ClientFixtures.request(token), environment: .sandbox)
            #expect(other.isAccepted, "\(Self.reason(other))")
            // 20 minutes after the connection first used its token, the update is taken.
            server.advanceClock(by: 16 * 60 + 1)
            let later = await connection.send(ClientFixtures.request(token), environment: .sandbox)
            #expect(later.isAccepted, "\(Self.reason(later))")
            await connection.shutdown()
            await fresh.shutdown()
        }
    }

    @Test("3 senders on one key for 2 hours of the mock's clock: tokens refreshed, never a 429 or an expiry")
    func concurrentSendersOutliveTokens() async throws {
        try await Self.withFleetMock { fleet, server in
            let key = fleet.key("c1")
            let signing = try ES256PrivateKey(contentsOfFile: key.path)
            // Three senders, as three processes would be: each its own token cache and connections, one key.
            var caches: [ProviderTokenCache] = []
            var clients: [APNsClient] = []
            for _ in 0..<3 {
                let cache = ProviderTokenCache(
                    key: signing, keyID: key.keyID, teamID: key.teamID, clock: ClientFixtures.MockClock(server: server))
                var configuration = try ClientFixtures.clientConfiguration(server, cache: cache, retry: .none)
                configuration.maxConnections = 1
                caches.append(cache)
                clients.append(try APNsClient(configuration: configuration))
            }
            var answers: [String: Int] = [:]
            // 16 rounds 8 minutes apart (2 h 8 min): each sender sends 6 pushes a round, all at once.
            for round in 0..<16 {
                let tokens = TestTokens.random(18)
                let outcomes = await withTaskGroup(of: PushOutcome.self) { group in
                    for (i, client) in clients.enumerated() {
                        for j in 0..<6 {
                            let token = tokens[i * 6 + j]
                            group.addTask { await client.send(ClientFixtures.request(token), environment: .sandbox) }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                for outcome in outcomes { answers[Self.reason(outcome), default: 0] += 1 }
                if round < 15 { server.advanceClock(by: 8 * 60) }
            }
            for client in clients { await client.shutdown() }
            #expect(answers == ["accepted": 16 * 18], "\(answers)")
            // Each sender made a new token at least twice in the two hours (every 50 minutes).
            for cache in caches { #expect(cache.generations >= 3, "\(cache.generations) tokens") }
        }
    }
}
