import Foundation
import KKPushAuth
import KKPushCore
import Testing

@Suite("Provider token cache")
struct ProviderTokenReuseAndRefreshTests {
    static func makeCache(reuseFor: TimeInterval = 50 * 60) throws -> (
        ProviderTokenCache, ManualWallClock, ES256PublicKey
    ) {
        let key = try ES256PrivateKey(contentsOfFile: Fixtures.path("AuthKey_KKTEST0001.p8"))
        let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
        let cache = ProviderTokenCache(
            key: key, keyID: "KKTEST0001", teamID: "KKTEAM0001", clock: clock, reuseFor: reuseFor)
        return (cache, clock, key.publicKey)
    }

    @Test("Reuses the token until reuseFor has elapsed, then mints a new one")
    func reuse() throws {
        let (cache, clock, publicKey) = try Self.makeCache()
        let first = try cache.currentToken()
        #expect(first.generation == 1)
        #expect(first.issuedAt == clock.now())
        #expect(first.prefix == String(first.value.prefix(12)) + "…")
        // Every minute for 49 minutes: the same token.
        for _ in 0..<49 {
            clock.advance(by: 60)
            #expect(try cache.currentToken() == first)
        }
        #expect(cache.generations == 1)
        clock.advance(by: 60)  // 50 minutes
        let second = try cache.currentToken()
        #expect(second.generation == 2)
        #expect(second.value != first.value)
        #expect(second.issuedAt == clock.now())
        #expect(cache.generations == 2)
        // The new token is valid for APNs at the cache's clock.
        #expect(ProviderToken.verify(second.value, key: publicKey, now: clock.now()).isValid)
    }

    @Test(
        "reuseFor is clamped to 20...60 minutes",
        arguments: [(60.0, 1200.0), (1199.0, 1200.0), (1800.0, 1800.0), (3600.0, 3600.0), (7200.0, 3600.0)])
    func clamp(requested: TimeInterval, used: TimeInterval) throws {
        let (cache, clock, _) = try Self.makeCache(reuseFor: requested)
        #expect(cache.reuseInterval == used)
        let first = try cache.currentToken()
        clock.advance(by: used - 1)
        #expect(try cache.currentToken() == first)
        clock.advance(by: 1)
        #expect(try cache.currentToken().generation == 2)
    }

    @Test("ExpiredProviderToken forces one new token, even inside 20 minutes; the same rejection twice does not")
    func refreshAfterExpired() throws {
        let (cache, clock, _) = try Self.makeCache()
        let first = try cache.currentToken()
        clock.advance(by: 5 * 60)
        let refreshed = try cache.refreshAfterExpired(rejected: first.value)
        #expect(refreshed.generation == 2)
        #expect(refreshed.value != first.value)
        #expect(refreshed.issuedAt == clock.now())
        // Another connection reports the same old token: it gets the new one, no third mint.
        let again = try cache.refreshAfterExpired(rejected: first.value)
        #expect(again == refreshed)
        #expect(cache.generations == 2)
        #expect(cache.forcedRefreshes == 1)
        // And the new one is reused afterwards.
        clock.advance(by: 60)
        #expect(try cache.currentToken() == refreshed)
    }

    @Test("100 concurrent callers get one token")
    func concurrent() async throws {
        let (cache, _, _) = try Self.makeCache()
        let tokens = try await withThrowingTaskGroup(of: CachedProviderToken.self) { group in
            for _ in 0..<100 { group.addTask { try cache.currentToken() } }
            var all: [CachedProviderToken] = []
            for try await token in group { all.append(token) }
            return all
        }
        #expect(tokens.count == 100)
        #expect(Set(tokens.map(\.value)).count == 1)
        #expect(cache.generations == 1)
    }

    @Test("100 concurrent ExpiredProviderToken reports for the same token mint once")
    func concurrentRefresh() async throws {
        let (cache, clock, _) = try Self.makeCache()
        let first = try cache.currentToken()
        clock.advance(by: 60)
        let tokens = try await withThrowingTaskGroup(of: CachedProviderToken.self) { group in
            for _ in 0..<100 { group.addTask { try cache.refreshAfterExpired(rejected: first.value) } }
            var all: [CachedProviderToken] = []
            for try await token in group { all.append(token) }
            return all
        }
        #expect(Set(tokens.map(\.generation)) == [2])
        #expect(cache.generations == 2)
    }

    @Test("A clock set back behind the token's iat gets a fresh token")
    func clockBack() throws {
        let (cache, clock, _) = try Self.makeCache()
        let first = try cache.currentToken()
        clock.advance(by: -30)
        #expect(try cache.currentToken() == first)
        clock.advance(by: -120)
        let second = try cache.currentToken()
        #expect(second.generation == 2)
        #expect(second.issuedAt == clock.now())
    }
}
