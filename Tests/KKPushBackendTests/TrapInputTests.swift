import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCore
import KKPushStore
import KantineKoning
import Testing

/// Inputs that used to trap (issue #15): queries, device-JWT claims and lifetimes, and the store's close.
@Suite("Backend: outside inputs never trap")
struct BackendTrapInputTests {
    static let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))

    @Test(
        "Query strings with empty keys and pieces parse",
        arguments: [
            ("/healthz?=", ["": ""]), ("/healthz?&&", [:]), ("/healthz?==x", ["": "=x"]),
            ("/healthz?a=&=b&c", ["a": "", "": "b", "c": ""]),
            ("/healthz?", [:]),
        ])
    func queries(target: String, expected: [String: String]) {
        let request = BackendRequest(method: "GET", target: target)
        #expect(request.path == "/healthz")
        #expect(request.query == expected)
    }

    @Test("The backend answers /healthz?= and /api/mobile/v1/diensten?= over HTTP and keeps serving")
    func emptyQueryOverHTTP() async throws {
        let configuration = SimulatedBackendConfiguration(port: 0, secret: BackendFixtures.secret, clock: Self.clock)
        try await withSimulatedBackend(configuration: configuration) { backend in
            let health = try await HTTP.request("GET", backend.baseURL + "/healthz?=")
            #expect(health.status == 200)
            let diensten = try await HTTP.request("GET", backend.baseURL + "/api/mobile/v1/diensten?=&past_days=")
            #expect(diensten.status == 400)
            #expect(diensten.errorCode == "missing-tenant")
            let again = try await HTTP.request("GET", backend.baseURL + "/healthz")
            #expect(again.status == 200)
        }
    }

    @Test(
        "A device-JWT lifetime or leeway that is not a finite, in-range number of seconds is refused",
        arguments: [Double.nan, .infinity, -.infinity, 1e300, 1e19, 0, -5, DeviceClaims.maximumLifetime + 1])
    func lifetime(seconds: Double) {
        #expect { try DeviceJWT(secret: BackendFixtures.secret, clock: Self.clock, lifetime: seconds) } throws: {
            ($0 as? KKPushError)?.code.rawValue == "jwt-lifetime"
        }
    }

    @Test("The longest lifetime issues a token that verifies")
    func longestLifetime() throws {
        let jwt = try DeviceJWT(
            secret: BackendFixtures.secret, clock: Self.clock, lifetime: DeviceClaims.maximumLifetime)
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, updatedAt: Self.clock.now())
        let claims = try jwt.verify(try jwt.issue(for: enrollment), tenant: "vvwilhelmus")
        #expect(claims.expiresAt - claims.issuedAt == Int(DeviceClaims.maximumLifetime))
    }

    @Test("DeviceClaims clamps what it is given instead of overflowing")
    func claimsClamp() {
        let enrollment = Enrollment(
            deviceID: "dev-1", tenantSlug: "t", teamCodes: ["A"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA,
            updatedAt: Self.clock.now())
        for (now, lifetime) in [(1e300, 1e300), (-1e300, Double.nan), (Double.nan, -Double.infinity)] {
            let claims = DeviceClaims(
                enrollment: enrollment, issuedAt: Date(timeIntervalSince1970: now), lifetime: lifetime)
            #expect(InputNumbers.unixSeconds.contains(Int64(claims.issuedAt)))
            #expect(claims.expiresAt >= claims.issuedAt)
        }
    }

    /// A token with these claims, signed with the test secret.
    static func token(iat: Int, exp: Int) throws -> String {
        let claims = DeviceClaims(
            deviceID: "dev-1", tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, issuedAt: iat, expiresAt: exp)
        return try DeviceJWT(secret: BackendFixtures.secret, clock: clock).sign(claims)
    }

    @Test(
        "iat and exp outside 1970...9999 are a malformed token, with and without the secret",
        arguments: [
            (Int.min, Int.min), (1_800_000_000, Int.min), (1_800_000_000, Int.max), (Int.max, Int.max),
            (-1, 1_800_003_600),
        ])
    func claimsOutOfRange(iat: Int, exp: Int) throws {
        let token = try Self.token(iat: iat, exp: exp)
        let jwt = try DeviceJWT(secret: BackendFixtures.secret, clock: Self.clock)
        #expect { try jwt.verify(token) } throws: { ($0 as? KKPushError)?.code.rawValue == "jwt-malformed" }
        #expect { try DeviceJWT.decodeUnverified(token) } throws: {
            ($0 as? KKPushError)?.code.rawValue == "jwt-malformed"
        }
        let withoutSecret = TokenUpdateVerifier(jwt: nil, clock: Self.clock).bearerProblems(token, expectedTenant: nil)
        #expect(withoutSecret.problems.map(\.code.rawValue) == ["jwt-malformed"])
        let withSecret = TokenUpdateVerifier(jwt: jwt).bearerProblems(token, expectedTenant: "vvwilhelmus")
        #expect(withSecret.problems.map(\.code.rawValue) == ["jwt-malformed"])
    }

    @Test("Enrollment.formatDate never traps, whatever the date")
    func formatDate() {
        for t in [Double(Int64.min), Double(Int64.max), -1e300, 1e300, .infinity, .nan, 253_402_300_799] {
            #expect(!Enrollment.formatDate(Date(timeIntervalSince1970: t)).isEmpty)
        }
        #expect(Enrollment.formatDate(Date(timeIntervalSince1970: 253_402_300_799)) == "9999-12-31T23:59:59Z")
    }
}

/// The SQLite store closes its connection exactly once (a second close crashed release builds).
@Suite("SQLite enrollment store: close")
struct SQLiteStoreCloseTests {
    static func enrollment(_ id: String) -> Enrollment {
        Enrollment(
            deviceID: id, tenantSlug: "vvwilhelmus", teamCodes: ["JO11-3"], role: .member,
            hardwareIdentifier: BackendFixtures.phoneA, updatedAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test("A second close does nothing; a query after close is store-closed")
    func closeTwice() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try await SQLiteEnrollmentStore.open(path: dir.appendingPathComponent("e.sqlite").path)
        try await store.upsert(Self.enrollment("dev-1"))
        #expect(try await store.all().count == 1)
        try await store.close()
        try await store.close()
        await #expect { try await store.all() } throws: { ($0 as? KKPushError)?.code.rawValue == "store-closed" }
        try await store.close()
    }

    @Test("close waits for the queries in flight, and closes once when called concurrently")
    func closeWhileQuerying() async throws {
        let dir = try BackendFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("e.sqlite").path
        try await SQLiteEnrollmentStore.withStore(path: path) { store in
            for i in 0..<20 { try await store.upsert(Self.enrollment("dev-\(i)")) }
        }
        let store = try await SQLiteEnrollmentStore.open(path: path)
        let results = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (try? await store.all().count) ?? -1 }
            }
            for _ in 0..<3 {
                group.addTask {
                    try? await store.close()
                    return -2
                }
            }
            var all: [Int] = []
            for await r in group { all.append(r) }
            return all
        }
        // Every query either ran in full (20 rows) or was refused after close (-1); the three closes returned.
        #expect(results.filter { $0 == -2 }.count == 3)
        #expect(results.allSatisfy { $0 == 20 || $0 == -1 || $0 == -2 })
        await #expect { try await store.all() } throws: { ($0 as? KKPushError)?.code.rawValue == "store-closed" }
    }
}
